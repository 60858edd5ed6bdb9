// SPEC.md §2.6, §4.2 and §6.1 (the AI builder and agent), with §5.2 and §5.3 (a deploy-scoped key
// suffices; the account's email must be verified), as a client written only from SPEC.md calls them:
// a real platform whose included engine talks to a local fake of the OpenAI-compatible protocol.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Files, until, viaEdge } from '../helpers/deploy.js';
import { type FakeAi, type ScriptedTurn, startFakeOpenAI } from '../helpers/fake-ai.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';
import { AGENT_REPLY, AGENT_STREAM_EVENTS, PROJECT, expectSpec } from '../helpers/spec-contract.js';

let fake: FakeAi;
let tp: TestPlatform;
/** A key of scope `deploy` only, of an account whose email is verified. */
let deployKey: string;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  tp = await startPlatform({
    healthTimeoutMs: 20_000,
    ai: {
      provider: 'openai',
      model: 'gpt-test',
      key: 'sk-included-0000',
      baseUrls: { openai: fake.baseUrl },
      ratePerMinute: 1000,
      maxSteps: 6,
    },
  });
  deployKey = (await tp.newAccount({ scopes: ['deploy'] })).key;
});

afterAll(async () => {
  await tp?.close();
  await fake?.close();
});

const PACKAGE = JSON.stringify({ name: 'generated', private: true, scripts: { start: 'node server.js' } });
const app = (greeting: string): Files => ({
  'package.json': PACKAGE,
  'server.js': `require('node:http').createServer((q, s) => s.end(${JSON.stringify(greeting)} + (process.env.BOT_TOKEN ? ' with a token' : ''))).listen(Number(process.env.PORT));\n`,
});

function generated(files: Files, needs = { env: [] as Array<{ name: string; description: string }> }) {
  const answer = {
    files: Object.entries(files).map(([path, content]) => ({ path, content })),
    needs: { ...needs, database: null },
    summary: 'an app',
  };
  return { text: `\`\`\`json\n${JSON.stringify(answer)}\n\`\`\`` } satisfies ScriptedTurn;
}

const ai = (path: string, body: unknown, key = deployKey) => call(`${tp.api}/ai${path}`, { key, body });

async function waitRunning(id: string): Promise<void> {
  await until(
    async () =>
      (await call(`${tp.api}/projects/${id}`, { key: deployKey })).body.project.status === 'running',
    `project ${id} to run`,
    60_000,
    100,
  );
}

interface SseEvent {
  event: string;
  data: unknown;
}

