// The agent of API.md §8 end to end: POST /ai/agent and /ai/agent/stream on a real platform whose
// engines talk to local fakes of the OpenAI and Anthropic wire protocols, scripted turn by turn. The
// model's tool calls run against the caller's account only; the stream's events come in order with
// `done` once and last, with keep-alive comments while a tool waits; the checks before a run answer
// problem+json (403, 503, 429); the included engine is billed through the ledger and an own key is
// not. The tools that change projects (set_env_vars, edit_app, create_database, with a real
// PostgreSQL started here) change them, and secrets never go back to the model.
import type { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { AgentResponse, AgentStep, AgentStreamEvent, AiBuildResponse } from '../../src/shared/api/ai.js';
import { AgentStreamEvents } from '../../src/shared/api/ai.js';
import type { Project } from '../../src/shared/api/projects.js';
import { type Files, gitRepo, nodeApp, viaEdge } from '../helpers/deploy.js';
import { until } from '../helpers/poll.js';
import { type AiPlatforms, startAiPlatforms } from '../helpers/ai-platform.js';
import type { FakeAi, ScriptedTurn } from '../helpers/fake-ai.js';
import { call, expectProblem, type TestPlatform } from '../helpers/platform.js';
import { type TestPostgres, postgresBin, startPostgres } from '../helpers/postgres.js';
import { sseEvents } from '../helpers/sse.js';

const INCLUDED_KEY = 'sk-included-service-key-0000';
const OWN_ANTHROPIC_KEY = 'sk-ant-api03-UsersOwnAnthropicKey-ZZZZ-7c1e';

let openai: FakeAi;
let anthropic: FakeAi;
/** With an included engine (OpenAI, through the fake). */
let p: TestPlatform;
/** With no engine at all. */
let bare: TestPlatform;

let world: AiPlatforms;

beforeAll(async () => {
  world = await startAiPlatforms({
    healthTimeoutMs: 20_000,
    ai: {
      model: 'gpt-test',
      key: INCLUDED_KEY,
      ratePerMinute: 1000,
      maxSteps: 6,
      prices: { input_per_mtok_usd: 100, output_per_mtok_usd: 400 },
    },
  });
  ({ openai, anthropic, included: p, bare } = world);
});

afterAll(() => world?.close());

const ask = (content: string) => ({ messages: [{ role: 'user', content }] });

async function createProject(key: string, subdomain: string): Promise<Project> {
  const created = await call<Project>(`${p.api}/projects`, {
    key,
    body: { name: `Project ${subdomain}`, subdomain, repo_url: 'https://example.invalid/app.git' },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

/** Log lines as the runtime writes them. */
async function writeLogs(projectId: string, lines: string[]): Promise<void> {
  await p.platform.logs.append(
    projectId,
    lines.map((line) => ({ stream: 'runtime' as const, service: null, line })),
  );
}

interface SseEvent {
  event: string;
  data: any;
}

/** POSTs to the stream endpoint and reads every event (and comment) until the server ends it. */
async function stream(
  t: TestPlatform,
  key: string,
  body: unknown,
): Promise<{
  status: number;
  contentType: string;
  events: SseEvent[];
  comments: string[];
  order: string[];
  raw: string;
}> {
  const response = await fetch(`${t.api}/ai/agent/stream`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const raw = await response.text();
  const parsed = sseEvents(raw);
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    events: parsed.events.map(({ event, data }) => ({ event, data: JSON.parse(data) })),
    comments: parsed.comments,
    order: parsed.order,
    raw,
  };
}

/** Every event's data matches its schema of src/shared/api/ai.ts; `done` comes once, last. */
function expectWellFormed(events: SseEvent[]): AgentStreamEvent & { event: 'done' } {
  for (const { event, data } of events) {
    const schema = AgentStreamEvents[event as keyof typeof AgentStreamEvents];
    expect(schema, `unknown event ${event}`).toBeDefined();
    expect(schema.safeParse(data).success, `${event} ${JSON.stringify(data)}`).toBe(true);
  }
  expect(events.filter((e) => e.event === 'done')).toHaveLength(1);
  expect(events.at(-1)?.event).toBe('done');
  return events.at(-1) as AgentStreamEvent & { event: 'done' };
}

/** The tool results the platform sent back to the model in a chat-completions request. */
function toolResults(body: any): Array<{ id: string; content: any }> {
  return (body.messages as any[])
    .filter((m) => m.role === 'tool')
    .map((m) => ({ id: m.tool_call_id, content: JSON.parse(m.content) }));
}

/** The model's answer to a generation: one fenced JSON block with the files, needs and summary. */
function generated(files: Files, summary: string): ScriptedTurn {
  const answer = {
    files: Object.entries(files).map(([path, content]) => ({ path, content })),
    needs: { env: [], database: null },
    summary,
  };
  return { text: `\`\`\`json\n${JSON.stringify(answer)}\n\`\`\`` };
}

/** The model's answer to an edit: the files it changes. */
function changed(files: Files, summary: string): ScriptedTurn {
  const answer = { files: Object.entries(files).map(([path, content]) => ({ path, content })), summary };
  return { text: `\`\`\`json\n${JSON.stringify(answer)}\n\`\`\`` };
}

/** An AI project (POST /ai/build, the model writing `files`), once its deploy loop has it running. */
async function aiProject(key: string, subdomain: string, files: Files): Promise<Project> {
  openai.push(generated(files, `an app for ${subdomain}`));
  const built = await call<AiBuildResponse>(`${p.api}/ai/build`, {
    key,
    body: { generator: 'web', prompt: `A small app for ${subdomain}`, subdomain },
  });
  expect(built.status, JSON.stringify(built.body)).toBe(202);
  const { project } = built.body;
  const status = await p.platform.aiBuilder.waitForOutcome(project.id);
  if (status !== 'running') {
    const log = await p.platform.logs.read(project.id, { limit: 200 });
    throw new Error(`${subdomain} is ${status}; log:\n${log.map((l) => l.line).join('\n')}`);
  }
  return project;
}

/** The running app's environment, as nodeApp's /env answers it. */
async function appEnv(project: Project): Promise<Record<string, string>> {
  const answer = await viaEdge(p.edgePort, `${project.subdomain}.localhost`, '/env');
  expect(answer.status, answer.body).toBe(200);
  return JSON.parse(answer.body) as Record<string, string>;
}

async function usageEntries(key: string): Promise<Array<{ kind: string; amount_usd: number }>> {
  const result = await call<Array<{ kind: string; amount_usd: number }>>(`${p.api}/account/usage`, { key });
  expect(result.status).toBe(200);
  return result.body;
}

describe('POST /ai/agent', () => {
  it('lists projects, reads the logs of the one the model picked, and answers with the reply and every step', async () => {
    const { key } = await p.newAccount();
    const project = await createProject(key, 'agent-logs-a');
    await writeLogs(project.id, ['listening on 3000', 'GET / 200', 'Error: ECONNREFUSED 127.0.0.1:5432']);
    openai.push(
      { toolCalls: [{ name: 'list_projects', args: {} }] },
      { toolCalls: [{ name: 'read_deploy_logs', args: { project_id: project.id, lines: 2 } }] },
      { text: 'Your app cannot reach its database on port 5432.' },
    );
    const before = openai.requests.length;

    const result = await call<AgentResponse>(`${p.api}/ai/agent`, {
      key,
      body: ask('Why is my app failing?'),
    });

    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect(result.body.reply).toBe('Your app cannot reach its database on port 5432.');
    const steps = result.body.steps;
    expect(steps.map((s) => [s.tool, s.status])).toEqual([
      ['list_projects', 'ok'],
      ['read_deploy_logs', 'ok'],
    ]);
    for (const step of steps) {
      expect(step.id).toMatch(/^stp_/);
      expect(step.duration_ms).toBeGreaterThanOrEqual(0);
    }
    expect(steps[0]!.output).toEqual([
      expect.objectContaining({ id: project.id, subdomain: 'agent-logs-a' }),
    ]);
    expect(steps[1]!.input).toEqual({ project_id: project.id, lines: 2 });
    const lines = (steps[1]!.output as { lines: string[] }).lines;
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain('GET / 200');
    expect(lines[1]).toContain('ECONNREFUSED');

    // Three model calls; the last one saw both tool results, so the model could answer from them.
    const sent = openai.requests.slice(before);
    expect(sent).toHaveLength(3);
    expect(sent[0]!.headers.authorization).toBe(`Bearer ${INCLUDED_KEY}`);
    expect(sent[0]!.body.tools.map((t: any) => t.function.name).sort()).toEqual(
      [
        'account_status',
        'build_app',
        'create_database',
        'deploy',
        'edit_app',
        'get_project',
        'list_projects',
        'read_deploy_logs',
        'search_docs',
        'set_env_vars',
      ].sort(),
    );
    const seen = toolResults(sent[2]!.body);
    expect(seen).toHaveLength(2);
    expect(JSON.stringify(seen[1]!.content)).toContain('ECONNREFUSED');
  });

  it("never reaches another account's project: the tool answers not_found as an error step", async () => {
    const owner = await p.newAccount();
    const other = await p.newAccount();
    const theirs = await createProject(owner.key, 'agent-private-b');
    await writeLogs(theirs.id, ['SECRET_TOKEN=hunter2 printed by mistake']);
    openai.push(
      {
        toolCalls: [
          { name: 'get_project', args: { project_id: theirs.id } },
          { name: 'read_deploy_logs', args: { project_id: theirs.id } },
        ],
      },
      { toolCalls: [{ name: 'no_such_tool', args: {} }] },
      { text: 'I cannot find that project.' },
    );
    const before = openai.requests.length;

    const result = await call<AgentResponse>(`${p.api}/ai/agent`, {
      key: other.key,
      body: ask(`Show me ${theirs.id}`),
    });

    expect(result.status, JSON.stringify(result.body)).toBe(200);
    const [get, read, unknown] = result.body.steps as AgentStep[];
    for (const step of [get!, read!]) {
      expect(step.status).toBe('error');
      expect(step.output).toEqual({
        error: { code: 'not_found', detail: expect.stringContaining(theirs.id) },
      });
    }
    expect(unknown).toMatchObject({
      tool: 'no_such_tool',
      status: 'error',
      output: { error: { code: 'invalid_tool_call' } },
    });
    expect(JSON.stringify(result.body)).not.toContain('hunter2');
    expect(JSON.stringify(result.body)).not.toContain('agent-private-b');
    // The model was told, and can react: the errors went back as the tools' results.
    const seen = toolResults(openai.requests[before + 1]!.body);
    expect(seen.map((r) => r.content.error.code)).toEqual(['not_found', 'not_found']);
    expect(result.body.reply).toBe('I cannot find that project.');
  });

  it('stops at the step limit with a note, and search_docs finds the tunnels section for "tunnel subdomain"', async () => {
    const { key } = await p.newAccount();
    const saved = p.platform.config.ai.maxSteps;
    p.platform.config.ai.maxSteps = 2;
    try {
      openai.push(
        { toolCalls: [{ name: 'search_docs', args: { query: 'tunnel subdomain' } }] },
        { toolCalls: [{ name: 'search_docs', args: { query: 'rate limit' } }] },
      );
      const run = await stream(p, key, ask('How do tunnels pick a subdomain?'));
      expect(run.status).toBe(200);
      const done = expectWellFormed(run.events);
      expect(openai.pending()).toBe(0);
      const note = run.events.find((e) => e.event === 'note');
      expect(note?.data.text).toMatch(/step limit/);
      expect(run.events.indexOf(note!)).toBe(run.events.length - 2);
      expect(done.data.steps).toHaveLength(2);
      const results = (done.data.steps[0]!.output as { results: Array<{ heading: string; text: string }> })
        .results;
      expect(results.length).toBeGreaterThan(0);
      expect(results.length).toBeLessThanOrEqual(3);
      expect(results[0]!.heading).toMatch(/tunnel/i);
      expect(results[0]!.text).toMatch(/subdomain/i);
    } finally {
      p.platform.config.ai.maxSteps = saved;
    }
  });
});

describe('POST /ai/agent/stream', () => {
  it('sends step, step_done, tokens and done, in order, with done once and last', async () => {
    const { key } = await p.newAccount();
    const project = await createProject(key, 'agent-stream-c');
    await writeLogs(project.id, ['worker started', 'job 42 failed: timeout']);
    openai.push(
      { toolCalls: [{ name: 'list_projects', args: {} }] },
      { toolCalls: [{ name: 'read_deploy_logs', args: { project_id: project.id, stream: 'runtime' } }] },
      { text: 'Job 42 timed out: raise its timeout.', usage: { input: 100, output: 20 } },
    );

    const run = await stream(p, key, ask('What went wrong?'));

    expect(run.status).toBe(200);
    expect(run.contentType).toMatch(/^text\/event-stream/);
    const done = expectWellFormed(run.events);
    const order = run.events.map((e) => e.event).filter((name, i, all) => name !== all[i - 1]);
    expect(order).toEqual(['step', 'step_done', 'step', 'step_done', 'token', 'done']);
    const [step1, done1, step2, done2] = run.events;
    expect(step1!.data).toMatchObject({ tool: 'list_projects', input: {} });
    expect(done1!.data).toMatchObject({ id: step1!.data.id, tool: 'list_projects', status: 'ok' });
    expect(step2!.data).toMatchObject({
      tool: 'read_deploy_logs',
      input: { project_id: project.id, stream: 'runtime' },
    });
    expect(done2!.data.id).toBe(step2!.data.id);
    expect(JSON.stringify(done2!.data.output)).toContain('job 42 failed');
    const tokens = run.events.filter((e) => e.event === 'token').map((e) => e.data.text);
    expect(tokens.length).toBeGreaterThan(1);
    expect(tokens.join('')).toBe('Job 42 timed out: raise its timeout.');
    expect(done.data.reply).toBe(tokens.join(''));
    expect(done.data.steps.map((s) => s.id)).toEqual([step1!.data.id, step2!.data.id]);
    // The included engine: three calls at 10+5, 10+5 and 100+20 tokens, $100 / $400 per Mtok.
    expect(done.data.usage.engine).toBe('included');
    expect(done.data.usage.cost_usd).toBeCloseTo((120 * 100 + 30 * 400) / 1e6, 9);
  });

  it('builds an app from a template through build_app, streaming build_log and build_status, then done', async () => {
    const { key } = await p.newAccount();
    openai.push(
      {
        toolCalls: [
          {
            name: 'build_app',
            args: {
              generator: 'landing',
              prompt: 'A landing page for Quokka Coffee',
              subdomain: 'agent-quokka',
              use_template: true,
            },
          },
        ],
      },
      { text: 'Your landing page is live.' },
    );

    const run = await stream(p, key, ask('Make me a landing page for Quokka Coffee at agent-quokka'));

    expect(run.status).toBe(200);
    const done = expectWellFormed(run.events);
    const names = run.events.map((e) => e.event);
    const start = names.indexOf('step');
    const end = names.indexOf('step_done');
    expect(start).toBe(0);
    const during = run.events.slice(start + 1, end);
    expect(during.some((e) => e.event === 'build_log')).toBe(true);
    const statuses = during.filter((e) => e.event === 'build_status').map((e) => e.data.status);
    expect(statuses[0]).toBe('building');
    expect(statuses.at(-1)).toBe('running');
    const projectId = during.find((e) => e.event === 'build_log')!.data.project_id;
    expect(projectId).toMatch(/^prj_/);
    expect(done.data.steps[0]).toMatchObject({
      tool: 'build_app',
      status: 'ok',
      output: { project_id: projectId, status: 'running', url: expect.stringContaining('agent-quokka') },
    });
    expect(done.data.reply).toBe('Your landing page is live.');
    // Only the agent's two model calls went to the provider: the template needed none.
    expect(openai.pending()).toBe(0);
    const owned = await call<Project>(`${p.api}/projects/${projectId}`, { key });
    expect(owned.status).toBe(200);
    await call(`${p.api}/projects/${projectId}/stop`, { key, method: 'POST' });
  });

  it('stops the run when the client goes away, while the deploy it started goes on', async () => {
    const { key } = await p.newAccount();
    const repos = mkdtempSync(join(tmpdir(), 'wharf-agent-repos-'));
    // An app that never listens: its deploy stays `building` until the health check gives up.
    const repoUrl = gitRepo(repos, 'silent', {
      'package.json': JSON.stringify({ name: 'silent', private: true, scripts: { start: 'node idle.js' } }),
      'idle.js': 'setInterval(() => undefined, 1000);\n',
    });
    openai.push({ toolCalls: [{ name: 'deploy', args: { repo_url: repoUrl, subdomain: 'agent-silent' } }] });
    const before = openai.requests.length;
    const followers = (p.platform.logs as unknown as { followers: EventEmitter }).followers;
    const client = new AbortController();
    try {
      const response = await fetch(`${p.api}/ai/agent/stream`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify(ask('Deploy it')),
        signal: client.signal,
      });
      expect(response.status).toBe(200);
      const reader = response.body!.getReader();
      let text = '';
      while (!/event: build_status/.test(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended early: ${text}`);
        text += new TextDecoder().decode(value);
      }
      const projectId = /"project_id":"(prj_[^"]+)"/.exec(text)![1]!;
      expect(followers.listenerCount(projectId)).toBe(1);

      client.abort();

      // The tool stops following the deploy and no further model call is made.
      await until(() => followers.listenerCount(projectId) === 0, 'the agent to stop following the deploy');
      await new Promise((r) => setTimeout(r, 200));
      expect(openai.requests.length).toBe(before + 1);
      const project = await call<{ project: Project }>(`${p.api}/projects/${projectId}`, { key });
      expect(project.body.project.status).toBe('building');
      await call(`${p.api}/projects/${projectId}/stop`, { key, method: 'POST' });
    } finally {
      client.abort();
      rmSync(repos, { recursive: true, force: true });
    }
  });

  it('sends a keep-alive comment every agentHeartbeatMs while a tool waits, and nothing after done', async () => {
    const { key } = await p.newAccount();
    const repos = mkdtempSync(join(tmpdir(), 'wharf-agent-repos-'));
    // An app that takes 1.5 s to listen: the deploy tool waits at least that long for it.
    const repoUrl = gitRepo(repos, 'slow', {
      'package.json': JSON.stringify({ name: 'slow', private: true, scripts: { start: 'node server.js' } }),
      'server.js':
        "setTimeout(() => require('node:http').createServer((q, r) => r.end('slow')).listen(Number(process.env.PORT)), 1500);\n",
    });
    const saved = p.platform.config.ai.agentHeartbeatMs;
    p.platform.config.ai.agentHeartbeatMs = 100;
    try {
      openai.push(
        { toolCalls: [{ name: 'deploy', args: { repo_url: repoUrl, subdomain: 'agent-heartbeat' } }] },
        { text: 'It is up.' },
      );
      const run = await stream(p, key, ask('Deploy my slow app'));
      expect(run.status).toBe(200);
      const done = expectWellFormed(run.events);
      expect(done.data.steps[0]).toMatchObject({
        tool: 'deploy',
        status: 'ok',
        output: { status: 'running' },
      });
      expect(done.data.steps[0]!.duration_ms).toBeGreaterThanOrEqual(1500);

      const order = run.order;
      const during = order.slice(order.indexOf('step'), order.indexOf('step_done'));
      expect(during.filter((b) => b === 'keep-alive').length).toBeGreaterThanOrEqual(5);
      expect(order.at(-1)).toBe('done');
      expect(run.raw.endsWith('\n\n')).toBe(true);
      const { project_id } = done.data.steps[0]!.output as { project_id: string };
      await call(`${p.api}/projects/${project_id}/stop`, { key, method: 'POST' });
    } finally {
      p.platform.config.ai.agentHeartbeatMs = saved;
      rmSync(repos, { recursive: true, force: true });
    }
  });

  it('ends with error then done when the provider fails midway', async () => {
    const { key } = await p.newAccount();
    openai.push(
      { toolCalls: [{ name: 'account_status', args: {} }] },
      { error: { status: 500, message: 'upstream exploded' } },
    );

    const run = await stream(p, key, ask('How much balance do I have?'));

    expect(run.status).toBe(200);
    const done = expectWellFormed(run.events);
    expect(run.events.map((e) => e.event)).toEqual(['step', 'step_done', 'error', 'done']);
    expect(run.events[1]!.data.output).toMatchObject({
      plan: 'free',
      balance: { available_usd: expect.any(Number) },
    });
    expect(run.events[2]!.data).toEqual({
      code: 'provider_error',
      detail: expect.stringMatching(/openai.*500/),
    });
    expect(done.data.steps).toHaveLength(1);
  });

  it('answers the checks before the stream as problem+json: no engine 503, unverified 403, 422', async () => {
    const noEngine = expectProblem(
      await call(`${bare.api}/ai/agent/stream`, { key: bare.key, body: ask('hi') }),
      503,
      'unavailable',
    );
    expect(noEngine.detail).toMatch(/PUT \/account\/ai-key/);
    expect(noEngine.detail).toMatch(/WHARF_AI_KEY/);
    expectProblem(await call(`${bare.api}/ai/agent`, { key: bare.key, body: ask('hi') }), 503, 'unavailable');

    const unverified = await p.newAccount({ verified: false });
    expectProblem(
      await call(`${p.api}/ai/agent/stream`, { key: unverified.key, body: ask('hi') }),
      403,
      'email_not_verified',
    );
    expectProblem(
      await call(`${p.api}/ai/agent`, { key: unverified.key, body: ask('hi') }),
      403,
      'email_not_verified',
    );

    const invalid = expectProblem(
      await call(`${p.api}/ai/agent/stream`, {
        key: p.key,
        body: { messages: [{ role: 'system', content: 'x' }] },
      }),
      422,
      'validation_failed',
    );
    expect(invalid.errors?.[0]?.path).toBe('messages[0].role');
  });

  it('answers 429 with Retry-After once the account used its calls of the minute', async () => {
    const { key } = await p.newAccount();
    const saved = p.platform.config.ai.ratePerMinute;
    p.platform.config.ai.ratePerMinute = 1;
    try {
      openai.push({ text: 'Hello.' });
      const first = await call<AgentResponse>(`${p.api}/ai/agent`, { key, body: ask('hi') });
      expect(first.status).toBe(200);
      const limited = await call(`${p.api}/ai/agent/stream`, { key, body: ask('hi again') });
      expectProblem(limited, 429, 'rate_limited');
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      p.platform.config.ai.ratePerMinute = saved;
    }
  });

  it('sends error rate_limited then done when the limit is hit midway through a run', async () => {
    const { key } = await p.newAccount();
    const saved = p.platform.config.ai.ratePerMinute;
    p.platform.config.ai.ratePerMinute = 2;
    try {
      openai.push(
        { toolCalls: [{ name: 'list_projects', args: {} }] },
        { toolCalls: [{ name: 'account_status', args: {} }] },
      );
      const run = await stream(p, key, ask('Tell me everything'));
      expect(run.status).toBe(200);
      expect(run.comments[0]).toBe('agent run started');
      const done = expectWellFormed(run.events);
      expect(run.events.map((e) => e.event)).toEqual([
        'step',
        'step_done',
        'step',
        'step_done',
        'error',
        'done',
      ]);
      expect(run.events[4]!.data).toEqual({
        code: 'rate_limited',
        detail: expect.stringMatching(/2 AI calls/),
      });
      expect(done.data.steps.map((s) => s.tool)).toEqual(['list_projects', 'account_status']);
      expect(openai.pending()).toBe(0);
    } finally {
      p.platform.config.ai.ratePerMinute = saved;
    }
  });
});

describe('billing', () => {
  it('charges the included engine (ledger kind ai_usage) and not an own key (here on Anthropic)', async () => {
    const { key } = await p.newAccount();
    openai.push({ text: 'Included.', usage: { input: 1000, output: 500 } });
    const included = await call<AgentResponse>(`${p.api}/ai/agent`, { key, body: ask('hi') });
    expect(included.status).toBe(200);
    const charged = (await usageEntries(key)).filter((e) => e.kind === 'ai_usage');
    expect(charged).toHaveLength(1);
    expect(charged[0]!.amount_usd).toBeCloseTo(-((1000 * 100 + 500 * 400) / 1e6), 9);

    const saved = await call(`${p.api}/account/ai-key`, {
      method: 'PUT',
      key,
      body: { provider: 'anthropic', key: OWN_ANTHROPIC_KEY },
    });
    expect(saved.status).toBe(200);
    anthropic.push(
      { toolCalls: [{ name: 'list_projects', args: {} }], usage: { input: 1000, output: 500 } },
      { text: 'Own key.', usage: { input: 1000, output: 500 } },
    );
    const before = anthropic.requests.length;
    const run = await stream(p, key, ask('list my projects'));
    const done = expectWellFormed(run.events);
    expect(done.data.usage).toEqual({ engine: 'own_key', cost_usd: 0 });
    expect(done.data.steps.map((s) => [s.tool, s.status])).toEqual([['list_projects', 'ok']]);
    expect(done.data.reply).toBe('Own key.');
    expect(anthropic.requests.slice(before).map((r) => r.headers['x-api-key'])).toEqual([
      OWN_ANTHROPIC_KEY,
      OWN_ANTHROPIC_KEY,
    ]);
    expect((await usageEntries(key)).filter((e) => e.kind === 'ai_usage')).toHaveLength(1);
  });
});

describe('tools that change projects', () => {
  it('set_env_vars merges the values and redeploys: the app sees them, the model never gets a value back', async () => {
    const { key } = await p.newAccount();
    const project = await aiProject(key, 'agent-env', nodeApp('env app'));
    // A secret the user set: the model must never see it.
    const put = await call(`${p.api}/projects/${project.id}`, {
      method: 'PUT',
      key,
      body: { env_vars: { API_TOKEN: 'tok-user-secret-41f7', OLD_FLAG: '1' } },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    openai.push(
      {
        toolCalls: [
          {
            name: 'set_env_vars',
            args: {
              project_id: project.id,
              env: { GREETING: 'value-from-chat-93ab' },
              unset: ['OLD_FLAG'],
              redeploy: true,
            },
          },
        ],
      },
      { text: 'GREETING is set and the app redeployed.' },
    );
    const before = openai.requests.length;

    const run = await stream(p, key, ask('Set GREETING to value-from-chat-93ab and drop OLD_FLAG'));

    expect(run.status).toBe(200);
    const done = expectWellFormed(run.events);
    const step = done.data.steps[0]!;
    expect(step).toMatchObject({
      tool: 'set_env_vars',
      status: 'ok',
      output: { project_id: project.id, env_var_names: ['API_TOKEN', 'GREETING'], status: 'running' },
    });
    const statuses = run.events.filter((e) => e.event === 'build_status').map((e) => e.data.status);
    expect(statuses[0]).toBe('building');
    expect(statuses.at(-1)).toBe('running');
    // Merged: the new value, the user's secret kept, the unset one gone, in the running app.
    const env = await appEnv(project);
    expect(env).toMatchObject({ API_TOKEN: 'tok-user-secret-41f7', GREETING: 'value-from-chat-93ab' });
    expect(env.OLD_FLAG).toBeUndefined();

    // The model gets names back, never a value: not in the tool's result, not in any request.
    expect(JSON.stringify(step.output)).not.toMatch(/value-from-chat-93ab|tok-user-secret-41f7/);
    const sent = openai.requests.slice(before);
    expect(sent).toHaveLength(2);
    for (const request of sent) expect(JSON.stringify(request.body)).not.toContain('tok-user-secret-41f7');
    const results = toolResults(sent[1]!.body);
    expect(results).toHaveLength(1);
    expect(JSON.stringify(results)).not.toContain('value-from-chat-93ab');
    expect(results[0]!.content.env_var_names).toEqual(['API_TOKEN', 'GREETING']);
  });

  it('edit_app has the model change an AI project, answers the changed files, and the app serves the change', async () => {
    const { key } = await p.newAccount();
    const project = await aiProject(key, 'agent-edit', nodeApp('before the edit'));
    expect((await viaEdge(p.edgePort, `${project.subdomain}.localhost`, '/')).body).toBe('before the edit /');
    const instruction = 'Greet with "after the edit" instead';
    openai.push(
      { toolCalls: [{ name: 'edit_app', args: { project_id: project.id, instruction } }] },
      // The builder's own call to the model, for the edit.
      changed({ 'server.js': nodeApp('after the edit')['server.js']! }, 'new greeting'),
      { text: 'Done: it now says "after the edit".' },
    );
    const before = openai.requests.length;

    const run = await stream(p, key, ask(instruction));

    expect(run.status).toBe(200);
    const done = expectWellFormed(run.events);
    expect(done.data.steps).toHaveLength(1);
    expect(done.data.steps[0]).toMatchObject({
      tool: 'edit_app',
      status: 'ok',
      output: { changed_files: ['server.js'], project_id: project.id, status: 'running' },
    });
    expect(run.events.some((e) => e.event === 'build_log' && e.data.project_id === project.id)).toBe(true);
    expect((await viaEdge(p.edgePort, `${project.subdomain}.localhost`, '/')).body).toBe('after the edit /');
    expect(done.data.reply).toBe('Done: it now says "after the edit".');
    // The edit request carried the instruction and the app's files; the edit is the repository's head.
    const sent = openai.requests.slice(before);
    expect(sent).toHaveLength(3);
    expect(JSON.stringify(sent[1]!.body)).toContain('after the edit');
    expect(JSON.stringify(sent[1]!.body)).toContain('before the edit');
    expect(openai.pending()).toBe(0);
    const log = await p.platform.logs.read(project.id, { limit: 200 });
    expect(log.map((l) => l.line)).toContain(`Edit: ${instruction} (changed server.js)`);
  });

  it('create_database with no PostgreSQL server configured is an error step explaining the 503', async () => {
    const { key } = await p.newAccount();
    const project = await createProject(key, 'agent-nodb');
    openai.push(
      { toolCalls: [{ name: 'create_database', args: { project_id: project.id } }] },
      { text: 'This platform has no database server.' },
    );
    const before = openai.requests.length;

    const result = await call<AgentResponse>(`${p.api}/ai/agent`, {
      key,
      body: ask('Give my app a database'),
    });

    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect(result.body.steps).toEqual([
      expect.objectContaining({
        tool: 'create_database',
        status: 'error',
        output: {
          error: {
            code: 'unavailable',
            detail: expect.stringMatching(
              /no PostgreSQL server is configured.*WHARF_POSTGRES_URL=postgres:\/\//,
            ),
          },
        },
      }),
    ]);
    // The model was told why, and nothing changed on the project.
    const seen = toolResults(openai.requests[before + 1]!.body);
    expect(seen[0]!.content.error.code).toBe('unavailable');
    const after = await call<{ project: Project }>(`${p.api}/projects/${project.id}`, { key });
    expect(after.body.project.status).toBe('created');
    expect(after.body.project.env_vars).toEqual({});
  });

  const pgBin = postgresBin();

  describe.skipIf(!pgBin)('create_database with a real PostgreSQL (skipped: initdb is not installed)', () => {
    let postgres: TestPostgres;

    beforeAll(async () => {
      postgres = await startPostgres();
    }, 60_000);
    afterAll(async () => {
      await postgres?.stop();
    });

    it('creates the database, sets DATABASE_URL on the project and redeploys it, without showing the URL to the model', async () => {
      const { key } = await p.newAccount();
      const repos = mkdtempSync(join(tmpdir(), 'wharf-agent-repos-'));
      const saved = p.platform.config.ai.postgresUrl;
      p.platform.config.ai.postgresUrl = postgres.url;
      try {
        const created = await call<Project>(`${p.api}/projects`, {
          key,
          body: {
            name: 'With a database',
            subdomain: 'agent-db',
            repo_url: gitRepo(repos, 'db', nodeApp('db app')),
          },
        });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        const project = created.body;
        openai.push(
          {
            toolCalls: [{ name: 'create_database', args: { project_id: project.id, env: { DB_POOL: '4' } } }],
          },
          { text: 'Your app has a PostgreSQL database.' },
        );
        const before = openai.requests.length;

        const run = await stream(p, key, ask('My app needs a database'));

        expect(run.status).toBe(200);
        const done = expectWellFormed(run.events);
        expect(done.data.steps[0]).toMatchObject({
          tool: 'create_database',
          status: 'ok',
          output: {
            database: 'postgres',
            env_var_set: 'DATABASE_URL',
            project_id: project.id,
            status: 'running',
          },
        });
        const detail = await call<{ project: Project }>(`${p.api}/projects/${project.id}`, { key });
        const { env_vars } = detail.body.project;
        expect(Object.keys(env_vars).sort()).toEqual(['DATABASE_URL', 'DB_POOL']);
        const databaseUrl = new URL(env_vars.DATABASE_URL!);
        expect(databaseUrl.port).toBe(String(postgres.port));
        expect(databaseUrl.username).toMatch(/^wharf_prj_/);
        // The running app has it, and it opens the project's own database.
        expect((await appEnv(project)).DATABASE_URL).toBe(env_vars.DATABASE_URL);
        const client = new pg.Client({ connectionString: databaseUrl.href });
        await client.connect();
        try {
          const row = await client.query<{ db: string }>('SELECT current_database() AS db');
          expect(row.rows[0]!.db).toBe(databaseUrl.pathname.slice(1));
        } finally {
          await client.end();
        }
        // The password never went to the model.
        for (const request of openai.requests.slice(before)) {
          expect(JSON.stringify(request.body)).not.toContain(databaseUrl.password);
        }
        await call(`${p.api}/projects/${project.id}/stop`, { key, method: 'POST' });
      } finally {
        p.platform.config.ai.postgresUrl = saved;
        rmSync(repos, { recursive: true, force: true });
      }
    });
  });
});
