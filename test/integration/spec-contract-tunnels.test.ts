// SPEC.md §2.4, §4.5 and §6.2 (tunnel inspection), with §5.5 (replay with X-API-Key) and §7, as a
// client written only from SPEC.md calls them: a real platform, a real local app and the real tunnel
// client on loopback; every captured request, in the list, in the replay's answer and in the live
// feed's messages, held to the §2.4 table.
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { TunnelClient } from '../../src/core/tunnel/client.js';
import { until, viaEdge } from '../helpers/deploy.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';
import { CAPTURED_REQUEST, expectSpec } from '../helpers/spec-contract.js';

const SUB = 'spec-tunnel';

let tp: TestPlatform;
let app: Server;
let client: TunnelClient;
let key: string;
let host: string;
let hits = 0;

beforeAll(async () => {
  tp = await startPlatform();
  key = (await tp.newAccount({ scopes: ['deploy'] })).key;
  app = createServer((req, res) => {
    hits += 1;
    req.resume();
    req.on('end', () => {
      res.setHeader('set-cookie', ['a=1', 'b=2']);
      res.setHeader('x-hit', String(hits));
      res.end(`hello ${req.method} ${req.url}`);
    });
  });
  app.listen(0, '127.0.0.1');
  await once(app, 'listening');
  client = new TunnelClient({
    platformUrl: tp.api.replace(/\/api\/v1$/, ''),
    apiKey: key,
    localPort: (app.address() as AddressInfo).port,
    subdomain: SUB,
    backoffMs: 50,
  });
  await client.start();
  host = `${SUB}.${tp.platform.config.tunnelDomain}`;
});

afterAll(async () => {
  await client?.stop();
  app?.close();
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
      localPort: (app.address() as AddressInfo).port,
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
