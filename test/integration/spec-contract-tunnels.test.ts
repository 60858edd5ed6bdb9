// SPEC.md §2.4, §4.5 and §6.2 (tunnel inspection), with §5.5 (replay with X-API-Key) and §7, as a
// client written only from SPEC.md calls them: a real platform, a real local app and the real tunnel
// client on loopback; every captured request, in the list, in the replay's answer and in the live
// feed's messages, held to the §2.4 table, including those that got no response from the app (their
// status_code is then the platform's own: 502 app down, 499 client gone, 504 replay timed out).
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type IncomingMessage, request } from 'node:http';
import { connect as connectHttp2 } from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { TunnelClient } from '../../src/core/tunnel/client.js';
import { freePort } from '../../src/server/runtime/process.js';
import { viaEdge } from '../helpers/deploy.js';
import { type LocalApp, startLocalApp } from '../helpers/local-app.js';
import { until } from '../helpers/poll.js';
import { type CallResult, call, startPlatform, type TestPlatform } from '../helpers/platform.js';
import { CAPTURED_REQUEST, expectSpec } from '../helpers/spec-contract.js';

const SUB = 'spec-tunnel';

let tp: TestPlatform;
let app: LocalApp;
let client: TunnelClient;
let key: string;
let host: string;
let hits = 0;
/** Requests for /spec/hang… the app holds without ever answering. */
const held = new Set<IncomingMessage>();

beforeAll(async () => {
  tp = await startPlatform();
  key = (await tp.newAccount({ scopes: ['deploy'] })).key;
  app = await startLocalApp((req, res) => {
    hits += 1;
    if (req.url?.startsWith('/spec/hang')) {
      held.add(req);
      req.resume();
      // Until the tunnel client gives up on it (the request's own 'close' comes once it was read).
      res.once('close', () => held.delete(req));
      return;
    }
    req.resume();
    req.on('end', () => {
      res.setHeader('set-cookie', ['a=1', 'b=2']);
      res.setHeader('x-hit', String(hits));
      res.end(`hello ${req.method} ${req.url}`);
    });
  });
  client = new TunnelClient({
    platformUrl: tp.api.replace(/\/api\/v1$/, ''),
    apiKey: key,
    localPort: app.port,
    subdomain: SUB,
    backoffMs: 50,
  });
  await client.start();
  host = `${SUB}.${tp.platform.config.tunnelDomain}`;
});

afterAll(async () => {
  await client?.stop();
  await app?.close();
  await tp?.close();
});

const pub = (path: string, options: Parameters<typeof viaEdge>[3] = {}) =>
  viaEdge(tp.edgePort, host, path, options);

type Captured = { id: string; method: string; path: string; status_code: number } & Record<string, unknown>;

async function listed(): Promise<Captured[]> {
  const result = await call<Captured[]>(`${tp.api}/tunnels/${host}/requests`, { key });
  expect(result.status).toBe(200);
  return result.body;
}

