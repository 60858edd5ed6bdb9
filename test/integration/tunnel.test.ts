// Tunnels end to end: a real platform (API + edge), a real local app on 127.0.0.1, the real tunnel
// client. The relay is checked over both transports (the raw `wharf-tunnel` upgrade and the WebSocket
// fallback): bodies exact to the byte, streaming both ways without buffering, HEAD/204/304, cookies,
// hop-by-hop headers, chunked responses, server-sent events, WebSockets, 200 concurrent requests,
// aborts and a local app that is down. Then the capture API on the edge (list, detail, truncation,
// offline entries, replay, the live feed), and the subdomain, ownership and auth rules.
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import {
  Agent,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
  request,
} from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import type { CapturedExchange } from '../../src/core/capture/capture.js';
import { type TunnelClientOptions, TunnelClient, TunnelRefusedError } from '../../src/core/tunnel/client.js';
import type { CapturedRequest, CapturedRequestDetail, Tunnel } from '../../src/shared/api/tunnels.js';
import { expectSpecCapturedRequest, portOf } from '../helpers/captured-request.js';
import { viaEdge } from '../helpers/deploy.js';
import { type LocalApp, closedPort, startAsyncApp, startTextApp } from '../helpers/local-app.js';
import { quietFor, until } from '../helpers/poll.js';
import { type TestPlatform, call, expectProblem, startPlatform } from '../helpers/platform.js';

const MiB = 1024 * 1024;

let tp: TestPlatform;
let app: LocalApp;
let appPort: number;
let platformUrl: string;
let apiPort: number;
const clients = new Set<TunnelClient>();

// ---------------------------------------------------------------------------------------------------
// The local app.

/** What the app saw, for the tests to wait on: `upload-first`, `aborted:<path>`, `hit:<path>`. */
const appEvents = new EventEmitter();
appEvents.setMaxListeners(0);
/** Gates the app waits at (`?gate=NAME`) until the test opens them. */
const gates = new Map<string, () => void>();
const hits = new Map<string, number>();
/** 10 MiB of random bytes the app serves slices of. */
const big = randomBytes(10 * MiB);

function gate(name: string): Promise<void> {
  return new Promise((resolve) => gates.set(name, resolve));
}

async function openGate(name: string): Promise<void> {
  await until(() => gates.has(name), `the app to wait at gate ${name}`, 5_000, 5);
  gates.get(name)!();
  gates.delete(name);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

async function writeAll(res: ServerResponse, data: Buffer, chunk = 64 * 1024): Promise<void> {
  for (let offset = 0; offset < data.length; offset += chunk) {
    if (res.destroyed) return;
    if (!res.write(data.subarray(offset, offset + chunk))) await once(res, 'drain');
  }
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://app');
  hits.set(url.pathname, (hits.get(url.pathname) ?? 0) + 1);
  appEvents.emit(`hit:${url.pathname}`, req);
  const gateName = url.searchParams.get('gate');
  switch (url.pathname) {
    case '/info': {
      const body = await readBody(req);
      res.setHeader('content-type', 'application/json');
      // Hop-by-hop response headers: none of them may reach the public client.
      res.setHeader('connection', 'keep-alive, x-private');
      res.setHeader('x-private', 'for this hop only');
      res.setHeader('proxy-connection', 'keep-alive');
      res.end(
        JSON.stringify({
          method: req.method,
          url: req.url,
          headers: req.headers,
          body: body.toString('base64'),
        }),
      );
      return;
    }
    case '/echo': {
      const body = await readBody(req);
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/octet-stream' });
      res.end(body);
      return;
    }
    case '/upload': {
      const hash = createHash('sha256');
      let size = 0;
      req.on('data', (c: Buffer) => {
        if (size === 0) appEvents.emit('upload-first');
        size += c.length;
        hash.update(c);
      });
      await once(req, 'end');
      res.end(JSON.stringify({ size, sha256: hash.digest('hex') }));
      return;
    }
    case '/download': {
      const n = Number(url.searchParams.get('n') ?? big.length);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': n });
      await writeAll(res, big.subarray(0, Math.min(n, MiB)));
      if (gateName) await gate(gateName);
      await writeAll(res, big.subarray(MiB, n));
      res.end();
      return;
    }
    case '/chunked': {
      res.writeHead(200, { 'content-type': 'text/plain' });
      for (const part of ['one\n', 'two\n', 'three\n']) {
        res.write(part);
        await new Promise((r) => setTimeout(r, 20));
      }
      res.end();
      return;
    }
    case '/sse': {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write('event: tick\ndata: one\n\n');
      await gate(gateName ?? 'sse');
      res.write('event: tick\ndata: two\n\n');
      await gate(`${gateName ?? 'sse'}-2`);
      res.end('event: tick\ndata: three\n\n');
      return;
    }
    case '/head':
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 10 });
      res.end(req.method === 'HEAD' ? undefined : 'hello head');
      return;
    case '/204':
      res.writeHead(204, { 'x-kind': 'no content' });
      res.end();
      return;
    case '/304':
      res.writeHead(304, { etag: '"v1"', 'x-kind': 'not modified' });
      res.end();
      return;
    case '/cookies':
      res.setHeader('set-cookie', ['a=1; Path=/', 'b=2; HttpOnly', 'c=3; SameSite=Lax']);
      res.end('cookies');
      return;
    case '/slow': {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('tick\n'), 20);
      res.on('close', () => {
        clearInterval(timer);
        appEvents.emit('aborted:/slow', !res.writableFinished);
      });
      return;
    }
    case '/slow-upload':
      req.on('data', () => appEvents.emit('slow-upload-data'));
      req.on('close', () => appEvents.emit('aborted:/slow-upload', !req.complete));
      return;
    case '/cut':
      // Promises 1,000 bytes (or sends chunked), sends 100, then the connection dies.
      res.writeHead(200, url.searchParams.has('chunked') ? {} : { 'content-length': 1000 });
      res.write(Buffer.alloc(100, 'x'));
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    case '/replay-target': {
      const body = await readBody(req);
      appEvents.emit('replay-target', body.toString());
      res.end(`seen ${body.toString()}`);
      return;
    }
    default:
      res.end(`${req.method} ${req.url}`);
  }
}

