// The offline templates really run: each generator's app is written to a folder and started the way its
// Procfile (or package.json) says, with PORT set, then asked over HTTP — / and /health, and what the
// app is for (the API's validation, the Telegram bot replying through a fake Bot API, the Discord bot
// checking Ed25519 signatures, the worker printing its runs, the database apps on a real PostgreSQL).
// Then the model path against the fake OpenAI-compatible server: a fenced JSON answer becomes the app,
// an invalid one is retried once, and every call's usage is reported.
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ResolvedEngine } from '../../src/server/ai/engines.js';
import {
  type FileSet,
  type GeneratedApp,
  editApp,
  generateApp,
  repairApp,
} from '../../src/server/ai/generators/index.js';
import { languageModel } from '../../src/server/ai/providers/index.js';
import { freePort } from '../../src/server/runtime/process.js';
import type { Generator } from '../../src/shared/api/ai.js';
import { writeFiles } from '../helpers/deploy.js';
import { type FakeAi, startFakeOpenAI } from '../helpers/fake-ai.js';
import { type TestPostgres, postgresBin, startPostgres } from '../helpers/postgres.js';

const root = mkdtempSync(join(tmpdir(), 'wharf-ai-templates-'));
/** The apps here run as processes: their Dockerfiles' base images are only names. */
const images = { node: 'node:22-slim', python: 'python:3.12-slim' };
const running = new Set<RunningApp>();
const servers = new Set<Server>();

