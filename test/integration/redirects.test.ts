// The Engine's and the CLI's platform client, and the tunnel client, never carry the API key across a
// redirect to another origin: a local "platform" redirects to another local port that records every
// request it gets. A redirect within the platform's own origin is still followed.
import { once } from 'node:events';
import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformClient } from '../../src/core/api-client/platform-client.js';
import { TunnelClient, TunnelRefusedError } from '../../src/core/tunnel/client.js';
import { BridgeError } from '../../src/shared/bridge.js';

const KEY = `wk_${'R'.repeat(32)}`;

/** What the other origin received: it must stay empty. */
const trapped: Array<{ url: string; headers: IncomingHttpHeaders }> = [];
/** What the platform's own origin received after a same-origin redirect. */
const followed: Array<{ url: string; method: string; headers: IncomingHttpHeaders; body: string }> = [];

let trap: Server;
let platform: Server;
let trapOrigin: string;
let platformOrigin: string;

function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  return once(server, 'listening').then(() => `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
}

beforeAll(async () => {
  trap = createServer((req, res) => {
    trapped.push({ url: req.url ?? '', headers: req.headers });
    res.setHeader('content-type', 'application/json');
    res.end('[]');
  });
  trap.on('upgrade', (req, socket) => {
    trapped.push({ url: req.url ?? '', headers: req.headers });
    socket.destroy();
  });
  trapOrigin = await listen(trap);

  // `/s<status>/…` answers that redirect status, to the trap; `/loop/…` redirects to itself.
  platform = createServer((req, res) => {
    const url = req.url ?? '/';
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const prefixed = /^\/s(\d{3})\//.exec(url);
      if (url.startsWith('/api/v1/account/usage')) {
        // Same origin: a relative Location, followed.
        res.writeHead(301, { location: '/api/v1/moved/usage' }).end();
      } else if (url.startsWith('/api/v1/moved/')) {
        followed.push({ url, method: req.method ?? '', headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
      } else if (url.startsWith('/loop/')) {
        res.writeHead(302, { location: url }).end();
      } else {
        res.writeHead(prefixed ? Number(prefixed[1]) : 302, { location: `${trapOrigin}/stolen${url}` }).end();
      }
    });
  });
  platform.on('upgrade', (req, socket) => {
    socket.end(
      `HTTP/1.1 307 Temporary Redirect\r\nlocation: ${trapOrigin}${req.url}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`,
    );
  });
  platformOrigin = await listen(platform);
});

afterAll(async () => {
  platform?.closeAllConnections();
  trap?.closeAllConnections();
  await Promise.all([
    new Promise((resolve) => platform?.close(resolve)),
    new Promise((resolve) => trap?.close(resolve)),
  ]);
});

async function refusal(promise: Promise<unknown>): Promise<BridgeError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BridgeError);
  return error as BridgeError;
}

describe('the platform client', () => {
  const client = (prefix = '') =>
    new PlatformClient({ baseUrl: `${platformOrigin}${prefix}`, apiKey: KEY, timeoutMs: 5_000 });

  it.each([301, 302, 303, 307, 308])(
    'refuses a %i to another origin without sending the key there (GET and POST)',
    async (status) => {
      for (const attempt of [
        client(`/s${status}`).listDomains(),
        client(`/s${status}`).verifyEmail({ email: 'someone@example.com' }),
      ]) {
        const error = await refusal(attempt);
        expect(error.message).toContain('never sent to another origin');
        expect(error.message).toContain(`redirecting to ${trapOrigin}`);
        expect(error.message).not.toContain(KEY);
      }
      expect(trapped).toEqual([]);
    },
  );

  it('refuses a redirect of the log stream to another origin', async () => {
    const controller = new AbortController();
    const error = await refusal(client('/s307').followLogs('prj_x', {}, controller.signal));
    expect(error.message).toContain('never sent to another origin');
    controller.abort();
    expect(trapped).toEqual([]);
  });

  it('follows a redirect within the same origin, with the key', async () => {
    followed.length = 0;
    expect(await client().usage()).toEqual([]);
    expect(followed).toHaveLength(1);
    expect(followed[0]).toMatchObject({ url: '/api/v1/moved/usage', method: 'GET' });
    expect(followed[0]!.headers['x-api-key']).toBe(KEY);
    expect(trapped).toEqual([]);
  });

  it('gives up on a redirect loop within the origin', async () => {
    const error = await refusal(client('/loop').listDomains());
    expect(error.message).toMatch(/redirected more than 5 times/);
  });
});

describe('the tunnel client', () => {
  it.each(['raw', 'websocket'] as const)(
    'refuses a redirect of its %s connection without following it',
    async (transport) => {
      const client = new TunnelClient({ platformUrl: platformOrigin, apiKey: KEY, localPort: 9, transport });
      try {
        const error = await client.start().then(
          () => null,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(TunnelRefusedError);
        expect((error as TunnelRefusedError).code).toBe('redirected');
        expect((error as Error).message).toContain('does not follow redirects');
        expect((error as Error).message).not.toContain(KEY);
        expect(trapped).toEqual([]);
      } finally {
        await client.stop();
      }
    },
  );
});

describe('the tunnel client facing a hostile answer', () => {
  it('reads no more than a short problem of a refusal, however long the body', async () => {
    // A "platform" that refuses the upgrade with an endless body.
    const endless = createServer();
    endless.on('upgrade', (_req, socket) => {
      socket.write(
        'HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n',
      );
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const pump = () => {
        while (!socket.destroyed && socket.write(chunk));
        if (!socket.destroyed) socket.once('drain', pump);
      };
      socket.on('error', () => undefined);
      pump();
    });
    const origin = await listen(endless);
    const client = new TunnelClient({ platformUrl: origin, apiKey: KEY, localPort: 9, transport: 'raw' });
    try {
      const error = await client.start().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TunnelRefusedError);
      expect((error as TunnelRefusedError).message.length).toBeLessThanOrEqual(70 * 1024);
    } finally {
      await client.stop();
      endless.closeAllConnections();
      await new Promise((resolve) => endless.close(resolve));
    }
  }, 20_000);
});
