// `--front haproxy`: a real HAProxy (Debian's) on 127.0.0.1 in front of a real platform. Apps, a
// service subdomain and a verified custom domain go straight to their ports; a static site, a tunnel
// (its client connecting through the front to api.<base_domain>) and the API go to the Node edge behind
// it; WebSockets pass; a redeploy under a request loop drops nothing (the reload, and the old version
// stopped only once HAProxy sends it nothing); a stopped app gets Wharf's page; a body over the limit
// is refused; a client's X-Forwarded-* are replaced. Then HTTPS: a certificate issued over HTTP-01
// through the front (Pebble) and served by HAProxy, plain HTTP redirected.
import { createHash, randomBytes } from 'node:crypto';
import dns from 'node:dns';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { TunnelClient } from '../../src/core/tunnel/client.js';
import type { PlatformConfigInput } from '../../src/server/config.js';
import { findHaproxy } from '../../src/server/front/haproxy.js';
import { type RunningPlatform, servePlatform } from '../../src/server/serve.js';
import type { Domain } from '../../src/shared/api/domains.js';
import {
  certificateIssued,
  http2Request,
  http2Session,
  httpsGet,
  pebbleMissing,
  startPebble,
  type TestAcme,
} from '../helpers/acme.js';
import { type Files, accepts, createProject, deployFiles, nodeApp, viaEdge } from '../helpers/deploy.js';
import { startTextApp } from '../helpers/local-app.js';
import { until } from '../helpers/poll.js';
import { startDns, type FakeDns } from '../helpers/dns.js';
import { type TestPlatform, call } from '../helpers/platform.js';
import { assertBuilt, runWharf, wharfBin, wharfEnv } from '../helpers/cli.js';
import { quietPort } from '../helpers/ports.js';
import { sentTo } from '../helpers/front.js';

const haproxy = findHaproxy();
// CI installs HAProxy: there the suite must run, not skip.
if (!haproxy && process.env.CI) throw new Error('front tests: haproxy is not installed');
const pebble = pebbleMissing();
if (pebble && process.env.CI) throw new Error(`front HTTPS tests: ${pebble}`);

const BODY_LIMIT = 1024 * 1024;

interface FrontPlatform extends TestPlatform {
  running: RunningPlatform;
}

