// HTTP/2 at the Node edge: a client that offers `h2` over ALPN gets it on the HTTPS port, one that
// does not gets HTTP/1.1 there, and apps, static sites, tunnels and the API answer either the same.
// Certificates come from Pebble over HTTP-01, as in tls.test.ts. Apps keep hearing HTTP/1.1: Host from
// `:authority`, no pseudo-headers, a body of unknown length chunked, and what HTTP/2 has no place for
// (connection headers, the reason phrase) never reaches the HTTP/2 client. The body limit cuts one
// stream, never the connection's others.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TunnelClient } from '../../src/core/tunnel/client.js';
import {
  certificateIssued,
  http2Session,
  httpsGet,
  httpsPlatform,
  pebbleMissing,
  type TestAcme,
  http2Request,
} from '../helpers/acme.js';
import { createProject, deployFiles, type Files } from '../helpers/deploy.js';
import { startDns, type FakeDns } from '../helpers/dns.js';
import { type LocalApp, startLocalApp } from '../helpers/local-app.js';
import { call, type TestPlatform } from '../helpers/platform.js';

const missing = pebbleMissing();
if (missing && process.env.CI) throw new Error(`HTTP/2 tests: ${missing}`);

const BODY_LIMIT = 64 * 1024;

const APP: Files = {
  'package.json': JSON.stringify({ name: 'h2-fixture', private: true, scripts: { start: 'node server.js' } }),
  'server.js': `
const http = require('node:http');
const server = http.createServer((req, res) => {
  if (req.url === '/headers') {
    return res.end(JSON.stringify({ httpVersion: req.httpVersion, headers: req.headers, raw: req.rawHeaders }));
  }
  if (req.url === '/echo') {
    let length = 0;
    req.on('data', (chunk) => (length += chunk.length));
    req.on('end', () => res.end(JSON.stringify({
      method: req.method,
      length,
      te: req.headers['transfer-encoding'] ?? null,
      cl: req.headers['content-length'] ?? null,
    })));
    return;
  }
  if (req.url === '/hop') {
    res.writeHead(200, 'Fine Thanks', { connection: 'keep-alive, x-private', 'keep-alive': 'timeout=5', 'x-private': 'hop', 'x-app': 'yes' });
    return res.end('hop');
  }
  res.end('h2 app ' + req.url);
});
server.listen(Number(process.env.PORT));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`,
};

