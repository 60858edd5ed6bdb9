// The tunnel's byte path end to end, over raw public sockets (so that what goes on the wire is what the
// test wrote): a public connection rides one stream to one connection of the client's to the app, its
// requests pipelined or one by one; a request for another host on the same connection is routed
// afresh; framing two parsers could read differently is refused before the app sees it; a Connection
// header cannot take the framing out; an Upgrade the app refuses leaves the connection HTTP; a client
// that does not offer the byte path gets a stream per request as before.
import type http2 from 'node:http2';
import { type Socket, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TunnelClient } from '../../src/core/tunnel/client.js';
import type { CapturedRequest } from '../../src/shared/api/tunnels.js';
import { type LocalApp, type ReceivedRequest, startRecordingApp } from '../helpers/local-app.js';
import { until } from '../helpers/poll.js';
import type { Mux } from '../../src/core/tunnel/mux.js';
import { openMuxStreams, openStreams } from '../helpers/tunnel-streams.js';
import { startTunnelClient } from '../helpers/tunnel-client.js';
import { type TestPlatform, call, startPlatform } from '../helpers/platform.js';

let tp: TestPlatform;
const apps: LocalApp[] = [];
const clients: TunnelClient[] = [];

/** A local app that answers `<name> <method> <url>` and remembers what it saw (`seen`). */
async function startApp(name: string): Promise<{ port: number; seen: ReceivedRequest[] }> {
  const app = await startRecordingApp(
    (req, res) => {
      const body = `${name} ${req.method} ${req.url}`;
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
      res.end(req.method === 'HEAD' ? undefined : body);
    },
    (req) => {
      if (req.url !== '/hang-up') return false;
      req.socket.destroy();
      return true;
    },
  );
  apps.push(app);
  return { port: app.port, seen: app.received };
}

async function startTunnel(
  subdomain: string,
  localPort: number,
  pipe = true,
  relay = true,
  mux = true,
): Promise<TunnelClient> {
  return startTunnelClient(tp, { localPort, subdomain, pipe, relay, mux }, clients);
}

function host(sub: string): string {
  return `${sub}.tunnel.localhost:${tp.edgePort}`;
}

/** A raw public connection to the edge: write bytes, read responses as they come. */
async function rawConnection(): Promise<{ socket: Socket; text: () => string; closed: Promise<void> }> {
  const socket = connect(tp.edgePort, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, text: () => received, closed };
}

/** The complete responses in `text` (each with a Content-Length, but those at `bodiless` indexes). */
function responses(
  text: string,
  bodiless: readonly number[] = [],
): Array<{ status: number; body: string; head: string }> {
  const out: Array<{ status: number; body: string; head: string }> = [];
  let at = 0;
  for (;;) {
    const end = text.indexOf('\r\n\r\n', at);
    if (end < 0) return out;
    const head = text.slice(at, end);
    const length = bodiless.includes(out.length)
      ? 0
      : Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    if (text.length < end + 4 + length) return out;
    out.push({ status: Number(head.slice(9, 12)), body: text.slice(end + 4, end + 4 + length), head });
    at = end + 4 + length;
  }
}

/**
 * The open streams of a tunnel's connection at the edge: its session's (tunnel-streams.ts) and its
 * multiplexer's, where the byte path's streams are when the client took it.
 */
function openTunnelStreams(sub: string): number {
  const tunnels = (
    tp.platform.tunnels as unknown as {
      tunnels: Map<string, { session: http2.Http2Session | null; mux: Mux | null }>;
    }
  ).tunnels;
  const tunnel = tunnels.get(sub);
  return openStreams(tunnel?.session) + openMuxStreams(tunnel?.mux);
}

async function captured(sub: string): Promise<CapturedRequest[]> {
  return (await call<CapturedRequest[]>(`${tp.api}/tunnels/${sub}/requests`, { key: tp.key })).body;
}

beforeAll(async () => {
  tp = await startPlatform();
});

afterAll(async () => {
  for (const client of clients) await client.stop();
  for (const app of apps) await app.close();
  await tp?.close();
});

