// The AI builder end to end (API.md §8): POST /ai/build, /ai/deploy and /ai/edit on a real platform with
// the real runtime, apps answering through the edge. Offline (no engine: the built-in templates), with a
// local fake OpenAI-compatible provider scripted turn by turn (repairs, edits, billing), needs_setup with
// a real PostgreSQL started here, and the refusals. Everything listens on 127.0.0.1.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pgModule from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuildEvent } from '../../src/server/ai/builder.js';
import { databaseName } from '../../src/server/ai/postgres.js';
import type { AiBuildResponse } from '../../src/shared/api/ai.js';
import type { Project, ProjectStatus } from '../../src/shared/api/projects.js';
import { logLines, viaEdge, waitForLog } from '../helpers/deploy.js';
import { quietFor, until } from '../helpers/poll.js';
import type { FakeAi, ScriptedTurn } from '../helpers/fake-ai.js';
import { type AiPlatform, fakeOpenAiEngine, startAiPlatform } from '../helpers/ai-platform.js';
import { type TestPlatform, call, expectProblem, startPlatform } from '../helpers/platform.js';
import { type TestPostgres, postgresBin, startPostgres } from '../helpers/postgres.js';
import { withKeptStore } from '../helpers/test-store.js';
import type { Store } from '../../src/server/store/open.js';

const OUTCOME_MS = 90_000;

async function build(
  tp: TestPlatform,
  body: Record<string, unknown>,
  key = tp.key,
): Promise<AiBuildResponse> {
  const result = await call<AiBuildResponse>(`${tp.api}/ai/build`, { key, body });
  expect(result.status, JSON.stringify(result.body)).toBe(202);
  return result.body;
}

