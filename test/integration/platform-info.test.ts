// GET /platform: how the platform runs apps, for the desktop app's Settings.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
    });
  });

  it('answers any account’s key, and no one without one', async () => {
    const other = await tp.newAccount({ scopes: ['email'] });
    expect((await call(`${tp.api}/platform`, { key: other.key })).status).toBe(200);
    expectProblem(await call(`${tp.api}/platform`), 401, 'unauthorized');
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