describe('§4.5: GET /tunnels/:tunnelUrl/requests', () => {
  it('answers 200 with an array of captured requests, each with every §2.4 field in its type', async () => {
    await pub('/spec/one', {
      method: 'POST',
      body: 'ping',
      headers: { 'content-type': 'text/plain', 'x-multi': 'a' },
    });
    await until(async () => (await listed()).some((r) => r.path === '/spec/one'), 'the capture');
    const list = await listed();
    expect(Array.isArray(list)).toBe(true);
    for (const captured of list) expectSpec(captured, CAPTURED_REQUEST, 'a captured request');
    const one = list.find((r) => r.path === '/spec/one')!;
    expect(one).toMatchObject({ method: 'POST', status_code: 200, request_size: 4 });
    expect((one.request_headers as Record<string, string>)['content-type']).toBe('text/plain');
    expect((one.response_headers as Record<string, string>)['x-hit']).toEqual(expect.any(String));
    expect(one.response_size).toBe(Buffer.byteLength('hello POST /spec/one'));
    expect(Date.parse(one.timestamp as string)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('answers 404 for a tunnel that does not exist (bad input)', async () => {
    const result = await call(`${tp.api}/tunnels/no-such-tunnel.example/requests`, { key });
    expect(result.status).toBe(404);
  });
});

describe('§2.4: status_code of a captured request that got no response from the local app', () => {
  it('is 502 when nothing listens on the local port (the tunnel client’s own answer)', async () => {
    const deadPort = await freePort();
    const down = new TunnelClient({
      platformUrl: tp.api.replace(/\/api\/v1$/, ''),
      apiKey: key,
      localPort: deadPort,
      subdomain: 'spec-tunnel-down',
      backoffMs: 50,
    });
    await down.start();
    try {
      const downHost = `spec-tunnel-down.${tp.platform.config.tunnelDomain}`;
      const answer = await viaEdge(tp.edgePort, downHost, '/spec/down', { method: 'POST', body: 'lost' });
      expect(answer.status).toBe(502);
      let list: Captured[] = [];
      await until(
        async () =>
          (list = (await call<Captured[]>(`${tp.api}/tunnels/${downHost}/requests`, { key })).body).length >
          0,
        'the capture',
      );
      expectSpec(list[0], CAPTURED_REQUEST, 'the captured request');
      expect(list[0]).toMatchObject({
        method: 'POST',
        path: '/spec/down',
        status_code: 502,
        request_size: 4,
      });
    } finally {
      await down.stop();
    }
  });

  /** A public request the app holds, abandoned by its client once the app has it; returns its capture. */
  async function abandoned(path: string): Promise<Captured> {
    const req = request({
      host: '127.0.0.1',
      port: tp.edgePort,
      path,
      headers: { host: `${host}:${tp.edgePort}` },
      agent: false,
    });
    req.on('error', () => undefined);
    req.end();
    try {
      await until(() => [...held].some((r) => r.url === path), `the app to hold ${path}`);
    } finally {
      req.destroy();
    }
    let captured: Captured | undefined;
    await until(
      async () => (captured = (await listed()).find((r) => r.path === path)) !== undefined,
      'the capture',
    );
    return captured!;
  }

  it('is 499 when the public client went away before any response', async () => {
    const captured = await abandoned('/spec/hang/abandoned');
    expectSpec(captured, CAPTURED_REQUEST, 'the captured request');
    expect(captured).toMatchObject({ method: 'GET', status_code: 499, response_size: 0 });
  });

  it('is 504 when a replay times out waiting for the app', async () => {
    const original = await abandoned('/spec/hang/replayed');
    // A replay waits 60 s for the app (REPLAY_TIMEOUT_MS, not configurable): HTTP/2 stream timeouts are
    // cut to 1 s for this test, in this process only, so that the real time-out path runs in bounded time.
    const stream = http2StreamPrototype();
    const original60s = stream.setTimeout;
    stream.setTimeout = function (this: unknown, ms: number, callback?: () => void) {
      return original60s.call(this, ms > 0 ? Math.min(ms, 1_000) : ms, callback);
    };
    let replay: CallResult<Captured>;
    try {
      replay = await call<Captured>(`${tp.api}/tunnels/${host}/replay/${original.id}`, {
        method: 'POST',
        headers: { 'x-api-key': key },
      });
    } finally {
      stream.setTimeout = original60s;
    }
    expect(replay.status, JSON.stringify(replay.body)).toBe(200);
    expectSpec(replay.body, CAPTURED_REQUEST, 'the replay answer');
    expect(replay.body).toMatchObject({ method: 'GET', path: '/spec/hang/replayed', status_code: 504 });
    expect(replay.body.id).not.toBe(original.id);
    const again = (await listed()).find((r) => r.id === replay.body.id);
    expectSpec(again, CAPTURED_REQUEST, 'the listed replay');
    expect(again).toMatchObject({ status_code: 504 });
  });
});

/** The prototype that holds HTTP/2 streams' setTimeout (Node's Http2Stream, which it does not export). */
function http2StreamPrototype(): { setTimeout: (ms: number, callback?: () => void) => unknown } {
  const session = connectHttp2('http://127.0.0.1:9');
  session.on('error', () => undefined);
  const stream = session.request({ ':path': '/' });
  stream.on('error', () => undefined);
  let proto: object | null = Object.getPrototypeOf(stream) as object;
  while (proto && !Object.prototype.hasOwnProperty.call(proto, 'setTimeout'))
    proto = Object.getPrototypeOf(proto) as object | null;
  session.destroy();
  if (!proto) throw new Error('no setTimeout on the HTTP/2 stream prototype chain');
  return proto as { setTimeout: (ms: number, callback?: () => void) => unknown };
}

describe('§4.5 and §5.5: POST /tunnels/:tunnelUrl/replay/:requestId with X-API-Key', () => {
  it('re-sends the captured request through the tunnel and answers the new response', async () => {
    await pub('/spec/replay');
    await until(async () => (await listed()).some((r) => r.path === '/spec/replay'), 'the capture');
    const original = (await listed()).find((r) => r.path === '/spec/replay')!;
    const before = hits;
    const replay = await call(`${tp.api}/tunnels/${host}/replay/${original.id}`, {
      method: 'POST',
      headers: { 'x-api-key': key },
    });
    expect(replay.status, JSON.stringify(replay.body)).toBe(200);
    expect(hits).toBe(before + 1);
    expectSpec(replay.body, CAPTURED_REQUEST, 'the replay answer');
    expect(replay.body).toMatchObject({ method: 'GET', path: '/spec/replay', status_code: 200 });
  });

  it('answers 401 without X-API-Key and 404 for an unknown request id (bad input)', async () => {
    const list = await listed();
    expect((await call(`${tp.api}/tunnels/${host}/replay/${list[0]!.id}`, { method: 'POST' })).status).toBe(
      401,
    );
    expect(
      (await call(`${tp.api}/tunnels/${host}/replay/req_doesnotexist`, { key, method: 'POST' })).status,
    ).toBe(404);
  });
});

describe('§6.2: WS /api/v1/ws/traffic/:tunnelUrl', () => {
  it('sends each request as a JSON captured request of §2.4, as traffic arrives', async () => {
    const ws = new WebSocket(`${tp.api.replace(/^http/, 'ws')}/ws/traffic/${host}`, {
      headers: { 'x-api-key': key },
    });
    const messages: unknown[] = [];
    ws.on('message', (data) => messages.push(JSON.parse(String(data))));
    await once(ws, 'open');
    await pub('/spec/live/1');
    await pub('/spec/live/2', { method: 'PUT', body: 'two' });
    await until(() => messages.length >= 2, 'two live messages');
    ws.close();
    for (const message of messages) expectSpec(message, CAPTURED_REQUEST, 'a live message');
    expect(messages.map((m) => (m as Captured).path)).toEqual(['/spec/live/1', '/spec/live/2']);
  });
});

describe('§2.4 and §8: captured requests are held in memory only', () => {
  it('are gone after the server restarts, while the tunnel itself comes back', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-spec-restart-'));
    let first: TestPlatform | null = await startPlatform({ dataDir });
    let second: TestPlatform | null = null;
    const restartKey = first.key;
    const port = Number(new URL(first.api).port);
    const edgePort = first.edgePort;
    const tunnel = new TunnelClient({
      platformUrl: first.api.replace(/\/api\/v1$/, ''),
      apiKey: restartKey,
      localPort: app.port,
      subdomain: 'spec-restart',
      backoffMs: 50,
    });
    try {
      await tunnel.start();
      const restartHost = `spec-restart.${first.platform.config.tunnelDomain}`;
      await viaEdge(edgePort, restartHost, '/before-restart');
      const requests = (tp2: TestPlatform) =>
        call<Captured[]>(`${tp2.api}/tunnels/${restartHost}/requests`, { key: restartKey });
      await until(async () => (await requests(first!)).body.length === 1, 'the capture');

      await first.close();
      first = null;
      second = await startPlatform({ dataDir, edgePort }, { port });
      const again = second;
      await until(async () => (await requests(again)).status === 200, 'the tunnel to reconnect', 15_000);
      expect((await requests(again)).body).toEqual([]);
      await viaEdge(edgePort, restartHost, '/after-restart');
      await until(async () => (await requests(again)).body.length === 1, 'the new capture');
      expect((await requests(again)).body.map((r) => r.path)).toEqual(['/after-restart']);
    } finally {
      await tunnel.stop();
      await first?.close();
      await second?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
