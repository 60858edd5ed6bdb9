// Tunnels under stress, through a real platform, a real local app and the real tunnel client:
// backpressure both ways (a reader or an app that stops reading holds the sender back, nothing piles up
// in between), thousands of requests and hundreds of aborts on one connection without tripping
// HTTP/2's reset-flood guard and without leaking streams, the client's connection killed under traffic,
// and a platform restart on the same ports that the client rides out with the same subdomain.
import { createHash } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, type IncomingMessage, type ServerResponse, request } from 'node:http';
import type { Http2Session } from 'node:http2';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TunnelClient, type TunnelClientOptions, type TunnelState } from '../../src/core/tunnel/client.js';
import type { CapturedRequest } from '../../src/shared/api/tunnels.js';
import { type LocalApp, startAsyncApp } from '../helpers/local-app.js';
import { quietFor, until } from '../helpers/poll.js';
import { type TestPlatform, call, startPlatform } from '../helpers/platform.js';
import type { Mux } from '../../src/core/tunnel/mux.js';
import { openMuxStreams, openStreams } from '../helpers/tunnel-streams.js';

const MiB = 1024 * 1024;
/** 1 MiB of varied bytes, repeated to make large bodies. */
const block = Buffer.from(Array.from({ length: MiB }, (_, i) => (i * 7 + (i >> 10)) & 0xff));

let tp: TestPlatform;
let app: LocalApp;
let appPort: number;
const clients = new Set<TunnelClient>();
const appEvents = new EventEmitter();
appEvents.setMaxListeners(0);
/** Bytes the app has written of the current /firehose response, and read of the current /sink upload. */
const progress = { written: 0, read: 0 };
let releaseSink: (() => void) | null = null;

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://app');
  switch (url.pathname) {
    case '/firehose': {
      // `n` MiB, written as fast as the tunnel takes them.
      const n = Number(url.searchParams.get('n'));
      progress.written = 0;
      res.writeHead(200, { 'content-length': n * MiB });
      for (let i = 0; i < n && !res.destroyed; i++) {
        progress.written += MiB;
        if (!res.write(block)) await once(res, 'drain');
      }
      res.end();
      return;
    }
    case '/sink': {
      // Reads nothing until released, then everything.
      req.pause();
      progress.read = 0;
      await new Promise<void>((resolve) => (releaseSink = resolve));
      const hash = createHash('sha256');
      req.on('data', (c: Buffer) => {
        progress.read += c.length;
        hash.update(c);
      });
      req.resume();
      await once(req, 'end');
      res.end(JSON.stringify({ size: progress.read, sha256: hash.digest('hex') }));
      return;
    }
    case '/slow': {
      // Answers after `ms`, or never (the public client gives up first).
      const ms = Number(url.searchParams.get('ms') ?? 0);
      res.on('close', () => appEvents.emit('slow-closed', !res.writableFinished));
      if (ms > 0) setTimeout(() => res.end('slow done'), ms);
      else res.writeHead(200).write('started\n');
      return;
    }
    default: {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      res.end(`${req.method} ${req.url} ${Buffer.concat(chunks).toString()}`);
    }
  }
}

function host(sub: string): string {
  return `${sub}.tunnel.localhost:${tp.edgePort}`;
}