/** A platform served as `wharf platform --front haproxy` serves it, on 127.0.0.1 ports. */
async function startFront(config: PlatformConfigInput): Promise<FrontPlatform> {
  const dataDir = mkdtempSync(join(tmpdir(), 'wharf-front-'));
  const running = await servePlatform(
    { runtime: 'sandbox', stopContainersOnExit: true, front: 'haproxy', ...config, dataDir },
    { host: '127.0.0.1', port: 0 },
    { port: config.edgePort ?? 0 },
  );
  const local = JSON.parse(readFileSync(join(dataDir, 'local-account.json'), 'utf8')) as {
    account_id: string;
    api_key: string;
  };
  return {
    running,
    platform: running,
    api: running.apiUrl,
    edgePort: running.config.edgePort,
    httpsPort: running.config.tls.httpsPort,
    dataDir,
    databaseUrl: null,
    key: local.api_key,
    accountId: local.account_id,
    newAccount: () => Promise.reject(new Error('not here')),
    async close() {
      await running.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The front's servers for an app on `port` of this machine. */
const onThisMachine = (port: number) => [{ host: '127.0.0.1', port }];

/**
 * The fixture: `<greeting> <path>`, /headers answers the request's headers, POST /echo the size and
 * SHA-256 of the body, /slow answers after 300 ms, /crash exits, and an upgrade is a WebSocket that echoes text
 * frames (handshake by hand: the app has no node_modules).
 */
function frontApp(greeting: string): Files {
  return nodeApp(greeting, {
    'server.js': `
const http = require('node:http');
const crypto = require('node:crypto');
const server = http.createServer((req, res) => {
  if (req.url === '/headers') {
    res.setHeader('content-type', 'application/json');
    return res.end(JSON.stringify(req.headers));
  }
  if (req.method === 'POST' && req.url === '/echo') {
    let size = 0;
    const hash = crypto.createHash('sha256');
    req.on('data', (chunk) => { size += chunk.length; hash.update(chunk); });
    req.on('end', () => res.end(size + ' ' + hash.digest('hex')));
    return;
  }
  if (req.url === '/crash') process.exit(1);
  if (req.url === '/slow') return setTimeout(() => res.end(${JSON.stringify(greeting)} + ' slow'), 300);
  res.end(${JSON.stringify(greeting)} + ' ' + req.url);
});
server.on('upgrade', (req, socket) => {
  const accept = crypto.createHash('sha1')
    .update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n' +
    'Sec-WebSocket-Accept: ' + accept + '\\r\\n\\r\\n');
  let buffer = Buffer.alloc(0);
  socket.on('data', (data) => {
    buffer = Buffer.concat([buffer, data]);
    while (buffer.length >= 2) {
      const opcode = buffer[0] & 0x0f;
      const length = buffer[1] & 0x7f;
      const end = 2 + 4 + length;
      if (buffer.length < end) return;
      const payload = Buffer.from(buffer.subarray(6, end));
      for (let i = 0; i < length; i++) payload[i] ^= buffer[2 + (i % 4)];
      buffer = buffer.subarray(end);
      if (opcode === 8) { socket.end(Buffer.from([0x88, 0])); return; }
      const reply = Buffer.from('echo ' + payload.toString() + ' via ' + req.headers.host + ' ' + req.headers['x-forwarded-proto']);
      socket.write(Buffer.concat([Buffer.from([0x81, reply.length]), reply]));
    }
  });
  socket.on('error', () => socket.destroy());
});
server.listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
// No SIGTERM handler: stopped, it is gone at once, so that a request still in flight would fail.
`,
    'api/server.js': `
require('node:http').createServer((req, res) => res.end('api service ' + req.url))
  .listen(Number(process.env.PORT));
`,
  });
}

describe.skipIf(!haproxy)('the HAProxy front over plain HTTP', () => {
  let tp: FrontPlatform;
  let testDns: FakeDns;
  let appId: string;
  let appPort: number;
  const lookup = dns.lookup;
  const cleanups: Array<() => Promise<unknown> | unknown> = [];

  beforeAll(async () => {
    testDns = await startDns();
    // Names under .localhost reach 127.0.0.1 here, as a browser has them (the tunnel client resolves).
    (dns as { lookup: unknown }).lookup = (host: string, options: unknown, callback: unknown) => {
      const done = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
      const all = typeof options === 'object' && (options as { all?: boolean } | null)?.all;
      if (!host.endsWith('.localhost')) return lookup(host, options as never, callback as never);
      if (all) done(null, [{ address: '127.0.0.1', family: 4 }]);
      else done(null, '127.0.0.1', 4);
    };
    tp = await startFront({
      healthTimeoutMs: 15_000,
      dnsServers: [testDns.server],
      limits: { bodyBytes: BODY_LIMIT },
    });
    const app = await createProject(tp, {
      name: 'Front app',
      subdomain: 'front-app',
      deploy_source: 'upload',
      build_config: { services: [{ name: 'api', root_dir: 'api', start_cmd: 'node server.js' }] },
    });
    appId = app.id;
    const site = await createProject(tp, {
      name: 'Front site',
      subdomain: 'front-site',
      deploy_source: 'upload',
    });
    await Promise.all([
      deployFiles(tp, app.id, frontApp('hello v1')),
      deployFiles(tp, site.id, { 'index.html': '<h1>front site</h1>' }),
    ]);
    appPort = portOf(tp, app.id);
  }, 90_000);

  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    (dns as { lookup: unknown }).lookup = lookup;
    await tp?.close();
    await testDns?.close();
  }, 30_000);

  it('sends apps and services straight to their ports, and the rest to the Node edge', async () => {
    // What is pending is applied now (route changes are otherwise applied after a short pause).
    await tp.running.front!.sync();
    const routes = await tp.running.front!.routes();
    expect(routes.map((r) => r.host)).toEqual(['front-app-api.localhost', 'front-app.localhost']);
    expect(routes.find((r) => r.host === 'front-app.localhost')!.servers).toEqual(onThisMachine(appPort));

    const before = await sentTo(tp.running.front!.dir);
    expect((await viaEdge(tp.edgePort, 'front-app.localhost', '/x')).body).toBe('hello v1 /x');
    expect((await viaEdge(tp.edgePort, 'front-app-api.localhost', '/y')).body).toBe('api service /y');
    const after = await sentTo(tp.running.front!.dir);
    // Straight to the app's port, not through the Node edge.
    expect(after.get(`127.0.0.1:${appPort}`)).toBe((before.get(`127.0.0.1:${appPort}`) ?? 0) + 1);

    const site = await viaEdge(tp.edgePort, 'front-site.localhost', '/');
    expect(site.status).toBe(200);
    expect(site.body).toBe('<h1>front site</h1>');
    const unknown = await viaEdge(tp.edgePort, 'nobody.localhost', '/');
    expect(unknown.status).toBe(404);
    expect(unknown.headers['x-wharf-edge']).toBe('No app here');
  });

  it('serves the API at api.<base_domain> through the Node edge', async () => {
    const health = await viaEdge(tp.edgePort, 'api.localhost', '/api/v1/health');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toEqual({ ok: true });
    const projects = await viaEdge(tp.edgePort, 'api.localhost', '/api/v1/projects', {
      headers: { 'x-api-key': tp.key },
    });
    expect(projects.status).toBe(200);
  });

  it('routes a verified custom domain straight to its app', async () => {
    const created = await call<{ domain: Domain; verification: { name: string; value: string } }>(
      `${tp.api}/domains`,
      { key: tp.key, body: { domain: 'www.front.test', project_id: appId } },
    );
    expect(created.status).toBe(201);
    expect((await viaEdge(tp.edgePort, 'www.front.test', '/')).status).toBe(404);
    testDns.set(created.body.verification.name, { TXT: [created.body.verification.value] });
    testDns.set('www.front.test', { CNAME: tp.platform.config.cnameTarget });
    testDns.set(tp.platform.config.cnameTarget, { A: ['127.0.0.1'] });
    const verified = await call<{ verified: boolean }>(`${tp.api}/domains/${created.body.domain.id}/verify`, {
      key: tp.key,
      method: 'POST',
    });
    expect(verified.body.verified).toBe(true);
    await tp.running.front!.sync();
    expect((await tp.running.front!.routes()).find((r) => r.host === 'www.front.test')?.servers).toEqual(
      onThisMachine(appPort),
    );
    const before = (await sentTo(tp.running.front!.dir)).get(`127.0.0.1:${appPort}`) ?? 0;
    expect((await viaEdge(tp.edgePort, 'www.front.test', '/d')).body).toBe('hello v1 /d');
    expect((await sentTo(tp.running.front!.dir)).get(`127.0.0.1:${appPort}`)).toBe(before + 1);
  });

  it('relays a tunnel whose client connected through the front', async () => {
    const local = await startTextApp((req) => `local app ${req.url}`);
    cleanups.push(() => local.close());
    const client = new TunnelClient({
      platformUrl: `http://api.localhost:${tp.edgePort}`,
      apiKey: tp.key,
      localPort: local.port,
      subdomain: 'front-tunnel',
    });
    cleanups.push(() => client.stop());
    const info = await client.start();
    expect(info.subdomain).toBe('front-tunnel');
    const answer = await viaEdge(tp.edgePort, 'front-tunnel.tunnel.localhost', '/t?q=1');
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('local app /t?q=1');
  }, 30_000);

  it('passes WebSockets through to the app', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${tp.edgePort}/socket`, {
      headers: { host: `front-app.localhost:${tp.edgePort}` },
    });
    cleanups.push(() => ws.terminate());
    const reply = await new Promise<string>((resolve, reject) => {
      ws.once('open', () => ws.send('ping'));
      ws.once('message', (data: Buffer) => resolve(data.toString()));
      ws.once('error', reject);
    });
    expect(reply).toBe(`echo ping via front-app.localhost:${tp.edgePort} ws`);
    ws.close();
  });

  it('replaces what a client claims in X-Forwarded-* with what the front saw', async () => {
    const answer = await viaEdge(tp.edgePort, 'front-app.localhost', '/headers', {
      headers: {
        'x-forwarded-for': '6.6.6.6',
        'x-forwarded-host': 'evil.test',
        'x-forwarded-proto': 'https',
        'x-forwarded-port': '1',
        'x-real-ip': '6.6.6.6',
        forwarded: 'for=6.6.6.6',
      },
    });
    const headers = JSON.parse(answer.body) as Record<string, string>;
    expect(headers).toMatchObject({
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-host': `front-app.localhost:${tp.edgePort}`,
      'x-forwarded-proto': 'http',
      'x-forwarded-port': String(tp.edgePort),
      'x-real-ip': '127.0.0.1',
      forwarded: `for=127.0.0.1;host="front-app.localhost:${tp.edgePort}";proto=http`,
    });
  });

  it('refuses a body over the limit with Wharf’s page, and passes one within it, chunked or not', async () => {
    const host = 'front-app.localhost';
    // Declared over the limit: refused by HAProxy before the body is read, with the Node edge's page
    // (asked with Expect: 100-continue, as curl does: the body is never sent).
    const declared = await postBody(tp.edgePort, host, Buffer.alloc(BODY_LIMIT + 1, 'x'), false, true);
    expect(declared.status, JSON.stringify({ ...declared, body: declared.body.slice(0, 200) })).toBe(413);
    expect(declared.headers['x-wharf-edge']).toBe('Request body too large');
    expect(declared.body).toContain('This address takes request bodies of up to 1 MiB.');

    // Without a length, the body goes through the Node edge, which counts it as it streams.
    const chunked = await postBody(tp.edgePort, host, Buffer.alloc(4 * BODY_LIMIT, 'c'), true);
    expect(chunked.status, JSON.stringify({ ...chunked, body: chunked.body.slice(0, 200) })).toBe(413);
    expect(chunked.body).toContain('This address takes request bodies of up to 1 MiB.');

    const body = randomBytes(BODY_LIMIT);
    const digest = `${body.length} ${createHash('sha256').update(body).digest('hex')}`;
    expect(await postBody(tp.edgePort, host, body, true)).toMatchObject({ status: 200, body: digest });
    expect(await postBody(tp.edgePort, host, body, false)).toMatchObject({ status: 200, body: digest });
    expect(await postBody(tp.edgePort, host, body, false, true)).toMatchObject({ status: 200, body: digest });
  });

  it('redeploys under a request loop without a failed request', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    cleanups.push(() => agent.destroy());
    let running = true;
    const failures: string[] = [];
    const seen = new Map<string, number>();
    const loop = async (path: string) => {
      while (running) {
        try {
          const answer = await viaEdge(tp.edgePort, 'front-app.localhost', path, { agent });
          if (answer.status !== 200) failures.push(`${answer.status} ${answer.body.slice(0, 100)}`);
          else seen.set(answer.body, (seen.get(answer.body) ?? 0) + 1);
        } catch (error) {
          failures.push((error as Error).message);
        }
      }
    };
    const loops = [loop('/'), loop('/'), loop('/slow'), loop('/slow')];
    await until(() => (seen.get('hello v1 /') ?? 0) > 20, 'the loop to get going');
    await deployFiles(tp, appId, frontApp('hello v2'));
    await until(() => (seen.get('hello v2 /') ?? 0) > 20, 'the new version to answer through the front');
    // Requests of the old version were let finish before it stopped.
    await until(async () => !(await accepts(appPort)), 'the old version to stop', 30_000);
    running = false;
    await Promise.all(loops);
    expect(failures).toEqual([]);
    expect(seen.get('hello v1 slow')).toBeGreaterThan(0);
    expect(seen.get('hello v2 slow')).toBeGreaterThan(0);
    appPort = portOf(tp, appId);
    expect((await tp.running.front!.routes()).find((r) => r.host === 'front-app.localhost')!.servers).toEqual(
      onThisMachine(appPort),
    );
  }, 60_000);

  it('answers Wharf’s pages, not HAProxy’s, while a crashed app restarts, then routes to its new port', async () => {
    const before = appPort;
    const crash = await viaEdge(tp.edgePort, 'front-app.localhost', '/crash');
    expect(crash.status).toBe(502);
    expect(crash.headers['x-wharf-edge']).toBe('Not running');
    expect(crash.body).toContain('<title>502 · Not running · Wharf</title>');
    const answers = new Set<string>();
    await until(
      async () => {
        const answer = await viaEdge(tp.edgePort, 'front-app.localhost', '/');
        answers.add(`${answer.status} ${String(answer.headers['x-wharf-edge'] ?? answer.body)}`);
        return answer.body === 'hello v2 /';
      },
      'the app to be restarted',
      15_000,
    );
    // While it was down: the Node edge's page (HAProxy tried the app's port, then the Node edge).
    expect([...answers].filter((a) => !a.startsWith('200 '))).toEqual(
      answers.size > 1 ? ['502 Not running'] : [],
    );
    await tp.running.front!.sync();
    appPort = portOf(tp, appId);
    expect(appPort).not.toBe(before);
    expect((await tp.running.front!.routes()).find((r) => r.host === 'front-app.localhost')!.servers).toEqual(
      onThisMachine(appPort),
    );
    const sent = (await sentTo(tp.running.front!.dir)).get(`127.0.0.1:${appPort}`) ?? 0;
    expect((await viaEdge(tp.edgePort, 'front-app.localhost', '/again')).body).toBe('hello v2 /again');
    expect((await sentTo(tp.running.front!.dir)).get(`127.0.0.1:${appPort}`)).toBe(sent + 1);
  }, 30_000);

  it('starts HAProxy again when it dies, with the routing table as it is then', async () => {
    const front = tp.running.front!;
    const pid = front.pid!;
    process.kill(pid, 'SIGKILL');
    await until(
      async () =>
        front.pid !== null &&
        front.pid !== pid &&
        (await viaEdge(tp.edgePort, 'front-app.localhost', '/back').catch(() => null))?.body ===
          'hello v2 /back',
      'HAProxy to be started again',
      15_000,
      100,
    );
    expect((await front.routes()).find((r) => r.host === 'front-app.localhost')!.servers).toEqual(
      onThisMachine(appPort),
    );
  }, 20_000);

  it('answers Wharf’s page once the app is stopped', async () => {
    const stopped = await call(`${tp.api}/projects/${appId}/stop`, { key: tp.key, method: 'POST' });
    expect(stopped.status).toBe(200);
    const page = await viaEdge(tp.edgePort, 'front-app.localhost', '/');
    expect(page.status).toBe(503);
    expect(page.headers['x-wharf-edge']).toBe('Stopped');
    expect(page.body).toContain('Front app is stopped.');
    await until(
      async () => !(await tp.running.front!.routes()).some((r) => r.host === 'front-app.localhost'),
      'the front to stop routing the app',
    );
  });
});

/** The port the project's main app listens on now. */
function portOf(tp: TestPlatform, projectId: string): number {
  const target = tp.platform.runtime.target(projectId, null);
  if (target?.kind !== 'proxy') throw new Error(`project ${projectId} does not run on a port`);
  target.done();
  return target.port;
}

/**
 * POST /echo with `body`, chunked or with its Content-Length, over a plain socket that reads while it
 * sends and stops sending once an answer came; with `expectContinue`, as curl sends a large body: the
 * body only after `100 Continue`. A reset after the answer is kept apart.
 */
function postBody(
  port: number,
  host: string,
  body: Buffer,
  chunked: boolean,
  expectContinue = false,
): Promise<{ status: number | null; body: string; headers: Record<string, string>; error: string | null }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let received = Buffer.alloc(0);
    let answered = false;
    const parse = () => {
      const end = received.indexOf('\r\n\r\n');
      if (end === -1) return null;
      const [statusLine, ...lines] = received.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = Number(headers['content-length'] ?? NaN);
      const text = received.subarray(end + 4);
      return { status: Number(statusLine!.split(' ')[1]), headers, text, whole: text.length >= length };
    };
    const done = (error: string | null) => {
      if (answered) return;
      answered = true;
      socket.destroy();
      const parsed = parse();
      resolve({
        status: parsed?.status ?? null,
        headers: parsed?.headers ?? {},
        body: parsed?.text.toString() ?? '',
        error,
      });
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (expectContinue && /^HTTP\/1\.1 100 [^\r]*\r\n\r\n/.test(received.toString('latin1'))) {
        received = received.subarray(received.indexOf('\r\n\r\n') + 4);
        expectContinue = false;
        pump();
      }
      if (parse()?.whole) done(null);
    });
    socket.on('error', (error) => done(error.message));
    socket.on('close', () => done('closed'));
    socket.setTimeout(15_000, () => done('timed out'));
    socket.write(
      `POST /echo HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n` +
        (expectContinue ? 'expect: 100-continue\r\n' : '') +
        (chunked ? 'transfer-encoding: chunked\r\n\r\n' : `content-length: ${body.length}\r\n\r\n`),
    );
    let offset = 0;
    const pump = () => {
      while (offset < body.length && received.length === 0 && !socket.destroyed) {
        const piece = body.subarray(offset, offset + 16 * 1024);
        offset += piece.length;
        const frame = chunked
          ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')])
          : piece;
        if (!socket.write(frame)) return socket.once('drain', pump);
      }
      if (chunked && offset >= body.length && !socket.destroyed) socket.write('0\r\n\r\n');
    };
    if (!expectContinue) pump();
  });
}

describe.skipIf(!haproxy || pebble !== null)('the HAProxy front over HTTPS', () => {
  let testDns: FakeDns;
  let acme: TestAcme;
  let tp: FrontPlatform;
  let root: string;

  beforeAll(async () => {
    // The API's certificate is ordered when the platform starts.
    testDns = await startDns({ 'api.apps.test': { A: ['127.0.0.1'] } });
    const edgePort = await quietPort();
    acme = await startPebble({ httpPort: edgePort, dnsServer: testDns.server });
    tp = await startFront({
      edgePort,
      baseDomain: 'apps.test',
      tunnelDomain: 'tun.apps.test',
      dnsServers: [testDns.server],
      healthTimeoutMs: 20_000,
      limits: { bodyBytes: BODY_LIMIT },
      tls: {
        httpsPort: 0,
        acme: { directoryUrl: acme.directory, caFile: acme.caFile, retryBaseMs: 60_000 },
      },
    });
    root = await acme.issuingRoot();
  }, 60_000);

  afterAll(async () => {
    await tp?.close();
    await acme?.close();
    await testDns?.close();
  }, 30_000);

  it('gets an app its certificate over HTTP-01 through the front, and serves it with HAProxy', async () => {
    testDns.set('web.apps.test', { A: ['127.0.0.1'] });
    const project = await createProject(tp, { name: 'Web', subdomain: 'web', deploy_source: 'upload' });
    expect(project.url).toBe(`https://web.apps.test:${tp.httpsPort}`);
    await deployFiles(tp, project.id, frontApp('over https'));
    await certificateIssued(tp.platform, 'web.apps.test');
    // HAProxy serves it once the front has written it and reloaded.
    let answer: Awaited<ReturnType<typeof httpsGet>> | null = null;
    await until(
      async () =>
        (answer = await httpsGet(tp.httpsPort!, 'web.apps.test', '/headers', root).catch(() => null)) !==
        null,
      'HAProxy to serve the certificate',
      10_000,
      100,
    );
    expect(answer!.status).toBe(200);
    expect(answer!.certificate.subjectaltname).toBe('DNS:web.apps.test');
    expect(JSON.parse(answer!.body)).toMatchObject({
      'x-forwarded-proto': 'https',
      'x-forwarded-port': '443',
      'x-forwarded-for': '127.0.0.1',
    });
    const routes = await tp.running.front!.routes();
    expect(routes.map((r) => r.host)).toContain('web.apps.test');
    // The API's own certificate (api.<base>, ordered at start) and the app's.
    expect(readFileSync(join(tp.running.front!.dir, 'crt-list.txt'), 'utf8')).toBe(
      'certs/api.apps.test.pem\ncerts/web.apps.test.pem\n',
    );
    // Only the front listens there: the Node edge's own TLS server is not used.
    expect(tp.platform.edge.secureServer?.listening ?? false).toBe(false);
  }, 60_000);

  it('speaks HTTP/2 to a client that offers it (HTTP/1.1 to the app), holding bodies to the limit', async () => {
    const client = await http2Session(tp.httpsPort!, 'web.apps.test', root);
    try {
      expect(client.alpnProtocol).toBe('h2');
      const headers = await http2Request(client, { ':path': '/headers', 'x-forwarded-for': '6.6.6.6' });
      expect(headers.status).toBe(200);
      expect(JSON.parse(headers.body.toString())).toMatchObject({
        host: `web.apps.test:${tp.httpsPort}`,
        'x-forwarded-proto': 'https',
        'x-forwarded-for': '127.0.0.1',
      });
      const body = randomBytes(100_000);
      const echoed = await http2Request(client, { ':method': 'POST', ':path': '/echo' }, [
        body.subarray(0, 50_000),
        body.subarray(50_000),
      ]);
      expect(echoed.body.toString()).toBe(`100000 ${createHash('sha256').update(body).digest('hex')}`);
      // Over the limit, declared or only framed: refused (or its stream cut), the connection kept.
      const declared = await http2Request(
        client,
        { ':method': 'POST', ':path': '/echo', 'content-length': BODY_LIMIT + 1 },
        Buffer.alloc(BODY_LIMIT + 1),
      );
      expect(declared.status).toBe(413);
      const framed = await http2Request(
        client,
        { ':method': 'POST', ':path': '/echo' },
        Array.from({ length: 20 }, () => Buffer.alloc(BODY_LIMIT / 8, 'f')),
      ).catch(() => null);
      if (framed) expect(framed.status).toBe(413);
      expect((await http2Request(client, { ':path': '/after' })).body.toString()).toBe('over https /after');
    } finally {
      client.close();
    }
    // The API, behind the front on the Node edge, over HTTP/2 as well.
    await certificateIssued(tp.platform, 'api.apps.test');
    let api: Awaited<ReturnType<typeof http2Session>> | null = null;
    await until(
      async () => (api = await http2Session(tp.httpsPort!, 'api.apps.test', root).catch(() => null)) !== null,
      'HAProxy to serve the API certificate',
      10_000,
      100,
    );
    try {
      const health = await http2Request(api!, { ':path': '/api/v1/health' });
      expect(JSON.parse(health.body.toString())).toEqual({ ok: true });
    } finally {
      api!.close();
    }
  }, 60_000);

  it('serves a verified custom domain with its own certificate, with HSTS once its owner turns it on', async () => {
    testDns.set('blog.apps.test', { A: ['127.0.0.1'] });
    const project = await createProject(tp, { name: 'Blog', subdomain: 'blog', deploy_source: 'upload' });
    await deployFiles(tp, project.id, frontApp('my blog'));
    const created = await call<{ domain: Domain; verification: { name: string; value: string } }>(
      `${tp.api}/domains`,
      { key: tp.key, body: { domain: 'www.myblog.test', project_id: project.id } },
    );
    testDns.set(created.body.verification.name, { TXT: [created.body.verification.value] });
    testDns.set('www.myblog.test', { CNAME: tp.platform.config.cnameTarget });
    testDns.set(tp.platform.config.cnameTarget, { A: ['127.0.0.1'] });
    const verified = await call<{ verified: boolean }>(`${tp.api}/domains/${created.body.domain.id}/verify`, {
      key: tp.key,
      method: 'POST',
    });
    expect(verified.body.verified).toBe(true);
    await certificateIssued(tp.platform, 'www.myblog.test');
    await tp.running.front!.sync();
    const first = await httpsGet(tp.httpsPort!, 'www.myblog.test', '/', root);
    expect(first.body).toBe('my blog /');
    expect(first.certificate.subjectaltname).toBe('DNS:www.myblog.test');
    expect(first.headers['strict-transport-security']).toBeUndefined();

    const patched = await call<Domain>(`${tp.api}/domains/${created.body.domain.id}`, {
      key: tp.key,
      method: 'PATCH',
      body: { hsts: true },
    });
    expect(patched.status).toBe(200);
    await tp.running.front!.sync();
    const after = await httpsGet(tp.httpsPort!, 'www.myblog.test', '/', root);
    expect(after.body).toBe('my blog /');
    expect(after.headers['strict-transport-security']).toBe('max-age=31536000');
    // Never over plain HTTP, and never for the app's own host, which its owner did not ask.
    const plain = await viaEdge(tp.edgePort, 'www.myblog.test', '/');
    expect(plain.status).toBe(308);
    expect(plain.headers['strict-transport-security']).toBeUndefined();
    await certificateIssued(tp.platform, 'blog.apps.test');
    await tp.running.front!.sync();
    const own = await httpsGet(tp.httpsPort!, 'blog.apps.test', '/', root);
    expect(own.body).toBe('my blog /');
    expect(own.headers['strict-transport-security']).toBeUndefined();
  }, 60_000);

  it('redirects plain HTTP to HTTPS, but for ACME challenges', async () => {
    const answer = await viaEdge(tp.edgePort, 'web.apps.test', '/a/b?c=d');
    expect(answer.status).toBe(308);
    expect(answer.headers.location).toBe(`https://web.apps.test:${tp.httpsPort}/a/b?c=d`);
    const token = await viaEdge(
      tp.edgePort,
      'web.apps.test',
      `/.well-known/acme-challenge/${'x'.repeat(43)}`,
    );
    expect(token.status).toBe(404);
    expect(token.body).toBe('no such challenge\n');
  });
});