// Each case three times: with a client that relays the bytes (the edge rewrites and captures for it),
// with one that reads them itself, as clients from before the relay path do, and with one that relays
// them over HTTP/2 streams, as clients from before the multiplexer do.
describe.each([
  ['a client that relays the bytes', true, true],
  ['a client that reads them (from before the relay path)', false, true],
  ['a client that relays them on HTTP/2 streams (from before the multiplexer)', true, false],
])('the byte path, with %s', (_name, relay, mux) => {
  /** The suite's subdomains, apart for each kind of client. */
  const sub = (name: string) => (!relay ? `${name}-read` : mux ? name : `${name}-h2`);
  // The account's tunnels stay under its limit: each kind of client's are stopped after its cases.
  afterAll(async () => {
    for (const client of clients.splice(0)) await client.stop();
  });

  it('carries a connection on one stream to one app connection, pipelined requests answered in order and each captured once with the same id on both sides', async () => {
    const app = await startApp('A');
    const client = await startTunnel(sub('pipe-one'), app.port, true, relay, mux);
    const onClient: string[] = [];
    client.on('exchange', (exchange) => onClient.push(exchange.request.id));
    const { socket, text } = await rawConnection();
    const h = host(sub('pipe-one'));
    socket.write(
      `GET /first HTTP/1.1\r\nHost: ${h}\r\n\r\n` +
        `POST /second HTTP/1.1\r\nHost: ${h}\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n` +
        `HEAD /third HTTP/1.1\r\nHost: ${h}\r\n\r\n` +
        `GET /fourth HTTP/1.1\r\nHost: ${h}\r\nX-Forwarded-For: 6.6.6.6\r\nWharf-Request-Id: req_forged\r\n\r\n`,
    );
    await until(() => responses(text(), [2]).length === 4, 'four responses');
    const answers = responses(text(), [2]);
    expect(answers.map((a) => a.body)).toEqual(['A GET /first', 'A POST /second', '', 'A GET /fourth']);
    expect(answers[2]!.head).toMatch(/content-length: 13/i);
    expect(openTunnelStreams(sub('pipe-one'))).toBe(1);
    expect(new Set(app.seen.map((s) => s.connection)).size).toBe(1);
    expect(app.seen[1]!.body).toBe('body');
    // What the public client claims of the hop is replaced, and nothing of ours reaches the app.
    const fourth = app.seen[3]!.headers;
    expect(fourth['x-forwarded-for']).toBe('127.0.0.1');
    expect(fourth['x-forwarded-host']).toBe(h);
    expect(fourth.host).toBe(h);
    expect(Object.keys(fourth).filter((name) => name.startsWith('wharf-'))).toEqual([]);

    const list = await captured(sub('pipe-one'));
    expect(list.map((r) => `${r.method} ${r.path} ${r.status_code}`).reverse()).toEqual([
      'GET /first 200',
      'POST /second 200',
      'HEAD /third 200',
      'GET /fourth 200',
    ]);
    expect(list.find((r) => r.path === '/second')!.request_size).toBe(4);
    expect(list.every((r) => r.id !== 'req_forged')).toBe(true);
    await until(() => onClient.length === 4, 'the client to capture all four');
    expect([...onClient].sort()).toEqual(list.map((r) => r.id).sort());

    socket.end();
    await until(() => openTunnelStreams(sub('pipe-one')) === 0, 'the stream to close with the connection');
  });

  it('routes each request of a kept-alive connection to the host it names: another tunnel, then a host no tunnel has', async () => {
    const a = await startApp('A');
    const b = await startApp('B');
    await startTunnel(sub('route-a'), a.port, true, relay, mux);
    await startTunnel(sub('route-b'), b.port, true, relay, mux);
    const { socket, text } = await rawConnection();
    const ask = async (hostName: string, path: string, count: number) => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostName}\r\n\r\n`);
      await until(() => responses(text()).length === count, `response ${count}`);
      return responses(text())[count - 1]!;
    };
    expect((await ask(host(sub('route-a')), '/1', 1)).body).toBe('A GET /1');
    expect((await ask(host(sub('route-b')), '/2', 2)).body).toBe('B GET /2');
    expect((await ask(host(sub('route-a')), '/3', 3)).body).toBe('A GET /3');
    const none = await ask(host(sub('route-none')), '/4', 4);
    expect(none.status).toBe(404);
    expect(none.body).toContain('No tunnel here');
    // Back from the HTTP server's side to a tunnel, still on the same connection.
    expect((await ask(host(sub('route-b')), '/5', 5)).body).toBe('B GET /5');
    expect(a.seen.map((s) => s.url)).toEqual(['/1', '/3']);
    expect(b.seen.map((s) => s.url)).toEqual(['/2', '/5']);
    socket.destroy();
  });

  it('refuses framing two parsers could read differently with 400 and closes, and the app never sees it', async () => {
    const app = await startApp('A');
    await startTunnel(sub('pipe-smuggle'), app.port, true, relay, mux);
    const h = host(sub('pipe-smuggle'));
    for (const attempt of [
      `POST / HTTP/1.1\r\nHost: ${h}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: ${h}\r\n\r\n`,
      `POST / HTTP/1.1\r\nHost: ${h}\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`,
      `POST / HTTP/1.1\r\nHost: ${h}\r\nContent-Length: 1\r\nContent-Length: 40\r\n\r\nx`,
      // Lines the parser skipped, passed on as they came: an app that reads them frames the body
      // otherwise (chunked, and the GET after the empty chunk its next request).
      `POST / HTTP/1.1\r\nHost: ${h}\r\nContent-Length: 40\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nX: y\r\n\r\n`,
      `POST / HTTP/1.1\r\nHost: ${h}\r\nContent-Length: 40\r\nTransfer-Encoding\x0b: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nX: y\r\n\r\n`,
    ]) {
      const { socket, text, closed } = await rawConnection();
      socket.write(attempt);
      await closed;
      expect(text()).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(text()).toMatch(/connection: close/i);
      // The edge's answer, not the app's (a Node app refuses these too; another might read them).
      expect(text()).toContain('The request could not be read');
    }
    // A chunk size parseInt would read: the head went on, the body is cut, the app sees no request end.
    const { socket, text, closed } = await rawConnection();
    socket.write(`POST /chunks HTTP/1.1\r\nHost: ${h}\r\nTransfer-Encoding: chunked\r\n\r\n1x\r\n`);
    await closed;
    expect(text()).toMatch(/^HTTP\/1\.1 400 /);
    expect(app.seen).toEqual([]);
    const list = await captured(sub('pipe-smuggle'));
    expect(list.length).toBeGreaterThanOrEqual(1);
    expect(list[0]!.error).toMatch(/a bad request: an invalid chunk size/);
  });

  it('never lets a Connection header take out the framing: a listed Content-Length stays, and the body with it', async () => {
    const app = await startApp('A');
    await startTunnel(sub('pipe-hop'), app.port, true, relay, mux);
    const h = host(sub('pipe-hop'));
    const { socket, text } = await rawConnection();
    // Were Content-Length dropped, this body would reach the app as a request of its own.
    const hidden = `GET /hidden HTTP/1.1\r\nHost: ${h}\r\n\r\n`;
    socket.write(
      `POST /one HTTP/1.1\r\nHost: ${h}\r\nConnection: content-length, x-hop\r\nX-Hop: dropped\r\nContent-Length: ${hidden.length}\r\n\r\n${hidden}` +
        `GET /three HTTP/1.1\r\nHost: ${h}\r\n\r\n`,
    );
    await until(() => responses(text()).length === 2, 'two responses');
    expect(app.seen.map((s) => s.url)).toEqual(['/one', '/three']);
    expect(app.seen[0]!.body).toBe(hidden);
    expect(app.seen[0]!.headers['x-hop']).toBeUndefined();
    expect(app.seen[0]!.headers['content-length']).toBe(String(hidden.length));
    socket.destroy();
  });

  it('keeps a connection HTTP after an Upgrade the app answers without 101: the next request is still rewritten', async () => {
    const app = await startApp('A');
    await startTunnel(sub('pipe-upgrade'), app.port, true, relay, mux);
    const h = host(sub('pipe-upgrade'));
    const { socket, text } = await rawConnection();
    socket.write(
      `GET /ws HTTP/1.1\r\nHost: ${h}\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n` +
        `GET /after HTTP/1.1\r\nHost: ${h}\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n`,
    );
    await until(() => responses(text()).length === 2, 'two responses');
    expect(responses(text()).map((r) => r.body)).toEqual(['A GET /ws', 'A GET /after']);
    expect(app.seen[1]!.headers['x-forwarded-for']).toBe('127.0.0.1');
    socket.destroy();
  });

  it('closes a public connection that stays idle past the keep-alive, and its stream with it', async () => {
    const app = await startApp('A');
    await startTunnel(sub('pipe-idle'), app.port, true, relay, mux);
    const idleMs = tp.platform.tunnels.idleMs;
    tp.platform.tunnels.idleMs = 300;
    try {
      const { socket, text, closed } = await rawConnection();
      socket.write(`GET / HTTP/1.1\r\nHost: ${host(sub('pipe-idle'))}\r\n\r\n`);
      await until(() => responses(text()).length === 1, 'the response');
      await closed;
      await until(() => openTunnelStreams(sub('pipe-idle')) === 0, 'the stream to close');
    } finally {
      tp.platform.tunnels.idleMs = idleMs;
    }
  });

  it('lets a kept-alive public connection go on when the client stops: its next request is answered offline', async () => {
    const app = await startApp('A');
    const client = await startTunnel(sub('pipe-stop'), app.port, true, relay, mux);
    const { socket, text } = await rawConnection();
    const request = `GET /kept HTTP/1.1\r\nHost: ${host(sub('pipe-stop'))}\r\n\r\n`;
    socket.write(request);
    await until(() => responses(text()).length === 1, 'the response');
    // The connection is kept alive, its stream open: a stop does not wait for the edge's idle timeout.
    const started = Date.now();
    await client.stop();
    expect(Date.now() - started).toBeLessThan(2_000);
    socket.write(request);
    await until(() => responses(text()).length === 2, 'the answer after the stop', 5_000);
    expect(responses(text())[0]!.body).toBe('A GET /kept');
    expect(responses(text())[1]!.status).not.toBe(200);
    socket.destroy();
  });

  it('answers 502 when the app closes the connection before answering, with why, on both sides', async () => {
    const app = await startApp('A');
    const client = await startTunnel(sub('pipe-hang-up'), app.port, true, relay, mux);
    const onClient: Array<{ status: number; error: string | null }> = [];
    client.on('exchange', (e) => onClient.push({ status: e.request.status_code, error: e.request.error }));
    const { socket, text, closed } = await rawConnection();
    socket.write(`GET /hang-up HTTP/1.1\r\nHost: ${host(sub('pipe-hang-up'))}\r\n\r\n`);
    await closed;
    const [answer] = responses(text());
    expect(answer?.status).toBe(502);
    expect(answer?.body).toBe(
      'Wharf tunnel: the local app did not answer (the app closed the connection before answering).\n',
    );
    const [edge] = await captured(sub('pipe-hang-up'));
    expect(edge).toMatchObject({ status_code: 502, error: 'the app closed the connection before answering' });
    await until(() => onClient.length === 1, 'the client to capture it');
    expect(onClient[0]).toEqual({ status: 502, error: 'the app closed the connection before answering' });
  });
});

describe('a client without the byte path', () => {
  it('gets a stream per request, as before, and the same answers', async () => {
    const app = await startApp('A');
    await startTunnel('no-pipe', app.port, false);
    const { socket, text } = await rawConnection();
    const h = host('no-pipe');
    socket.write(
      `GET /x HTTP/1.1\r\nHost: ${h}\r\n\r\nPOST /y HTTP/1.1\r\nHost: ${h}\r\nContent-Length: 2\r\n\r\nhi`,
    );
    await until(() => responses(text()).length === 2, 'two responses');
    expect(responses(text()).map((r) => r.body)).toEqual(['A GET /x', 'A POST /y']);
    // The connection is kept alive, yet no stream stays open between requests.
    await until(() => openTunnelStreams('no-pipe') === 0, 'no stream between requests');
    expect(app.seen[1]!.body).toBe('hi');
    socket.destroy();
  });
});