afterEach(async () => {
  await Promise.all([...running].map((app) => app.stop()));
  await Promise.all([...servers].map((server) => closeServer(server)));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface RunningApp {
  port: number;
  output: string[];
  stop(): Promise<void>;
}

let count = 0;
async function offline(generator: Generator, prompt: string): Promise<{ app: GeneratedApp; dir: string }> {
  const app = await generateApp({ generator, prompt, subdomain: 'demo', model: null, images });
  count += 1;
  const dir = join(root, `${generator}-${count}`);
  writeFiles(dir, app.files);
  return { app, dir };
}

/** The command of a Procfile process. */
function procfile(files: FileSet, kind: 'web' | 'worker'): string {
  const line = files.Procfile?.split('\n').find((l) => l.startsWith(`${kind}:`));
  if (!line) throw new Error(`no ${kind} process in the Procfile`);
  return line.slice(kind.length + 1).trim();
}

/** Starts `command` in its own process group, as the runtime does, with PORT and `env`. */
async function start(dir: string, command: string, env: Record<string, string> = {}): Promise<RunningApp> {
  const port = await freePort();
  const output: string[] = [];
  const child: ChildProcess = spawn('/bin/sh', ['-c', command], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, PORT: String(port), ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.on('data', (chunk: Buffer) => output.push(...chunk.toString().split('\n').filter(Boolean)));
  }
  // 'close', not 'exit': by then the output is read to its end.
  const exited = new Promise<void>((done) => child.once('close', () => done()));
  const app: RunningApp = {
    port,
    output,
    stop: async () => {
      running.delete(app);
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, 'SIGTERM');
        } catch {
          // already gone
        }
        const timer = setTimeout(() => {
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            // already gone
          }
        }, 3_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
  running.add(app);
  return app;
}

async function startWeb(dir: string, command: string, env: Record<string, string> = {}): Promise<RunningApp> {
  const app = await start(dir, command, env);
  await vi.waitFor(
    () =>
      fetch(`http://127.0.0.1:${app.port}/health`).catch((error: Error) => {
        throw new Error(`GET /health: ${error.message} (${app.output.join(' | ')})`);
      }),
    { timeout: 15_000, interval: 50 },
  );
  return app;
}

const get = (app: RunningApp, path: string) => fetch(`http://127.0.0.1:${app.port}${path}`);
const send = (
  app: RunningApp,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) =>
  fetch(`http://127.0.0.1:${app.port}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });

async function expectRootAndHealth(app: RunningApp): Promise<void> {
  const home = await get(app, '/');
  expect(home.status).toBe(200);
  const health = await get(app, '/health');
  expect(health.status).toBe(200);
  expect(await health.json()).toMatchObject({ status: 'ok' });
}

/** A local HTTP server recording requests; `answer` decides the reply. */
async function recorder(answer: (req: IncomingMessage, body: string) => { status: number; body: unknown }) {
  const requests: Array<{ method: string; path: string; body: string; headers: IncomingMessage['headers'] }> =
    [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method!, path: req.url!, body, headers: req.headers });
      const reply = answer(req, body);
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  servers.add(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

function closeServer(server: Server): Promise<void> {
  servers.delete(server);
  return new Promise((done) => {
    server.close(() => done());
    server.closeAllConnections();
  });
}

describe('offline templates run', () => {
  it('web: the page, the form, the JSON list and /health', async () => {
    const { app, dir } = await offline('web', 'A website for a bakery with cakes, breads and pastries');
    const web = await startWeb(dir, procfile(app.files, 'web'));
    await expectRootAndHealth(web);
    expect(await (await get(web, '/')).text()).toContain('<li><strong>Cakes</strong>');
    expect((await get(web, '/styles.css')).headers.get('content-type')).toContain('text/css');

    const form = await fetch(`http://127.0.0.1:${web.port}/items`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'name=Croissants&description=Buttery',
      redirect: 'manual',
    });
    expect(form.status).toBe(303);
    const created = await send(web, 'POST', '/api/items', { name: 'Tarts' });
    expect(created.status).toBe(201);
    const list = (await (await get(web, '/api/items')).json()) as { items: Array<{ name: string }> };
    expect(list.items.map((i) => i.name)).toEqual(['Cakes', 'Breads', 'Pastries', 'Croissants', 'Tarts']);
    const invalid = await send(web, 'POST', '/api/items', { name: '' });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toEqual({
      error: { code: 'validation_failed', message: 'name is required' },
    });
    expect(web.output.some((line) => /listening on 0\.0\.0\.0:\d+/.test(line))).toBe(true);
  });

  it('api: list, create with validation, get, delete', async () => {
    const { app, dir } = await offline('api', 'A REST API to track books');
    const api = await startWeb(dir, procfile(app.files, 'web'));
    await expectRootAndHealth(api);
    expect(await (await get(api, '/')).json()).toMatchObject({
      endpoints: expect.arrayContaining(['GET /books']),
    });

    const created = await send(api, 'POST', '/books', { name: 'Dune', tags: ['sf'] });
    expect(created.status).toBe(201);
    const book = (await created.json()) as { id: string };
    expect(created.headers.get('location')).toBe(`/books/${book.id}`);
    expect(await (await get(api, `/books/${book.id}`)).json()).toMatchObject({ name: 'Dune', tags: ['sf'] });
    expect(await (await get(api, '/books?q=dun')).json()).toMatchObject({ count: 1 });

    const cases: Array<[unknown, string, string | undefined]> = [
      [{}, 'name is required and must be a non-empty string', 'name'],
      [{ name: 'x', tags: 'no' }, 'tags must be a list of strings of 1 to 50 characters', 'tags'],
      [{ name: 'x', colour: 'red' }, 'unknown field(s): colour; allowed: name, description, tags', undefined],
      [[1, 2], 'the body must be a JSON object', undefined],
    ];
    for (const [body, message, field] of cases) {
      const response = await send(api, 'POST', '/books', body);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        error: { code: 'validation_failed', message, ...(field ? { field } : {}) },
      });
    }
    const broken = await send(api, 'POST', '/books', '{"name":');
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { error: { message: string } }).error.message).toMatch(
      /^the body is not valid JSON/,
    );

    expect((await send(api, 'DELETE', `/books/${book.id}`)).status).toBe(204);
    expect((await get(api, `/books/${book.id}`)).status).toBe(404);
    expect((await send(api, 'DELETE', `/books/${book.id}`)).status).toBe(404);
    expect((await get(api, '/nothing')).status).toBe(404);
  });

  it('messaging-bot: answers an update through the Bot API at TELEGRAM_API_URL', async () => {
    const telegram = await recorder(() => ({ status: 200, body: { ok: true, result: {} } }));
    const { app, dir } = await offline(
      'messaging-bot',
      'A Telegram bot for my yoga studio with classes and prices',
    );
    const bot = await startWeb(dir, procfile(app.files, 'web'), {
      BOT_TOKEN: '123:abc',
      TELEGRAM_API_URL: telegram.url,
      WEBHOOK_SECRET: 's3cret',
    });
    await expectRootAndHealth(bot);
    const update = {
      update_id: 1,
      message: { message_id: 1, chat: { id: 42 }, from: { first_name: 'Ann' }, text: 'what about prices?' },
    };
    expect((await send(bot, 'POST', '/webhook', update)).status).toBe(401);
    const accepted = await send(bot, 'POST', '/webhook', update, {
      'x-telegram-bot-api-secret-token': 's3cret',
    });
    expect(accepted.status).toBe(200);
    const start = { ...update, message: { ...update.message, text: '/start' } };
    await send(bot, 'POST', '/webhook', start, { 'x-telegram-bot-api-secret-token': 's3cret' });
    const sent = telegram.requests
      .filter((r) => r.path === '/bot123:abc/sendMessage')
      .map((r) => JSON.parse(r.body));
    expect(sent).toEqual([
      { chat_id: 42, text: 'Prices: ask me anything about it.' },
      { chat_id: 42, text: expect.stringMatching(/^Hi Ann! I am Yoga Studio/) },
    ]);
    expect(await (await get(bot, '/health')).json()).toMatchObject({ updates: 2, replies: 2 });
  });

  it('messaging-bot: starts and serves /health with no token and no network', async () => {
    const { app, dir } = await offline('messaging-bot', 'a bot');
    const bot = await startWeb(dir, procfile(app.files, 'web'), { TELEGRAM_API_URL: 'http://127.0.0.1:9' });
    expect(await (await get(bot, '/health')).json()).toMatchObject({ status: 'ok', token_configured: false });
  });

  it('community-bot: verifies Ed25519 signatures, answers PING and commands, registers its commands', async () => {
    const discord = await recorder((req) =>
      req.method === 'GET' ? { status: 200, body: { id: '987' } } : { status: 200, body: [] },
    );
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('hex');
    const { app, dir } = await offline(
      'community-bot',
      'A Discord bot for our gaming community with events and rules',
    );
    const bot = await startWeb(dir, procfile(app.files, 'web'), {
      DISCORD_PUBLIC_KEY: raw,
      DISCORD_BOT_TOKEN: 'bot-token',
      DISCORD_API_URL: discord.url,
    });
    await expectRootAndHealth(bot);
    const interact = (payload: unknown, tamper = false) => {
      const body = JSON.stringify(payload);
      const timestamp = String(Math.floor(Date.now() / 1000));
      const signature = sign(null, Buffer.from(timestamp + body), privateKey).toString('hex');
      return send(bot, 'POST', '/interactions', tamper ? body.replace('}', ' }') : body, {
        'x-signature-ed25519': signature,
        'x-signature-timestamp': timestamp,
      });
    };
    const pong = await interact({ type: 1 });
    expect(pong.status).toBe(200);
    expect(await pong.json()).toEqual({ type: 1 });
    const hello = await interact({ type: 2, data: { name: 'hello' }, member: { user: { username: 'kim' } } });
    expect(await hello.json()).toEqual({ type: 4, data: { content: 'Hello kim! I am Gaming Community.' } });
    const topic = await interact({
      type: 2,
      data: { name: 'topic', options: [{ name: 'name', value: 'rules' }] },
    });
    expect(await topic.json()).toEqual({ type: 4, data: { content: 'Rules: ask the community about it!' } });
    expect((await interact({ type: 1 }, true)).status).toBe(401);
    expect((await send(bot, 'POST', '/interactions', { type: 1 })).status).toBe(401);

    await vi.waitFor(
      () => {
        const put = discord.requests.find((r) => r.method === 'PUT');
        if (!put) throw new Error('no PUT yet');
        expect(put.path).toBe('/applications/987/commands');
        expect(put.headers.authorization).toBe('Bot bot-token');
        expect((JSON.parse(put.body) as Array<{ name: string }>).map((c) => c.name)).toEqual([
          'hello',
          'about',
          'help',
          'topic',
        ]);
      },
      { timeout: 5_000, interval: 50 },
    );
  });

  it('community-bot: starts and serves /health with no configuration and no network', async () => {
    const { app, dir } = await offline('community-bot', 'a bot');
    const bot = await startWeb(dir, procfile(app.files, 'web'), { DISCORD_API_URL: 'http://127.0.0.1:9' });
    expect(await (await get(bot, '/health')).json()).toMatchObject({
      status: 'ok',
      public_key_configured: false,
    });
  });

  it('worker: runs at start and prints what it does within 3 s', async () => {
    const target = await recorder(() => ({ status: 200, body: {} }));
    const { app, dir } = await offline('worker', `A job that checks ${target.url}/ping every 10 seconds`);
    const started = Date.now();
    const worker = await start(dir, procfile(app.files, 'worker'), { INTERVAL_SECONDS: '1' });
    const line = await vi.waitFor(
      () => {
        const found = worker.output.find((l) => /run 1: 1\/1 up; next run in 1 s/.test(l));
        if (!found) throw new Error(worker.output.join(' | '));
        return found;
      },
      { timeout: 3_000, interval: 50 },
    );
    expect(line).toBeTruthy();
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(worker.output.some((l) => l.includes(`${target.url}/ping: UP (HTTP 200`))).toBe(true);
    await vi.waitFor(() => expect(worker.output.some((l) => l.includes('run 2:'))).toBe(true), {
      timeout: 3_000,
      interval: 50,
    });
  });

  it('worker: a job without URLs does its bookkeeping, and stops on SIGTERM', async () => {
    const { app, dir } = await offline('worker', 'Clean up old sessions every minute');
    const worker = await start(dir, procfile(app.files, 'worker'));
    await vi.waitFor(
      () => expect(worker.output.join('\n')).toMatch(/run 1: task done \(uptime \d+ s\); next run in 60 s/),
      { timeout: 3_000, interval: 50 },
    );
    await worker.stop();
    expect(worker.output.at(-1)).toMatch(/stopped$/);
  });

  it.each(['portfolio', 'landing'] as const)(
    '%s: a static site the runtime serves as it is',
    async (generator) => {
      const { app, dir } = await offline(
        generator,
        `A ${generator} for Ada Lovelace, a mathematician, with notes and engines`,
      );
      expect(app.files.Procfile).toBeUndefined();
      expect(app.files['package.json']).toBeUndefined();
      const site = await staticServer(dir);
      const home = await fetch(`${site}/`);
      expect(home.status).toBe(200);
      const html = await home.text();
      expect(html).toContain('<link rel="stylesheet" href="styles.css">');
      expect(html).toContain('Ada Lovelace');
      expect((await fetch(`${site}/styles.css`)).status).toBe(200);
      expect(JSON.parse(readFileSync(join(dir, 'content.json'), 'utf8'))).toMatchObject({ kind: generator });
    },
  );
});