/** The pids of HAProxy processes run for the front in `dir`. */
function haproxiesIn(dir: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return argv.some((a) => a.endsWith('haproxy')) && argv.includes(dir);
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe.skipIf(!haproxy)('wharf platform --front haproxy', () => {
  it('says which front it runs, serves apps through it, and stops HAProxy with itself', async () => {
    assertBuilt();
    const dir = mkdtempSync(join(tmpdir(), 'wharf-front-cli-'));
    const child = spawn(
      process.execPath,
      [
        wharfBin,
        'platform',
        '--data-dir',
        join(dir, 'data'),
        '--port',
        '0',
        '--edge-port',
        '0',
        '--front',
        'haproxy',
      ],
      { env: wharfEnv({ home: dir }), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const closed = new Promise((resolve) => child.once('close', resolve));
    try {
      await until(() => output.includes('Press Ctrl+C to stop.'), `the banner:\n${output}`, 20_000);
      expect(output).toContain(
        `  Front      HAProxy ${haproxy!.version} on the edge port (config in ${join(dir, 'data', 'front')})`,
      );
      const edgePort = Number(/Apps +http:\/\/<subdomain>\.localhost:(\d+)/.exec(output)?.[1]);
      expect(haproxiesIn(join(dir, 'data', 'front')).length).toBeGreaterThan(0);
      const page = await viaEdge(edgePort, 'nobody.localhost', '/');
      expect(page.status).toBe(404);
      expect(page.headers['x-wharf-edge']).toBe('No app here');
      const health = await viaEdge(edgePort, 'api.localhost', '/api/v1/health');
      expect(health.body).toBe('{"ok":true}');
    } finally {
      child.kill('SIGTERM');
      await closed;
    }
    expect(output).toContain('Stopped.');
    await until(() => haproxiesIn(join(dir, 'data', 'front')).length === 0, 'HAProxy to be gone', 5_000);
    rmSync(dir, { recursive: true, force: true });
  }, 40_000);

  it('refuses --front haproxy without HAProxy, saying how to get it (exit code 2)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wharf-front-usage-'));
    const result = await runWharf(['platform', '--port', '0', '--edge-port', '0', '--front', 'haproxy'], {
      home: dir,
      env: { WHARF_HAPROXY: join(dir, 'no-haproxy-here') },
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--front haproxy needs HAProxy 2.6 or newer, and none was found');
    expect(result.stderr).toContain('apt-get install haproxy');
    const bogus = await runWharf(['platform', '--port', '0', '--front', 'nginx'], { home: dir });
    expect(bogus.code).not.toBe(0);
    expect(bogus.stderr).toMatch(/--front.*nginx.*none, haproxy/s);
    rmSync(dir, { recursive: true, force: true });
  });
});
