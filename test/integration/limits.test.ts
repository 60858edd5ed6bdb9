// Limits per account (config.limits), tried as a tenant would against a real platform on loopback:
// projects, concurrent builds, event streams and WebSockets, tunnels connected at once, capture memory
// per tunnel and per account, and the request body size at the app and tunnel edge. Each count is
// refused with 429 limit_reached naming the limit, another account is not affected, and capacity that
// is freed can be used again.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { TunnelClient, TunnelRefusedError } from '../../src/core/tunnel/client.js';
import type { CapturedRequestDetail } from '../../src/shared/api/tunnels.js';
import { archiveOf, gitRepo, waitFor, waitForLog } from '../helpers/deploy.js';
import { type LocalApp, startLocalApp } from '../helpers/local-app.js';
import { until } from '../helpers/poll.js';
import { type Opened, expectLimit, openStream, readJson } from '../helpers/streams.js';
import { type CallResult, type TestPlatform, call, startPlatform } from '../helpers/platform.js';

const MiB = 1024 * 1024;

/** Opens the live traffic feed of a tunnel; resolves once it is open, or with its refusal. */
function openTraffic(tp: TestPlatform, key: string, tunnel: string): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${tp.api.replace(/^http/, 'ws')}/ws/traffic/${tunnel}`, {
      headers: { 'x-api-key': key },
    });
    ws.once('open', () =>
      resolve({ status: 101, headers: new Headers(), body: undefined, close: () => ws.terminate() }),
    );
    ws.once('unexpected-response', (_req, res) => {
      readJson(res).then((parsed) =>
        resolve({
          status: res.statusCode ?? 0,
          headers: new Headers(res.headers as Record<string, string>),
          body: parsed,
          close() {},
        }),
      );
    });
    ws.once('error', reject);
  });
}

/** A raw tunnel connect: the refusal's status and problem body (or 101). */
function connectRaw(tp: TestPlatform, key: string, subdomain: string): Promise<CallResult> {
  return new Promise((resolve, reject) => {
    const req = request(`${tp.api}/tunnels/connect?subdomain=${subdomain}`, {
      headers: { 'x-api-key': key, connection: 'Upgrade', upgrade: 'wharf-tunnel' },
      agent: false,
    });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      resolve({ status: 101, headers: new Headers(), body: undefined });
    });
    req.on('response', (res) => {
      readJson(res).then((parsed) =>
        resolve({
          status: res.statusCode ?? 0,
          headers: new Headers(res.headers as Record<string, string>),
          body: parsed,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

async function createUploadProject(
  tp: TestPlatform,
  key: string,
  name: string,
  buildCmd: string | null = null,
): Promise<CallResult<{ id: string }>> {
  return call<{ id: string }>(`${tp.api}/projects`, {
    key,
    body: {
      name,
      subdomain: name,
      deploy_source: 'upload',
      ...(buildCmd ? { build_config: { build_cmd: buildCmd, start_cmd: 'node server.js' } } : {}),
    },
  });
}

// -------------------------------------------------------------------------------------------------

describe('projects, builds and streams per account', () => {
  let tp: TestPlatform;
  beforeAll(async () => {
    tp = await startPlatform({ limits: { projects: 3, builds: 2, streams: 3 } });
  });
  afterAll(async () => {
    await tp?.close();
  });

  it('refuses a project past the limit with 429 limit_reached, leaves another account alone, and takes one again once a project is deleted', async () => {
    const owner = await tp.newAccount();
    const ids: string[] = [];
    for (const name of ['lim-p1', 'lim-p2', 'lim-p3']) {
      const created = await createUploadProject(tp, owner.key, name);
      expect(created.status).toBe(201);
      ids.push(created.body.id);
    }
    expectLimit(await createUploadProject(tp, owner.key, 'lim-p4'), 'projects', 3);

    const other = await tp.newAccount();
    expect((await createUploadProject(tp, other.key, 'lim-other')).status).toBe(201);

    const deleted = await call(`${tp.api}/projects/${ids[0]}`, { key: owner.key, method: 'DELETE' });
    expect(deleted.status).toBe(200);
    expect((await createUploadProject(tp, owner.key, 'lim-p4')).status).toBe(201);
    expectLimit(await createUploadProject(tp, owner.key, 'lim-p5'), 'projects', 3);
  });

  it('counts projects the AI builder creates against the same limit', async () => {
    const owner = await tp.newAccount();
    for (const name of ['ai-p1', 'ai-p2', 'ai-p3']) {
      expect((await createUploadProject(tp, owner.key, name)).status).toBe(201);
    }
    const built = await call(`${tp.api}/ai/build`, {
      key: owner.key,
      body: { generator: 'landing', prompt: 'A landing page for a bakery', subdomain: 'ai-over-limit' },
    });
    expectLimit(built, 'projects', 3);
    const listed = await call<Array<{ subdomain: string }>>(`${tp.api}/projects`, { key: owner.key });
    expect(listed.body.map((p) => p.subdomain)).not.toContain('ai-over-limit');
  });

  it('lets only one of several simultaneous creates take the last project slot', async () => {
    const owner = await tp.newAccount();
    await createUploadProject(tp, owner.key, 'race-p1');
    await createUploadProject(tp, owner.key, 'race-p2');
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map((i) => createUploadProject(tp, owner.key, `race-x${i}`)),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    for (const refused of results.filter((r) => r.status !== 201)) expectLimit(refused, 'projects', 3);
    const list = await call<unknown[]>(`${tp.api}/projects`, { key: owner.key });
    expect(list.body).toHaveLength(3);
  });

  it('refuses a deploy while the account has as many builds running, counts a redeploy once, and deploys again once a build ends', async () => {
    const owner = await tp.newAccount();
    const archive = archiveOf({
      'server.js': 'require("node:http").createServer((q, s) => s.end("ok")).listen(process.env.PORT)',
    });
    const ids: string[] = [];
    for (const name of ['build-a', 'build-b', 'build-c']) {
      const created = await createUploadProject(tp, owner.key, name, 'echo building for long && sleep 30');
      expect(created.status).toBe(201);
      const uploaded = await call(`${tp.api}/projects/${created.body.id}/upload`, {
        key: owner.key,
        body: archive,
        headers: { 'content-type': 'application/gzip' },
      });
      expect(uploaded.status).toBe(200);
      ids.push(created.body.id);
    }
    const deployOf = (id: string, key = owner.key) =>
      call(`${tp.api}/projects/${id}/deploy`, { key, method: 'POST' });
    try {
      expect((await deployOf(ids[0]!)).status).toBe(202);
      expect((await deployOf(ids[1]!)).status).toBe(202);
      expectLimit(await deployOf(ids[2]!), 'builds', 2);
      // A project already building is deployed again in place: it does not take a second slot.
      expect((await deployOf(ids[1]!)).status).toBe(202);
      expectLimit(await deployOf(ids[2]!), 'builds', 2);

      // Another account builds while this one is at its limit.
      const other = await tp.newAccount();
      const theirs = await createUploadProject(tp, other.key, 'build-other', 'echo quick');
      await call(`${tp.api}/projects/${theirs.body.id}/upload`, {
        key: other.key,
        body: archive,
        headers: { 'content-type': 'application/gzip' },
      });
      expect((await deployOf(theirs.body.id, other.key)).status).toBe(202);
      await call(`${tp.api}/projects/${theirs.body.id}/stop`, { key: other.key, method: 'POST' });

      // A build that ends (here: stopped) frees its slot.
      await waitForLog({ ...tp, key: owner.key }, ids[0]!, /^building for long$/);
      const stopped = await call(`${tp.api}/projects/${ids[0]}/stop`, { key: owner.key, method: 'POST' });
      expect(stopped.status).toBe(200);
      // Past the moment a deploy counts without its status saying so.
      await new Promise((r) => setTimeout(r, 2_100));
      expect((await deployOf(ids[2]!)).status).toBe(202);
      expectLimit(await deployOf(ids[0]!), 'builds', 2);
    } finally {
      for (const id of ids) await call(`${tp.api}/projects/${id}/stop`, { key: owner.key, method: 'POST' });
    }
  });

  it('refuses a stream past the limit (log follows, agent stream, traffic feed, tunnel connect) and takes one again once a stream closes', async () => {
    const owner = await tp.newAccount();
    const created = await createUploadProject(tp, owner.key, 'stream-logs');
    const logsUrl = `${tp.api}/projects/${created.body.id}/logs?follow=1`;
    const open: Opened[] = [];
    try {
      for (let i = 0; i < 3; i += 1) {
        const stream = await openStream(logsUrl, owner.key);
        expect(stream.status).toBe(200);
        open.push(stream);
      }
      expectLimit(await openStream(logsUrl, owner.key), 'streams', 3);
      // The agent's stream is refused before anything is checked or charged.
      expectLimit(
        await openStream(`${tp.api}/ai/agent/stream`, owner.key, {
          messages: [{ role: 'user', content: 'hi' }],
        }),
        'streams',
        3,
      );
      expectLimit(await connectRaw(tp, owner.key, 'stream-tunnel'), 'streams', 3);
      // A refused tunnel claims no subdomain: another account can have it.
      const rival = await tp.newAccount();
      expect((await connectRaw(tp, rival.key, 'stream-tunnel')).status).toBe(101);

      // Another account has slots of its own.
      const other = await tp.newAccount();
      const theirs = await createUploadProject(tp, other.key, 'stream-theirs');
      const stream = await openStream(`${tp.api}/projects/${theirs.body.id}/logs?follow=1`, other.key);
      expect(stream.status).toBe(200);
      stream.close();

      // A closed stream gives its slot back.
      open.shift()!.close();
      let again: Opened | null = null;
      await until(async () => {
        const attempt = await openStream(logsUrl, owner.key);
        if (attempt.status === 200) again = attempt;
        return again !== null;
      }, 'a log follow to be accepted again');
      open.push(again!);
      expectLimit(await openStream(logsUrl, owner.key), 'streams', 3);
    } finally {
      for (const stream of open) stream.close();
    }
  });
});

// -------------------------------------------------------------------------------------------------

/** The local app behind the tunnels: `/` answers ok, `/sink` reads the body, `/early` answers first. */
interface EndsApp extends LocalApp {
  /** Per path: `complete <bytes>` or `aborted <bytes>`, as the app saw the request end. */
  ends: Array<{ path: string; how: 'complete' | 'aborted'; bytes: number }>;
}

async function startEndsApp(): Promise<EndsApp> {
  const ends: EndsApp['ends'] = [];
  const app = await startLocalApp((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    let bytes = 0;
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => ends.push({ path, how: 'complete', bytes }));
    req.on('aborted', () => ends.push({ path, how: 'aborted', bytes }));
    if (path === '/early') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('started\n');
      req.on('end', () => res.end(`got ${bytes}\n`));
      return;
    }
    req.on('end', () => res.end(`got ${bytes}`));
    req.on('error', () => undefined);
    res.on('error', () => undefined);
  });
  return Object.assign(app, { ends });
}

function platformUrl(tp: TestPlatform): string {
  return tp.api.replace(/\/api\/v1$/, '');
}

describe('tunnels connected at once', () => {
  let tp: TestPlatform;
  let app: EndsApp;
  const clients = new Set<TunnelClient>();
  const client = (key: string, subdomain: string) => {
    const c = new TunnelClient({
      platformUrl: platformUrl(tp),
      apiKey: key,
      localPort: app.port,
      subdomain,
      backoffMs: 50,
    });
    clients.add(c);
    return c;
  };
  beforeAll(async () => {
    tp = await startPlatform({ limits: { tunnels: 2, streams: 3 } });
    app = await startEndsApp();
  });
  afterAll(async () => {
    await Promise.all([...clients].map((c) => c.stop()));
    await app?.close();
    await tp?.close();
  });

  it('refuses a third tunnel with 429 limit_reached, takes a reconnect of the same subdomain over without counting it twice, and accepts one again once a tunnel stops', async () => {
    const owner = await tp.newAccount();
    const a = client(owner.key, 'lim-a');
    const b = client(owner.key, 'lim-b');
    await a.start();
    await b.start();

    const third = client(owner.key, 'lim-c');
    const refused = await third.start().then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(TunnelRefusedError);
    expect(refused).toMatchObject({ status: 429, code: 'limit_reached' });
    expectLimit(await connectRaw(tp, owner.key, 'lim-c'), 'tunnels', 2);

    // The same subdomain again: the new connection takes the old one's place.
    const a2 = client(owner.key, 'lim-a');
    await a2.start();
    await until(() => a.state === 'stopped', 'the replaced connection to stop');
    expectLimit(await connectRaw(tp, owner.key, 'lim-c'), 'tunnels', 2);
    // And its stream slot: two tunnels hold two of the three.
    const feed = await openTraffic(tp, owner.key, 'lim-a');
    expect(feed.status).toBe(101);
    expectLimit(await openTraffic(tp, owner.key, 'lim-b'), 'streams', 3);
    feed.close();

    // Another account connects while this one is at its limit.
    const other = await tp.newAccount();
    const theirs = client(other.key, 'lim-theirs');
    await theirs.start();
    await theirs.stop();

    await b.stop();
    const c = client(owner.key, 'lim-c');
    await until(
      () =>
        c.start().then(
          () => true,
          () => false,
        ),
      'a third tunnel to be accepted once one stopped',
    );
    const listed = await call<Array<{ subdomain: string }>>(`${tp.api}/tunnels`, { key: owner.key });
    expect(listed.body.map((t) => t.subdomain).sort()).toEqual(['lim-a', 'lim-c']);
  });
});

// -------------------------------------------------------------------------------------------------

/** Sends a request through the edge with a body: sized with Content-Length, or chunked. */
function sendBody(
  tp: TestPlatform,
  host: string,
  path: string,
  body: { length: number; chunked: boolean },
): Promise<{ status: number | null; text: string; error: string | null }> {
  return new Promise((resolve) => {
    const req = request({
      host: '127.0.0.1',
      port: tp.edgePort,
      path,
      method: 'POST',
      agent: false,
      headers: {
        host: `${host}:${tp.edgePort}`,
        'content-type': 'application/octet-stream',
        ...(body.chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(body.length) }),
      },
    });
    let status: number | null = null;
    let text = '';
    let answered = false;
    const done = (error: string | null) => {
      if (answered) return;
      answered = true;
      resolve({ status, text, error });
    };
    req.on('response', (res) => {
      status = res.statusCode ?? null;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => done(null));
      res.on('error', (error) => done(error.message));
      res.on('aborted', () => done('aborted'));
    });
    req.on('error', (error) => done(error.message));
    req.setTimeout(15_000, () => req.destroy(new Error('timed out')));
    // The body goes in 64 KiB pieces, and stops once an answer came: a client that reads its answer.
    const piece = randomBytes(64 * 1024);
    let sent = 0;
    const pump = () => {
      while (sent < body.length && !req.destroyed && status === null) {
        const size = Math.min(piece.length, body.length - sent);
        sent += size;
        if (!req.write(piece.subarray(0, size))) {
          req.once('drain', pump);
          return;
        }
      }
      if (sent >= body.length && !req.destroyed) req.end();
    };
    if (body.chunked) setImmediate(pump);
    else {
      // Headers first: a Content-Length over the limit must be answered before any of the body.
      req.flushHeaders();
      setTimeout(pump, 200);
    }
  });
}

describe('capture memory and request bodies', () => {
  let tp: TestPlatform;
  let app: EndsApp;
  const clients = new Set<TunnelClient>();
  const client = async (key: string, subdomain: string) => {
    const c = new TunnelClient({
      platformUrl: platformUrl(tp),
      apiKey: key,
      localPort: app.port,
      subdomain,
      backoffMs: 50,
    });
    clients.add(c);
    await c.start();
    return c;
  };
  beforeAll(async () => {
    tp = await startPlatform({
      limits: {
        tunnels: 10,
        streams: 20,
        captureBytesPerTunnel: 2 * MiB,
        captureBytesPerAccount: 3 * MiB,
        bodyBytes: MiB,
      },
    });
    app = await startEndsApp();
  });
  afterAll(async () => {
    await Promise.all([...clients].map((c) => c.stop()));
    await app?.close();
    await tp?.close();
  });

  const post = (sub: string, bytes: number) =>
    sendBody(tp, `${sub}.tunnel.localhost`, '/sink', { length: bytes, chunked: false });

  it("keeps an account's captures within its budget however many tunnels carry large bodies, and another account has its own", async () => {
    const owner = await tp.newAccount();
    const subs = ['cap-1', 'cap-2', 'cap-3', 'cap-4'];
    for (const sub of subs) await client(owner.key, sub);
    for (let round = 0; round < 3; round += 1) {
      for (const sub of subs) expect((await post(sub, MiB - 1024)).status).toBe(200);
    }
    const usage = tp.platform.tunnels.captureUsage(owner.accountId);
    expect(usage.tunnels).toBe(4);
    expect(usage.grantedBytes).toBeLessThanOrEqual(3 * MiB);
    expect(usage.keptBytes).toBeLessThanOrEqual(3 * MiB);
    // The first tunnel got the per-tunnel budget, the second what was left, the others none: their
    // exchanges are captured without bodies, and say so.
    const detail = async (sub: string) => {
      const list = await call<Array<{ id: string }>>(`${tp.api}/tunnels/${sub}/requests`, { key: owner.key });
      const one = await call<CapturedRequestDetail>(`${tp.api}/tunnels/${sub}/requests/${list.body[0]!.id}`, {
        key: owner.key,
      });
      return one.body;
    };
    expect((await detail('cap-1')).request_body).not.toBeNull();
    const bodiless = await detail('cap-4');
    expect(bodiless.request_size).toBe(MiB - 1024);
    expect(bodiless.request_body).toBeNull();
    expect(bodiless.request_body_truncated).toBe(true);

    const other = await tp.newAccount();
    await client(other.key, 'cap-theirs');
    expect((await post('cap-theirs', MiB - 1024)).status).toBe(200);
    const theirs = tp.platform.tunnels.captureUsage(other.accountId);
    expect(theirs.grantedBytes).toBe(2 * MiB);
    expect(theirs.keptBytes).toBe(MiB - 1024 + `got ${MiB - 1024}`.length);
  });

  it('forgets the captures of the tunnel offline longest first to make room for a new tunnel', async () => {
    const owner = await tp.newAccount();
    const first = await client(owner.key, 'off-1');
    const second = await client(owner.key, 'off-2');
    expect((await post('off-1', 1000)).status).toBe(200);
    expect((await post('off-2', 1000)).status).toBe(200);
    await first.stop();
    await second.stop();
    await until(
      async () => (await call(`${tp.api}/tunnels`, { key: owner.key })).body.length === 0,
      'both tunnels to be offline',
    );
    // Offline, both keep their captures.
    expect((await call(`${tp.api}/tunnels/off-1/requests`, { key: owner.key })).status).toBe(200);
    expect((await call(`${tp.api}/tunnels/off-2/requests`, { key: owner.key })).status).toBe(200);

    // 2 MiB + 1 MiB granted: a new tunnel gets its 2 MiB from off-1, offline longest.
    await client(owner.key, 'off-3');
    expect(tp.platform.tunnels.captureUsage(owner.accountId)).toMatchObject({
      tunnels: 2,
      grantedBytes: 3 * MiB,
    });
    expect((await call(`${tp.api}/tunnels/off-1/requests`, { key: owner.key })).status).toBe(404);
    const kept = await call<unknown[]>(`${tp.api}/tunnels/off-2/requests`, { key: owner.key });
    expect(kept.body).toHaveLength(1);
    expect((await post('off-3', MiB - 1024)).status).toBe(200);
    const list = await call<Array<{ id: string }>>(`${tp.api}/tunnels/off-3/requests`, { key: owner.key });
    const detail = await call<CapturedRequestDetail>(`${tp.api}/tunnels/off-3/requests/${list.body[0]!.id}`, {
      key: owner.key,
    });
    expect(detail.body.request_body_truncated).toBe(false);
  });

  it('answers 413 at once to a Content-Length over the limit at the tunnel edge, and the app never sees it', async () => {
    const owner = await tp.newAccount();
    await client(owner.key, 'body-cl');
    const before = app.ends.length;
    const answer = await post('body-cl', 2 * MiB);
    expect(answer.status).toBe(413);
    expect(answer.text).toContain('Request body too large');
    expect(answer.text).toContain('1 MiB');
    expect(app.ends.slice(before).filter((e) => e.path === '/sink')).toEqual([]);
    // Under the limit, the body goes through whole.
    const fine = await post('body-cl', MiB);
    expect(fine).toMatchObject({ status: 200, text: `got ${MiB}` });
  });

  it('cuts a chunked body that grows past the limit at the tunnel edge with 413, and the app sees its request aborted', async () => {
    const owner = await tp.newAccount();
    await client(owner.key, 'body-chunked');
    const host = 'body-chunked.tunnel.localhost';
    const answer = await sendBody(tp, host, '/sink', { length: 4 * MiB, chunked: true });
    expect(answer.status).toBe(413);
    expect(answer.text).toContain('Request body too large');
    await until(
      () => app.ends.some((e) => e.path === '/sink' && e.how === 'aborted'),
      'the app to see the abort',
    );
    expect(app.ends.some((e) => e.path === '/sink' && e.how === 'complete' && e.bytes > MiB)).toBe(false);
    // A chunked body under the limit passes whole.
    const fine = await sendBody(tp, host, '/sink', { length: MiB - 10, chunked: true });
    expect(fine).toMatchObject({ status: 200, text: `got ${MiB - 10}` });
  });

  it('closes the connection when a chunked body goes past the limit after the app has answered', async () => {
    const owner = await tp.newAccount();
    await client(owner.key, 'body-early');
    const answer = await sendBody(tp, 'body-early.tunnel.localhost', '/early', {
      length: 4 * MiB,
      chunked: true,
    });
    expect(answer.status).toBe(200);
    expect(answer.text.startsWith('started')).toBe(true);
    expect(answer.text).not.toContain('got');
    expect(answer.error).not.toBeNull();
  });

  it('holds request bodies to the limit at the app edge too: 413 for a Content-Length, 413 for a chunked body, whole under it', async () => {
    const owner = await tp.newAccount();
    const server = `