async function stream(body: unknown): Promise<{ contentType: string; events: SseEvent[] }> {
  const response = await fetch(`${tp.api}/ai/agent/stream`, {
    method: 'POST',
    headers: { 'x-api-key': deployKey, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  expect(response.status).toBe(200);
  const events: SseEvent[] = [];
  for (const block of (await response.text()).split('\n\n')) {
    const event = /^event: (\S+)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (event && data) events.push({ event, data: JSON.parse(data) });
  }
  return { contentType: response.headers.get('content-type') ?? '', events };
}

const ask = (content: string) => ({ messages: [{ role: 'user', content }] });

describe('§4.2: POST /ai/build, /ai/deploy and /ai/edit with a deploy-scoped key', () => {
  let built: { project: { id: string; url: string }; url: string };

  it('POST /ai/build { generator, prompt, subdomain } answers 202 with the project and its live URL', async () => {
    fake.push(generated(app('built by the model')));
    const result = await ai('/build', {
      generator: 'web',
      prompt: 'A greeting page',
      subdomain: 'spec-ai-web',
    });
    expect(result.status, JSON.stringify(result.body)).toBe(202);
    expectSpec(result.body, { project: { object: PROJECT }, url: 'string' }, 'the build answer');
    built = result.body;
    expect(built.url).toBe(built.project.url);
    await waitRunning(built.project.id);
    expect((await viaEdge(tp.edgePort, 'spec-ai-web.localhost', '/')).body).toBe('built by the model');
  });

  it('POST /ai/build builds exactly one project', async () => {
    const projects = await call<Array<{ subdomain: string }>>(`${tp.api}/projects`, { key: deployKey });
    expect(projects.body.filter((p) => p.subdomain === 'spec-ai-web')).toHaveLength(1);
  });

  it('answers a needs_setup payload when the app needs secrets; /ai/deploy { project_id, env } finishes it', async () => {
    fake.push(generated(app('bot'), { env: [{ name: 'BOT_TOKEN', description: 'The bot token' }] }));
    const result = await ai('/build', {
      generator: 'messaging-bot',
      prompt: 'A bot answering opening hours',
      subdomain: 'spec-ai-bot',
    });
    expect(result.status, JSON.stringify(result.body)).toBe(202);
    expect(result.body).toMatchObject({ status: 'needs_setup' });
    expectSpec(result.body, { project: { object: PROJECT } }, 'the needs_setup answer');
    expect(JSON.stringify(result.body)).toContain('BOT_TOKEN');
    const id = (result.body as { project: { id: string } }).project.id;

    const deployed = await ai('/deploy', { project_id: id, env: { BOT_TOKEN: 't0k3n' } });
    expect(deployed.status, JSON.stringify(deployed.body)).toBeLessThan(300);
    await waitRunning(id);
    expect((await viaEdge(tp.edgePort, 'spec-ai-bot.localhost', '/')).body).toBe('bot with a token');
  });

  it('/ai/deploy takes database "postgres" as a request field (no 422)', async () => {
    const result = await ai('/deploy', { project_id: built.project.id, env: {}, database: 'postgres' });
    expect(result.status).not.toBe(422);
  });

  it('POST /ai/edit { project_id, instruction } regenerates and redeploys', async () => {
    fake.push({
      text: `\`\`\`json\n${JSON.stringify({ files: [{ path: 'server.js', content: app('edited')['server.js'] }], summary: 'edit' })}\n\`\`\``,
    });
    const result = await ai('/edit', { project_id: built.project.id, instruction: 'Say "edited"' });
    expect(result.status, JSON.stringify(result.body)).toBeLessThan(300);
    await until(
      async () => (await viaEdge(tp.edgePort, 'spec-ai-web.localhost', '/')).body === 'edited',
      'the edit to serve',
      60_000,
      100,
    );
  });

  it('refuses an unknown generator and a missing prompt (bad input)', async () => {
    expect((await ai('/build', { generator: 'discord', prompt: 'x', subdomain: 'spec-x' })).status).toBe(422);
    expect((await ai('/build', { generator: 'web', subdomain: 'spec-x' })).status).toBe(422);
  });
});

describe('§2.6 and §4.2: POST /ai/agent', () => {
  it('takes { messages: [{ role: "user", content }] } and answers { reply, steps[] }', async () => {
    fake.push({ toolCalls: [{ name: 'list_projects', args: {} }] }, { text: 'You have projects.' });
    const result = await ai('/agent', ask('What projects do I have?'));
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expectSpec(result.body, AGENT_REPLY, 'the agent answer');
    expect(result.body).toMatchObject({ reply: 'You have projects.' });
    expect((result.body as { steps: unknown[] }).steps).toHaveLength(1);
  });

  it('refuses a message without content (bad input)', async () => {
    expect((await ai('/agent', { messages: [{ role: 'user' }] })).status).toBe(422);
  });
});

describe('§6.1: POST /ai/agent/stream', () => {
  it('is text/event-stream with step, build_log, build_status, step_done, token and done', async () => {
    fake.push(
      {
        toolCalls: [
          {
            name: 'build_app',
            args: {
              generator: 'landing',
              prompt: 'A landing page',
              subdomain: 'spec-ai-land',
              use_template: true,
            },
          },
        ],
      },
      { text: 'Your page is live.' },
    );
    const run = await stream(ask('Make me a landing page at spec-ai-land'));
    expect(run.contentType).toMatch(/^text\/event-stream/);
    const names = new Set(run.events.map((e) => e.event));
    for (const name of ['step', 'step_done', 'token', 'build_log', 'build_status', 'done']) {
      expect([...names], name).toContain(name);
    }
    expect([...names].filter((n) => !(AGENT_STREAM_EVENTS as readonly string[]).includes(n))).toEqual([]);
    expect(run.events.at(-1)?.event).toBe('done');
  });

  it('narrates with note (at the step limit here), ending with done', async () => {
    const saved = tp.platform.config.ai.maxSteps;
    tp.platform.config.ai.maxSteps = 1;
    try {
      fake.push({ toolCalls: [{ name: 'list_projects', args: {} }] });
      const run = await stream(ask('List my projects'));
      expect(run.events.map((e) => e.event)).toContain('note');
      expect(run.events.at(-1)?.event).toBe('done');
    } finally {
      tp.platform.config.ai.maxSteps = saved;
    }
  });
});

describe('§5.2 and §5.3: authentication of the AI endpoints', () => {
  it.each([
    ['/build', { generator: 'web', prompt: 'x', subdomain: 'spec-unverified' }],
    ['/deploy', { project_id: 'prj_x', env: {} }],
    ['/edit', { project_id: 'prj_x', instruction: 'x' }],
    ['/agent', ask('hi')],
    ['/agent/stream', ask('hi')],
  ])('%s requires a verified email (403) and a key (401)', async (path, body) => {
    const unverified = await tp.newAccount({ scopes: ['deploy'], verified: false });
    expect((await ai(path, body, unverified.key)).status).toBe(403);
    expect((await call(`${tp.api}/ai${path}`, { body })).status).toBe(401);
  });
});