// ---------------------------------------------------------------------------------------------------
// Public clients.

interface PublicResponse {
  status: number;
  /** The port the public client connected from (what `remote_addr` must carry). */
  localPort: number;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

function host(sub: string): string {
  return `${sub}.tunnel.localhost:${tp.edgePort}`;
}

/** One public request to the edge for `<sub>.tunnel.localhost`. */
function pub(
  sub: string,
  path: string,
  options: {
    method?: string;
    headers?: Record<string, string | string[]>;
    body?: Buffer | string;
    agent?: Agent | false;
  } = {},
): Promise<PublicResponse> {
  const headers: Record<string, string | string[]> = { ...options.headers, host: host(sub) };
  // Node frames a GET's body only when told how: a length, unless chunked was asked for.
  if (options.body !== undefined && headers['transfer-encoding'] === undefined)
    headers['content-length'] = String(Buffer.byteLength(options.body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: tp.edgePort,
        path,
        method: options.method ?? 'GET',
        headers,
        agent: options.agent ?? false,
        timeout: 15_000,
      },
      (res) => {
        // Read now: by the end of the response the socket may be back in an agent's pool.
        const localPort = res.socket?.localPort ?? 0;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            localPort,
            headers: res.headers,
            rawHeaders: res.rawHeaders,
            body: Buffer.concat(chunks),
          }),
        );
        res.on('error', reject);
        res.on('aborted', () => reject(new Error('response aborted')));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer for ${sub}${path}`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

async function startClient(
  subdomain: string | undefined,
  options: Partial<TunnelClientOptions> = {},
): Promise<{ client: TunnelClient; exchanges: CapturedExchange[] }> {
  const client = new TunnelClient({
    platformUrl,
    apiKey: tp.key,
    localPort: appPort,
    backoffMs: 50,
    ...(subdomain ? { subdomain } : {}),
    ...options,
  });
  clients.add(client);
  const exchanges: CapturedExchange[] = [];
  client.on('exchange', (e) => exchanges.push(e));
  await client.start();
  return { client, exchanges };
}

async function stopClient(client: TunnelClient): Promise<void> {
  await client.stop();
  clients.delete(client);
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

beforeAll(async () => {
  tp = await startPlatform();
  platformUrl = tp.api.replace(/\/api\/v1$/, '');
  apiPort = Number(new URL(tp.api).port);
  app = await startAsyncApp(handle);
  const wss = new WebSocketServer({ server: app.server });
  wss.on('connection', (ws, req) => {
    ws.send(JSON.stringify({ host: req.headers.host, xff: req.headers['x-forwarded-for'], url: req.url }));
    ws.on('message', (data, isBinary) =>
      ws.send(isBinary ? data : `echo: ${String(data)}`, { binary: isBinary }),
    );
    ws.on('close', (code, reason) => appEvents.emit('ws-closed', code, String(reason)));
  });
  appPort = app.port;
});

afterAll(async () => {
  await Promise.all([...clients].map((c) => c.stop()));
  await app?.close();
  await tp?.close();
});

describe('tunnel', () => {
  it('relays a public request to the local app and captures it on both sides', async () => {
    const client = new TunnelClient({
      platformUrl: tp.api.replace(/\/api\/v1$/, ''),
      apiKey: tp.key,
      localPort: appPort,
      subdomain: 'demo',
    });
    const seen: CapturedExchange[] = [];
    client.on('exchange', (e) => seen.push(e));
    const info = await client.start();
    expect(info.subdomain).toBe('demo');
    expect(info.url).toBe(`http://demo.tunnel.localhost:${tp.edgePort}`);
    const answer = await viaEdge(tp.edgePort, 'demo.tunnel.localhost', '/hello?x=1');
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(`GET /hello?x=1`);
    const list = await call<Array<{ id: string; path: string; status_code: number }>>(
      `${tp.api}/tunnels/demo/requests`,
      { key: tp.key },
    );
    expect(list.body[0]).toMatchObject({ path: '/hello?x=1', status_code: 200 });
    await until(() => seen.length > 0, 'the client to capture the exchange');
    expect(seen[0]?.request.id).toBe(list.body[0]!.id);
    // Asked at the apps' domain, the edge's 404 points at where the tunnel answers; another name not.
    const misplaced = await viaEdge(tp.edgePort, 'demo.localhost', '/');
    expect(misplaced.status).toBe(404);
    expect(misplaced.body).toContain('The tunnel demo is online at demo.tunnel.localhost');
    const nobody = await viaEdge(tp.edgePort, 'nobody-here.localhost', '/');
    expect(nobody.body).not.toContain('The tunnel');
    await client.stop();
    await until(
      async () => !(await viaEdge(tp.edgePort, 'demo.localhost', '/')).body.includes('The tunnel'),
      'the hint to go with the tunnel',
    );
  });
});

