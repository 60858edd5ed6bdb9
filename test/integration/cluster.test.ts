// Two platform nodes on loopback over one PostgreSQL database and a one-node Swarm, as an operator runs
// them behind a load balancer: whatever is created through one node is there on the other; an app
// deployed through one is served by both edges; a tunnel whose client is connected to node A answers
// public requests that reach node B, whose API lists, replays and feeds its captures; when node A goes
// away, its tunnel's client reconnects through the balancer to B and keeps its subdomain.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import WebSocket from 'ws';
import { TunnelClient } from '../../src/core/tunnel/client.js';
import { buildPlatform } from '../../src/server/app.js';
import type { PlatformConfigInput } from '../../src/server/config.js';
import { accountLimits } from '../../src/server/limits.js';
import type { Project } from '../../src/shared/api/projects.js';
import type { CapturedRequest, Tunnel } from '../../src/shared/api/tunnels.js';
import {
  archiveOf,
  createProject,
  deploy,
  deployFiles,
  nodeApp,
  startSlowDeploy,
  settled,
  upload,
  viaEdge,
  waitFor,
  waitForLog,
} from '../helpers/deploy.js';
import { removeSwarmServices, requireSwarm, testImages } from '../helpers/engine.js';
import { fakeOpenAiEngine } from '../helpers/ai-platform.js';
import { type FakeAi, startFakeOpenAI } from '../helpers/fake-ai.js';
import { type LocalApp, startTextApp } from '../helpers/local-app.js';
import { until } from '../helpers/poll.js';
import { type Opened, expectLimit, openStream } from '../helpers/streams.js';
import { type TestPlatform, call, startPlatform } from '../helpers/platform.js';
import { failover, freePort } from '../helpers/failover.js';
import { type TestDatabase, testDatabase } from '../helpers/test-store.js';

const reason = await requireSwarm();
const images = testImages() ?? { node: 'unset', python: 'unset' };
const secret = randomBytes(36).toString('base64url');