/** The smallest static file server: what the platform's static serving does for a site. */
async function staticServer(dir: string): Promise<string> {
  const types: Record<string, string> = {
    '.html': 'text/html',
    '.css': 'text/css',
    '.json': 'application/json',
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const file = resolve(dir, `.${path.endsWith('/') ? `${path}index.html` : path}`);
    try {
      if (!file.startsWith(dir)) throw new Error('outside');
      const body = readFileSync(file);
      res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  servers.add(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe.skipIf(!postgresBin())('offline database templates run on PostgreSQL', () => {
  let postgres: TestPostgres;
  beforeAll(async () => {
    postgres = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await postgres?.stop();
  });

  /** The app folder with the repository's `pg` linked in, instead of `npm install` (no network here). */
  function withPg(dir: string): void {
    mkdirSync(join(dir, 'node_modules'), { recursive: true });
    symlinkSync(resolve('node_modules/pg'), join(dir, 'node_modules', 'pg'));
  }

  it.each([
    ['api', 'An API that stores customers and their orders', '/customers'],
    ['web', 'A website where users save recipes', '/api/recipes'],
  ] as const)('%s keeps its data in the database across a restart', async (generator, prompt, collection) => {
    const { app, dir } = await offline(generator, prompt);
    expect(app.needs.database).toBe('postgres');
    const manifest = JSON.parse(app.files['package.json']!) as { scripts: { start: string } };
    withPg(dir);
    const env = { DATABASE_URL: postgres.url };
    let server = await startWeb(dir, manifest.scripts.start, env);
    await expectRootAndHealth(server);
    const created = await send(server, 'POST', collection, { name: 'First', description: 'kept' });
    expect(created.status).toBe(201);
    const row = (await created.json()) as { id: number };
    expect((await send(server, 'POST', collection, { name: 7 })).status).toBe(400);
    await server.stop();

    server = await startWeb(dir, manifest.scripts.start, env);
    expect(await (await get(server, `${collection}/${row.id}`)).json()).toMatchObject({
      name: 'First',
      description: 'kept',
    });
    if (generator === 'web')
      expect(await (await get(server, '/')).text()).toContain('<strong>First</strong>');
    expect((await send(server, 'DELETE', `${collection}/${row.id}`)).status).toBe(204);
    expect((await get(server, `${collection}/${row.id}`)).status).toBe(404);
  });

  it('exits with a clear message when DATABASE_URL is missing', async () => {
    const { app, dir } = await offline('api', 'An API that stores orders');
    withPg(dir);
    const server = await start(dir, JSON.parse(app.files['package.json']!).scripts.start);
    await vi.waitFor(() => expect(server.output.join('\n')).toMatch(/DATABASE_URL is not set/), {
      timeout: 5_000,
      interval: 50,
    });
  });
});

describe('with a model (fake OpenAI-compatible server)', () => {
  let fake: FakeAi;
  let engine: ResolvedEngine;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    engine = {
      kind: 'own_key',
      provider: 'openai',
      modelId: 'gpt-test',
      model: await languageModel('openai', { apiKey: 'sk-test', baseURL: fake.baseUrl, modelId: 'gpt-test' }),
    };
  });
  afterAll(async () => {
    await fake?.close();
  });
  afterEach(() => {
    expect(fake.pending()).toBe(0);
  });

  const fenced = (value: unknown) => `Here it is:\n\`\`\`json\n${JSON.stringify(value, null, 2)}\n\`\`\`\n`;
  const appAnswer = {
    files: [
      { path: 'Procfile', content: 'web: python app.py\n' },
      { path: 'app.py', content: 'print("hi")\n' },
    ],
    needs: {
      env: [
        { name: 'API_TOKEN', description: 'a token' },
        { name: 'PORT', description: 'set by the platform' },
      ],
      database: null,
    },
    summary: 'a tiny app',
  };

  it('turns a fenced JSON file set into the app and reports usage', async () => {
    fake.push({ text: fenced(appAnswer), usage: { input: 120, output: 80 } });
    const usage: unknown[] = [];
    const app = await generateApp({
      generator: 'api',
      prompt: 'an API',
      subdomain: 'demo',
      model: engine,
      images,
      onUsage: async (u) => void usage.push(u),
    });
    expect(app).toEqual({
      files: { Procfile: 'web: python app.py\n', 'app.py': 'print("hi")\n' },
      needs: { env: [{ name: 'API_TOKEN', description: 'a token' }], database: null },
      summary: 'a tiny app',
      // The project's name: the subject the prompt names.
      title: 'API',
    });
    expect(usage).toEqual([{ inputTokens: 120, outputTokens: 80 }]);
    const request = fake.requests.at(-1)!;
    expect(request.body.messages[0]).toMatchObject({ role: 'system' });
    expect(request.body.messages[0].content).toContain('PORT environment variable');
  });

  it('retries once on invalid JSON, telling the model why, and counts both calls', async () => {
    fake.push(
      { text: 'Sure! ```json\n{"files": [\n```', usage: { input: 10, output: 5 } },
      { text: fenced(appAnswer), usage: { input: 30, output: 20 } },
    );
    const usage: unknown[] = [];
    const app = await generateApp({
      generator: 'web',
      prompt: 'a site',
      subdomain: 'demo',
      model: engine,
      images,
      onUsage: async (u) => void usage.push(u),
    });
    expect(Object.keys(app.files)).toEqual(['Procfile', 'app.py']);
    expect(usage).toEqual([
      { inputTokens: 10, outputTokens: 5 },
      { inputTokens: 30, outputTokens: 20 },
    ]);
    const retry = fake.requests.at(-1)!.body.messages.at(-1);
    expect(retry.role).toBe('user');
    expect(retry.content).toMatch(/^That answer cannot be used: its JSON does not parse/);
  });

  it('gives up with a clear Error after two bad answers, e.g. a path leaving the project', async () => {
    const escaping = { ...appAnswer, files: [{ path: '../etc/passwd', content: 'x' }] };
    fake.push(
      { text: fenced(escaping) },
      { text: fenced({ ...appAnswer, files: [{ path: '/etc/x', content: '' }] }) },
    );
    await expect(
      generateApp({ generator: 'web', prompt: 'x', subdomain: 'demo', model: engine, images }),
    ).rejects.toThrow(
      'the model (openai/gpt-test) did not give a valid file set in two tries: the file path "/etc/x" is absolute: paths must be relative to the project',
    );
    expect(fake.requests.at(-1)!.body.messages.at(-1).content).toContain('leaves the project');
  });

  it('has the model fill a site’s content, rendered by our templates', async () => {
    const offlineSite = await generateApp({
      generator: 'landing',
      prompt: 'a landing page for tea',
      subdomain: 'demo',
      model: null,
      images,
    });
    const content = {
      ...JSON.parse(offlineSite.files['content.json']!),
      title: 'Tea Time',
      kind: 'portfolio',
    };
    fake.push({ text: fenced(content) });
    const app = await generateApp({
      generator: 'landing',
      prompt: 'a landing page for tea',
      subdomain: 'demo',
      model: engine,
      images,
    });
    expect(JSON.parse(app.files['content.json']!)).toMatchObject({ title: 'Tea Time', kind: 'landing' });
    expect(app.files['index.html']).toContain('<h1>Tea Time</h1>');
    expect(fake.requests.at(-1)!.body.messages[0].content).toContain('"call_to_action"');
  });

  it('edits: applies changed, added and deleted files and says which', async () => {
    const files = { 'app.py': 'print(1)\n', 'old.py': '', Procfile: 'web: python app.py\n' };
    fake.push({
      text: fenced({
        files: [
          { path: 'app.py', content: 'print(2)\n' },
          { path: 'new.py', content: '' },
        ],
        deleted: ['old.py'],
        summary: 's',
      }),
    });
    const edited = await editApp({ files, instruction: 'print 2', model: engine, images });
    expect(edited).toEqual({
      files: { 'app.py': 'print(2)\n', 'new.py': '', Procfile: 'web: python app.py\n' },
      changed: ['app.py', 'new.py', 'old.py'],
    });
    const prompt = fake.requests.at(-1)!.body.messages.at(-1).content as string;
    expect(prompt).toContain('=== app.py ===\nprint(1)');
    expect(prompt).toContain('print 2');
  });

  it('repairs: sends the log tail and returns the fix', async () => {
    const files = { 'app.py': 'import flask\n', Procfile: 'web: python app.py\n' };
    fake.push({ text: fenced({ files: [{ path: 'requirements.txt', content: 'flask\n' }] }) });
    const usage: unknown[] = [];
    const repaired = await repairApp({
      files,
      logTail: ['Traceback (most recent call last):', "ModuleNotFoundError: No module named 'flask'"],
      model: engine,
      images,
      onUsage: async (u) => void usage.push(u),
    });
    expect(repaired.changed).toEqual(['requirements.txt']);
    expect(repaired.files['requirements.txt']).toBe('flask\n');
    expect(usage).toHaveLength(1);
    expect(fake.requests.at(-1)!.body.messages.at(-1).content).toContain("No module named 'flask'");
  });
});