describe.each(['raw', 'websocket'] as const)('the relay over the %s transport', (transport) => {
  const sub = `relay-${transport === 'raw' ? 'raw' : 'ws'}`;
  let client: TunnelClient;
  let exchanges: CapturedExchange[];

  beforeAll(async () => {
    ({ client, exchanges } = await startClient(sub, { transport }));
  });

  afterAll(async () => {
    await stopClient(client);
  });

  it('GET and POST with text and binary bodies come back byte for byte', async () => {
    const get = await pub(sub, '/plain?q=1');
    expect(get.status).toBe(200);
    expect(get.body.toString()).toBe('GET /plain?q=1');

    const text = 'héllo wörld ✓\n'.repeat(100);
    const post = await pub(sub, '/echo', {
      method: 'POST',
      body: text,
      headers: { 'content-type': 'text/plain; charset=utf-8' },
    });
    expect(post.status).toBe(200);
    expect(post.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(post.body.toString()).toBe(text);

    // Every byte value, with and without a content-length.
    const binary = Buffer.concat([
      Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
      randomBytes(70_000),
    ]);
    for (const headers of [{}, { 'transfer-encoding': 'chunked' }] as Array<Record<string, string>>) {
      const put = await pub(sub, '/echo', { method: 'PUT', body: binary, headers });
      expect(put.status).toBe(200);
      expect(put.body.equals(binary)).toBe(true);
    }
  });

  it('passes request bodies on GET and DELETE, with and without a content-length', async () => {
    for (const method of ['GET', 'DELETE', 'OPTIONS']) {
      for (const headers of [{}, { 'transfer-encoding': 'chunked' }] as Array<Record<string, string>>) {
        const answer = await pub(sub, '/info', { method, body: 'a body', headers });
        expect(answer.status, `${method} ${JSON.stringify(headers)}`).toBe(200);
        const info = JSON.parse(answer.body.toString()) as { method: string; body: string };
        expect(info.method).toBe(method);
        expect(Buffer.from(info.body, 'base64').toString()).toBe('a body');
      }
    }
    // And a bodiless request stays bodiless: no content-length nor transfer-encoding appears.
    const bare = JSON.parse((await pub(sub, '/info')).body.toString()) as { headers: IncomingHttpHeaders };
    expect(bare.headers['content-length']).toBeUndefined();
    expect(bare.headers['transfer-encoding']).toBeUndefined();
  });

  it('replaces what a public client claims in Forwarded and X-Real-IP with what the edge saw', async () => {
    const answer = await pub(sub, '/info', {
      headers: { forwarded: 'for=6.6.6.6;host=evil.example;proto=https', 'x-real-ip': '6.6.6.6' },
    });
    expect(answer.status).toBe(200);
    const { headers } = JSON.parse(answer.body.toString()) as { headers: IncomingHttpHeaders };
    expect(headers['x-real-ip']).toBe('127.0.0.1');
    expect(headers.forwarded).toBe(`for=127.0.0.1;host="${host(sub)}";proto=http`);
    expect(answer.body.toString()).not.toContain('6.6.6.6');
    expect(answer.body.toString()).not.toContain('evil.example');

    // A replay of that request gives the app what the edge saw, not what the client claimed.
    const list = await call<CapturedRequest[]>(`${tp.api}/tunnels/${sub}/requests`, { key: tp.key });
    const original = list.body.find((r) => r.path === '/info')!;
    const replay = await call<CapturedRequest>(`${tp.api}/tunnels/${sub}/replay/${original.id}`, {
      key: tp.key,
      method: 'POST',
    });
    expect(replay.status).toBe(200);
    const detail = await call<CapturedRequestDetail>(`${tp.api}/tunnels/${sub}/requests/${replay.body.id}`, {
      key: tp.key,
    });
    const replayed = JSON.parse(Buffer.from(detail.body.response_body!, 'base64').toString()) as {
      headers: IncomingHttpHeaders;
    };
    expect(replayed.headers['x-real-ip']).toBe('127.0.0.1');
    expect(replayed.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(replayed.headers.forwarded).toBe(`for=127.0.0.1;host="${host(sub)}";proto=http`);
  });

  it('drops hop-by-hop headers both ways, keeps the public Host and sets X-Forwarded-*', async () => {
    const answer = await pub(sub, '/info', {
      headers: {
        connection: 'keep-alive, x-drop-me',
        'x-drop-me': 'hop only',
        'keep-alive': 'timeout=5',
        te: 'trailers',
        'proxy-connection': 'keep-alive',
        'x-forwarded-for': '6.6.6.6',
        'x-forwarded-host': 'evil.example',
        'x-forwarded-proto': 'https',
        'x-multi': ['one', 'two'],
      },
    });
    expect(answer.status).toBe(200);
    const { headers } = JSON.parse(answer.body.toString()) as { headers: IncomingHttpHeaders };
    expect(headers.host).toBe(host(sub));
    expect(headers['x-forwarded-host']).toBe(host(sub));
    expect(headers['x-forwarded-proto']).toBe('http');
    expect(headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(headers['x-multi']).toBe('one, two');
    for (const name of ['x-drop-me', 'keep-alive', 'te', 'proxy-connection']) {
      expect(headers[name], name).toBeUndefined();
    }
    expect(Object.keys(headers).filter((n) => n.startsWith('wharf-'))).toEqual([]);
    // The app's own hop-by-hop response headers stop at the tunnel too.
    expect(answer.headers['x-private']).toBeUndefined();
    expect(answer.headers['proxy-connection']).toBeUndefined();
    expect(answer.headers['content-type']).toBe('application/json');
  });

  it('answers HEAD, 204 and 304 without a body, and the connection stays usable', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const head = await pub(sub, '/head', { method: 'HEAD', agent });
      expect(head.status).toBe(200);
      expect(head.headers['content-length']).toBe('10');
      expect(head.body.length).toBe(0);
      const noContent = await pub(sub, '/204', { agent });
      expect(noContent.status).toBe(204);
      expect(noContent.headers['x-kind']).toBe('no content');
      expect(noContent.body.length).toBe(0);
      const notModified = await pub(sub, '/304', { agent, headers: { 'if-none-match': '"v1"' } });
      expect(notModified.status).toBe(304);
      expect(notModified.headers.etag).toBe('"v1"');
      expect(notModified.body.length).toBe(0);
      const get = await pub(sub, '/head', { agent });
      expect(get.body.toString()).toBe('hello head');
    } finally {
      agent.destroy();
    }
  });

  it('keeps each Set-Cookie header apart', async () => {
    const answer = await pub(sub, '/cookies');
    expect(answer.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; HttpOnly', 'c=3; SameSite=Lax']);
  });

  it('captures headers as SPEC.md §2.4 objects: repeated ones joined with ", ", set-cookie with a newline', async () => {
    const answer = await pub(sub, '/cookies?captured', { headers: { 'X-Tag': ['one', 'two'] } });
    expect(answer.status).toBe(200);
    const list = await call<CapturedRequest[]>(`${tp.api}/tunnels/${sub}/requests`, { key: tp.key });
    const captured = expectSpecCapturedRequest(list.body.find((r) => r.path === '/cookies?captured'));
    expect(captured.request_headers['x-tag']).toBe('one, two');
    expect(captured.response_headers['set-cookie']).toBe('a=1; Path=/\nb=2; HttpOnly\nc=3; SameSite=Lax');
    // The raw lists keep every header in order and original case, for HAR and the inspector.
    expect(captured.request_header_list.filter((h) => h.name === 'X-Tag')).toEqual([
      { name: 'X-Tag', value: 'one' },
      { name: 'X-Tag', value: 'two' },
    ]);
    expect(captured.response_header_list.filter((h) => h.name.toLowerCase() === 'set-cookie')).toHaveLength(
      3,
    );
    expect(portOf(captured.remote_addr)).toBe(answer.localPort);
  });

  it('relays chunked responses chunked', async () => {
    const answer = await pub(sub, '/chunked');
    expect(answer.status).toBe(200);
    expect(answer.headers['transfer-encoding']).toBe('chunked');
    expect(answer.headers['content-length']).toBeUndefined();
    expect(answer.body.toString()).toBe('one\ntwo\nthree\n');
  });

  it('delivers server-sent events as they are sent', async () => {
    const name = `sse-${transport}`;
    const events = await new Promise<string[]>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: tp.edgePort, path: `/sse?gate=${name}`, headers: { host: host(sub) } },
        (res) => {
          expect(res.headers['content-type']).toBe('text/event-stream');
          let text = '';
          const seen: string[] = [];
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
            for (const match of text.matchAll(/data: (\w+)\n\n/g))
              if (!seen.includes(match[1]!)) seen.push(match[1]!);
            // The app sends the next event only once this one arrived: buffering would deadlock.
            if (seen.length === 1 && seen[0] === 'one') void openGate(name);
            if (seen.length === 2) void openGate(`${name}-2`);
          });
          res.on('end', () => resolve(seen));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(events).toEqual(['one', 'two', 'three']);
  });

  it('passes WebSockets through, text and binary, with the public Host', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${tp.edgePort}/socket?x=1`, {
      headers: { host: host(sub) },
    });
    const messages: Array<string | Buffer> = [];
    const next = () =>
      new Promise<string | Buffer>((resolve) => {
        const check = () => {
          if (messages.length > 0) resolve(messages.shift()!);
          else setTimeout(check, 5);
        };
        check();
      });
    ws.on('message', (data, isBinary) => messages.push(isBinary ? (data as Buffer) : String(data)));
    await once(ws, 'open');
    const hello = JSON.parse(String(await next())) as { host: string; xff: string; url: string };
    expect(hello).toEqual({ host: host(sub), xff: '127.0.0.1', url: '/socket?x=1' });
    ws.send('ping');
    expect(await next()).toBe('echo: ping');
    const binary = randomBytes(200_000);
    ws.send(binary);
    expect(Buffer.compare((await next()) as Buffer, binary)).toBe(0);
    // The close handshake goes through both ways, code and reason included.
    const appSawClose = once(appEvents, 'ws-closed');
    ws.close(4001, 'bye');
    expect((await once(ws, 'close'))[0]).toBe(4001);
    expect(await withTimeout(appSawClose, 5_000, 'the app to see the close')).toEqual([4001, 'bye']);

    // The handshake is captured on both sides, under one id, with the app's 101 (a relay client gets
    // its record from the edge's capture stream a moment later).
    await until(() => exchanges.some((e) => e.request.path === '/socket?x=1'), 'the client to capture it');
    const onClient = exchanges.find((e) => e.request.path === '/socket?x=1');
    expect(onClient?.request).toMatchObject({ method: 'GET', status_code: 101, error: null });
    expect(onClient?.request.response_header_list).toContainEqual({ name: 'Upgrade', value: 'websocket' });
    expect(onClient?.request.response_headers.upgrade).toBe('websocket');
    expectSpecCapturedRequest(onClient?.request);
    const list = await call<Array<{ id: string; path: string; status_code: number | null }>>(
      `${tp.api}/tunnels/${sub}/requests`,
      { key: tp.key },
    );
    expect(list.body.find((r) => r.path === '/socket?x=1')).toMatchObject({
      id: onClient!.request.id,
      status_code: 101,
    });
  });

  it('streams a 10 MiB upload: the app sees the first bytes before the client finished sending', async () => {
    const data = big;
    const answer = await new Promise<{ size: number; sha256: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: tp.edgePort,
          path: '/upload',
          method: 'POST',
          headers: { host: host(sub), 'content-type': 'application/octet-stream' },
        },
        (res) => {
          readBody(res).then(
            (b) => resolve(JSON.parse(b.toString()) as { size: number; sha256: string }),
            reject,
          );
        },
      );
      req.on('error', reject);
      const firstBytes = new Promise<void>((ok, fail) => {
        appEvents.once('upload-first', ok);
        setTimeout(() => fail(new Error('the app saw nothing of the upload while it was sent')), 5_000);
      });
      void (async () => {
        req.write(data.subarray(0, 256 * 1024));
        await firstBytes;
        for (let offset = 256 * 1024; offset < data.length; offset += 64 * 1024) {
          if (!req.write(data.subarray(offset, offset + 64 * 1024))) await once(req, 'drain');
        }
        req.end();
      })().catch(reject);
    });
    expect(answer).toEqual({ size: data.length, sha256: sha256(data) });
  });

  it('streams a 10 MiB download: the client sees the first bytes before the app finished sending', async () => {
    const name = `down-${transport}`;
    const received = await new Promise<Buffer>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: tp.edgePort,
          path: `/download?gate=${name}`,
          headers: { host: host(sub) },
        },
        (res) => {
          expect(res.headers['content-length']).toBe(String(big.length));
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => {
            // The app holds the rest back until this: a buffering relay would never get here.
            if (chunks.length === 0) void openGate(name);
            chunks.push(c);
          });
          res.on('end', () => resolve(Buffer.concat(chunks)));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(received.length).toBe(big.length);
    expect(received.equals(big)).toBe(true);
  });

  it('answers 200 concurrent requests, each with its own body', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 200 });
    try {
      const bodies = Array.from({ length: 200 }, (_, i) => `request ${i} ${randomBytes(8).toString('hex')}`);
      const answers = await Promise.all(
        bodies.map((body, i) => pub(sub, `/echo?i=${i}`, { method: 'POST', body, agent })),
      );
      answers.forEach((answer, i) => {
        expect(answer.status).toBe(200);
        expect(answer.body.toString()).toBe(bodies[i]);
      });
    } finally {
      agent.destroy();
    }
  });

  it('aborts the local request when the public client goes away', async () => {
    // A response the public client abandons after its first bytes.
    const responseAborted = once(appEvents, 'aborted:/slow');
    await new Promise<void>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: tp.edgePort, path: '/slow', headers: { host: host(sub) } },
        (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', (error) => {
        if (!req.destroyed) reject(error);
      });
      req.end();
    });
    expect(await withTimeout(responseAborted, 5_000, 'the app to see the abort')).toEqual([true]);

    // An upload the public client abandons half way.
    const uploadAborted = once(appEvents, 'aborted:/slow-upload');
    const req = request({
      host: '127.0.0.1',
      port: tp.edgePort,
      path: '/slow-upload',
      method: 'POST',
      headers: { host: host(sub) },
    });
    req.on('error', () => undefined);
    req.write(randomBytes(64 * 1024));
    await withTimeout(once(appEvents, 'slow-upload-data'), 5_000, 'the app to see the upload');
    req.destroy();
    expect(await withTimeout(uploadAborted, 5_000, 'the app to see the abort')).toEqual([true]);
  });

  it('cuts the public response off when the app dies mid-response, and captures why', async () => {
    // With a length and chunked: either way the public client must not take the part for the whole.
    for (const path of ['/cut', '/cut?chunked']) {
      await expect(pub(sub, path), path).rejects.toThrow();
      await until(() => exchanges.some((e) => e.request.path === path), 'the client to capture the cut');
      expect(exchanges.find((e) => e.request.path === path)!.request.error).toBeTruthy();
      const list = await call<CapturedRequest[]>(`${tp.api}/tunnels/${sub}/requests`, { key: tp.key });
      expect(list.body.find((r) => r.path === path)?.error, path).toBeTruthy();
    }
  });

  it('answers 502 when nothing listens on the local port, captured with the error on both sides', async () => {
    const deadPort = await closedPort();
    const down = `down-${transport === 'raw' ? 'raw' : 'ws'}`;
    const { client: downClient, exchanges: seen } = await startClient(down, {
      transport,
      localPort: deadPort,
    });
    try {
      const answer = await pub(down, '/anything', { method: 'POST', body: 'lost' });
      expect(answer.status).toBe(502);
      expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(answer.body.toString()).toContain('the local app did not answer');
      await until(() => seen.length > 0, 'the client to capture the failure');
      expect(seen[0]!.request).toMatchObject({
        status_code: 502,
        error: expect.stringContaining(`${deadPort}`),
      });
      const list = await call<CapturedRequest[]>(`${tp.api}/tunnels/${down}/requests`, { key: tp.key });
      expect(list.body[0]).toMatchObject({ path: '/anything', status_code: 502, request_size: 4 });
      expect(list.body[0]!.error).toContain(`${deadPort}`);
    } finally {
      await stopClient(downClient);
    }
  });

  it('captures each exchange once on each side, with the same id', async () => {
    await pub(sub, '/same-id?n=1', { method: 'POST', body: 'abc' });
    await until(() => exchanges.some((e) => e.request.path === '/same-id?n=1'), 'the client capture');
    const mine = exchanges.filter((e) => e.request.path === '/same-id?n=1');
    const list = await call<CapturedRequest[]>(`${tp.api}/tunnels/${sub}/requests`, { key: tp.key });
    const edge = list.body.filter((r) => r.path === '/same-id?n=1');
    expect(mine).toHaveLength(1);
    expect(edge).toHaveLength(1);
    expect(edge[0]!.id).toBe(mine[0]!.request.id);
    expect(mine[0]!.request).toMatchObject({ method: 'POST', status_code: 200, request_size: 3 });
    expect(mine[0]!.requestBody.toString()).toBe('abc');
  });
});

describe('the host header', () => {
  it('is rewritten to localhost:<port> with hostHeader "rewrite", or set to a given host', async () => {
    const { client } = await startClient('host-rewrite', { hostHeader: 'rewrite' });
    const rewritten = JSON.parse((await pub('host-rewrite', '/info')).body.toString()) as {
      headers: IncomingHttpHeaders;
    };
    expect(rewritten.headers.host).toBe(`localhost:${appPort}`);
    await stopClient(client);
    const { client: named } = await startClient('host-named', { hostHeader: 'app.internal:8080' });
    const given = JSON.parse((await pub('host-named', '/info')).body.toString()) as {
      headers: IncomingHttpHeaders;
    };
    expect(given.headers.host).toBe('app.internal:8080');
    await stopClient(named);
  });
});

describe('capture on the edge', () => {
  const sub = 'cap';
  let client: TunnelClient;

  beforeAll(async () => {
    ({ client } = await startClient(sub));
  });

  it('lists the connected tunnels', async () => {
    await pub(sub, '/listed');
    const list = await call<Tunnel[]>(`${tp.api}/tunnels`, { key: tp.key });
    expect(list.status).toBe(200);
    const mine = list.body.find((t) => t.subdomain === sub);
    expect(mine).toMatchObject({
      id: expect.stringMatching(/^tun_/),
      url: `http://${host(sub)}`,
      connected_at: expect.any(String),
    });
    expect(mine!.requests_captured).toBeGreaterThanOrEqual(1);
  });

  it('finds a tunnel by bare subdomain, host name or percent-encoded URL', async () => {
    const answer = await pub(sub, '/by-name?x=1');
    const forms = [sub, `${sub}.tunnel.localhost`, host(sub), encodeURIComponent(`http://${host(sub)}`)];
    for (const form of forms) {
      const list = await call<CapturedRequest[]>(`${tp.api}/tunnels/${form}/requests`, { key: tp.key });
      expect(list.status, form).toBe(200);
      expect(list.body[0], form).toMatchObject({
        method: 'GET',
        path: '/by-name?x=1',
        url: `http://${host(sub)}/by-name?x=1`,
        status_code: 200,
        http_version: 'HTTP/1.1',
        remote_addr: `127.0.0.1:${answer.localPort}`,
        error: null,
        replay_of: null,
      });
    }
    const unknown = await call(`${tp.api}/tunnels/nope/requests`, { key: tp.key });
    expectProblem(unknown, 404, 'not_found');
  });

  it('returns bodies in base64 with truncation flags: a 2 MiB body keeps its first 1 MiB', async () => {
    const small = randomBytes(1000);
    await pub(sub, '/echo?small', { method: 'POST', body: small });
    const large = randomBytes(2 * MiB);
    const answer = await pub(sub, '/echo?large', { method: 'POST', body: large });
    expect(answer.body.equals(large)).toBe(true);
    const list = await call<CapturedRequest[]>(`${tp.api}/tunnels/${sub}/requests`, { key: tp.key });
    const smallId = list.body.find((r) => r.path === '/echo?small')!.id;
    const largeId = list.body.find((r) => r.path === '/echo?large')!.id;

    const smallDetail = await call<CapturedRequestDetail>(`${tp.api}/tunnels/${sub}/requests/${smallId}`, {
      key: tp.key,
    });
    expect(smallDetail.status).toBe(200);
    expect(Buffer.from(smallDetail.body.request_body!, 'base64').equals(small)).toBe(true);
    expect(Buffer.from(smallDetail.body.response_body!, 'base64').equals(small)).toBe(true);
    expect(smallDetail.body).toMatchObject({
      request_body_truncated: false,
      response_body_truncated: false,
      request_size: 1000,
      response_size: 1000,
    });

    const detail = await call<CapturedRequestDetail>(`${tp.api}/tunnels/${sub}/requests/${largeId}`, {
      key: tp.key,
    });
    expect(detail.body).toMatchObject({
      request_body_truncated: true,
      response_body_truncated: true,
      request_size: 2 * MiB,
      response_size: 2 * MiB,
    });
    expect(Buffer.from(detail.body.request_body!, 'base64').equals(large.subarray(0, MiB))).toBe(true);
    expect(Buffer.from(detail.body.response_body!, 'base64').equals(large.subarray(0, MiB))).toBe(true);

    const bodiless = list.body.find((r) => r.path === '/listed')!;
    const empty = await call<CapturedRequestDetail>(`${tp.api}/tunnels/${sub}/requests/${bodiless.id}`, {
      key: tp.key,
    });
    expect(empty.body.request_body).toBeNull();

    expectProblem(
      await call(`${tp.api}/tunnels/${sub}/requests/req_nothing`, { key: tp.key }),
      404,
      'not_found',
    );
  });

  it('replays a request through the tunnel and lists the replay with replay_of', async () => {
    const seen: string[] = [];
    const listener = (body: string) => seen.push(body);
    appEvents.on('replay-target', listener);
    try {
      await pub(sub, '/replay-target?r=1', {
        method: 'POST',
        body: 'payload 1',
        headers: { 'content-type': 'text/plain' },
      });
      const list = await call<CapturedRequest[]>(`${tp.api}/tunnels/${sub}/requests`, { key: tp.key });
      const original = list.body.find((r) => r.path === '/replay-target?r=1')!;
      const replay = await call<CapturedRequest>(`${tp.api}/tunnels/${sub}/replay/${original.id}`, {
        key: tp.key,
        method: 'POST',
      });
      expect(replay.status).toBe(200);
      expect(replay.body).toMatchObject({
        method: 'POST',
        path: '/replay-target?r=1',
        status_code: 200,
        replay_of: original.id,
        error: null,
      });
      expect(replay.body.id).not.toBe(original.id);
      expectSpecCapturedRequest(replay.body);
      // Sent for the original public client: the app sees its address, and so does the capture.
      expect(replay.body.remote_addr).toBe(original.remote_addr);
      expect(replay.body.request_headers['content-type']).toBe('text/plain');
      expect(seen).toEqual(['payload 1', 'payload 1']);
      const detail = await call<CapturedRequestDetail>(
        `${tp.api}/tunnels/${sub}/requests/${replay.body.id}`,
        {
          key: tp.key,
        },
      );
      expect(Buffer.from(detail.body.response_body!, 'base64').toString()).toBe('seen payload 1');
      const after = await call<CapturedRequest[]>(`${tp.api}/tunnels/${sub}/requests`, { key: tp.key });
      expect(after.body[0]).toMatchObject({ id: replay.body.id, replay_of: original.id });
      expectProblem(
        await call(`${tp.api}/tunnels/${sub}/replay/req_nothing`, { key: tp.key, method: 'POST' }),
        404,
        'not_found',
      );
    } finally {
      appEvents.off('replay-target', listener);
    }
  });

  it('refuses to replay a request whose body was not kept whole', async () => {
    await pub(sub, '/echo?too-big', { method: 'POST', body: randomBytes(MiB + 10) });
    const list = await call<CapturedRequest[]>(`${tp.api}/tunnels/${sub}/requests`, { key: tp.key });
    const id = list.body.find((r) => r.path === '/echo?too-big')!.id;
    const replay = await call(`${tp.api}/tunnels/${sub}/replay/${id}`, { key: tp.key, method: 'POST' });
    expectProblem(replay, 422, 'validation_failed');
  });

  it('streams each request to the live feed as JSON', async () => {
    const ws = new WebSocket(
      `ws://127.0.0.1:${apiPort}/api/v1/ws/traffic/${encodeURIComponent(`http://${host(sub)}`)}`,
      {
        headers: { 'x-api-key': tp.key },
      },
    );
    const received: CapturedRequest[] = [];
    ws.on('message', (data) => received.push(JSON.parse(String(data)) as CapturedRequest));
    await once(ws, 'open');
    await pub(sub, '/feed/1');
    await pub(sub, '/feed/2', { method: 'POST', body: 'two' });
    await pub(sub, '/feed/3');
    await until(() => received.length >= 3, 'three feed messages');
    expect(received.map((r) => `${r.method} ${r.path} ${r.status_code}`)).toEqual([
      'GET /feed/1 200',
      'POST /feed/2 200',
      'GET /feed/3 200',
    ]);
    const list = await call<CapturedRequest[]>(`${tp.api}/tunnels/${sub}/requests`, { key: tp.key });
    expect(list.body.slice(0, 3).map((r) => r.id)).toEqual(received.map((r) => r.id).reverse());
    for (const message of received) expectSpecCapturedRequest(message);
    // Each message is the very captured request the list holds.
    expect(list.body.slice(0, 3).reverse()).toEqual(received);
    ws.close();

    // A JWT as ?token= works too (browsers cannot set headers on a WebSocket).
    const token = await call<{ token: string }>(`${tp.api}/auth/token`, { key: tp.key, method: 'POST' });
    const byToken = new WebSocket(
      `ws://127.0.0.1:${apiPort}/api/v1/ws/traffic/${sub}?token=${token.body.token}`,
    );
    const first = new Promise<CapturedRequest>((resolve) =>
      byToken.once('message', (data) => resolve(JSON.parse(String(data)) as CapturedRequest)),
    );
    await once(byToken, 'open');
    await pub(sub, '/feed/token');
    expect((await withTimeout(first, 5_000, 'a feed message')).path).toBe('/feed/token');
    byToken.close();
  });

  it('refuses a raw API key as ?token= with 401 saying to mint a token, and never echoes the key', async () => {
    const paths = [
      `/api/v1/ws/traffic/${sub}?token=${tp.key}`,
      `/api/v1/tunnels/connect?token=${tp.key}`,
      `/api/v1/tunnels/connect?subdomain=${sub}-k&token=${encodeURIComponent(tp.key)}`,
    ];
    for (const path of paths) {
      for (const protocol of ['websocket', 'wharf-tunnel']) {
        const answer = await upgradeRequest(path, null, protocol);
        expect(answer.status, `${protocol} ${path}`).toBe(401);
        const problem = JSON.parse(answer.body) as { code: string; detail: string };
        expect(problem.code).toBe('unauthorized');
        expect(problem.detail).toContain('POST /api/v1/auth/token');
        expect(answer.body).not.toContain(tp.key);
        expect(answer.body).not.toContain(tp.key.slice(3));
      }
    }
    // Nor is a key that was revoked, or one of the right shape that does not exist, tried as a key.
    const unknown = await upgradeRequest(
      `/api/v1/ws/traffic/${sub}?token=wk_${'a'.repeat(32)}`,
      null,
      'websocket',
    );
    expect(unknown.status).toBe(401);
    expect(unknown.body).toContain('POST /api/v1/auth/token');
    // A JWT minted from that key still opens the feed.
    const token = await call<{ token: string }>(`${tp.api}/auth/token`, { key: tp.key, method: 'POST' });
    const ok = await upgradeRequest(`/api/v1/ws/traffic/${sub}?token=${token.body.token}`, null, 'websocket');
    expect(ok.status).toBe(101);
  });

  it('captures a request made while the client is offline, and the public gets a 502 page', async () => {
    await stopClient(client);
    const listed = await call<Tunnel[]>(`${tp.api}/tunnels`, { key: tp.key });
    expect(listed.body.find((t) => t.subdomain === sub)).toBeUndefined();
    const answer = await pub(sub, '/while-offline', { method: 'POST', body: 'nobody home' });
    expect(answer.status).toBe(502);
    expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(answer.headers['retry-after']).toBe('5');
    expect(answer.body.toString()).toContain('Tunnel offline');
    const list = await call<CapturedRequest[]>(`${tp.api}/tunnels/${sub}/requests`, { key: tp.key });
    expect(list.body[0]).toMatchObject({
      path: '/while-offline',
      error: 'tunnel offline',
      // What the public client got: the edge's own 502 page.
      status_code: 502,
      request_size: 11,
      remote_addr: `127.0.0.1:${answer.localPort}`,
    });
    expectSpecCapturedRequest(list.body[0]);
    const replay = await call(`${tp.api}/tunnels/${sub}/replay/${list.body[0]!.id}`, {
      key: tp.key,
      method: 'POST',
    });
    expectProblem(replay, 502, 'tunnel_unavailable');
  });

  it('answers 404 for a host no tunnel ever used', async () => {
    const answer = await pub('never-here', '/');
    expect(answer.status).toBe(404);
    expect(answer.body.toString()).toContain('No tunnel here');
  });
});

