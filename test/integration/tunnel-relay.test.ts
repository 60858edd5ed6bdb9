// The relay path's own contract, beyond what the byte-path suites check with either kind of client: the
// Host a relay client asks for at connect is checked (a bad one refused with 422, nothing claimed); a
// relay client that does not capture is sent no captures; and a client that never reads its capture
// streams cannot make the edge hold more than its bounded backlog (records go without bodies, then are
// dropped and counted), over a real HTTP/2 connection that reads nothing. A relay client's captures come
// on one stream for its connection, ended cleanly when the client stops or is taken over; batches of
// several chunks, queued while the client reads late, reach it whole and in order.
import { Agent, type IncomingHttpHeaders, request } from 'node:http';
import http2 from 'node:http2';
import { once } from 'node:events';
import { type Server, type Socket, connect, createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Exchange, RawHead } from '../../src/core/capture/capture.js';
import { CaptureRecordReader } from '../../src/core/tunnel/capture-records.js';
import { TunnelClient } from '../../src/core/tunnel/client.js';
import { Mux, type MuxStream } from '../../src/core/tunnel/mux.js';
import { STREAM_HEADERS, sessionTransport } from '../../src/core/tunnel/protocol.js';
import { TUNNEL_HEADERS, TUNNEL_UPGRADE_PROTOCOL } from '../../src/shared/api/tunnels.js';
import { CaptureSender } from '../../src/server/tunnels/capture-sender.js';
import type { Tunnel } from '../../src/server/tunnels/tunnel.js';
import { type LocalApp, startRecordingApp, startTextApp } from '../helpers/local-app.js';
import { startTunnelClient } from '../helpers/tunnel-client.js';
import { viaEdge } from '../helpers/deploy.js';
import { until } from '../helpers/poll.js';
import { type TestPlatform, call, startPlatform } from '../helpers/platform.js';

let tp: TestPlatform;
let app: LocalApp;
const clients: TunnelClient[] = [];

beforeAll(async () => {
  tp = await startPlatform();
  app = await startTextApp((req) => `${req.method} ${req.url} ${req.headers.host}`);
});

afterAll(async () => {
  for (const client of clients) await client.stop();
  await app?.close();
  await tp?.close();
});

function edgeTunnel(subdomain: string): Tunnel | undefined {
  return (
    tp.platform.tunnels as unknown as { tunnels: { get(name: string): Tunnel | undefined } }
  ).tunnels.get(subdomain);
}

/** A raw connect as a tunnel client makes it, with `headers` added; resolves with the status and body. */
function connectWith(
  subdomain: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = request(`${tp.api}/tunnels/connect?subdomain=${subdomain}`, {
      headers: { 'x-api-key': tp.key, connection: 'Upgrade', upgrade: TUNNEL_UPGRADE_PROTOCOL, ...headers },
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: '', headers: res.headers });
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The client end of a tunnel connection, as far as capture streams go: a real HTTP/2 connection on
 * loopback whose every stream goes to `onStream`, open for the describe block it is called in;
 * `session` is the edge's end, for a CaptureSender.
 */
function capturePeer(
  onStream: (stream: http2.ServerHttp2Stream | MuxStream) => void,
  muxed = false,
): {
  session: http2.ClientHttp2Session;
  mux: Mux | null;
} {
  const peer = { mux: null } as { session: http2.ClientHttp2Session; mux: Mux | null };
  let server: Server;
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    server = createServer((socket) => {
      sockets.add(socket);
      // With the multiplexer, the capture stream is the multiplexer's and HTTP/2 runs on its stream 0.
      const mux = muxed ? new Mux(socket, 'client') : null;
      mux?.on('stream', (stream) => {
        stream.respond({ ':status': 200 }, { endStream: true });
        onStream(stream);
      });
      const end = http2.performServerHandshake(mux ? sessionTransport(mux.channel) : socket);
      end.on('stream', onStream);
      end.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    if (muxed) {
      const socket = connect(port, '127.0.0.1');
      await once(socket, 'connect');
      peer.mux = new Mux(socket, 'edge');
      const channel = sessionTransport(peer.mux.channel);
      peer.session = http2.connect('http://peer', { createConnection: () => channel });
      peer.mux.runs(peer.session);
    } else peer.session = http2.connect(`http://127.0.0.1:${port}`);
    peer.session.on('error', () => undefined);
    await new Promise((resolve) => peer.session.once('connect', resolve));
  });
  afterAll(async () => {
    peer.session?.destroy();
    peer.mux?.destroy();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server?.close(resolve));
  });
  return peer;
}

