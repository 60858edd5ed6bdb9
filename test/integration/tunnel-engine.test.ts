// The Engine's tunnels and traffic against a real platform (API + tunnel edge) and a real local app:
// tunnels.start/stop and their events, traffic events, the Mirror's history (list, search, get),
// replays (edited too) straight to the local port, HAR and cURL, the history after an Engine restart,
// and the Mirror after a `kill -9` of a process tunnelling traffic.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'rolldown';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/core/engine.js';
import { Mirror } from '../../src/core/mirror/mirror.js';
import { FileSecretStore } from '../../src/core/secret-store.js';
import type { CapturedRequest } from '../../src/shared/api/tunnels.js';
import type { BridgeEvents } from '../../src/shared/bridge.js';
import { rejection } from '../helpers/bridge-error.js';
import { expectSpecCapturedRequest } from '../helpers/captured-request.js';
import { startLocalApp, startRecordingApp, type RecordingApp } from '../helpers/local-app.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';
import { quietFor, until } from '../helpers/poll.js';

const root = join(import.meta.dirname, '..', '..');
const dirs: string[] = [];
const engines: Engine[] = [];
const children: ChildProcess[] = [];

let tp: TestPlatform;
let origin: string;
/** The local app; what it app.received, newest last. */
let app: RecordingApp;
let appPort: number;

function tempHome(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wharf-tunnel-engine-'));
  dirs.push(dir);
  return dir;
}

function engineFor(home = tempHome(), options: { key?: string } = {}): Engine {
  const engine = new Engine({
    home,
    secrets: new FileSecretStore(join(home, 'secrets.json')),
    ...(options.key
      ? { platformOverride: { mode: 'remote' as const, origin, apiKey: options.key } }
      : { localPlatform: async () => ({ url: origin, apiKey: tp.key }) }),
    version: '9.9.9',
    tunnelBackoffMs: 50,
    tunnelPortCheckMs: 50,
  });
  engines.push(engine);
  return engine;
}

beforeAll(async () => {
  tp = await startPlatform();
  origin = new URL(tp.api).origin;
  app = await startRecordingApp((req, res) => {
    if (req.url === '/binary') {
      res.setHeader('content-type', 'application/octet-stream');
      res.end(Buffer.from([0, 1, 2, 3, 255]));
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ method: req.method, url: req.url, host: req.headers.host, body: req.body }));
  });
  appPort = app.port;
});

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  for (const engine of engines.splice(0)) await engine.close();
});

