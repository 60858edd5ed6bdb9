// The tunnel client's transport by default (`auto`): a raw Upgrade first, and a WebSocket when something
// on the way refuses the raw Upgrade but passes WebSockets, as some corporate proxies do. The proxy here
// is a real TCP proxy in front of the platform that answers 403 to any Upgrade but `websocket`. A refusal
// of the platform's own (a wrong key) is not retried another way.
import { type Server, type Socket, connect, createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TunnelClient, type TunnelClientOptions, TunnelRefusedError } from '../../src/core/tunnel/client.js';
import { viaEdge } from '../helpers/deploy.js';
import { type LocalApp, startTextApp } from '../helpers/local-app.js';
import { type TestPlatform, startPlatform } from '../helpers/platform.js';

let tp: TestPlatform;
let app: LocalApp;
let proxy: Server;
let proxyPort: number;
/** The Upgrade protocols the proxy was asked for, in order. */
const asked: string[] = [];
/** Whether the proxy refuses Upgrades other than WebSocket (else it passes everything). */
let blockRaw = true;
const sockets = new Set<Socket>();

/** A proxy that passes WebSocket Upgrades (and plain requests) to the platform and refuses other Upgrades. */
function startProxy(platformPort: number): Promise<Server> {
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.once('data', (head) => {
      const upgrade = /^upgrade:\s*(\S+)\s*$/im.exec(head.toString('latin1'))?.[1]?.toLowerCase();
      if (upgrade) asked.push(upgrade);
      if (blockRaw && upgrade && upgrade !== 'websocket') {
        const page = '<h1>Blocked by proxy</h1>';
        socket.end(
          `HTTP/1.1 403 Forbidden\r\ncontent-type: text/html\r\ncontent-length: ${page.length}\r\nconnection: close\r\n\r\n${page}`,
        );
        return;
      }
      const upstream = connect(platformPort, '127.0.0.1', () => {
        upstream.write(head);
        socket.pipe(upstream).pipe(socket);
      });
      sockets.add(upstream);
      upstream.on('close', () => {
        sockets.delete(upstream);
        socket.destroy();
      });
      upstream.on('error', () => socket.destroy());
      socket.on('close', () => upstream.destroy());
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

beforeAll(async () => {
  tp = await startPlatform();
  app = await startTextApp((req) => `${req.method} ${req.url}`);
  proxy = await startProxy(Number(new URL(tp.api).port));
  proxyPort = (proxy.address() as { port: number }).port;
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => proxy?.close(resolve));
  await app?.close();
  await tp?.close();
});

/** A tunnel client whose platform is reached through the proxy (the proxy's log of Upgrades emptied). */
function clientBehindProxy(options: Partial<TunnelClientOptions> = {}): TunnelClient {
  asked.length = 0;
  return new TunnelClient({
    platformUrl: `http://127.0.0.1:${proxyPort}`,
    apiKey: tp.key,
    localPort: app.port,
    ...options,
  });
}

describe('the tunnel client behind a proxy that passes only WebSockets', () => {
  it('falls back to a WebSocket, serves through it, and reconnects by WebSocket', async () => {
    const client = clientBehindProxy({ subdomain: 'behind-proxy', backoffMs: 20 });
    try {
      const info = await client.start();
      expect(asked).toEqual(['wharf-tunnel', 'websocket']);
      expect(client.transportInUse).toBe('websocket');
      const answer = await viaEdge(tp.edgePort, `${info.subdomain}.tunnel.localhost`, '/through?proxy=1');
      expect(answer.status).toBe(200);
      expect(answer.body).toBe('GET /through?proxy=1');

      // The connection drops (both ways at once, mid-session: the platform must live through it; Node's
      // wrapper of non-socket streams once ended the process here). The client comes back by WebSocket
      // straight away, not raw first.
      asked.length = 0;
      const online = new Promise<void>((resolve) =>
        client.on('state', (state) => {
          if (state === 'online') resolve();
        }),
      );
      for (const socket of sockets) socket.destroy();
      await online;
      expect(asked).toEqual(['websocket']);
      expect((await viaEdge(tp.edgePort, 'behind-proxy.tunnel.localhost', '/again')).body).toBe('GET /again');
      expect((await fetch(`${tp.api}/platform`, { headers: { 'x-api-key': tp.key } })).status).toBe(200);
    } finally {
      await client.stop();
    }
  });

  it('keeps to raw when raw is asked for, and says what blocked it', async () => {
    const client = clientBehindProxy({ transport: 'raw' });
    const error = await client.start().then(
      () => null,
      (reason: unknown) => reason,
    );
    await client.stop();
    expect(error).toBeInstanceOf(TunnelRefusedError);
    expect(error).toMatchObject({ status: 403, code: 'http_error' });
    expect((error as Error).message).toContain('Blocked by proxy');
    expect(asked).toEqual(['wharf-tunnel']);
  });

  it('does not try another way when the platform itself refuses (a wrong key)', async () => {
    blockRaw = false;
    const client = clientBehindProxy({ apiKey: `wk_${'0'.repeat(32)}` });
    const error = await client.start().then(
      () => null,
      (reason: unknown) => reason,
    );
    await client.stop();
    blockRaw = true;
    expect(error).toMatchObject({ status: 401, code: 'unauthorized' });
    expect(asked).toEqual(['wharf-tunnel']);
    expect(client.transportInUse).toBeNull();
  });
});