const http = require('node:http');
http.createServer((req, res) => {
  let bytes = 0;
  req.on('data', (c) => (bytes += c.length));
  req.on('aborted', () => console.log('aborted after ' + bytes));
  req.on('end', () => { console.log('complete ' + bytes); res.end('got ' + bytes); });
}).listen(Number(process.env.PORT));
`;
    const repos = mkdtempSync(join(tmpdir(), 'wharf-limits-git-'));
    const created = await call<{ id: string }>(`${tp.api}/projects`, {
      key: owner.key,
      body: {
        name: 'body-app',
        subdomain: 'body-app',
        repo_url: gitRepo(repos, 'body-app', {
          'package.json': JSON.stringify({
            name: 'body-app',
            private: true,
            scripts: { start: 'node server.js' },
          }),
          'server.js': server,
        }),
      },
    });
    expect(created.status).toBe(201);
    const owned = { ...tp, key: owner.key };
    try {
      expect(
        (await call(`${tp.api}/projects/${created.body.id}/deploy`, { key: owner.key, method: 'POST' }))
          .status,
      ).toBe(202);
      const { project } = await waitFor(
        owned,
        created.body.id,
        (p) => p.status === 'running' || p.status === 'failed',
      );
      expect(project.status, project.last_deploy_error ?? '').toBe('running');
      const host = 'body-app.localhost';

      const declared = await sendBody(tp, host, '/', { length: 3 * MiB, chunked: false });
      expect(declared.status).toBe(413);
      expect(declared.text).toContain('Request body too large');

      const chunked = await sendBody(tp, host, '/', { length: 4 * MiB, chunked: true });
      expect(chunked.status).toBe(413);
      await waitForLog(owned, created.body.id, /^aborted after \d+$/);

      const fine = await sendBody(tp, host, '/', { length: MiB, chunked: true });
      expect(fine).toMatchObject({ status: 200, text: `got ${MiB}` });
    } finally {
      await call(`${tp.api}/projects/${created.body.id}/stop`, { key: owner.key, method: 'POST' });
      rmSync(repos, { recursive: true, force: true });
    }
  });
});