/** The project's status once the builder's deploy loop (repairs included) has ended. */
async function outcome(tp: TestPlatform, projectId: string): Promise<ProjectStatus> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no outcome for ${projectId} in ${OUTCOME_MS} ms`)),
      OUTCOME_MS,
    );
  });
  try {
    return await Promise.race([tp.platform.aiBuilder.waitForOutcome(projectId), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits for the loop and fails with the project's log unless it ended `running`. */
async function expectRunning(tp: TestPlatform, projectId: string): Promise<void> {
  const status = await outcome(tp, projectId);
  if (status !== 'running') {
    throw new Error(`project ${projectId} is ${status}; log:\n${(await logLines(tp, projectId)).join('\n')}`);
  }
}

/** Commit subjects of the project's repository, newest first. */
function commits(tp: TestPlatform, projectId: string): string[] {
  const out = execFileSync('git', ['-C', join(tp.dataDir, 'ai-repos', projectId), 'log', '--format=%s'], {
    encoding: 'utf8',
  });
  return out.split('\n').filter(Boolean);
}

function hostOf(project: Project): string {
  return `${project.subdomain}.localhost`;
}

describe('AI builder, offline (no engine configured)', () => {
  let tp: TestPlatform;

  beforeAll(async () => {
    tp = await startPlatform({ healthTimeoutMs: 20_000 });
  });
  afterAll(async () => {
    await tp?.close();
  });

  it.each([
    ['landing', 'A landing page for a coffee shop in Lyon with opening hours, menu and contact', 'coffee'],
    ['web', 'A small web app for a book club with a reading list', 'book'],
    ['api', 'A REST API to manage books', 'books'],
  ])(
    'builds a %s app from the templates that runs and answers at its URL',
    async (generator, prompt, word) => {
      const subdomain = `off-${generator}`;
      const built = await build(tp, { generator, prompt, subdomain });
      expect(built.status).toBe('building');
      if (built.status !== 'building') return;
      expect(built.project).toMatchObject({
        subdomain,
        deploy_source: 'git',
        branch: 'main',
        status: 'building',
      });
      expect(built.project.repo_url).toBe(`file://${join(tp.dataDir, 'ai-repos', built.project.id)}`);
      expect(built.url).toBe(built.project.url);
      // Named as the app calls itself, not after the first 64 characters of the prompt.
      expect(built.project.name).not.toMatch(/…$/);
      expect(built.project.name.length).toBeLessThan(prompt.length);
      expect(built.project.name.toLowerCase()).toContain(word);
      await expectRunning(tp, built.project.id);
      const home = await viaEdge(tp.edgePort, hostOf(built.project), generator === 'api' ? '/books' : '/');
      expect(home.status, home.body).toBe(200);
      expect(home.body.toLowerCase()).toContain(word);
      expect(commits(tp, built.project.id)).toEqual([
        expect.stringMatching(new RegExp(`^Generate ${generator} app: `)),
      ]);
      expect(await logLines(tp, built.project.id)).toContainEqual(
        expect.stringMatching(/^Generated a .* \(offline/),
      );
    },
  );

  it('answers needs_setup for a messaging bot, then runs once /ai/deploy supplies BOT_TOKEN', async () => {
    const built = await build(tp, {
      generator: 'messaging-bot',
      prompt: 'A Telegram bot that answers questions about our opening hours',
      subdomain: 'off-bot',
    });
    expect(built.status).toBe('needs_setup');
    if (built.status !== 'needs_setup') return;
    expect(built.project.status).toBe('created');
    expect(built.needs).toEqual({ env: [expect.objectContaining({ name: 'BOT_TOKEN' })], database: null });

    // Without the token: 422 naming it.
    const missing = await call(`${tp.api}/ai/deploy`, {
      key: tp.key,
      body: { project_id: built.project.id },
    });
    expect(expectProblem(missing, 422, 'validation_failed').errors).toContainEqual(
      expect.objectContaining({ path: 'env.BOT_TOKEN' }),
    );

    const deployed = await call(`${tp.api}/ai/deploy`, {
      key: tp.key,
      body: {
        project_id: built.project.id,
        env: { BOT_TOKEN: '123:abc', TELEGRAM_API_URL: 'http://127.0.0.1:9' },
      },
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(202);
    expect(deployed.body).toMatchObject({ status: 'building', url: built.project.url });
    expect(deployed.body.project.env_vars).toMatchObject({ BOT_TOKEN: '123:abc' });
    await expectRunning(tp, built.project.id);
    const health = await viaEdge(tp.edgePort, hostOf(built.project), '/health');
    expect(health.status, health.body).toBe(200);
  });

  it('refuses /ai/deploy with a database when no PostgreSQL server is configured (503, how to set one)', async () => {
    const built = await build(tp, {
      generator: 'landing',
      prompt: 'A page for a bakery',
      subdomain: 'off-nopg',
    });
    await outcome(tp, built.project.id);
    const result = await call(`${tp.api}/ai/deploy`, {
      key: tp.key,
      body: { project_id: built.project.id, database: 'postgres' },
    });
    expect(expectProblem(result, 503, 'unavailable').detail).toContain('WHARF_POSTGRES_URL=postgres://');
  });

  it('answers 422 for an unknown generator, an empty prompt and a bad subdomain', async () => {
    const unknown = await call(`${tp.api}/ai/build`, {
      key: tp.key,
      body: { generator: 'spaceship', prompt: 'x', subdomain: 'ok-name' },
    });
    expect(expectProblem(unknown, 422, 'validation_failed').errors).toContainEqual(
      expect.objectContaining({ path: 'generator' }),
    );
    const empty = await call(`${tp.api}/ai/build`, {
      key: tp.key,
      body: { generator: 'web', prompt: '   ', subdomain: 'ok-name' },
    });
    expect(expectProblem(empty, 422, 'validation_failed').errors).toContainEqual(
      expect.objectContaining({ path: 'prompt' }),
    );
    const reserved = await call(`${tp.api}/ai/build`, {
      key: tp.key,
      body: { generator: 'web', prompt: 'a site', subdomain: 'admin' },
    });
    expectProblem(reserved, 422, 'validation_failed');
  });

  it('answers 409 when the subdomain is taken, and creates nothing', async () => {
    const before = (await call<Project[]>(`${tp.api}/projects`, { key: tp.key })).body.length;
    const taken = await call(`${tp.api}/ai/build`, {
      key: tp.key,
      body: { generator: 'landing', prompt: 'Another coffee shop', subdomain: 'off-landing' },
    });
    expect(expectProblem(taken, 409, 'conflict').detail).toContain('off-landing');
    expect((await call<Project[]>(`${tp.api}/projects`, { key: tp.key })).body).toHaveLength(before);
  });

  it('answers 403 email_not_verified to an account whose email is not verified', async () => {
    const { key } = await tp.newAccount({ verified: false });
    for (const [path, body] of [
      ['build', { generator: 'landing', prompt: 'A page', subdomain: 'unverified-page' }],
      ['deploy', { project_id: 'prj_000000000000000000000' }],
      ['edit', { project_id: 'prj_000000000000000000000', instruction: 'make it blue' }],
    ] as const) {
      expectProblem(await call(`${tp.api}/ai/${path}`, { key, body }), 403, 'email_not_verified');
    }
  });

  it("answers 404 to an edit or deploy of another account's project", async () => {
    const mine = (await call<Project[]>(`${tp.api}/projects`, { key: tp.key })).body.find(
      (p) => p.subdomain === 'off-landing',
    )!;
    const other = await tp.newAccount();
    expectProblem(
      await call(`${tp.api}/ai/edit`, {
        key: other.key,
        body: { project_id: mine.id, instruction: 'make it blue' },
      }),
      404,
      'not_found',
    );
    expectProblem(
      await call(`${tp.api}/ai/deploy`, { key: other.key, body: { project_id: mine.id, env: { A: '1' } } }),
      404,
      'not_found',
    );
  });

  it('answers 503 to an edit when no engine is configured, saying how to set one up', async () => {
    const mine = (await call<Project[]>(`${tp.api}/projects`, { key: tp.key })).body.find(
      (p) => p.subdomain === 'off-landing',
    )!;
    const result = await call(`${tp.api}/ai/edit`, {
      key: tp.key,
      body: { project_id: mine.id, instruction: 'make it blue' },
    });
    expect(expectProblem(result, 503, 'unavailable').detail).toContain('/account/ai-key');
  });

  it('removes the repository and the ai_projects row as soon as the project is deleted, even mid-deploy', async () => {
    const aiRow = (id: string) =>
      tp.platform.db
        .selectFrom('ai_projects')
        .select('project_id')
        .where('project_id', '=', id)
        .executeTakeFirst();
    const repoOf = (id: string) => join(tp.dataDir, 'ai-repos', id);
    const remove = async (id: string) => {
      const deleted = await call(`${tp.api}/projects/${id}`, { method: 'DELETE', key: tp.key });
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    };

    // One deleted while it runs.
    const ran = await build(tp, {
      generator: 'landing',
      prompt: 'A page for a florist',
      subdomain: 'off-del-ran',
    });
    await expectRunning(tp, ran.project.id);
    expect(existsSync(repoOf(ran.project.id))).toBe(true);
    expect(await aiRow(ran.project.id)).toBeDefined();
    await remove(ran.project.id);
    expect(existsSync(repoOf(ran.project.id))).toBe(false);
    expect(await aiRow(ran.project.id)).toBeUndefined();

    // One deleted while its deploy loop waits on a redeploy whose app never answers.
    const mid = await build(tp, {
      generator: 'landing',
      prompt: 'A page for a choir',
      subdomain: 'off-del-mid',
    });
    await expectRunning(tp, mid.project.id);
    const configured = await call(`${tp.api}/projects/${mid.project.id}/build-config`, {
      method: 'PUT',
      key: tp.key,
      body: { start_cmd: 'sleep 30' },
    });
    expect(configured.status, JSON.stringify(configured.body)).toBe(200);
    const redeployed = await call(`${tp.api}/ai/deploy`, {
      key: tp.key,
      body: { project_id: mid.project.id },
    });
    expect(redeployed.status, JSON.stringify(redeployed.body)).toBe(202);
    await waitForLog(tp, mid.project.id, /^starting .*sleep 30/);
    // Settled as soon as it rejects (the rejection may come while the delete is still answering).
    const outcomeAfterDelete = tp.platform.aiBuilder.waitForOutcome(mid.project.id).then(
      (status) => ({ status }),
      (error: unknown) => ({ error }),
    );
    await remove(mid.project.id);
    expect(existsSync(repoOf(mid.project.id))).toBe(false);
    expect(await aiRow(mid.project.id)).toBeUndefined();
    // Its loop has ended (the project is gone) and wrote nothing back.
    expect(await outcomeAfterDelete).toMatchObject({ error: { code: 'not_found' } });
    await quietFor(500);
    expect(existsSync(repoOf(mid.project.id))).toBe(false);

    // Another AI project of the account keeps its repository and row.
    const kept = (await call<Project[]>(`${tp.api}/projects`, { key: tp.key })).body.find(
      (p) => p.subdomain === 'off-landing',
    )!;
    expect(existsSync(repoOf(kept.id))).toBe(true);
    expect(await aiRow(kept.id)).toBeDefined();
  });
});