describe('the multiplexer', () => {
  it('is taken, and said so on the 101, only from a client that offers it with the byte path', async () => {
    const offered = await connectWith('mux-offer', { [TUNNEL_HEADERS.features]: 'pipe,relay,captures,mux' });
    expect(offered.status).toBe(101);
    expect(offered.headers[TUNNEL_HEADERS.mux]).toBe('1');
    for (const features of ['pipe,relay,captures', 'mux', 'pipe,mx', '']) {
      const other = await connectWith('mux-offer', { [TUNNEL_HEADERS.features]: features });
      expect(other.status).toBe(101);
      expect(other.headers[TUNNEL_HEADERS.mux]).toBeUndefined();
    }
  });
});

describe('a relay client', () => {
  it('is refused with 422 when the Host it asks its app be sent is not a host, and claims nothing', async () => {
    for (const bad of ['two words', 'host/path', `${'a'.repeat(64)}.test`, 'x.test:port']) {
      const answer = await connectWith('relay-bad-host', {
        [TUNNEL_HEADERS.features]: 'pipe,relay,captures',
        [TUNNEL_HEADERS.appHost]: bad,
      });
      expect(answer.status).toBe(422);
      expect(JSON.parse(answer.body)).toMatchObject({
        code: 'validation_failed',
        errors: [{ path: TUNNEL_HEADERS.appHost }],
      });
    }
    expect(edgeTunnel('relay-bad-host')).toBeUndefined();
    const tunnels = await call<Array<{ subdomain: string }>>(`${tp.api}/tunnels`, { key: tp.key });
    expect(tunnels.body.map((t) => t.subdomain)).not.toContain('relay-bad-host');
  });

  it('sends its app the Host it asked for, and one that does not capture is sent no captures', async () => {
    const client = await startTunnelClient(
      tp,
      { localPort: app.port, subdomain: 'relay-quiet', hostHeader: 'app.internal:8080', capture: false },
      clients,
    );
    const exchanges: string[] = [];
    client.on('exchange', (e) => exchanges.push(e.request.id));
    const tunnel = edgeTunnel('relay-quiet')!;
    expect([tunnel.relays, tunnel.appHost, tunnel.captures]).toEqual([true, 'app.internal:8080', null]);

    const answer = await viaEdge(tp.edgePort, 'relay-quiet.tunnel.localhost', '/x');
    expect(answer.body).toBe('GET /x app.internal:8080');
    // The edge still captures it for the platform's own history.
    await until(() => tunnel.ring.size === 1, 'the edge to capture it');
    expect(exchanges).toEqual([]);
  });
});