describe.skipIf(reason !== null)('two platform nodes on one database', () => {
  let database: TestDatabase;
  let a: TestPlatform;
  let b: TestPlatform;
  let app: LocalApp;
  let fake: FakeAi;
  const dirs: string[] = [];

  async function node(name: string): Promise<TestPlatform> {
    const dataDir = mkdtempSync(join(tmpdir(), `wharf-node-${name}-`));
    dirs.push(dataDir);
    const edgePort = await freePort();
    return startPlatform({
      dataDir,
      databaseUrl: database.url,
      nodeUrl: `http://127.0.0.1:${edgePort}`,
      edgePort,
      secret,
      runtime: 'swarm',
      images,
      healthTimeoutMs: 20_000,
      limits: { tunnels: 2 },
      ai: fakeOpenAiEngine(fake),
    });
  }

  beforeAll(async () => {
    const made = await testDatabase();
    if (!made) throw new Error('the cluster suite runs on PostgreSQL (the postgres test project)');
    database = made;
    fake = await startFakeOpenAI();
    a = await node('a');
    b = await node('b');
    app = await startTextApp(
      (req) => `local app: ${req.method} ${req.url} from ${req.headers['x-forwarded-for']}`,
    );
  }, 90_000);

  afterAll(async () => {
    await app?.close();
    await fake?.close();
    await b?.close();
    await a?.close().catch(() => undefined);
    // The nodes leave their services to each other: the last one out removes them here.
    await removeSwarmServices(b?.platform.runtime.platformId);
    await database?.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }, 90_000);

  it('refuses a node without a shared database, a secret or the swarm runtime, saying which', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-node-refused-'));
    dirs.push(dataDir);
    const base: PlatformConfigInput = {
      dataDir,
      databaseUrl: database.url,
      nodeUrl: 'http://127.0.0.1:1',
      secret,
      runtime: 'swarm',
    };
    await expect(buildPlatform({ ...base, databaseUrl: null })).rejects.toThrow(
      /--node-url needs --database-url/,
    );
    const { secret: _none, ...withoutSecret } = base;
    await expect(buildPlatform(withoutSecret)).rejects.toThrow(/--node-url needs WHARF_SECRET/);
    await expect(buildPlatform({ ...base, runtime: 'container' })).rejects.toThrow(
      /--node-url needs --runtime swarm/,
    );
    await expect(buildPlatform({ ...base, nodeUrl: 'http://127.0.0.1:1/api' })).rejects.toThrow(/no path/);
  });

  it('knows both nodes alive', async () => {
    const nodes = await a.platform.cluster.liveNodes();
    expect(nodes.size).toBe(2);
    expect(nodes.get(b.platform.cluster.nodeId)).toBe(`http://127.0.0.1:${b.edgePort}`);
  });

  it('answers any API call on either node: created on A, read and changed on B', async () => {
    const created = await createProject(a, {
      name: 'Shared',
      subdomain: 'shared-one',
      deploy_source: 'upload',
    });
    const read = await call<{ project: Project }>(`${b.api}/projects/${created.id}`, { key: a.key });
    expect(read.status).toBe(200);
    expect(read.body.project.name).toBe('Shared');
    const changed = await call<Project>(`${b.api}/projects/${created.id}`, {
      key: a.key,
      method: 'PUT',
      body: { env_vars: { FROM: 'b' } },
    });
    expect(changed.status).toBe(200);
    const again = await call<{ project: Project }>(`${a.api}/projects/${created.id}`, { key: a.key });
    expect(again.body.project.env_vars).toEqual({ FROM: 'b' });
  });

  it('refuses on B a key revoked through A as soon as A says so, not seconds later', async () => {
    const made = await call<{ id: string; key: string }>(`${a.api}/keys`, {
      key: a.key,
      body: { scopes: ['full'], name: 'short-lived' },
    });
    expect(made.status).toBe(201);
    // B finds it valid, and would keep that for a few seconds.
    expect((await call(`${b.api}/projects`, { key: made.body.key })).status).toBe(200);
    expect((await call(`${a.api}/keys/${made.body.id}`, { key: a.key, method: 'DELETE' })).status).toBe(200);
    const revoked = Date.now();
    await until(
      async () => (await call(`${b.api}/projects`, { key: made.body.key })).status === 401,
      'B to refuse the revoked key',
      4_000,
      20,
    );
    expect(Date.now() - revoked).toBeLessThan(1_000);
  });

  it('lists on one node what was just written through the other (no stale list kept)', async () => {
    const created = await createProject(a, {
      name: 'Listed',
      subdomain: 'listed-one',
      deploy_source: 'upload',
    });
    const envOnB = async () => {
      const list = await call<Project[]>(`${b.api}/projects`, { key: a.key });
      return list.body.find((p) => p.id === created.id)?.env_vars;
    };
    expect(await envOnB()).toEqual({});
    for (let round = 0; round < 5; round++) {
      const put = await call<Project>(`${a.api}/projects/${created.id}`, {
        key: a.key,
        method: 'PUT',
        body: { env_vars: { ROUND: `${round}` } },
      });
      expect(put.status).toBe(200);
      expect(await envOnB()).toEqual({ ROUND: `${round}` });
    }
  });

  it('serves an app deployed through A on B’s edge, and a redeploy through B on A’s', async () => {
    const project = await createProject(a, { name: 'Both', subdomain: 'c-both', deploy_source: 'upload' });
    await deployFiles(a, project.id, { ...nodeApp('v1'), Procfile: 'web: node server.js\n' });
    await until(
      async () => (await viaEdge(b.edgePort, 'c-both.localhost', '/')).body === 'v1 /',
      'B’s edge to serve v1',
      20_000,
    );
    await deployFiles(b, project.id, { ...nodeApp('v2'), Procfile: 'web: node server.js\n' });
    expect((await viaEdge(b.edgePort, 'c-both.localhost', '/')).body).toBe('v2 /');
    await until(
      async () => (await viaEdge(a.edgePort, 'c-both.localhost', '/')).body === 'v2 /',
      'A’s edge to serve v2',
      20_000,
    );
  }, 240_000);

  it('serves a static site deployed through A on B’s edge, from its files stored in the database', async () => {
    const project = await createProject(a, { name: 'Site', subdomain: 'c-site', deploy_source: 'upload' });
    // Big enough to be stored in several chunks (random text compresses to about three quarters).
    const big = randomBytes(1_500_000).toString('base64');
    const site = (version: string) => ({
      'index.html': `<h1>site ${version}</h1>\n`,
      'docs/guide.txt': `guide ${version}\n`,
      'big.txt': big,
    });
    await deployFiles(a, project.id, site('v1'));
    const first = (await a.platform.runtime.releases.list(project.id, null))[0]!;
    await until(
      async () => (await viaEdge(b.edgePort, 'c-site.localhost', '/')).body === '<h1>site v1</h1>\n',
      'B’s edge to serve the site',
      20_000,
    );
    expect((await viaEdge(b.edgePort, 'c-site.localhost', '/docs/guide.txt')).body).toBe('guide v1\n');
    expect((await viaEdge(b.edgePort, 'c-site.localhost', '/big.txt')).body === big).toBe(true);
    // B serves its own copy, in its own data folder, not A's files.
    const copy = join(b.dataDir, 'apps', project.id, first.id, 'index.html');
    expect(existsSync(copy)).toBe(true);
    expect((await viaEdge(b.edgePort, 'c-site.localhost', '/missing.txt')).status).toBe(404);

    await deployFiles(a, project.id, site('v2'));
    await until(
      async () => (await viaEdge(b.edgePort, 'c-site.localhost', '/')).body === '<h1>site v2</h1>\n',
      'B’s edge to serve v2',
      20_000,
    );
    // B no longer routes to v1: its copy goes (A keeps v1's files for a rollback).
    await until(async () => !existsSync(copy), 'B to remove its copy of v1', 10_000);
    expect(existsSync(join(a.dataDir, 'apps', project.id, first.id, 'index.html'))).toBe(true);

    // A rollback through B copies v1's files there again.
    const rolled = await call(`${b.api}/projects/${project.id}/rollback`, {
      key: a.key,
      method: 'POST',
      body: { release_id: first.id },
    });
    expect(rolled.status).toBe(202);
    await waitFor(b, project.id, settled, 60_000);
    expect((await viaEdge(b.edgePort, 'c-site.localhost', '/')).body).toBe('<h1>site v1</h1>\n');
    await until(
      async () => (await viaEdge(a.edgePort, 'c-site.localhost', '/')).body === '<h1>site v1</h1>\n',
      'A’s edge to serve v1 again',
      20_000,
    );

    // Deleting the project deletes its stored files with its releases.
    const stored = () =>
      a.platform.db
        .selectFrom('release_files')
        .innerJoin('releases', 'releases.id', 'release_files.release_id')
        .where('releases.project_id', '=', project.id)
        .select(({ fn }) => fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow();
    expect(Number((await stored()).n)).toBeGreaterThan(2);
    expect((await call(`${a.api}/projects/${project.id}`, { key: a.key, method: 'DELETE' })).status).toBe(
      200,
    );
    const left = await a.platform.db
      .selectFrom('release_files')
      .select('release_id')
      .where('release_id', '=', first.id)
      .execute();
    expect(left).toEqual([]);
    // B drops its copies of the deleted project's files too.
    await until(async () => !existsSync(join(b.dataDir, 'apps', project.id)), 'B to drop its copies', 10_000);
  }, 240_000);

  it('deploys through B an upload A received, from the database; a newer upload replaces it there', async () => {
    const project = await createProject(a, {
      name: 'Carried',
      subdomain: 'c-carried',
      deploy_source: 'upload',
    });
    // Several chunks' worth (random text compresses to about three quarters).
    const files = (version: string) => ({
      ...nodeApp(version),
      Procfile: 'web: node server.js\n',
      'padding.txt': randomBytes(1_500_000).toString('base64'),
    });
    await upload(a, project.id, archiveOf(files('carried')));
    const chunks = (uploadId: string) =>
      a.platform.db
        .selectFrom('upload_chunks')
        .select(({ fn }) => fn.countAll<string>().as('n'))
        .where('upload_id', '=', uploadId)
        .executeTakeFirstOrThrow()
        .then((row) => Number(row.n));
    const first = await a.platform.db
      .selectFrom('uploads')
      .select('id')
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(await chunks(first.id)).toBeGreaterThan(1);
    await deploy(b, project.id);
    const detail = await waitFor(b, project.id, settled, 120_000);
    expect(detail.project.status, detail.project.last_deploy_error ?? '').toBe('running');
    expect((await viaEdge(b.edgePort, 'c-carried.localhost', '/')).body).toBe('carried /');
    expect(existsSync(join(b.dataDir, 'uploads', project.id, `${first.id}.tar.gz`))).toBe(true);

    await upload(b, project.id, archiveOf(files('newer')));
    expect(await chunks(first.id)).toBe(0);
    await deploy(a, project.id);
    const again = await waitFor(a, project.id, settled, 120_000);
    expect(again.project.status, again.project.last_deploy_error ?? '').toBe('running');
    expect((await viaEdge(a.edgePort, 'c-carried.localhost', '/')).body).toBe('newer /');
  }, 240_000);

  it('builds an AI app through A and edits it through B and A: each node works from the other’s last commit', async () => {
    const app = (greeting: string) =>
      `require('node:http').createServer((req, res) => res.end(${JSON.stringify(greeting)})).listen(Number(process.env.PORT));\n`;
    const files = (changed: Record<string, string>) => ({
      text:
        '```json\n' +
        JSON.stringify({
          files: Object.entries(changed).map(([path, content]) => ({ path, content })),
          needs: { env: [], database: null },
          summary: 'a greeting page',
        }) +
        '\n```',
    });
    const served = (tp: TestPlatform, body: string) =>
      until(
        async () => (await viaEdge(tp.edgePort, 'c-ai.localhost', '/')).body === body,
        `${body} on ${tp.api}`,
        60_000,
      );
    const history = (tp: TestPlatform, id: string) =>
      execFileSync('git', ['-C', join(tp.dataDir, 'ai-repos', id), 'log', '--format=%s'], {
        encoding: 'utf8',
      })
        .split('\n')
        .filter(Boolean);

    fake.push(
      files({
        'package.json': JSON.stringify({ scripts: { start: 'node server.js' } }),
        'server.js': app('ai v1'),
      }),
    );
    const built = await call<{ project: Project }>(`${a.api}/ai/build`, {
      key: a.key,
      body: { generator: 'web', prompt: 'A greeting page', subdomain: 'c-ai' },
    });
    expect(built.status, JSON.stringify(built.body)).toBe(202);
    const id = built.body.project.id;
    await served(b, 'ai v1');

    // Through B, which never had the repository: the model is shown A's files, and B's edit is served.
    fake.push(files({ 'server.js': app('ai v2') }));
    const edited = await call(`${b.api}/ai/edit`, {
      key: a.key,
      body: { project_id: id, instruction: 'Say ai v2' },
    });
    expect(edited.status, JSON.stringify(edited.body)).toBe(202);
    expect(edited.body).toMatchObject({ changed_files: ['server.js'] });
    expect(JSON.stringify(fake.requests.at(-1)!.body)).toContain('ai v1');
    await served(a, 'ai v2');
    expect(history(b, id)).toEqual(['Edit: Say ai v2', 'Generate web app: a greeting page']);

    // Back through A: it starts from B's commit, not from its own older copy.
    fake.push(files({ 'README.md': 'a greeting page' }));
    const again = await call(`${a.api}/ai/edit`, {
      key: a.key,
      body: { project_id: id, instruction: 'Add a readme' },
    });
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(JSON.stringify(fake.requests.at(-1)!.body)).toContain('ai v2');
    expect(history(a, id)).toEqual([
      'Edit: Add a readme',
      'Edit: Say ai v2',
      'Generate web app: a greeting page',
    ]);
    await waitFor(a, id, settled, 60_000);
    expect((await viaEdge(b.edgePort, 'c-ai.localhost', '/')).body).toBe('ai v2');

    // Deleted through B: A's copy goes too.
    expect((await call(`${b.api}/projects/${id}`, { key: a.key, method: 'DELETE' })).status).toBe(200);
    await until(() => !existsSync(join(a.dataDir, 'ai-repos', id)), 'A’s copy of the repository to go');
  }, 240_000);

  it('cancels a deploy through A once one through B starts: the newer one serves', async () => {
    const project = await createProject(a, { name: 'Twice', subdomain: 'c-twice', deploy_source: 'upload' });
    await startSlowDeploy(a, project.id, images.node);
    await upload(b, project.id, archiveOf({ ...nodeApp('fast'), Procfile: 'web: node server.js\n' }));
    await deploy(b, project.id);
    const detail = await waitFor(b, project.id, settled, 120_000);
    expect(detail.project.status).toBe('running');
    await waitForLog(a, project.id, /cancelled: a newer deploy started on another node/, 20_000);
    expect((await viaEdge(a.edgePort, 'c-twice.localhost', '/')).body).toBe('fast /');
  }, 240_000);

  /** A tunnel client of `key` to `tp` for `subdomain` (not started), kept in `clients` to stop. */
  function tunnelClient(clients: TunnelClient[], tp: TestPlatform, key: string, subdomain: string) {
    const client = new TunnelClient({
      platformUrl: tp.api.replace(/\/api\/v1$/, ''),
      apiKey: key,
      localPort: app.port,
      subdomain,
      backoffMs: 50,
    });
    clients.push(client);
    return client;
  }

  it('counts an account’s tunnels on every node against its limit', async () => {
    const owner = await b.newAccount();
    const clients: TunnelClient[] = [];
    const on = (tp: TestPlatform, subdomain: string) => tunnelClient(clients, tp, owner.key, subdomain);
    try {
      await on(a, 'lim-one').start();
      const two = on(b, 'lim-two');
      await two.start();
      const refused = await on(a, 'lim-three')
        .start()
        .then(
          () => null,
          (error: unknown) => error,
        );
      expect(refused).toMatchObject({ status: 429, code: 'limit_reached' });
      await two.stop();
      await until(
        () =>
          on(a, 'lim-three')
            .start()
            .then(
              () => true,
              () => false,
            ),
        'a tunnel to be accepted once one on the other node stopped',
        10_000,
      );
    } finally {
      await Promise.all(clients.map((client) => client.stop()));
    }
  });

  /** The streams the store counts for an account, all nodes together. */
  async function streamsCounted(accountId: string): Promise<number> {
    const rows = await a.platform.db
      .selectFrom('account_streams')
      .select('count')
      .where('account_id', '=', accountId)
      .execute();
    return rows.reduce((sum, row) => sum + Number(row.count), 0);
  }

  /** A project created through A, to follow the logs of. */
  async function uploadProject(key: string, subdomain: string) {
    const created = await call<{ id: string }>(`${a.api}/projects`, {
      key,
      body: { name: subdomain, subdomain, deploy_source: 'upload' },
    });
    expect(created.status).toBe(201);
    return created;
  }

  it('counts an account’s open streams on every node against its limit, one at a time for its last slot', async () => {
    const owner = await b.newAccount();
    const created = await uploadProject(owner.key, 'streams-counted');
    const follow = (tp: TestPlatform) =>
      openStream(`${tp.api}/projects/${created.body.id}/logs?follow=1`, owner.key);
    const counted = () => streamsCounted(owner.accountId);
    const open: Opened[] = [];
    const limit = a.platform.config.limits.streams;
    for (const tp of [a, b]) tp.platform.config.limits.streams = 3;
    try {
      for (const tp of [a, a, b]) {
        const stream = await follow(tp);
        expect(stream.status).toBe(200);
        open.push(stream);
      }
      expectLimit(await follow(b), 'streams', 3);
      expectLimit(await follow(a), 'streams', 3);
      // A stream closed on A frees its slot for either node; two asking at once, only one gets it.
      open.shift()!.close();
      await until(async () => (await counted()) === 2, 'the closed stream to be counted out', 5_000, 20);
      for (let round = 0; round < 3; round++) {
        const raced = await Promise.all([follow(a), follow(b)]);
        const accepted = raced.filter((stream) => stream.status === 200);
        expect(accepted, `round ${round}`).toHaveLength(1);
        expectLimit(
          raced.find((stream) => stream.status !== 200)!,
          'streams',
          3,
        );
        accepted[0]!.close();
        await until(async () => (await counted()) === 2, 'the raced stream to be counted out', 5_000, 20);
      }
    } finally {
      for (const stream of open) stream.close();
      for (const tp of [a, b]) tp.platform.config.limits.streams = limit;
    }
  });

  it('gives back the slot of a follow that went away while it was being counted, and follows nothing for it', async () => {
    const owner = await b.newAccount();
    const created = await uploadProject(owner.key, 'streams-gone');
    const local = () => accountLimits(a.platform.config).streams.count(owner.accountId);
    const counted = () => streamsCounted(owner.accountId);
    // The account's lock held from here: the follow waits on its count until the test lets it go.
    await a.platform.db.connection().execute(async (held) => {
      const lock = sql`hashtextextended(${`wharf streams ${owner.accountId}`}, 0)`;
      await sql`select pg_advisory_lock(${lock})`.execute(held);
      try {
        const follow = request(`${a.api}/projects/${created.body.id}/logs?follow=1`, {
          headers: { 'x-api-key': owner.key },
          agent: false,
        });
        follow.on('error', () => undefined);
        follow.end();
        await until(async () => local() === 1, 'the follow to wait on its count', 5_000, 20);
        follow.destroy();
        await new Promise((resolve) => setTimeout(resolve, 300));
      } finally {
        await sql`select pg_advisory_unlock(${lock})`.execute(held);
      }
    });
    await until(
      async () => local() === 0 && (await counted()) === 0,
      'the slot to be given back on the node and in the store',
      5_000,
      20,
    );
    expect(a.platform.logs.followersOf(created.body.id)).toBe(0);
  });

  it('records again the tunnels and streams of a node taken for dead that comes back', async () => {
    const owner = await b.newAccount();
    const created = await uploadProject(owner.key, 'revived');
    const clients: TunnelClient[] = [];
    const aNode = a.platform.cluster.nodeId;
    const holderOf = async (subdomain: string) =>
      (
        await a.platform.db
          .selectFrom('tunnel_holders')
          .select(['node_id', 'tunnel_id'])
          .where('subdomain', '=', subdomain)
          .executeTakeFirst()
      )?.node_id ?? null;
    const follow = await openStream(`${a.api}/projects/${created.body.id}/logs?follow=1`, owner.key);
    try {
      expect(follow.status).toBe(200);
      await tunnelClient(clients, a, owner.key, 'revived-one').start();
      const leaving = tunnelClient(clients, a, owner.key, 'revived-two');
      await leaving.start();
      // Each tunnel connection holds a stream slot too.
      await until(
        async () => (await streamsCounted(owner.accountId)) === 3,
        'the three streams counted',
        5_000,
        20,
      );
      expect(await holderOf('revived-one')).toBe(aNode);

      // What B does once A has not been seen for a minute (a long pause): A's rows go.
      await b.platform.db.deleteFrom('tunnel_holders').where('node_id', '=', aNode).execute();
      await b.platform.db.deleteFrom('account_streams').where('node_id', '=', aNode).execute();
      await b.platform.db.deleteFrom('cluster_nodes').where('id', '=', aNode).execute();
      // One tunnel leaves meanwhile: its stream is not counted again, nor is it held.
      await leaving.stop();

      await until(
        async () => (await holderOf('revived-one')) === aNode,
        'A to record the tunnel it holds again once its heartbeat finds its row gone',
        10_000,
        50,
      );
      await until(
        async () => (await streamsCounted(owner.accountId)) === 2,
        'A to record its open streams again (the follow and the tunnel still connected)',
        5_000,
        20,
      );
      expect([null, '']).toContain(await holderOf('revived-two'));
      // B counts them against the account again, and forwards the tunnel's traffic to A.
      const limit = b.platform.config.limits.streams;
      b.platform.config.limits.streams = 2;
      try {
        expectLimit(
          await openStream(`${b.api}/projects/${created.body.id}/logs?follow=1`, owner.key),
          'streams',
          2,
        );
      } finally {
        b.platform.config.limits.streams = limit;
      }
      await until(
        async () => (await viaEdge(b.edgePort, 'revived-one.tunnel.localhost', '/again')).status === 200,
        'B to forward the tunnel’s traffic to A again',
        5_000,
        50,
      );
    } finally {
      follow.close();
      await Promise.all(clients.map((client) => client.stop()));
    }
  });

  it('lets only one of two tunnels connecting at once on two nodes take an account’s last slot', async () => {
    const owner = await b.newAccount();
    const clients: TunnelClient[] = [];
    const on = (tp: TestPlatform, subdomain: string) => tunnelClient(clients, tp, owner.key, subdomain);
    try {
      await on(a, 'race-one').start();
      for (let round = 0; round < 5; round++) {
        const outcomes = await Promise.allSettled([
          on(a, `race-a${round}`).start(),
          on(b, `race-b${round}`).start(),
        ]);
        const accepted = outcomes.filter((o) => o.status === 'fulfilled');
        expect(accepted, `round ${round}`).toHaveLength(1);
        const refused = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
        expect(refused.reason).toMatchObject({ status: 429, code: 'limit_reached' });
        // The one accepted goes again: the next round races for the same last slot.
        const [winner] = clients.slice(-2).filter((_, i) => outcomes[i]!.status === 'fulfilled');
        await winner!.stop();
        await until(
          async () => {
            const held = await a.platform.db
              .selectFrom('tunnel_holders')
              .select('subdomain')
              .where('account_id', '=', owner.accountId)
              .where('node_id', '!=', '')
              .execute();
            return held.length === 1;
          },
          'the stopped tunnel’s slot to be free',
          5_000,
          20,
        );
      }
    } finally {
      await Promise.all(clients.map((client) => client.stop()));
    }
  });

  describe('a tunnel held by node A', () => {
    let client: TunnelClient;
    let balancer: { port: number; close(): Promise<void> };
    let aUp = true;
    const apiPort = (tp: TestPlatform) => Number(new URL(tp.api).port);

    beforeAll(async () => {
      balancer = await failover(() => (aUp ? [apiPort(a), apiPort(b)] : [apiPort(b)]));
      client = new TunnelClient({
        platformUrl: `http://127.0.0.1:${balancer.port}`,
        apiKey: a.key,
        localPort: app.port,
        subdomain: 'held',
        backoffMs: 50,
      });
      await client.start();
    });

    afterAll(async () => {
      await client?.stop();
      await balancer?.close();
    });

    it('answers public requests that reach B, with the public client’s address', async () => {
      const answer = await viaEdge(b.edgePort, 'held.tunnel.localhost', '/via-b');
      expect(answer.status).toBe(200);
      expect(answer.body).toBe('local app: GET /via-b from 127.0.0.1');
      // A hop header a public client makes up is not believed, and does not reach the app.
      const forged = await viaEdge(b.edgePort, 'held.tunnel.localhost', '/forged', {
        headers: { 'wharf-node-hop': 'node_x 0 203.0.113.9 https bad' },
      });
      expect(forged.body).toBe('local app: GET /forged from 127.0.0.1');
    });

    it('lists, shows and replays its captures through B’s API, for its account only', async () => {
      const listed = await call<Tunnel[]>(`${b.api}/tunnels`, { key: a.key });
      expect(listed.body.map((t) => t.subdomain)).toContain('held');
      const requests = await call<CapturedRequest[]>(`${b.api}/tunnels/held/requests`, { key: a.key });
      expect(requests.status).toBe(200);
      const first = requests.body.find((r) => r.path === '/via-b');
      expect(first).toBeDefined();
      const detail = await call(`${b.api}/tunnels/held/requests/${first!.id}`, { key: a.key });
      expect(detail.status).toBe(200);
      const replayed = await call<CapturedRequest>(`${b.api}/tunnels/held/replay/${first!.id}`, {
        key: a.key,
        method: 'POST',
      });
      expect(replayed.status).toBe(200);
      expect(replayed.body.path).toBe('/via-b');

      const other = await b.newAccount();
      const refused = await call(`${b.api}/tunnels/held/requests`, { key: other.key });
      expect(refused.status).toBe(404);
      expect((await call<Tunnel[]>(`${b.api}/tunnels`, { key: other.key })).body).toEqual([]);
    });

    it('feeds its traffic live through B', async () => {
      const token = await call<{ token: string }>(`${b.api}/auth/token`, { key: a.key, method: 'POST' });
      const ws = new WebSocket(`${b.api.replace('http', 'ws')}/ws/traffic/held?token=${token.body.token}`);
      const seen: CapturedRequest[] = [];
      ws.on('message', (data) => seen.push(JSON.parse(String(data)) as CapturedRequest));
      await new Promise((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('error', reject);
      });
      await viaEdge(b.edgePort, 'held.tunnel.localhost', '/live');
      await until(() => seen.some((r) => r.path === '/live'), 'the live feed to carry the request', 10_000);
      ws.close();
    });

    it('moves to B when A goes away: its client reconnects there and keeps its subdomain', async () => {
      const before = (await call<Tunnel[]>(`${b.api}/tunnels`, { key: a.key })).body.find(
        (t) => t.subdomain === 'held',
      );
      aUp = false;
      await a.platform.app.close();
      await until(
        async () => (await viaEdge(b.edgePort, 'held.tunnel.localhost', '/after')).status === 200,
        'B to serve the tunnel itself',
        20_000,
        100,
      );
      const listed = await call<Tunnel[]>(`${b.api}/tunnels`, { key: a.key });
      const moved = listed.body.find((t) => t.subdomain === 'held');
      expect(moved?.id).toBe(before?.id);
      expect((await viaEdge(b.edgePort, 'held.tunnel.localhost', '/after')).body).toBe(
        'local app: GET /after from 127.0.0.1',
      );
      // A's leaving took nothing from B: the app deployed earlier still answers there.
      expect((await viaEdge(b.edgePort, 'c-both.localhost', '/')).body).toBe('v2 /');
    }, 60_000);
  });
});