describe.skipIf(missing !== null)('HTTP/2 at the Node edge', () => {
  let dns: FakeDns;
  let env: { tp: TestPlatform; pebble: TestAcme; root: string };
  let local: LocalApp;
  let tunnel: TunnelClient;
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);

  beforeAll(async () => {
    process.on('warning', onWarning);
    dns = await startDns();
    for (const name of ['web', 'site', 'api', 'hello.tun']) dns.set(`${name}.h2.test`, { A: ['127.0.0.1'] });
    env = await httpsPlatform(dns, 'h2.test', {}, { limits: { bodyBytes: BODY_LIMIT } });
    const { tp } = env;
    const web = await createProject(tp, { name: 'Web', subdomain: 'web', deploy_source: 'upload' });
    const site = await createProject(tp, { name: 'Site', subdomain: 'site', deploy_source: 'upload' });
    await Promise.all([
      deployFiles(tp, web.id, APP),
      deployFiles(tp, site.id, { 'index.html': '<h1>static over h2</h1>', 'app.js': 'console.log(1)' }),
    ]);
    for (const name of ['web.h2.test', 'site.h2.test', 'api.h2.test'])
      await certificateIssued(env.tp.platform, name);

    local = await startLocalApp((req, res) => {
      let length = 0;
      req.on('data', (chunk: Buffer) => (length += chunk.length));
      req.on('end', () =>
        res.end(`tunnelled ${req.method} ${req.url} ${length} ${req.headers['x-forwarded-proto']}`),
      );
    });
    tunnel = new TunnelClient({
      platformUrl: tp.api.replace(/\/api\/v1$/, ''),
      apiKey: tp.key,
      localPort: local.port,
      subdomain: 'hello',
    });
    await tunnel.start();
  }, 120_000);

  afterAll(async () => {
    process.off('warning', onWarning);
    await tunnel?.stop();
    await local?.close();
    await env?.tp.close();
    await env?.pebble.close();
    await dns?.close();
  }, 30_000);

  const session = (host: string) => http2Session(env.tp.httpsPort!, host, env.root);

  it('negotiates h2 by ALPN and hands the app an HTTP/1.1 request: Host from :authority, no pseudo-headers, HTTPS forwarding headers', async () => {
    const client = await session('web.h2.test');
    try {
      expect(client.alpnProtocol).toBe('h2');
      const answer = await http2Request(client, { ':path': '/headers', 'x-forwarded-proto': 'forged' });
      expect(answer.status).toBe(200);
      const seen = JSON.parse(answer.body.toString()) as {
        httpVersion: string;
        headers: Record<string, string>;
        raw: string[];
      };
      expect(seen.httpVersion).toBe('1.1');
      expect(seen.headers.host).toBe(`web.h2.test:${env.tp.httpsPort}`);
      expect(Object.keys(seen.headers).filter((name) => name.startsWith(':'))).toEqual([]);
      expect(seen.raw.filter((name) => name.startsWith(':'))).toEqual([]);
      expect(seen.headers['x-forwarded-proto']).toBe('https');
      expect(seen.headers.forwarded).toBe(`for=127.0.0.1;host="web.h2.test:${env.tp.httpsPort}";proto=https`);
      // An ordinary request carries no body: none is invented.
      expect(seen.headers['transfer-encoding']).toBeUndefined();
    } finally {
      client.close();
    }
  });

  it('drops what HTTP/2 has no place for from an app’s answer, silently', async () => {
    const client = await session('web.h2.test');
    try {
      const answer = await http2Request(client, { ':path': '/hop' });
      expect(answer.status).toBe(200);
      expect(answer.body.toString()).toBe('hop');
      expect(answer.headers['x-app']).toBe('yes');
      for (const name of ['connection', 'keep-alive', 'x-private', 'transfer-encoding']) {
        expect(answer.headers[name]).toBeUndefined();
      }
      // Node drops such headers itself, but with a warning in the platform's output each time it starts.
      expect(warnings.map((w) => w.message)).toEqual([]);
    } finally {
      client.close();
    }
  });

  it('sends request bodies on, with a length or framed by HTTP/2 alone (then chunked to the app)', async () => {
    const client = await session('web.h2.test');
    try {
      const sized = await http2Request(
        client,
        { ':method': 'POST', ':path': '/echo', 'content-length': 1000 },
        Buffer.alloc(1000, 'a'),
      );
      expect(JSON.parse(sized.body.toString())).toEqual({
        method: 'POST',
        length: 1000,
        te: null,
        cl: '1000',
      });
      const framed = await http2Request(client, { ':method': 'PUT', ':path': '/echo' }, [
        Buffer.alloc(3000, 'b'),
        Buffer.alloc(3000, 'c'),
        Buffer.alloc(1, 'd'),
      ]);
      expect(JSON.parse(framed.body.toString())).toEqual({
        method: 'PUT',
        length: 6001,
        te: 'chunked',
        cl: null,
      });
    } finally {
      client.close();
    }
  });

  it('answers many streams of one connection at once', async () => {
    const client = await session('web.h2.test');
    try {
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) => http2Request(client, { ':path': `/n/${i}` })),
      );
      expect(answers.map((a) => a.body.toString())).toEqual(
        Array.from({ length: 60 }, (_, i) => `h2 app /n/${i}`),
      );
    } finally {
      client.close();
    }
  });

  it('refuses a body over the limit on its own stream: the connection’s other requests go on', async () => {
    const client = await session('web.h2.test');
    try {
      const declared = await http2Request(
        client,
        { ':method': 'POST', ':path': '/echo', 'content-length': BODY_LIMIT + 1 },
        Buffer.alloc(BODY_LIMIT + 1),
      );
      expect(declared.status).toBe(413);
      expect(declared.headers['x-wharf-edge']).toBe('Request body too large');

      // No length: counted as it streams, and cut where it goes over.
      const streamed = await http2Request(
        client,
        { ':method': 'POST', ':path': '/echo' },
        Array.from({ length: 10 }, () => Buffer.alloc(10 * 1024, 'x')),
      ).catch((error: Error) => ({ status: 0, headers: {}, body: Buffer.from(error.message) }));
      if (streamed.status !== 0) expect(streamed.status).toBe(413);

      const after = await http2Request(client, { ':path': '/still-here' });
      expect(after.body.toString()).toBe('h2 app /still-here');
      expect(client.destroyed).toBe(false);
    } finally {
      client.close();
    }
  });

  it('serves static sites, the API and tunnels over HTTP/2 too', async () => {
    const site = await session('site.h2.test');
    try {
      const page = await http2Request(site, { ':path': '/' });
      expect(page.status).toBe(200);
      expect(page.body.toString()).toBe('<h1>static over h2</h1>');
      const script = await http2Request(site, { ':path': '/app.js' });
      expect(script.headers['content-type']).toMatch(/javascript/);
      expect(script.body.toString()).toBe('console.log(1)');
    } finally {
      site.close();
    }

    const api = await session('api.h2.test');
    try {
      const health = await http2Request(api, { ':path': '/api/v1/health' });
      expect(JSON.parse(health.body.toString())).toEqual({ ok: true });
      const anonymous = await http2Request(api, { ':path': '/api/v1/projects' });
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers['content-type']).toMatch(/^application\/problem\+json/);
      const mine = await http2Request(api, {
        ':path': '/api/v1/projects',
        authorization: `Bearer ${env.tp.key}`,
      });
      expect(mine.status).toBe(200);
      const listed = JSON.parse(mine.body.toString()) as Array<{ subdomain: string }>;
      expect(listed.map((p) => p.subdomain).sort()).toEqual(['site', 'web']);
      // A JSON body framed by HTTP/2 alone reaches the API whole, and its checks.
      const bad = await http2Request(
        api,
        {
          ':method': 'POST',
          ':path': '/api/v1/projects',
          authorization: `Bearer ${env.tp.key}`,
          'content-type': 'application/json',
        },
        [Buffer.from('{"name": "Bad", '), Buffer.from('"subdomain": "NOT OK"}')],
      );
      expect(bad.status).toBe(422);
      expect(bad.body.toString()).toMatch(/subdomain/);
      const other = await env.tp.newAccount();
      const theirs = await http2Request(api, {
        ':path': '/api/v1/projects',
        authorization: `Bearer ${other.key}`,
      });
      expect(JSON.parse(theirs.body.toString())).toEqual([]);
    } finally {
      api.close();
    }

    // The tunnel's certificate is ordered on demand at its first handshake.
    const tunnelled = await session('hello.tun.h2.test');
    try {
      const answer = await http2Request(tunnelled, { ':method': 'POST', ':path': '/t?q=1' }, [
        Buffer.from('one '),
        Buffer.from('two'),
      ]);
      expect(answer.body.toString()).toBe('tunnelled POST /t?q=1 7 https');
    } finally {
      tunnelled.close();
    }
  }, 60_000);

  it('still speaks HTTP/1.1 to a client that offers no h2, on the same port', async () => {
    const answer = await httpsGet(env.tp.httpsPort!, 'web.h2.test', '/plain', env.root);
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('h2 app /plain');
    // The project API lists the URL with its scheme.
    const { body } = await call(`${env.tp.api}/projects`, { key: env.tp.key });
    expect((body as Array<{ url: string }>).map((p) => p.url)).toContain(
      `https://web.h2.test:${env.tp.httpsPort}`,
    );
  });
});