const pgBin = postgresBin();

describe.skipIf(!pgBin)('AI builder with a real PostgreSQL (needs_setup → database → running)', () => {
  let tp: TestPlatform;
  let pg: TestPostgres;

  beforeAll(async () => {
    pg = await startPostgres();
    // The app reaches `pg` through NODE_PATH in this checkout (see below), which may lie under /tmp, and
    // the sandbox gives apps a /tmp of their own: these apps run as plain processes (one account).
    tp = await startPlatform({ healthTimeoutMs: 30_000, ai: { postgresUrl: pg.url }, runtime: 'process' });
  }, 60_000);
  afterAll(async () => {
    await tp?.close();
    await pg?.stop();
  });

  it('builds an API that keeps data, creates its database on /ai/deploy, and the app reads from it', async () => {
    const built = await build(tp, {
      generator: 'api',
      prompt: 'A REST API to store books for our library',
      subdomain: 'pg-books',
    });
    expect(built.status).toBe('needs_setup');
    if (built.status !== 'needs_setup') return;
    expect(built.needs).toEqual({ env: [], database: 'postgres' });

    // Without a database (nor a DATABASE_URL of its own): 422 on `database`.
    const missing = await call(`${tp.api}/ai/deploy`, {
      key: tp.key,
      body: { project_id: built.project.id },
    });
    expect(expectProblem(missing, 422, 'validation_failed').errors).toContainEqual(
      expect.objectContaining({ path: 'database' }),
    );

    // The template's one dependency (`pg`) would come from the npm registry, and these tests stay on
    // loopback: the app finds this repository's copy through NODE_PATH instead of `npm install`.
    const configured = await call(`${tp.api}/projects/${built.project.id}/build-config`, {
      method: 'PUT',
      key: tp.key,
      body: { install_cmd: 'echo "pg comes from NODE_PATH in this test"' },
    });
    expect(configured.status, JSON.stringify(configured.body)).toBe(200);
    const deployed = await call(`${tp.api}/ai/deploy`, {
      key: tp.key,
      body: {
        project_id: built.project.id,
        database: 'postgres',
        env: { NODE_PATH: join(process.cwd(), 'node_modules') },
      },
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(202);
    const databaseUrl = new URL(deployed.body.project.env_vars.DATABASE_URL as string);
    expect(databaseUrl.port).toBe(String(pg.port));
    expect(databaseUrl.username).toMatch(/^wharf_prj_/);
    expect(databaseUrl.password.length).toBeGreaterThanOrEqual(32);
    await expectRunning(tp, built.project.id);

    const host = hostOf(built.project);
    const created = await viaEdge(tp.edgePort, host, '/books', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Dune', description: 'Frank Herbert' }),
    });
    expect(created.status, created.body).toBe(201);
    const listed = await viaEdge(tp.edgePort, host, '/books');
    expect(listed.status, listed.body).toBe(200);
    expect(listed.body).toContain('Dune');
    const health = await viaEdge(tp.edgePort, host, '/health');
    expect(JSON.parse(health.body)).toMatchObject({ database: 'ok' });

    // The row is in the project's own database, reached with the app's own credentials.
    const client = new PgClient({ connectionString: databaseUrl.href });
    await client.connect();
    try {
      const rows = await client.query<{ name: string }>('SELECT name FROM books');
      expect(rows.rows.map((r) => r.name)).toEqual(['Dune']);
    } finally {
      await client.end();
    }

    // Deleting the project drops its database (the app's connections closed) and its role.
    const name = databaseUrl.username;
    expect(await serverHas(pg, name)).toEqual({ database: true, role: true });
    const deleted = await call(`${tp.api}/projects/${built.project.id}`, { method: 'DELETE', key: tp.key });
    expect(deleted.status).toBe(200);
    await until(
      async () => {
        const left = await serverHas(pg, name);
        // The record goes after the drop, once the admin connection has closed.
        return !left.database && !left.role && (await recorded(tp.platform.db)).length === 0;
      },
      'the database and role dropped, and their record gone',
      20_000,
    );
  });

  it('drops at the next start what it could not drop when the PostgreSQL server was unreachable', async () => {
    // A database made for a project, recorded as the builder records it; then the project is gone.
    const projectId = 'prj_gone0000000000000001';
    const name = databaseName(projectId);
    await admin(pg, async (client) => {
      await client.query(`CREATE ROLE ${name} WITH LOGIN PASSWORD 'x'`);
      await client.query(`CREATE DATABASE ${name} OWNER ${name}`);
    });
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-pg-sweep-'));
    try {
      // First start: the server configured is not listening, so the drop fails and the record stays.
      const unreachable = await startPlatform({
        dataDir,
        ai: { postgresUrl: `postgres://postgres:x@127.0.0.1:${await closedPort()}/postgres` },
      });
      await unreachable.platform.db
        .insertInto('app_databases')
        .values({ name, project_id: projectId, created_at: new Date().toISOString() })
        .execute();
      await unreachable.platform.databases.sweep();
      await unreachable.close();
      expect(await recorded(dataDir)).toEqual([name]);
      expect(await serverHas(pg, name)).toEqual({ database: true, role: true });

      // Next start, with the server reachable: dropped, and the record with it.
      const reachable = await startPlatform({ dataDir, ai: { postgresUrl: pg.url } });
      try {
        await until(
          async () => (await recorded(dataDir)).length === 0,
          'the record of the dropped database gone',
          20_000,
        );
        expect(await serverHas(pg, name)).toEqual({ database: false, role: false });
      } finally {
        await reachable.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

const PgClient = pgModule.Client;
type PgClient = InstanceType<typeof pgModule.Client>;

async function admin<T>(pg: TestPostgres, use: (client: PgClient) => Promise<T>): Promise<T> {
  const client = new PgClient({ connectionString: pg.url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** Whether the PostgreSQL server has a database and a role of this name. */
function serverHas(pg: TestPostgres, name: string): Promise<{ database: boolean; role: boolean }> {
  return admin(pg, async (client) => ({
    database: (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1,
    role: (await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name])).rowCount === 1,
  }));
}

/** The app databases a platform's store still has on record: its open store, or the one a stopped platform kept. */
async function recorded(store: Store | string): Promise<string[]> {
  const read = (db: Store) => db.selectFrom('app_databases').select('name').orderBy('name').execute();
  const rows = typeof store === 'string' ? await withKeptStore(store, read) : await read(store);
  return rows.map((r) => r.name);
}

/** A loopback port nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address() as AddressInfo;
      server.close(() => resolve(address.port));
    });
  });
}

type Files = Record<string, string>;

/** The model's answer to a generation: one fenced JSON block with the files, needs and summary. */
function generated(files: Files, summary: string, usage?: ScriptedTurn['usage']): ScriptedTurn {
  const answer = {
    files: Object.entries(files).map(([path, content]) => ({ path, content })),
    needs: { env: [], database: null },
    summary,
  };
  return { text: `\`\`\`json\n${JSON.stringify(answer)}\n\`\`\``, usage };
}

/** The model's answer to an edit or repair: the files it changes. */
function changed(files: Files, summary: string): ScriptedTurn {
  const answer = { files: Object.entries(files).map(([path, content]) => ({ path, content })), summary };
  return { text: `\`\`\`json\n${JSON.stringify(answer)}\n\`\`\`` };
}

const PACKAGE = JSON.stringify({ name: 'generated', private: true, scripts: { start: 'node server.js' } });

function serverJs(greeting: string): string {
  return `const http = require('node:http');
http.createServer((req, res) => res.end(${JSON.stringify(greeting)})).listen(Number(process.env.PORT), () => console.log('listening'));
`;
}

/** A Node app the runtime runs: no dependencies, a start script, listening on $PORT. */
function workingApp(greeting: string): Files {
  return { 'package.json': PACKAGE, 'server.js': serverJs(greeting) };
}

/** A Node app that dies at start with `message`. */
function crashingApp(message: string): Files {
  return { 'package.json': PACKAGE, 'server.js': `throw new Error(${JSON.stringify(message)});\n` };
}

describe('AI builder with a model (fake OpenAI-compatible provider)', () => {
  let tp: TestPlatform;
  let fake: FakeAi;
  let world: AiPlatform;

  beforeAll(async () => {
    world = await startAiPlatform({ healthTimeoutMs: 15_000 });
    ({ tp, fake } = world);
  });
  afterAll(() => world?.close());

  async function modelBuild(subdomain: string, turns: ScriptedTurn[], key = tp.key) {
    fake.push(...turns);
    const built = await build(
      tp,
      { generator: 'web', prompt: `A greeting page for ${subdomain}`, subdomain },
      key,
    );
    expect(built.status).toBe('building');
    return built.project;
  }

  it('builds what the model wrote, runs it, and bills the included engine from the token counts', async () => {
    const requestsBefore = fake.requests.length;
    const project = await modelBuild('m-hello', [
      generated(workingApp('hello from the model'), 'a greeting page', { input: 100_000, output: 20_000 }),
    ]);
    await expectRunning(tp, project.id);
    expect((await viaEdge(tp.edgePort, hostOf(project), '/')).body).toBe('hello from the model');
    expect(commits(tp, project.id)).toEqual(['Generate web app: a greeting page']);
    const request = fake.requests[requestsBefore]!;
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBe('Bearer sk-test');
    expect(JSON.stringify(request.body)).toContain('m-hello');

    // 100k input tokens at $3/Mtok + 20k output at $15/Mtok = $0.60.
    const usage = await call<Array<{ kind: string; amount_usd: number }>>(`${tp.api}/account/usage`, {
      key: tp.key,
    });
    expect(usage.body.filter((e) => e.kind === 'ai_usage').map((e) => e.amount_usd)).toContain(-0.6);
  });

  it('repairs an app without a start script deterministically, as commit 2, and says so in the log', async () => {
    const requestsBefore = fake.requests.length;
    const project = await modelBuild('m-nostart', [
      generated(
        {
          'package.json': JSON.stringify({ name: 'generated', private: true }),
          'server.js': serverJs('fixed'),
        },
        'a page with no start script',
      ),
    ]);
    await expectRunning(tp, project.id);
    expect((await viaEdge(tp.edgePort, hostOf(project), '/')).body).toBe('fixed');
    const history = commits(tp, project.id);
    expect(history).toHaveLength(2);
    expect(history[0]).toMatch(/^Repair attempt 2: .*start/);
    expect(await logLines(tp, project.id)).toContainEqual(
      expect.stringMatching(/^Repair attempt 2: .*start/),
    );
    // No model call for the repair: only the generation reached the provider.
    expect(fake.requests.length - requestsBefore).toBe(1);
  });

  it('sends the failure log to the model when no deterministic fix applies, and runs its fix', async () => {
    const requestsBefore = fake.requests.length;
    const project = await modelBuild('m-crash', [
      generated(crashingApp('missing greeting configuration'), 'a page that crashes'),
      changed({ 'server.js': serverJs('repaired by the model') }, 'configure the greeting'),
    ]);
    await expectRunning(tp, project.id);
    expect((await viaEdge(tp.edgePort, hostOf(project), '/')).body).toBe('repaired by the model');
    expect(commits(tp, project.id)).toEqual([
      'Repair attempt 2: the model changed server.js',
      'Generate web app: a page that crashes',
    ]);
    const repairRequest = JSON.stringify(fake.requests[requestsBefore + 1]!.body);
    expect(repairRequest).toContain('missing greeting configuration');
    expect(await logLines(tp, project.id)).toContainEqual('Repair attempt 2: the model changed server.js');
  });

  it('deploys an AI project cut short by a platform stop again after the restart, self-repair included', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-ai-resume-'));
    const config = {
      dataDir,
      healthTimeoutMs: 15_000,
      ai: fakeOpenAiEngine(fake),
    };
    // A build step that takes a while, so the platform can stop in the middle of it; the app crashes.
    const slowBuild = JSON.stringify({
      name: 'generated',
      private: true,
      scripts: { build: 'node -e "setTimeout(() => {}, 2500)"', start: 'node server.js' },
    });
    fake.push(
      generated(
        { 'package.json': slowBuild, 'server.js': crashingApp('no greeting set')['server.js']! },
        'a page that crashes',
      ),
      changed({ 'server.js': serverJs('repaired after the restart') }, 'set the greeting'),
    );
    let first: TestPlatform | null = await startPlatform(config);
    let second: TestPlatform | null = null;
    try {
      const built = await build(first, {
        generator: 'web',
        prompt: 'A greeting page',
        subdomain: 'm-resume',
      });
      await waitForLog(first, built.project.id, /^\$ npm run build/);
      await first.close();
      first = null;

      second = await startPlatform(config);
      await expectRunning(second, built.project.id);
      const lines = await logLines(second, built.project.id);
      expect(lines).toContainEqual(
        'platform restarted: the last deploy was interrupted, deploying again (with self-repair)',
      );
      expect(lines).toContainEqual('Repair attempt 2: the model changed server.js');
      expect((await viaEdge(second.edgePort, hostOf(built.project), '/')).body).toBe(
        'repaired after the restart',
      );
    } finally {
      await first?.close();
      await second?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);

  it('tells watchers each log line and status change until the loop ends', async () => {
    const project = await modelBuild('m-watched', [
      generated(crashingApp('not configured yet'), 'a page to watch'),
      changed({ 'server.js': serverJs('watched') }, 'configure it'),
    ]);
    const events: BuildEvent[] = [];
    const unwatch = tp.platform.aiBuilder.watch(project.id, (event) => events.push(event));
    await expectRunning(tp, project.id);
    unwatch();
    const statuses = events.flatMap((e) => (e.type === 'status' ? [e.status] : []));
    expect(statuses).toEqual(['failed', 'building', 'running']);
    const lines = events.flatMap((e) => (e.type === 'log' ? [e.line] : []));
    expect(lines).toContain('Repair attempt 2: the model changed server.js');
    expect(lines).toContainEqual(expect.stringMatching(/^running at /));
  });

  it('stops after 3 attempts when every fix fails differently: failed, with 3 commits', async () => {
    const project = await modelBuild('m-hopeless', [
      generated(crashingApp('alpha went wrong'), 'a hopeless page'),
      changed(crashingApp('beta went wrong'), 'try beta'),
      changed(crashingApp('gamma went wrong'), 'try gamma'),
    ]);
    expect(await outcome(tp, project.id)).toBe('failed');
    expect(commits(tp, project.id)).toEqual([
      'Repair attempt 3: the model changed server.js',
      'Repair attempt 2: the model changed server.js',
      'Generate web app: a hopeless page',
    ]);
    const lines = await logLines(tp, project.id);
    expect(lines).toContainEqual(expect.stringMatching(/^Repair stopped after 3 attempts: /));
    expect(lines.filter((l) => /^deploy \S+ started/.test(l))).toHaveLength(3);
    expect(fake.pending()).toBe(0);
  });

  it('stops early when a fix ends in the same error as the attempt before', async () => {
    const project = await modelBuild('m-same', [
      generated(crashingApp('the same mistake'), 'a stubborn page'),
      changed({ ...crashingApp('the same mistake'), 'README.md': 'tried something\n' }, 'add a README'),
    ]);
    expect(await outcome(tp, project.id)).toBe('failed');
    expect(commits(tp, project.id)).toHaveLength(2);
    const lines = await logLines(tp, project.id);
    expect(lines).toContainEqual(
      expect.stringMatching(/^Repair stopped: attempt 2 failed with the same error as attempt 1/),
    );
    expect(lines.filter((l) => /^deploy \S+ started/.test(l))).toHaveLength(2);
    expect(fake.pending()).toBe(0);
  });

  it('edits an AI project: answers the changed files, commits the edit and redeploys it', async () => {
    const project = await modelBuild('m-edit', [generated(workingApp('before the edit'), 'a page to edit')]);
    await expectRunning(tp, project.id);
    fake.push(changed({ 'server.js': serverJs('after the edit') }, 'new greeting'));
    const edited = await call(`${tp.api}/ai/edit`, {
      key: tp.key,
      body: { project_id: project.id, instruction: 'Say "after the edit" instead\nand nothing else' },
    });
    expect(edited.status, JSON.stringify(edited.body)).toBe(202);
    expect(edited.body).toMatchObject({ status: 'building', changed_files: ['server.js'] });
    expect(edited.body.project.status).toBe('building');
    await expectRunning(tp, project.id);
    expect((await viaEdge(tp.edgePort, hostOf(project), '/')).body).toBe('after the edit');
    expect(commits(tp, project.id)).toEqual([
      'Edit: Say "after the edit" instead',
      'Generate web app: a page to edit',
    ]);
  });

  it('builds from the templates with offline: true and never calls the configured model', async () => {
    const usage = async () =>
      (await call<Array<{ kind: string }>>(`${tp.api}/account/usage`, { key: tp.key })).body.filter(
        (e) => e.kind === 'ai_usage',
      ).length;
    const requestsBefore = fake.requests.length;
    const chargedBefore = await usage();
    expect(fake.pending()).toBe(0);

    // Even asked for the included engine by name: offline wins, and nothing resolves or admits it.
    const built = await tp.platform.aiBuilder.build(
      { accountId: tp.accountId },
      {
        generator: 'landing',
        prompt: 'A landing page for a tea house in Kyoto',
        subdomain: 'm-offline',
        engine: 'included',
      },
      { offline: true },
    );
    expect(built.status).toBe('building');
    await expectRunning(tp, built.project.id);
    expect((await viaEdge(tp.edgePort, hostOf(built.project), '/')).body.toLowerCase()).toContain('tea');
    expect(commits(tp, built.project.id)).toEqual([expect.stringMatching(/^Generate landing app: /)]);
    expect(await logLines(tp, built.project.id)).toContainEqual(
      expect.stringMatching(/^Generated a .* \(offline/),
    );
    expect(fake.requests.length).toBe(requestsBefore);
    expect(await usage()).toBe(chargedBefore);
  });

  it('uses an own key when the account saved one, and bills nothing for it', async () => {
    const other = await tp.newAccount();
    const saved = await call(`${tp.api}/account/ai-key`, {
      method: 'PUT',
      key: other.key,
      body: { provider: 'openai', key: 'sk-own-key-0123456789' },
    });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    const requestsBefore = fake.requests.length;
    const project = await modelBuild(
      'm-own',
      [generated(workingApp('own key app'), 'an own-key page', { input: 100_000, output: 20_000 })],
      other.key,
    );
    await expectRunning(tp, project.id);
    expect(fake.requests[requestsBefore]!.headers.authorization).toBe('Bearer sk-own-key-0123456789');
    const usage = await call<Array<{ kind: string }>>(`${tp.api}/account/usage`, { key: other.key });
    expect(usage.body.filter((e) => e.kind === 'ai_usage')).toEqual([]);
  });
});
