// The edge's side of a tunnel connection's life: it PINGs each client and lets go of one that stops
// answering without a word (no FIN, no reset: a laptop closed, a NAT that forgot the flow), answering
// the public requests it held; and a platform that closes ends every connection it took by an upgrade,
// a tunnel connection replaced by a newer one and a live feed among them, instead of waiting on them.
import { once } from 'node:events';
import { type IncomingMessage, type ServerResponse, request } from 'node:http';
import { type AddressInfo, type Server, type Socket, createServer, connect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { TunnelClient, type TunnelClientOptions } from '../../src/core/tunnel/client.js';
import { type LocalApp, startLocalApp } from '../helpers/local-app.js';
import { quietFor, until } from '../helpers/poll.js';
import { type TestPlatform, startPlatform } from '../helpers/platform.js';

let app: LocalApp;
/** Responses the app holds open (it answers `/hold` with headers and a first line, then nothing). */
const held = new Set<ServerResponse>();
const clients = new Set<TunnelClient>();
const platforms = new Set<TestPlatform>();

beforeAll(async () => {
  app = await startLocalApp((req: IncomingMessage, res: ServerResponse) => {
    if (req.url?.startsWith('/hold')) {
      held.add(res);
      res.on('close', () => held.delete(res));
      res.writeHead(200).write('started\n');
      return;
    }
    res.end(`${req.method} ${req.url}`);
  });
});

afterEach(async () => {
  for (const res of held) res.destroy();
  await Promise.all([...clients].map((client) => client.stop()));
  clients.clear();
  await Promise.all([...platforms].map((tp) => tp.close()));
  platforms.clear();
});

afterAll(async () => {
  await app?.close();
});

async function platform(): Promise<TestPlatform> {
  const tp = await startPlatform();
  platforms.add(tp);
  return tp;
}

async function startClient(tp: TestPlatform, subdomain: string, options: Partial<TunnelClientOptions> = {}) {
  const client = new TunnelClient({
    platformUrl: tp.api.replace(/\/api\/v1$/, ''),
    apiKey: tp.key,
    localPort: app.port,
    subdomain,
    backoffMs: 50,
    ...options,
  });
  clients.add(client);
  await client.start();
  return client;
}

/**
 * A TCP hop between a tunnel client and the platform that can go silent: `freeze()` stops carrying
 * bytes either way and closes nothing, as a dead NAT or a sleeping laptop does.
 */
async function silentHop(target: number): Promise<{ port: number; freeze(): void; close(): Promise<void> }> {
  const pairs: Array<[Socket, Socket]> = [];
  const server: Server = createServer((inside) => {
    const outside = connect(target, '127.0.0.1');
    inside.pipe(outside).pipe(inside);
    inside.on('error', () => outside.destroy());
    outside.on('error', () => inside.destroy());
    pairs.push([inside, outside]);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    freeze() {
      for (const [inside, outside] of pairs) {
        inside.unpipe(outside);
        outside.unpipe(inside);
        inside.pause();
        outside.pause();
      }
    },
    async close() {
      for (const [inside, outside] of pairs) {
        inside.destroy();
        outside.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A public request through the edge: its status and body, or `cut` for a connection that ended. */
function publicGet(tp: TestPlatform, sub: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: tp.edgePort,
        path,
        headers: { host: `${sub}.tunnel.localhost:${tp.edgePort}` },
        agent: false,
        timeout: 15_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', () => resolve({ status: res.statusCode ?? 0, body: `${body}[cut]` }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer for ${sub}${path}`)));
    req.on('error', reject);
    req.end();
  });
}

describe('the edge heartbeat', () => {
  it('lets go of a client that stops answering without a word, and answers the requests it held', async () => {
    const tp = await platform();
    tp.platform.tunnels.heartbeatMs = 200;
    const hop = await silentHop(Number(new URL(tp.api).port));
    try {
      // The client's own heartbeat off: only the edge's is under test.
      const client = await startClient(tp, 'silent', {
        platformUrl: `http://127.0.0.1:${hop.port}`,
        heartbeatMs: 0,
      });
      expect((await publicGet(tp, 'silent', '/before')).body).toBe('GET /before');
      // Answered PINGs keep the connection: idle for five periods, it is still the same one.
      await quietFor(1_000);
      expect(tp.platform.tunnels.isOnline('silent')).toBe(true);
      expect(client.state).toBe('online');

      const inFlight = [1, 2, 3].map((i) => publicGet(tp, 'silent', `/hold?i=${i}`));
      await until(() => held.size === 3, 'three held requests at the app');
      const frozenAt = Date.now();
      hop.freeze();
      const answers = await Promise.all(inFlight);
      // Each public request ends once the edge gives the client up: within two periods and some slack,
      // not at the public client's 15 s timeout. The status was sent already; the body ends cut.
      expect(Date.now() - frozenAt).toBeLessThan(3_000);
      expect(answers.map((a) => a.body)).toEqual(['started\n[cut]', 'started\n[cut]', 'started\n[cut]']);
      await until(() => !tp.platform.tunnels.isOnline('silent'), 'the edge to let the tunnel go', 3_000);
      // A new request for the subdomain gets the edge's offline answer at once.
      const after = await publicGet(tp, 'silent', '/after');
      expect(after.status).toBe(502);
    } finally {
      await hop.close();
    }
  });

  it('keeps a busy connection whose PINGs are answered', async () => {
    const tp = await platform();
    tp.platform.tunnels.heartbeatMs = 100;
    await startClient(tp, 'busy', { heartbeatMs: 0 });
    const answers: string[] = [];
    const until2s = Date.now() + 2_000;
    while (Date.now() < until2s) answers.push((await publicGet(tp, 'busy', `/n${answers.length}`)).body);
    expect(answers.length).toBeGreaterThan(20);
    expect(answers.every((body, i) => body === `GET /n${i}`)).toBe(true);
    expect(tp.platform.tunnels.list(tp.accountId).map((t) => t.subdomain)).toEqual(['busy']);
  });
});

describe('closing the platform', () => {
  it('ends a replaced tunnel connection still holding a request, and a live feed, at once', async () => {
    const tp = await platform();
    const first = await startClient(tp, 'handover');
    const pending = publicGet(tp, 'handover', '/hold?first').catch((error: Error) => error.message);
    await until(() => held.size === 1, 'the held request at the app');
    // A newer connection of the same account takes the subdomain over: the first is told to go, but its
    // request is still under way, so its connection stays open until that ends.
    const second = await startClient(tp, 'handover');
    expect(second.state).toBe('online');
    await quietFor(200);
    expect(first.state).toBe('online');
    const feed = new WebSocket(`${tp.api.replace(/^http/, 'ws')}/ws/traffic/handover`, {
      headers: { 'x-api-key': tp.key },
    });
    await once(feed, 'open');
    const feedClosed = once(feed, 'close');

    const started = Date.now();
    platforms.delete(tp);
    await tp.close();
    await Promise.all([feedClosed, pending]);
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});
