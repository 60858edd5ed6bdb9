// GET /platform: how the platform runs apps, for the desktop app's Settings, and which AI engines it
// offers, so the Agent and Build screens can say what is missing before anything is sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MODELS } from '../../src/server/ai/providers/index.js';
import { requireEngine } from '../helpers/engine.js';
import { call, expectProblem, startPlatform, type TestPlatform } from '../helpers/platform.js';

const noEngine = await requireEngine();

describe('GET /platform', () => {
  let tp: TestPlatform;
  beforeAll(async () => {
    tp = await startPlatform({ runtime: 'sandbox', keepReleases: 3 });
  });
  afterAll(async () => tp?.close());

  it('names the runtime, why, and how many releases are kept', async () => {
    const answer = await call(`${tp.api}/platform`, { key: tp.key });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      runtime: 'sandbox',
      runtime_notes: tp.platform.runtimeNotes,
      keep_releases: 3,
      ai_included: null,
      ai_own_key_models: DEFAULT_MODELS,
    });
  });

  it('answers any account’s key, and no one without one', async () => {
    const other = await tp.newAccount({ scopes: ['email'] });
    expect((await call(`${tp.api}/platform`, { key: other.key })).status).toBe(200);
    expectProblem(await call(`${tp.api}/platform`), 401, 'unauthorized');
  });
});

describe('GET /platform: the AI engines offered', () => {
  const INCLUDED_KEY = 'sk-included-platform-info-0123456789';

  it('names the included engine’s provider and model, never its key', async () => {
    const tp = await startPlatform({
      ai: {
        provider: 'anthropic',
        model: 'claude-test-model',
        key: INCLUDED_KEY,
        ownKeyModels: { openai: 'gpt-own-test' },
      },
    });
    try {
      const answer = await call<Record<string, unknown>>(`${tp.api}/platform`, { key: tp.key });
      expect(answer.status).toBe(200);
      expect(answer.body.ai_included).toEqual({ provider: 'anthropic', model: 'claude-test-model' });
      expect(answer.body.ai_own_key_models).toEqual({ ...DEFAULT_MODELS, openai: 'gpt-own-test' });
      expect(JSON.stringify(answer.body)).not.toContain(INCLUDED_KEY);
      // Another account sees the same offer, and no one sees it without a key.
      const other = await tp.newAccount({ scopes: ['deploy'] });
      const theirs = await call<Record<string, unknown>>(`${tp.api}/platform`, { key: other.key });
      expect(theirs.body.ai_included).toEqual(answer.body.ai_included);
      expectProblem(await call(`${tp.api}/platform`, { key: 'wk_not-a-real-key' }), 401, 'unauthorized');
    } finally {
      await tp.close();
    }
  });

  it('defaults the model to the provider’s, and offers none without WHARF_AI_KEY', async () => {
    const withDefault = await startPlatform({ ai: { provider: 'openai', key: INCLUDED_KEY } });
    const noKey = await startPlatform({ ai: { provider: 'openai', key: null } });
    try {
      const first = await call<Record<string, unknown>>(`${withDefault.api}/platform`, {
        key: withDefault.key,
      });
      expect(first.body.ai_included).toEqual({ provider: 'openai', model: DEFAULT_MODELS.openai });
      const second = await call<Record<string, unknown>>(`${noKey.api}/platform`, { key: noKey.key });
      expect(second.body.ai_included).toBeNull();
    } finally {
      await Promise.all([withDefault.close(), noKey.close()]);
    }
  });
});

describe('--runtime auto', () => {
  it('falls back to the sandbox when no engine answers, and says why', async () => {
    const before = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = 'unix:///nonexistent/wharf-no-engine.sock';
    try {
      const tp = await startPlatform({ runtime: 'auto' });
      try {
        const info = await call<{ runtime: string; runtime_notes: string[] }>(`${tp.api}/platform`, {
          key: tp.key,
        });
        expect(info.body.runtime).toBe('sandbox');
        expect(info.body.runtime_notes[0]).toMatch(
          /^no containers: no container engine answers at DOCKER_HOST=unix:\/\/\/nonexistent\/wharf-no-engine\.sock/,
        );
      } finally {
        await tp.close();
      }
    } finally {
      if (before === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = before;
    }
  });

  it.skipIf(noEngine !== null)('takes containers when an engine answers', async () => {
    const tp = await startPlatform({ runtime: 'auto' });
    try {
      expect(tp.platform.runtime.kind).toBe('container');
      expect(tp.platform.runtimeNotes[0]).toMatch(
        /^apps run in containers on (Docker|Podman) .* \(an engine answered\)$/,
      );
    } finally {
      await tp.close();
    }
  });

  it('refuses to start with --runtime container when no engine answers', async () => {
    const before = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = 'unix:///nonexistent/wharf-no-engine.sock';
    try {
      await expect(startPlatform({ runtime: 'container' })).rejects.toThrow(
        /^--runtime container: no container engine answers at DOCKER_HOST=/,
      );
    } finally {
      if (before === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = before;
    }
  });
});