function get(
  sub: string,
  path: string,
  options: { agent?: Agent | false; method?: string; body?: string; edgePort?: number } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: options.edgePort ?? tp.edgePort,
        path,
        method: options.method ?? 'GET',
        headers: {
          host: host(sub),
          ...(options.body === undefined
            ? {}
            : { 'content-length': String(Buffer.byteLength(options.body)) }),
        },
        agent: options.agent ?? false,
        timeout: 20_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
        res.on('aborted', () => reject(new Error('response aborted')));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer for ${sub}${path}`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

async function startClient(subdomain: string, options: Partial<TunnelClientOptions> = {}) {
  const client = new TunnelClient({
    platformUrl: tp.api.replace(/\/api\/v1$/, ''),
    apiKey: tp.key,
    localPort: appPort,
    subdomain,
    backoffMs: 50,
    ...options,
  });
  clients.add(client);
  const states: TunnelState[] = [];
  client.on('state', (state) => states.push(state));
  await client.start();
  return { client, states };
}

function edgeSession(sub: string): Http2Session | null {
  const tunnels = (
    tp.platform.tunnels as unknown as { tunnels: Map<string, { session: Http2Session | null }> }
  ).tunnels;
  return tunnels.get(sub)?.session ?? null;
}

/** The byte-path streams open on a tunnel's multiplexer at the edge (none without one). */
function edgeMuxStreams(sub: string): number {
  const tunnels = (tp.platform.tunnels as unknown as { tunnels: Map<string, { mux: Mux | null }> }).tunnels;
  return openMuxStreams(tunnels.get(sub)?.mux);
}

function clientSession(client: TunnelClient): Http2Session | null {
  return (client as unknown as { session: Http2Session | null }).session;
}

/** Checks that both ends of a tunnel are idle and sane: no stream left open, nothing queued. */
async function expectIdle(sub: string, client: TunnelClient): Promise<void> {
  await until(
    () => openStreams(edgeSession(sub)) === 0 && openStreams(clientSession(client)) === 0,
    `no open streams on ${sub} (edge ${openStreams(edgeSession(sub))}, client ${openStreams(clientSession(client))})`,
    5_000,
  );
  for (const session of [edgeSession(sub)!, clientSession(client)!]) {
    expect(session.destroyed).toBe(false);
    expect(session.state.outboundQueueSize).toBeLessThanOrEqual(1);
    // The large session window is in place and was given back as data was read.
    expect(session.state.effectiveLocalWindowSize).toBeGreaterThanOrEqual(64 * MiB);
    expect(session.state.effectiveRecvDataLength).toBeLessThan(32 * MiB);
  }
}

beforeAll(async () => {
  tp = await startPlatform();
  // A connection that dies unnoticed is the edge heartbeat's to end: within 4 s here rather than 30 s,
  // inside the public requests' 20 s timeout (the killed-connection test).
  tp.platform.tunnels.heartbeatMs = 2_000;
  app = await startAsyncApp(handle);
  appPort = app.port;
});

/**
 * Runs one step of the teardown; one still under way after 10 s says which it is and what the process
 * is waiting on (this teardown went past the hook's 30 s twice in about eight full runs, never alone).
 */
async function step(name: string, run: () => Promise<unknown>): Promise<void> {
  const started = Date.now();
  const watch = setTimeout(() => {
    const waiting = process.getActiveResourcesInfo().reduce<Record<string, number>>((counts, kind) => {
      counts[kind] = (counts[kind] ?? 0) + 1;
      return counts;
    }, {});
    // Which sockets and servers: Node names the kinds only (getActiveResourcesInfo), its handles say more.
    const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
    const sockets = handles.flatMap((handle) => {
      const s = handle as Partial<Socket> & { listening?: boolean; address?: () => unknown };
      if (s.listening) return [`server ${JSON.stringify(s.address?.())}`];
      if (s.remotePort !== undefined) return [`socket ${s.localPort} -> ${s.remotePort}`];
      return [];
    });
    const ports = tp ? `(api ${tp.api}, edge ${tp.edgePort}, app ${appPort})` : '';
    console.warn(
      `tunnel-stress teardown: ${name} still under way after 10 s; waiting on`,
      waiting,
      sockets,
      ports,
    );
  }, 10_000);
  try {
    await run();
  } finally {
    clearTimeout(watch);
    if (Date.now() - started > 10_000)
      console.warn(`tunnel-stress teardown: ${name} took ${Date.now() - started} ms`);
  }
}

afterAll(async () => {
  await step('the clients stopping', () => Promise.all([...clients].map((c) => c.stop())));
  await step('the local app closing', async () => app?.close());
  await step('the platform closing', async () => tp?.close());
});

describe.each(['raw', 'websocket'] as const)('over the %s transport', (transport) => {
  const sub = `stress-${transport === 'raw' ? 'raw' : 'ws'}`;
  let client: TunnelClient;
  let states: TunnelState[];

  beforeAll(async () => {
    ({ client, states } = await startClient(sub, { transport }));
  });

  afterAll(async () => {
    await client.stop();
    clients.delete(client);
  });

  it('holds a fast app back when the public client stops reading (96 MiB download)', async () => {
    const total = 96;
    let hash: ReturnType<typeof createHash>;
    let received = 0;
    const done = new Promise<void>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: tp.edgePort, path: `/firehose?n=${total}`, headers: { host: host(sub) } },
        (res) => {
          hash = createHash('sha256');
          res.pause();
          res.on('data', (c: Buffer) => {
            received += c.length;
            hash.update(c);
          });
          res.on('end', resolve);
          res.on('error', reject);
          // Not reading for a while: the app must stall well before it wrote everything.
          void (async () => {
            let last = -1;
            await until(
              async () => {
                const now = progress.written;
                const stalled = now === last && now > 0;
                last = now;
                await quietFor(150);
                return stalled;
              },
              'the app to stall',
              10_000,
              0,
            );
            appEvents.emit('stalled', progress.written);
            res.resume();
          })().catch(reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
    const [stalledAt] = (await once(appEvents, 'stalled')) as [number];
    // The windows (16 MiB per stream) and the sockets' buffers, not the whole body.
    expect(stalledAt).toBeLessThanOrEqual(64 * MiB);
    await done;
    expect(received).toBe(total * MiB);
    const expected = createHash('sha256');
    for (let i = 0; i < total; i++) expected.update(block);
    expect(hash!.digest('hex')).toBe(expected.digest('hex'));
  });

  it('holds a fast public client back when the app stops reading (96 MiB upload)', async () => {
    const total = 96;
    const req = request({
      host: '127.0.0.1',
      port: tp.edgePort,
      path: '/sink',
      method: 'POST',
      headers: { host: host(sub), 'content-length': String(total * MiB) },
    });
    const response = new Promise<{ size: number; sha256: string }>((resolve, reject) => {
      req.on('response', (res: IncomingMessage) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve(JSON.parse(text) as { size: number; sha256: string }));
      });
      req.on('error', reject);
    });
    let sent = 0;
    let stalledAt = -1;
    for (let i = 0; i < total; i++) {
      const flushed = req.write(block);
      sent += MiB;
      if (!flushed) {
        const drained = await Promise.race([
          once(req, 'drain').then(() => true),
          new Promise<boolean>((r) => setTimeout(() => r(false), 500)),
        ]);
        if (!drained && stalledAt < 0) {
          // Nothing moves while the app reads nothing: let it read now.
          stalledAt = sent;
          releaseSink!();
          await once(req, 'drain');
        }
      }
    }
    req.end();
    if (stalledAt < 0) releaseSink?.();
    const answer = await response;
    expect(stalledAt, 'the public client was never held back').toBeGreaterThan(0);
    expect(stalledAt).toBeLessThanOrEqual(64 * MiB);
    const expected = createHash('sha256');
    for (let i = 0; i < total; i++) expected.update(block);
    expect(answer).toEqual({ size: total * MiB, sha256: expected.digest('hex') });
  });

  it('answers 3,000 requests on one connection without resets or leaked streams', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 50 });
    const before = clientSession(client);
    try {
      let next = 0;
      const failures: string[] = [];
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          while (next < 3_000) {
            const i = next++;
            const post = i % 3 === 0;
            const answer = await get(sub, `/n/${i}`, {
              agent,
              method: post ? 'POST' : 'GET',
              ...(post ? { body: `body ${i}` } : {}),
            });
            const expected = `${post ? 'POST' : 'GET'} /n/${i} ${post ? `body ${i}` : ''}`;
            if (answer.status !== 200 || answer.body !== expected) failures.push(`${i}: ${answer.status}`);
          }
        }),
      );
      expect(failures).toEqual([]);
    } finally {
      agent.destroy();
    }
    // The same session all along: Node's reset-flood guard never closed it.
    expect(clientSession(client)).toBe(before);
    expect(states.filter((s) => s === 'reconnecting')).toEqual([]);
    await expectIdle(sub, client);
    const captured = await call<CapturedRequest[]>(`${tp.api}/tunnels/${sub}/requests`, { key: tp.key });
    expect(captured.body).toHaveLength(1000);
    expect(captured.body.every((r) => r.error === null && r.status_code === 200)).toBe(true);
  });

  it('survives 300 public clients going away mid-response, aborting each local request', async () => {
    let aborted = 0;
    const onClosed = (wasAborted: boolean) => (aborted += wasAborted ? 1 : 0);
    appEvents.on('slow-closed', onClosed);
    try {
      const sockets: Socket[] = [];
      await Promise.all(
        Array.from(
          { length: 300 },
          () =>
            new Promise<void>((resolve, reject) => {
              const req = request(
                { host: '127.0.0.1', port: tp.edgePort, path: '/slow', headers: { host: host(sub) } },
                (res) => {
                  res.once('data', () => {
                    sockets.push(req.socket!);
                    resolve();
                  });
                },
              );
              req.on('error', reject);
              req.end();
            }),
        ),
      );
      for (const socket of sockets) socket.destroy();
      await until(() => aborted === 300, `300 aborted local requests (${aborted})`, 10_000);
    } finally {
      appEvents.off('slow-closed', onClosed);
    }
    expect((await get(sub, '/after-aborts')).body).toBe('GET /after-aborts ');
    expect(states.filter((s) => s === 'reconnecting')).toEqual([]);
    await expectIdle(sub, client);
  });
});

/** 5 rounds of 300 public requests to `sub` that each leave as their response begins. */
async function floodOfAborts(sub: string): Promise<void> {
  for (let round = 0; round < 5; round++) {
    const sockets: Socket[] = [];
    await Promise.all(
      Array.from(
        { length: 300 },
        () =>
          new Promise<void>((resolve) => {
            const req = request(
              { host: '127.0.0.1', port: tp.edgePort, path: '/slow', headers: { host: host(sub) } },
              (res) => {
                sockets.push(req.socket!);
                res.once('data', () => resolve());
              },
            );
            // A request caught in the session's end may wait for the heartbeat: on a loaded machine
            // that must not hold the whole round past the test's time.
            req.setTimeout(5_000, () => req.destroy());
            req.on('error', () => resolve());
            req.end();
          }),
      ),
    );
    for (const socket of sockets) socket.destroy();
  }
}

describe('failures', () => {
  it('stays healthy when the client connection is killed under traffic, and the client comes back', async () => {
    const { client, states } = await startClient('killed');
    const agent = new Agent({ keepAlive: true, maxSockets: 50 });
    try {
      const inFlight = Array.from({ length: 50 }, (_, i) =>
        get('killed', `/slow?ms=10000&i=${i}`, { agent }).then(
          (answer) => answer.status,
          () => 'cut',
        ),
      );
      await until(
        () => openStreams(edgeSession('killed')) + edgeMuxStreams('killed') === 50,
        '50 streams in flight',
      );
      const oldEdgeSession = edgeSession('killed')!;
      const transport = (client as unknown as { transport: Socket }).transport;
      // Abruptly: a TCP reset, no GOAWAY, no FIN.
      transport.resetAndDestroy();
      // What each side holds 2 s after the reset: said if the public requests are not all ended with a
      // 502 (in about one CI run in ten they waited for their 20 s timeout instead, and the cause is not
      // known yet).
      const seen = sleep(2_000).then(() => ({
        clientTransportDestroyed: transport.destroyed,
        clientHandleGone: (transport as unknown as { _handle: unknown })._handle === null,
        clientState: client.state,
        edgeSessionDestroyed: oldEdgeSession.destroyed,
        edgeSessionClosed: oldEdgeSession.closed,
        edgeOpenStreams: openStreams(oldEdgeSession),
        edgeSocketDestroyed: oldEdgeSession.socket?.destroyed ?? null,
        edgeSocketReadable: oldEdgeSession.socket?.readable ?? null,
      }));
      const outcomes = await Promise.all(inFlight);
      // Every public request ended at once, with the edge's 502 page (nothing had been answered yet).
      // (The snapshot is waited for only to say why: requests that all ended at once do not wait 2 s.)
      const notAnswered = outcomes.filter((o) => o !== 502);
      const why = notAnswered.length === 0 ? '' : `2 s after the reset: ${JSON.stringify(await seen)}`;
      expect(notAnswered, why).toEqual([]);
      expect(oldEdgeSession.destroyed).toBe(true);
      expect(openStreams(oldEdgeSession)).toBe(0);
      // The client reconnects by itself, to the same subdomain, and traffic flows again.
      await until(
        () => client.state === 'online' && edgeSession('killed') !== null,
        'the client to reconnect',
      );
      expect(states).toContain('reconnecting');
      expect(client.info!.subdomain).toBe('killed');
      const again = await Promise.all(
        Array.from({ length: 20 }, (_, i) => get('killed', `/again/${i}`, { agent })),
      );
      expect(again.map((a) => a.body)).toEqual(Array.from({ length: 20 }, (_, i) => `GET /again/${i} `));
      const captured = await call<CapturedRequest[]>(`${tp.api}/tunnels/killed/requests`, { key: tp.key });
      expect(captured.body.filter((r) => r.path.startsWith('/slow') && r.error !== null)).toHaveLength(50);
      // On the byte path a kept-alive public connection holds its stream: closed, none may be left.
      agent.destroy();
      await expectIdle('killed', client);
    } finally {
      agent.destroy();
      await client.stop();
      clients.delete(client);
    }
    // A new client of the same account takes the subdomain after a dead one.
    const { client: fresh } = await startClient('killed');
    expect((await get('killed', '/fresh')).body).toBe('GET /fresh ');
    (fresh as unknown as { transport: Socket }).transport.resetAndDestroy();
    await fresh.stop();
    clients.delete(fresh);
    const { client: third } = await startClient('killed');
    expect((await get('killed', '/third')).body).toBe('GET /third ');
    await third.stop();
    clients.delete(third);
  });

  it('comes back after a flood of aborts ends the HTTP/2 session (its reset rate limit)', async () => {
    // Each public client that leaves mid-response costs a RST_STREAM, and nghttp2 ends a server session
    // that receives more than ~1,000 of them at once (33/s after that) with a GOAWAY. Node then stops
    // reading that connection without a word: only the heartbeat notices, and the client reconnects.
    // (Byte-path streams on HTTP/2: a client without the multiplexer, whose resets are its own.)
    const { client, states } = await startClient('flooded', { heartbeatMs: 200, mux: false });
    try {
      await floodOfAborts('flooded');
      await until(
        async () => (await get('flooded', '/alive').catch(() => ({ status: 0, body: '' }))).status === 200,
        'the tunnel to serve again',
        10_000,
        100,
      );
      expect(client.state).toBe('online');
      expect(states).toContain('reconnecting');
    } finally {
      await client.stop();
      clients.delete(client);
    }
  });

  it('with the multiplexer, rides out the same flood of aborts without a reconnect', async () => {
    // The byte path's streams are the multiplexer's: a public client leaving costs a RESET of ours, which
    // no HTTP/2 rate limit counts, so the session is not ended and the client never goes offline.
    // The default heartbeat: one of 200 ms can miss a PING on a loaded machine, and that reconnect would
    // not be the flood's.
    const { client, states } = await startClient('flooded-mux');
    try {
      await floodOfAborts('flooded-mux');
      await until(
        async () =>
          (await get('flooded-mux', '/alive').catch(() => ({ status: 0, body: '' }))).status === 200,
        'the tunnel to answer after the flood',
        10_000,
        100,
      );
      expect(client.state).toBe('online');
      expect(states).not.toContain('reconnecting');
      // Each aborted connection's stream is gone (the last request's connection may be kept alive).
      await until(() => edgeMuxStreams('flooded-mux') <= 1, 'the aborted streams to close');
    } finally {
      await client.stop();
      clients.delete(client);
    }
  });

  it('rides out a platform restart on the same ports and keeps its subdomain', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-tunnel-restart-'));
    let first: TestPlatform | null = await startPlatform({ dataDir });
    let second: TestPlatform | null = null;
    const apiPort = Number(new URL(first.api).port);
    const edgePort = first.edgePort;
    const client = new TunnelClient({
      platformUrl: `http://127.0.0.1:${apiPort}`,
      apiKey: first.key,
      localPort: appPort,
      subdomain: 'survivor',
      backoffMs: 100,
    });
    const states: Array<[TunnelState, string | undefined]> = [];
    client.on('state', (state, detail) => states.push([state, detail]));
    try {
      await client.start();
      const via = (path: string) => get('survivor', path, { edgePort });
      expect((await via('/before')).body).toBe('GET /before ');
      await first.close();
      first = null;
      // Down for a moment: attempts fail and back off.
      await until(
        () => states.filter(([s]) => s === 'reconnecting').length >= 3,
        'three attempts to reconnect',
        5_000,
      );
      second = await startPlatform({ dataDir, edgePort }, { port: apiPort });
      await until(() => client.state === 'online', 'the client to reconnect', 15_000);
      expect(client.info!.subdomain).toBe('survivor');
      expect(client.info!.url).toBe(`http://survivor.tunnel.localhost:${edgePort}`);
      expect((await via('/after')).body).toBe('GET /after ');
      const retries = states.filter(([s]) => s === 'reconnecting').map(([, detail]) => detail ?? '');
      expect(retries.length).toBeGreaterThanOrEqual(3);
      // Backing off: each wait longer than the one before.
      const delays = retries.map((d) => Number(/retrying in ([\d.]+) s/.exec(d)?.[1]));
      expect(delays.slice(0, 3)).toEqual([0.1, 0.2, 0.4]);
      const listed = await call<Array<{ subdomain: string }>>(`${second.api}/tunnels`, { key: second.key });
      expect(listed.body.map((t) => t.subdomain)).toContain('survivor');
    } finally {
      await client.stop();
      await first?.close();
      await second?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