describe('subdomains, ownership and auth', () => {
  let other: { accountId: string; key: string };
  const sub = 'owned';

  beforeAll(async () => {
    other = await tp.newAccount();
    await startClient(sub);
    await pub(sub, '/private');
  });

  it('refuses a subdomain held by another account with 409 before the upgrade', async () => {
    const intruder = new TunnelClient({ platformUrl, apiKey: other.key, localPort: appPort, subdomain: sub });
    const error = await intruder.start().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TunnelRefusedError);
    expect(error).toMatchObject({ status: 409, code: 'conflict' });
    await intruder.stop();
    // The same, over the WebSocket transport and as seen on the wire.
    const viaWs = new TunnelClient({
      platformUrl,
      apiKey: other.key,
      localPort: appPort,
      subdomain: sub,
      transport: 'websocket',
    });
    expect(await viaWs.start().catch((e: unknown) => e)).toMatchObject({ status: 409, code: 'conflict' });
    await viaWs.stop();
    const raw = await upgradeRequest(`/api/v1/tunnels/connect?subdomain=${sub}`, other.key);
    expect(raw.status).toBe(409);
    expect(raw.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(raw.body)).toMatchObject({ status: 409, code: 'conflict' });
    // The tunnel still serves its owner.
    expect((await pub(sub, '/still-mine')).status).toBe(200);
  });

  it('refuses invalid and reserved subdomains with 422', async () => {
    for (const name of ['Bad_Name', 'api', 'www', 'a'.repeat(64), '-dash', 'x.y']) {
      const client = new TunnelClient({ platformUrl, apiKey: tp.key, localPort: appPort, subdomain: name });
      const error = await client.start().catch((e: unknown) => e);
      expect(error, name).toBeInstanceOf(TunnelRefusedError);
      expect(error, name).toMatchObject({ status: 422, code: 'validation_failed' });
      await client.stop();
    }
  });

  it('gives a random subdomain when none is asked for', async () => {
    const { client } = await startClient(undefined);
    const info = client.info!;
    expect(info.subdomain).toMatch(/^[a-z0-9]{10}$/);
    expect(info.url).toBe(`http://${host(info.subdomain)}`);
    expect((await pub(info.subdomain, '/random')).body.toString()).toBe('GET /random');
    const { client: second } = await startClient(undefined);
    expect(second.info!.subdomain).not.toBe(info.subdomain);
    await stopClient(client);
    await stopClient(second);
  });

  it('gives the same account its subdomain back, with its tunnel and captures', async () => {
    const { client } = await startClient('comeback');
    await pub('comeback', '/before');
    const id = client.info!.id;
    await stopClient(client);
    const { client: again } = await startClient('comeback');
    expect(again.info).toMatchObject({ id, subdomain: 'comeback' });
    await pub('comeback', '/after');
    const list = await call<CapturedRequest[]>(`${tp.api}/tunnels/comeback/requests`, { key: tp.key });
    expect(list.body.map((r) => r.path)).toEqual(['/after', '/before']);
    await stopClient(again);
  });

  it('lets a second connection of the same account take over, and the first one stops', async () => {
    const second = await startTextApp(() => 'second app');
    try {
      const { client: first } = await startClient('takeover');
      expect((await pub('takeover', '/')).body.toString()).toBe('GET /');
      const { client: next } = await startClient('takeover', {
        localPort: second.port,
      });
      await until(() => first.state === 'stopped', 'the first client to stop', 5_000);
      // No tug of war: the first client does not come back and take the subdomain again.
      await quietFor(300);
      expect(first.state).toBe('stopped');
      expect(next.state).toBe('online');
      expect((await pub('takeover', '/')).body.toString()).toBe('second app');
      await stopClient(first);
      await stopClient(next);
    } finally {
      await second.close();
    }
  });

  it('hides a tunnel from other accounts: list, read, replay and subscribe are 404', async () => {
    const list = await call<Tunnel[]>(`${tp.api}/tunnels`, { key: other.key });
    expect(list.status).toBe(200);
    expect(list.body.find((t) => t.subdomain === sub)).toBeUndefined();
    const own = await call<CapturedRequest[]>(`${tp.api}/tunnels/${sub}/requests`, { key: tp.key });
    const id = own.body[0]!.id;
    expectProblem(await call(`${tp.api}/tunnels/${sub}/requests`, { key: other.key }), 404, 'not_found');
    expectProblem(
      await call(`${tp.api}/tunnels/${sub}/requests/${id}`, { key: other.key }),
      404,
      'not_found',
    );
    expectProblem(
      await call(`${tp.api}/tunnels/${sub}/replay/${id}`, { key: other.key, method: 'POST' }),
      404,
      'not_found',
    );
    const feed = await upgradeRequest(`/api/v1/ws/traffic/${sub}`, other.key, 'websocket');
    expect(feed.status).toBe(404);
    expect(JSON.parse(feed.body)).toMatchObject({ code: 'not_found' });
  });

  it('answers 401 to a bad or missing key, on the API, the connect upgrade and the feed', async () => {
    for (const key of [null, 'wk_00000000000000000000000000000000', 'nonsense']) {
      expectProblem(await call(`${tp.api}/tunnels`, { key }), 401, 'unauthorized');
      expectProblem(await call(`${tp.api}/tunnels/${sub}/requests`, { key }), 401, 'unauthorized');
      const connect = await upgradeRequest(`/api/v1/tunnels/connect?subdomain=x1`, key);
      expect(connect.status).toBe(401);
      const feed = await upgradeRequest(`/api/v1/ws/traffic/${sub}`, key, 'websocket');
      expect(feed.status).toBe(401);
    }
    const client = new TunnelClient({ platformUrl, apiKey: 'wk_bad', localPort: appPort });
    expect(await client.start().catch((e: unknown) => e)).toMatchObject({
      status: 401,
      code: 'unauthorized',
    });
    await client.stop();
  });

  it('answers 426 to GET /tunnels/connect without an upgrade', async () => {
    const plain = await call(`${tp.api}/tunnels/connect?subdomain=x2`, { key: tp.key });
    expectProblem(plain, 426, 'upgrade_required');
    expect(plain.headers.get('upgrade')).toBe('wharf-tunnel');
    const wrong = await upgradeRequest(`/api/v1/tunnels/connect?subdomain=x2`, tp.key, 'h2c');
    expect(wrong.status).toBe(400);
  });
});

// ---------------------------------------------------------------------------------------------------

/** An upgrade request to the API; resolves with the refusal (or the 101, whose socket is closed). */
function upgradeRequest(
  path: string,
  key: string | null,
  protocol = 'wharf-tunnel',
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { connection: 'Upgrade', upgrade: protocol };
    if (protocol === 'websocket') {
      headers['sec-websocket-key'] = randomBytes(16).toString('base64');
      headers['sec-websocket-version'] = '13';
    }
    if (key) headers['x-api-key'] = key;
    const req = request({ host: '127.0.0.1', port: apiPort, path, headers, timeout: 5_000 });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' });
    });
    req.on('response', (res) => {
      readBody(res).then(
        (b) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: b.toString() }),
        reject,
      );
    });
    req.on('timeout', () => req.destroy(new Error('no answer')));
    req.on('error', reject);
    req.end();
  });
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