describe('the capture stream of a relay client', () => {
  it('is one for the connection, and is ended cleanly when the client stops or another connection takes over', async () => {
    const start = async () => {
      const client = new TunnelClient({
        platformUrl: tp.api.replace(/\/api\/v1$/, ''),
        apiKey: tp.key,
        localPort: app.port,
        subdomain: 'relay-one-stream',
      });
      clients.push(client);
      // The capture streams this client is sent, and the code each closed with (0: ended, not reset).
      const streams: Array<{ closedWith: number | null }> = [];
      const exchanges: string[] = [];
      client.on('exchange', (e) => exchanges.push(e.request.path));
      await client.start();
      const watch = (stream: { rstCode?: number; once(event: 'close', listener: () => void): unknown }) => {
        const seen: { closedWith: number | null } = { closedWith: null };
        streams.push(seen);
        stream.once('close', () => (seen.closedWith = stream.rstCode ?? 0));
      };
      // On an HTTP/2 stream, or on the multiplexer's when the client took it (core/tunnel/mux.ts).
      const { session, mux } = client as unknown as { session: http2.Http2Session; mux: Mux | null };
      session.on('stream', (stream, headers) => {
        if (headers[STREAM_HEADERS.captures]) watch(stream);
      });
      mux?.on('stream', (stream) => {
        if (stream.metadata[STREAM_HEADERS.captures]) watch(stream);
      });
      return { client, streams, exchanges };
    };

    const first = await start();
    for (const path of ['/a', '/b', '/c']) {
      expect((await viaEdge(tp.edgePort, 'relay-one-stream.tunnel.localhost', path)).status).toBe(200);
      // Past the edge's gathering time: each exchange goes in a batch of its own.
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    await until(() => first.exchanges.length === 3, 'the three captures');
    expect(first.exchanges).toEqual(['/a', '/b', '/c']);
    expect(first.streams).toHaveLength(1);

    // Taken over: the edge ends the old connection's capture stream before it closes the connection.
    const second = await start();
    await until(() => first.streams[0]!.closedWith !== null, 'the old capture stream to close');
    expect(first.streams[0]!.closedWith).toBe(0);
    await viaEdge(tp.edgePort, 'relay-one-stream.tunnel.localhost', '/d');
    await until(() => second.exchanges.length === 1, 'the capture on the new connection');

    // Stopped: its GOAWAY has the edge end the stream, so the close does not wait for it.
    await second.client.stop();
    expect(second.streams).toHaveLength(1);
    expect(second.streams[0]!.closedWith).toBe(0);
  });
});

describe.each([
  ['on HTTP/2', false],
  ['on the multiplexer', true],
])('the capture streams of a client that never reads them, %s', (_name, muxed) => {
  // The "client" end: takes the connection and each stream, and reads none of them.
  const peer = capturePeer((stream) => stream.pause(), muxed);

  it('hold the edge to a bounded backlog: past it records lose their bodies, then are dropped and counted', async () => {
    const sender = new CaptureSender(peer.session, peer.mux);
    const MiB = 1024 * 1024;
    const exchange = (bodyBytes: number) => {
      const e = new Exchange({
        tunnelId: 'tun_hostile',
        method: 'GET',
        path: '/big',
        url: 'http://hostile.tunnel.localhost/big',
        httpVersion: 'HTTP/1.1',
        requestHeaders: new RawHead('GET /big HTTP/1.1\r\nHost: hostile.tunnel.localhost\r\n\r\n'),
        remoteAddr: '127.0.0.1:40000',
      });
      e.response(200, new RawHead(`HTTP/1.1 200 OK\r\ncontent-length: ${bodyBytes}\r\n\r\n`));
      if (bodyBytes > 0) e.responseBody.push(Buffer.alloc(bodyBytes, 1));
      return e;
    };
    const unread = () => sender.backlogBytes;
    const batches = async (count: number, perBatch: number, bodyBytes: number) => {
      let most = 0;
      for (let batch = 0; batch < count; batch++) {
        for (let i = 0; i < perBatch; i++) sender.send(exchange(bodyBytes), null, null);
        await new Promise((resolve) => setTimeout(resolve, 40));
        most = Math.max(most, unread());
      }
      return most;
    };
    // 60 MiB of bodies offered: past 8 MiB unread, the records go without them.
    const withBodies = await batches(6, 10, MiB);
    expect(withBodies).toBeGreaterThan(8 * MiB);
    expect(withBodies).toBeLessThanOrEqual(10 * MiB);
    expect(sender.dropped).toBe(0);
    // Small records, more than 16 MiB of them: past it they are dropped, and counted.
    const most = await batches(12, 10_000, 0);
    expect(sender.dropped).toBeGreaterThan(10_000);
    expect(most).toBeLessThanOrEqual(16 * MiB + 10_000 * 300);
  });
});

describe.each([
  ['on HTTP/2', false],
  ['on the multiplexer', true],
])('the capture stream of a client that reads it, %s', (_name, muxed) => {
  /** What the "client" end read, in order. */
  const read: Array<{ path: string; body: Buffer }> = [];
  const peer = capturePeer((stream) => {
    const reader = new CaptureRecordReader();
    // Read late: the batches written meanwhile wait in the stream's queue, their chunks not sent.
    stream.pause();
    setTimeout(() => stream.resume(), 200);
    stream.on('data', (chunk: Buffer) => {
      for (const e of reader.push(chunk)) read.push({ path: e.request.path, body: e.responseBody });
    });
  }, muxed);

  it('gets every record whole and in order, batches of several chunks sent while it reads late', async () => {
    const sender = new CaptureSender(peer.session, peer.mux);
    const sent: Array<{ path: string; body: Buffer }> = [];
    // Batches of several 64 KiB chunks each, one gathering time apart, queued while the client waits.
    for (let batch = 0; batch < 8; batch++) {
      for (let i = 0; i < 120; i++) {
        const n = batch * 1000 + i;
        const e = new Exchange({
          tunnelId: 'tun_chunks',
          method: 'GET',
          path: `/${n}`,
          url: `http://chunks.tunnel.localhost/${n}`,
          httpVersion: 'HTTP/1.1',
          requestHeaders: new RawHead(`GET /${n} HTTP/1.1\r\nHost: chunks.tunnel.localhost\r\n\r\n`),
          remoteAddr: '127.0.0.1:40000',
        });
        const body = Buffer.alloc(1_500 + (n % 700), n % 251);
        e.response(200, new RawHead(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n`));
        e.responseBody.push(body);
        sender.send(e, null, null);
        sent.push({ path: `/${n}`, body });
      }
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    await until(() => read.length === sent.length, 'every record to arrive');
    expect(read.map((r) => r.path)).toEqual(sent.map((s) => s.path));
    for (let i = 0; i < sent.length; i++) expect(read[i]!.body.equals(sent[i]!.body)).toBe(true);
    expect(sender.dropped).toBe(0);
    sender.end();
  });
});

describe('a tunnel whose bodies grow large', () => {
  it('moves its connections to streams the client reads, and back to relayed ones when they shrink, capturing each exchange once, bodies whole', async () => {
    const big = await startRecordingApp((req, res) =>
      res.end(req.url === '/big' ? 'b'.repeat(64 * 1024) : 'small'),
    );
    const connections = () => Math.max(0, ...big.received.map((r) => r.connection));
    const client = await startTunnelClient(tp, { localPort: big.port, subdomain: 'relay-switch' }, clients);
    const onClient: Array<{ id: string; size: number; kept: number }> = [];
    client.on('exchange', (e) =>
      onClient.push({ id: e.request.id, size: e.request.response_size, kept: e.responseBody.length }),
    );
    const tunnel = edgeTunnel('relay-switch')!;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const ask = (path: string) => viaEdge(tp.edgePort, 'relay-switch.tunnel.localhost', path, { agent });
      expect((await ask('/small')).body).toBe('small');
      expect(tunnel.relayNow).toBe(true);
      const connectionsBefore = connections();
      for (let i = 0; i < 40; i++) expect((await ask('/big')).body).toHaveLength(64 * 1024);
      expect(tunnel.relayNow).toBe(false);
      // The same public connection, carried on a stream the client reads: the app sees a new one.
      expect(connections()).toBeGreaterThan(connectionsBefore);
      for (let i = 0; i < 120; i++) expect((await ask('/small')).body).toBe('small');
      expect(tunnel.relayNow).toBe(true);

      const edge = await call<Array<{ id: string }>>(`${tp.api}/tunnels/relay-switch/requests`, {
        key: tp.key,
      });
      await until(() => onClient.length === 161, 'the client to capture all 161');
      expect(new Set(onClient.map((e) => e.id))).toEqual(new Set(edge.body.map((r) => r.id)));
      for (const e of onClient) expect(e.kept).toBe(e.size);
    } finally {
      agent.destroy();
      await big.close();
    }
  });

  it('stays relayed for a client that takes no captures: no bodies are sent to it, so none would cross twice', async () => {
    const big = await startRecordingApp((_req, res) => res.end('b'.repeat(64 * 1024)));
    const connections = () => Math.max(0, ...big.received.map((r) => r.connection));
    await startTunnelClient(
      tp,
      { localPort: big.port, subdomain: 'relay-big-quiet', capture: false },
      clients,
    );
    const tunnel = edgeTunnel('relay-big-quiet')!;
    expect([tunnel.relays, tunnel.captures]).toEqual([true, null]);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const ask = () => viaEdge(tp.edgePort, 'relay-big-quiet.tunnel.localhost', '/big', { agent });
      for (let i = 0; i < 40; i++) expect((await ask()).body).toHaveLength(64 * 1024);
      expect(tunnel.relayNow).toBe(true);
      // One public connection, one relay stream, one connection to the app: never moved to a read stream.
      expect(connections()).toBe(1);
      // The edge captured all of them for the platform's own history, each with its whole size.
      await until(() => tunnel.ring.total === 40, 'the edge to capture all 40');
      const edge = await call<Array<{ id: string; response_size: number }>>(
        `${tp.api}/tunnels/relay-big-quiet/requests`,
        { key: tp.key },
      );
      expect(edge.body).toHaveLength(40);
      for (const r of edge.body) expect(r.response_size).toBe(64 * 1024);
    } finally {
      agent.destroy();
      await big.close();
    }
  });
});