afterAll(async () => {
  await app?.close();
  await tp?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A request to the tunnel edge for `sub`.tunnel.localhost, with an optional body. */
function edge(
  sub: string,
  path: string,
  options: { method?: string; body?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: string; localPort: number }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: tp.edgePort,
        path,
        method: options.method ?? 'GET',
        headers: { ...options.headers, host: `${sub}.tunnel.localhost:${tp.edgePort}` },
        agent: false,
        timeout: 10_000,
      },
      (res) => {
        const localPort = res.socket?.localPort ?? 0;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), localPort }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer for ${sub}${path}`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Collects an event's payloads; `until` waits for one that passes. */
function collect<E extends keyof BridgeEvents>(engine: Engine, event: E) {
  const seen: Array<BridgeEvents[E]> = [];
  const off = engine.on(event, (payload) => seen.push(payload));
  return {
    seen,
    off,
    async until(accept: (all: Array<BridgeEvents[E]>) => boolean, what: string, ms = 5_000) {
      await until(() => accept(seen), what, ms, 10);
    },
  };
}

const trafficOf = (events: BridgeEvents['traffic'][]): CapturedRequest[] => events.flatMap((e) => e.requests);

describe('tunnels through the Engine', () => {
  it('starts a tunnel, reports its states, captures traffic into events and the Mirror, and stops it', async () => {
    const engine = engineFor();
    const tunnels = collect(engine, 'tunnels');
    const traffic = collect(engine, 'traffic');
    const tunnel = await engine.invoke('tunnels.start', { port: appPort, subdomain: 'eng-one' });
    expect(tunnel).toMatchObject({
      localPort: appPort,
      subdomain: 'eng-one',
      url: `http://eng-one.tunnel.localhost:${tp.edgePort}`,
      state: 'online',
      hostHeader: 'preserve',
      detail: null,
      listening: true,
    });
    expect(tunnel.id).toMatch(/^tun_/);
    expect(tunnels.seen.map((list) => list[0]?.state)).toEqual(['connecting', 'online']);
    expect(tunnels.seen[0]![0]!.id).toMatch(/^local_/);
    expect(await engine.invoke('tunnels.list', undefined)).toEqual([tunnel]);

    const answer = await edge('eng-one', '/hello?name=world', {
      method: 'POST',
      body: '{"greeting":"kumquat"}',
      headers: { 'content-type': 'application/json' },
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({
      method: 'POST',
      host: `eng-one.tunnel.localhost:${tp.edgePort}`,
    });
    await edge('eng-one', '/binary');
    await traffic.until((all) => trafficOf(all).length === 2, 'two exchanges');
    const [first, second] = trafficOf(traffic.seen);
    expect(first).toMatchObject({
      method: 'POST',
      path: '/hello?name=world',
      status_code: 200,
      tunnel_id: tunnel.id,
    });
    expect(second).toMatchObject({ path: '/binary', status_code: 200 });
    // SPEC.md §2.4 on the client side too, with the public client's own port.
    expectSpecCapturedRequest(first);
    expect(first!.remote_addr).toBe(`127.0.0.1:${answer.localPort}`);
    expect(first!.request_headers['content-type']).toBe('application/json');

    // The same ids as the platform's own capture.
    const platformList = await call<CapturedRequest[]>(`${tp.api}/tunnels/eng-one/requests`, { key: tp.key });
    expect(platformList.body.map((r) => r.id).sort()).toEqual([first!.id, second!.id].sort());

    const page = await engine.invoke('traffic.list', {});
    expect(page.total).toBe(2);
    expect(page.requests.map((r) => r.path)).toEqual(['/binary', '/hello?name=world']);
    expect((await engine.invoke('traffic.list', { q: 'kumquat' })).requests.map((r) => r.id)).toEqual([
      first!.id,
    ]);
    expect((await engine.invoke('traffic.list', { tunnelId: tunnel.id, methods: ['GET'] })).total).toBe(1);
    const detail = await engine.invoke('traffic.get', { id: first!.id });
    expect(Buffer.from(detail.request_body!, 'base64').toString()).toBe('{"greeting":"kumquat"}');
    expect(JSON.parse(Buffer.from(detail.response_body!, 'base64').toString())).toMatchObject({
      url: '/hello?name=world',
    });

    const stopped = await engine.invoke('tunnels.stop', { id: tunnel.id });
    expect(stopped.state).toBe('stopped');
    expect(await engine.invoke('tunnels.list', undefined)).toEqual([]);
    expect(tunnels.seen.at(-1)).toEqual([]);
    const after = await call<Array<{ subdomain: string }>>(`${tp.api}/tunnels`, { key: tp.key });
    expect(after.body.map((t) => t.subdomain)).not.toContain('eng-one');
    expect((await rejection(engine.invoke('tunnels.stop', { id: tunnel.id }))).code).toBe('not_found');
  });

  it("refuses a subdomain held by another account with the platform's problem, and bad input locally", async () => {
    const other = await tp.newAccount();
    const holder = engineFor(tempHome(), { key: other.key });
    await holder.invoke('tunnels.start', { port: appPort, subdomain: 'eng-taken' });
    const engine = engineFor();
    const refused = await rejection(
      engine.invoke('tunnels.start', { port: appPort, subdomain: 'eng-taken' }),
    );
    expect(refused).toMatchObject({ code: 'conflict', status: 409 });
    expect(refused.detail).toMatch(/held by another account/);
    expect(await engine.invoke('tunnels.list', undefined)).toEqual([]);

    const badPort = await rejection(engine.invoke('tunnels.start', { port: 70000 }));
    expect(badPort).toMatchObject({ code: 'validation_failed', errors: [{ path: 'port' }] });
    const badSub = await rejection(engine.invoke('tunnels.start', { port: appPort, subdomain: 'Not OK' }));
    expect(badSub.errors?.[0]?.path).toBe('subdomain');
    const badHost = await rejection(engine.invoke('tunnels.start', { port: appPort, hostHeader: 'a b' }));
    expect(badHost.errors?.[0]?.path).toBe('hostHeader');

    // Another tunnel of the same Engine on a subdomain it already uses.
    await engine.invoke('tunnels.start', { port: appPort, subdomain: 'eng-twice' });
    expect(
      await rejection(engine.invoke('tunnels.start', { port: appPort, subdomain: 'eng-twice' })),
    ).toMatchObject({
      code: 'conflict',
    });

    const badKey = engineFor(tempHome(), { key: 'wk_' + 'x'.repeat(32) });
    expect(await rejection(badKey.invoke('tunnels.start', { port: appPort }))).toMatchObject({
      code: 'unauthorized',
      status: 401,
    });
  });

  it('stops a tunnel while it connects, leaving nothing connected behind', async () => {
    const engine = engineFor();
    let stopping: Promise<unknown> | null = null;
    const off = engine.on('tunnels', (list) => {
      const connecting = list.find((t) => t.state === 'connecting');
      if (connecting && !stopping) stopping = engine.invoke('tunnels.stop', { id: connecting.id });
    });
    const started = await rejection(
      engine.invoke('tunnels.start', { port: appPort, subdomain: 'eng-early' }),
    );
    off();
    expect(started).toMatchObject({
      code: 'conflict',
      detail: 'the tunnel was stopped before it came online',
    });
    expect(await stopping).toMatchObject({ state: 'stopped' });
    expect(await engine.invoke('tunnels.list', undefined)).toEqual([]);
    await quietFor(100);
    const platformTunnels = await call<Array<{ subdomain: string }>>(`${tp.api}/tunnels`, { key: tp.key });
    expect(platformTunnels.body.map((t) => t.subdomain)).not.toContain('eng-early');
  });

  it('reconnects when the connection drops, keeping its subdomain, and says so in events', async () => {
    const engine = engineFor();
    const tunnels = collect(engine, 'tunnels');
    const traffic = collect(engine, 'traffic');
    const tunnel = await engine.invoke('tunnels.start', { port: appPort, subdomain: 'eng-drop' });
    tp.platform.tunnels.find(tp.accountId, 'eng-drop').session!.destroy();
    await tunnels.until(
      (all) => all.some((list) => list[0]?.state === 'reconnecting') && all.at(-1)?.[0]?.state === 'online',
      'reconnecting, then online',
    );
    const reconnecting = tunnels.seen.find((list) => list[0]?.state === 'reconnecting')![0]!;
    expect(reconnecting.detail).toMatch(/retrying in/);
    const online = tunnels.seen.at(-1)![0]!;
    expect(online).toMatchObject({ subdomain: 'eng-drop', url: tunnel.url, detail: null });
    expect((await edge('eng-drop', '/again')).status).toBe(200);
    await traffic.until((all) => trafficOf(all).length === 1, 'traffic after the reconnect');
    // Found by the id it started with, whatever the platform calls it now.
    expect((await engine.invoke('traffic.list', { tunnelId: tunnel.id })).total).toBe(1);
    expect((await engine.invoke('tunnels.stop', { id: tunnel.id })).state).toBe('stopped');
  });

  it('replays a request straight to the local port, edited or not, and records it with replay_of', async () => {
    const engine = engineFor();
    const traffic = collect(engine, 'traffic');
    await engine.invoke('tunnels.start', { port: appPort, subdomain: 'eng-replay', hostHeader: 'rewrite' });
    await edge('eng-replay', '/orders?id=7', {
      method: 'PUT',
      body: 'amount=5',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-trace': 'one' },
    });
    await traffic.until((all) => trafficOf(all).length === 1, 'the exchange');
    const original = trafficOf(traffic.seen)[0]!;
    const platformBefore = (
      await call<CapturedRequest[]>(`${tp.api}/tunnels/eng-replay/requests`, { key: tp.key })
    ).body.length;

    app.received.length = 0;
    const replay = await engine.invoke('traffic.replay', { id: original.id });
    expect(app.received).toHaveLength(1);
    expect(app.received[0]).toMatchObject({ method: 'PUT', url: '/orders?id=7' });
    expect(app.received[0]!.headers).toMatchObject({ 'x-trace': 'one', host: `localhost:${appPort}` });
    expect(app.received[0]!.body.toString()).toBe('amount=5');
    expect(replay).toMatchObject({ replay_of: original.id, method: 'PUT', status_code: 200, error: null });
    expect(replay.id).not.toBe(original.id);
    expectSpecCapturedRequest(replay);
    expect(replay.remote_addr).toBe(original.remote_addr);
    expect(JSON.parse(Buffer.from(replay.response_body!, 'base64').toString())).toMatchObject({
      body: 'amount=5',
    });

    const edited = await engine.invoke('traffic.replay', {
      id: original.id,
      method: 'POST',
      path: '/orders/edited',
      headers: [
        { name: 'content-type', value: 'application/json' },
        { name: 'x-trace', value: 'two' },
      ],
      body: Buffer.from('{"amount":6}').toString('base64'),
    });
    expect(app.received[1]).toMatchObject({ method: 'POST', url: '/orders/edited' });
    expect(app.received[1]!.headers).toMatchObject({ 'x-trace': 'two', 'content-type': 'application/json' });
    expect(app.received[1]!.body.toString()).toBe('{"amount":6}');
    expect(edited).toMatchObject({ replay_of: original.id, method: 'POST', path: '/orders/edited' });

    // Both are stored, sent as traffic, and searchable; none went through the platform.
    await traffic.until((all) => trafficOf(all).length === 3, 'the replays as traffic events');
    const replays = await engine.invoke('traffic.list', { q: 'orders edited' });
    expect(replays.requests.map((r) => r.id)).toEqual([edited.id]);
    expect((await engine.invoke('traffic.get', { id: replay.id })).replay_of).toBe(original.id);
    const platformAfter = (
      await call<CapturedRequest[]>(`${tp.api}/tunnels/eng-replay/requests`, { key: tp.key })
    ).body.length;
    expect(platformAfter).toBe(platformBefore);

    const badEdit = await rejection(engine.invoke('traffic.replay', { id: original.id, path: 'no-slash' }));
    expect(badEdit.errors?.[0]?.path).toBe('path');
    expect(await rejection(engine.invoke('traffic.replay', { id: original.id, body: '%%%' }))).toMatchObject({
      code: 'validation_failed',
    });
    expect(await rejection(engine.invoke('traffic.replay', { id: 'req_missing' }))).toMatchObject({
      code: 'not_found',
    });

    const har = JSON.parse(await engine.invoke('traffic.har', { ids: [original.id, edited.id] }));
    expect(har.log.creator).toEqual({ name: 'Wharf', version: '9.9.9' });
    expect(har.log.entries).toHaveLength(2);
    expect(har.log.entries[0].request.postData.params).toEqual([{ name: 'amount', value: '5' }]);
    const curl = await engine.invoke('traffic.curl', { id: original.id });
    expect(curl).toContain(`curl 'http://eng-replay.tunnel.localhost:${tp.edgePort}/orders?id=7'`);
    expect(curl).toContain('--data-binary amount=5');
    expect(await rejection(engine.invoke('traffic.har', { ids: [] }))).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: 'ids' }],
    });
  });

  it('records a replay that finds nothing listening, with its error', async () => {
    const engine = engineFor();
    const spare = await startLocalApp((_req, res) => res.end('spare'));
    const sparePort = spare.port;
    const traffic = collect(engine, 'traffic');
    await engine.invoke('tunnels.start', { port: sparePort, subdomain: 'eng-gone' });
    await edge('eng-gone', '/x');
    await traffic.until((all) => trafficOf(all).length === 1, 'the exchange');
    await spare.close();
    const replay = await engine.invoke('traffic.replay', { id: trafficOf(traffic.seen)[0]!.id });
    // No response from the app: the status is the tunnel client's own 502, the error says why.
    expect(replay).toMatchObject({
      status_code: 502,
      error: `nothing is listening on 127.0.0.1:${sparePort}`,
    });
    expectSpecCapturedRequest(replay);
    expect((await engine.invoke('traffic.list', { statuses: ['error'] })).requests[0]!.id).toBe(replay.id);
  });

  it('says when nothing listens on the local port, until the app answers or a request finds it gone', async () => {
    const engine = engineFor();
    const tunnels = collect(engine, 'tunnels');
    // A port nothing listens on yet.
    const late = await startLocalApp((_req, res) => res.end('late'));
    const port = late.port;
    await late.close();

    const tunnel = await engine.invoke('tunnels.start', { port, subdomain: 'eng-late' });
    // Known from the first event on, before any request.
    expect(tunnel).toMatchObject({ state: 'online', listening: false });
    expect(tunnels.seen.map((list) => list[0]?.listening)).toEqual([false, false]);
    expect((await edge('eng-late', '/too-early')).status).toBe(502);

    // The app starts: the next check says so, and the checks stop.
    await late.listen();
    await tunnels.until((all) => all.at(-1)?.[0]?.listening === true, 'the listener seen', 3_000);
    expect((await engine.invoke('tunnels.list', undefined))[0]!.listening).toBe(true);
    const events = tunnels.seen.length;
    await quietFor(200);
    expect(tunnels.seen.length).toBe(events);

    // The app goes away: the first request that finds nothing there brings the warning back.
    await late.close();
    expect((await edge('eng-late', '/gone')).status).toBe(502);
    await tunnels.until((all) => all.at(-1)?.[0]?.listening === false, 'the listener gone', 3_000);

    // Stopped: no longer checked, and not known.
    const stopped = await engine.invoke('tunnels.stop', { id: tunnel.id });
    expect(stopped.listening).toBeNull();
    const after = tunnels.seen.length;
    await late.listen();
    await quietFor(200);
    expect(tunnels.seen.length).toBe(after);
    await late.close();

    // The history names the tunnel by its subdomain and local port.
    expect(await engine.invoke('traffic.tunnels', undefined)).toContainEqual({
      subdomain: 'eng-late',
      localPort: port,
      requests: 2,
    });
  });

  it('keeps the history across an Engine restart, replays from it, and clears it', async () => {
    const home = tempHome();
    const first = engineFor(home);
    const traffic = collect(first, 'traffic');
    const tunnel = await first.invoke('tunnels.start', { port: appPort, subdomain: 'eng-restart' });
    await edge('eng-restart', '/persist', {
      method: 'POST',
      body: 'durian',
      headers: { 'content-type': 'text/plain' },
    });
    await traffic.until((all) => trafficOf(all).length === 1, 'the exchange');
    const id = trafficOf(traffic.seen)[0]!.id;
    await first.close();
    // Closing the Engine stopped its tunnel.
    const platformTunnels = await call<Array<{ subdomain: string }>>(`${tp.api}/tunnels`, { key: tp.key });
    expect(platformTunnels.body.map((t) => t.subdomain)).not.toContain('eng-restart');

    const second = engineFor(home);
    expect(await second.invoke('tunnels.list', undefined)).toEqual([]);
    const page = await second.invoke('traffic.list', { q: 'durian' });
    expect(page.requests.map((r) => r.id)).toEqual([id]);
    expect((await second.invoke('traffic.list', { tunnelId: tunnel.id })).total).toBe(1);
    expect((await second.invoke('traffic.list', { tunnelId: 'eng-restart' })).total).toBe(1);
    // The tunnel is gone, the local port is remembered: the replay still reaches the app.
    app.received.length = 0;
    const replay = await second.invoke('traffic.replay', { id });
    expect(app.received.map((r) => r.url)).toEqual(['/persist']);
    expect(replay.replay_of).toBe(id);
    // A new tunnel on the same subdomain: filtering by it shows the earlier session's traffic too.
    const again = await second.invoke('tunnels.start', { port: appPort, subdomain: 'eng-restart' });
    expect((await second.invoke('traffic.list', { tunnelId: again.id })).total).toBe(2);
    expect(await second.invoke('traffic.clear', { tunnelId: again.id })).toEqual({ deleted: 2 });
    expect((await second.invoke('traffic.list', {})).total).toBe(0);
  });
});

describe('the Mirror after kill -9', () => {
  it('reopens intact, with what was stored, after the process tunnelling traffic is SIGKILLed', async () => {
    // The child: an Engine with one tunnel, bundled from the sources (Node 20 cannot run TypeScript).
    const work = join(root, 'node_modules', '.cache', `wharf-kill9-${process.pid}-${Date.now()}`);
    mkdirSync(work, { recursive: true });
    dirs.push(work);
    const src = (path: string) => JSON.stringify(join(root, 'src', path));
    writeFileSync(
      join(work, 'child.ts'),
      `import { Engine } from ${src('core/engine.ts')};
import { FileSecretStore } from ${src('core/secret-store.ts')};
const [home, origin, apiKey, port] = process.argv.slice(2);
const engine = new Engine({
  home,
  secrets: new FileSecretStore(home + '/secrets.json'),
  platformOverride: { mode: 'remote', origin, apiKey },
});
engine.on('traffic', (event) => process.stdout.write('stored ' + event.requests.length + '\\n'));
const tunnel = await engine.invoke('tunnels.start', { port: Number(port), subdomain: 'eng-kill' });
process.stdout.write('online ' + tunnel.url + '\\n');
`,
    );
    await build({
      input: join(work, 'child.ts'),
      platform: 'node',
      external: [/^node:/, 'better-sqlite3'],
      resolve: { extensionAlias: { '.js': ['.ts', '.js'] } },
      logLevel: 'silent',
      output: { dir: work, format: 'esm', entryFileNames: 'child.mjs' },
    });

    const home = tempHome();
    const child = spawn(process.execPath, [join(work, 'child.mjs'), home, origin, tp.key, String(appPort)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stored = 0;
    let online = false;
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      for (const line of d.toString().split('\n')) {
        if (line.startsWith('online ')) online = true;
        const n = /^stored (\d+)$/.exec(line);
        if (n) stored += Number(n[1]);
      }
    });
    const deadline = Date.now() + 15_000;
    await until(
      () => {
        if (child.exitCode !== null) throw new Error(`the child did not come online: ${stderr}`);
        return online;
      },
      'the child to come online',
      15_000,
      20,
    );

    // Load: 16 workers posting text and binary bodies until the child is killed.
    let loading = true;
    const body = Buffer.alloc(32 * 1024, 'x');
    const workers = Array.from({ length: 16 }, async (_, w) => {
      for (let i = 0; loading; i++) {
        await edge('eng-kill', `/load/${w}/${i}`, {
          method: 'POST',
          body: i % 2 ? body : `{"worker":${w},"i":${i},"word":"loquat"}`,
          headers: { 'content-type': i % 2 ? 'application/octet-stream' : 'application/json' },
        }).catch(() => undefined);
      }
    });
    await until(() => stored >= 800, '800 exchanges stored', deadline + 15_000 - Date.now(), 10);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    loading = false;
    await Promise.all(workers);

    const mirror = new Mirror(join(home, 'mirror.db'));
    try {
      expect(mirror.integrityCheck()).toBe('ok');
      const { count } = mirror.captures.stats();
      // Everything it said it stored is there (and perhaps a batch it had not reported yet).
      expect(count).toBeGreaterThanOrEqual(stored);
      const page = mirror.captures.list({ limit: 1000 });
      expect(page.total).toBe(count);
      expect(mirror.captures.list({ q: 'loquat' }).total).toBeGreaterThan(0);
      const detail = mirror.captures.get(page.requests[0]!.id)!.detail;
      expect(detail.path).toMatch(/^\/load\//);
      // And it takes new writes.
      expect(mirror.captures.clear()).toBe(count);
    } finally {
      mirror.close();
    }
  }, 60_000);
});
