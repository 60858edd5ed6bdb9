// The app edge: routing by Host, its own pages (404, 502, 503), forwarded headers, request bodies,
// WebSockets, and the static server's corner cases.
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type TestPlatform, startPlatform } from '../helpers/platform.js';
import {
  type Files,
  archiveOf,
  createProject,
  deploy,
  deployFiles,
  nodeApp,
  settled,
  upload,
  viaEdge,
  waitFor,
} from '../helpers/deploy.js';

let tp: TestPlatform;

/**
 * The edge fixture: /headers answers the request's headers, POST /echo the size and SHA-256 of the
 * body, and an upgrade on any path is a WebSocket (handshake by hand: the app has no node_modules) that
 * echoes each text frame with the Host it was reached at.
 */
const edgeApp: Files = nodeApp('edge app', {
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
  res.setHeader('x-app', 'edge-app');
  res.end('edge app ' + req.method + ' ' + req.url);
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
      let length = buffer[1] & 0x7f;
      let offset = 2;
      if (length === 126) { if (buffer.length < 4) return; length = buffer.readUInt16BE(2); offset = 4; }
      const masked = (buffer[1] & 0x80) !== 0;
      const end = offset + (masked ? 4 : 0) + length;
      if (buffer.length < end) return;
      const payload = Buffer.from(buffer.subarray(end - length, end));
      if (masked) for (let i = 0; i < length; i++) payload[i] ^= buffer[offset + (i % 4)];
      buffer = buffer.subarray(end);
      if (opcode === 8) { socket.end(Buffer.from([0x88, 0])); return; }
      if (opcode !== 1) continue;
      const reply = Buffer.from('echo ' + payload.toString() + ' via ' + req.headers.host + ' ' + req.url);
      const header = reply.length < 126
        ? Buffer.from([0x81, reply.length])
        : Buffer.from([0x81, 126, reply.length >> 8, reply.length & 0xff]);
      socket.write(Buffer.concat([header, reply]));
    }
  });
  socket.on('error', () => socket.destroy());
});
server.listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
`,
});

beforeAll(async () => {
  tp = await startPlatform({ healthTimeoutMs: 15_000 });
  const app = await createProject(tp, { name: 'Edge app', subdomain: 'edge-app', deploy_source: 'upload' });
  const site = await createProject(tp, {
    name: 'Edge site',
    subdomain: 'edge-site',
    deploy_source: 'upload',
  });
  await Promise.all([
    deployFiles(tp, app.id, edgeApp),
    deployFiles(tp, site.id, {
      'index.html': '<h1>edge site</h1>',
      'a b.txt': 'with a space',
      'a%20b.txt': 'with a percent',
      '.env': 'SECRET=hidden',
      'notes.txt': 'plain notes',
    }),
  ]);
});

afterAll(async () => {
  await tp?.close();
});

describe('routing by Host', () => {
  it.each([
    ['an unknown subdomain', 'nobody.localhost'],
    ['the bare base domain', 'localhost'],
    ['a host outside the base domain', 'example.com'],
    ['a deeper name under a project', 'x.edge-app.localhost'],
    ['an unknown service of a project', 'edge-app-nosuch.localhost'],
  ])('answers 404 with its HTML page for %s', async (_label, host) => {
    const page = await viaEdge(tp.edgePort, host, '/');
    expect(page.status).toBe(404);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['x-wharf-edge']).toBe('No app here');
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['retry-after']).toBeUndefined();
    expect(page.body).toMatch(/^<!doctype html>/);
    expect(page.body).toContain('<title>404 · No app here · Wharf</title>');
    expect(page.body).toContain(`Nothing is deployed at ${host}.`);
  });

  it('escapes the Host in its page', async () => {
    const page = await viaEdge(tp.edgePort, '<script>x</script>.localhost', '/');
    expect(page.status).toBe(404);
    expect(page.body).not.toContain('<script>x');
    expect(page.body).toContain('&lt;script&gt;');
  });

  it('routes a Host in capitals, with a trailing dot, or without a port', async () => {
    expect((await viaEdge(tp.edgePort, 'EDGE-APP.LocalHost', '/a')).body).toBe('edge app GET /a');
    expect((await viaEdge(tp.edgePort, 'edge-app.localhost.', '/b')).body).toBe('edge app GET /b');
    const bare = await rawRequest('GET', '/c', { host: 'edge-app.localhost' });
    expect(bare.body).toBe('edge app GET /c');
  });

  it('passes the method, the path and query, and the app’s own headers', async () => {
    const answer = await viaEdge(tp.edgePort, 'edge-app.localhost', '/p/q?x=1&y=%20', { method: 'DELETE' });
    expect(answer.status).toBe(200);
    expect(answer.headers['x-app']).toBe('edge-app');
    expect(answer.body).toBe('edge app DELETE /p/q?x=1&y=%20');
  });

  it('preserves the Host and adds X-Forwarded-For/-Host/-Proto/-Port', async () => {
    const answer = await viaEdge(tp.edgePort, 'edge-app.localhost', '/headers');
    const headers = JSON.parse(answer.body) as Record<string, string>;
    expect(headers.host).toBe(`edge-app.localhost:${tp.edgePort}`);
    expect(headers['x-forwarded-host']).toBe(`edge-app.localhost:${tp.edgePort}`);
    expect(headers['x-forwarded-proto']).toBe('http');
    expect(headers['x-forwarded-port']).toBe(String(tp.edgePort));
    expect(headers['x-forwarded-for']).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
  });

  it('replaces what a client claims in X-Forwarded-* instead of passing it on', async () => {
    const answer = await viaEdge(tp.edgePort, 'edge-app.localhost', '/headers', {
      headers: {
        'x-forwarded-for': '203.0.113.9',
        'x-forwarded-host': 'bank.example',
        'x-forwarded-proto': 'https',
        'x-forwarded-port': '443',
      },
    });
    const headers = JSON.parse(answer.body) as Record<string, string>;
    expect(headers['x-forwarded-for']).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
    expect(headers['x-forwarded-host']).toBe(`edge-app.localhost:${tp.edgePort}`);
    expect(headers['x-forwarded-proto']).toBe('http');
    expect(headers['x-forwarded-port']).toBe(String(tp.edgePort));
  });

  it('replaces what a client claims in Forwarded and X-Real-IP with what the edge saw', async () => {
    const answer = await viaEdge(tp.edgePort, 'edge-app.localhost', '/headers', {
      headers: { forwarded: 'for=203.0.113.9;host=bank.example;proto=https', 'x-real-ip': '203.0.113.9' },
    });
    const headers = JSON.parse(answer.body) as Record<string, string>;
    expect(headers['x-real-ip']).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
    expect(headers.forwarded).toMatch(
      new RegExp(
        `^for=("\\[::ffff:127\\.0\\.0\\.1\\]"|127\\.0\\.0\\.1);host="edge-app\\.localhost:${tp.edgePort}";proto=http$`,
      ),
    );
    expect(answer.body).not.toContain('203.0.113.9');
    expect(answer.body).not.toContain('bank.example');
  });

  it('streams a large request body to the app intact', async () => {
    const body = randomBytes(3 * 1024 * 1024);
    const answer = await rawRequest('POST', '/echo', { host: `edge-app.localhost:${tp.edgePort}` }, body);
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(`${body.length} ${createHash('sha256').update(body).digest('hex')}`);
  });
});

describe('pages for projects that do not run', () => {
  it('a created, never deployed project: 503 "Not deployed yet", no Retry-After', async () => {
    await createProject(tp, { name: 'Fresh <one>', subdomain: 'fresh', deploy_source: 'upload' });
    const page = await viaEdge(tp.edgePort, 'fresh.localhost', '/anything');
    expect(page.status).toBe(503);
    expect(page.headers['x-wharf-edge']).toBe('Not deployed yet');
    expect(page.headers['retry-after']).toBeUndefined();
    expect(page.body).toContain('Fresh &lt;one&gt; has not been deployed yet.');
    expect(page.body).not.toContain('http-equiv="refresh"');
  });

  it('a project building its first version: 503 "Deploying" with Retry-After, then the app', async () => {
    const project = await createProject(tp, {
      name: 'Slow build',
      subdomain: 'slow-build',
      deploy_source: 'upload',
      build_config: { build_cmd: 'sleep 1.5', start_cmd: 'node server.js' },
    });
    await upload(tp, project.id, archiveOf(nodeApp('built slowly')));
    await deploy(tp, project.id);
    const page = await viaEdge(tp.edgePort, 'slow-build.localhost', '/');
    expect(page.status).toBe(503);
    expect(page.headers['x-wharf-edge']).toBe('Deploying');
    expect(page.headers['retry-after']).toBe('5');
    expect(page.body).toContain('<meta http-equiv="refresh" content="5">');
    expect(page.body).toContain('Slow build is being deployed');
    const { project: done } = await waitFor(tp, project.id, settled);
    expect(done.status).toBe('running');
    expect((await viaEdge(tp.edgePort, 'slow-build.localhost', '/')).body).toBe('built slowly /');
  });

  it('a project whose deploy failed: 502 "Not running", saying nothing of why (that is for its owner)', async () => {
    const project = await createProject(tp, {
      name: 'Broken',
      subdomain: 'broken',
      deploy_source: 'upload',
      build_config: { start_cmd: 'exit 9' },
    });
    await upload(tp, project.id, archiveOf({ 'x.txt': '' }));
    await deploy(tp, project.id);
    await waitFor(tp, project.id, settled);
    const page = await viaEdge(tp.edgePort, 'broken.localhost', '/');
    expect(page.status).toBe(502);
    expect(page.headers['x-wharf-edge']).toBe('Not running');
    expect(page.headers['retry-after']).toBeUndefined();
    expect(page.body).toContain('This app is not running.');
    expect(page.body).not.toContain('exited');
    expect(page.body).not.toContain('Broken');
  });
});

describe('WebSockets', () => {
  it('echoes a message through the edge, with the Host preserved', async () => {
    const socket = new WebSocket(`ws://127.0.0.1:${tp.edgePort}/live?room=1`, {
      headers: { host: `edge-app.localhost:${tp.edgePort}` },
    });
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      const replies: string[] = [];
      for (const text of ['hello', 'x'.repeat(300)]) {
        const reply = new Promise<string>((resolve) =>
          socket.once('message', (data) => resolve(String(data))),
        );
        socket.send(text);
        replies.push(await reply);
      }
      expect(replies).toEqual([
        `echo hello via edge-app.localhost:${tp.edgePort} /live?room=1`,
        `echo ${'x'.repeat(300)} via edge-app.localhost:${tp.edgePort} /live?room=1`,
      ]);
    } finally {
      socket.terminate();
    }
  });

  it('an open WebSocket does not hold up the platform’s shutdown', async () => {
    const other = await startPlatform({ healthTimeoutMs: 15_000 });
    let closed = false;
    try {
      const project = await createProject(other, {
        name: 'Live',
        subdomain: 'live',
        deploy_source: 'upload',
      });
      await deployFiles(other, project.id, edgeApp);
      const socket = new WebSocket(`ws://127.0.0.1:${other.edgePort}/`, {
        headers: { host: `live.localhost:${other.edgePort}` },
      });
      await new Promise<void>((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      const gone = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      const started = Date.now();
      await Promise.race([
        other.close(),
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error('close() waited for the WebSocket')), 8_000),
        ),
      ]);
      closed = true;
      expect(Date.now() - started).toBeLessThan(8_000);
      await gone;
    } finally {
      if (!closed) void other.close();
    }
  });

  it.each([
    ['an unknown host', 'nobody.localhost', 404],
    ['a project that does not run', 'fresh-ws.localhost', 503],
  ])('refuses an upgrade for %s', async (_label, host, status) => {
    if (host.startsWith('fresh-ws')) {
      await createProject(tp, { name: 'Fresh ws', subdomain: 'fresh-ws', deploy_source: 'upload' });
    }
    const socket = new WebSocket(`ws://127.0.0.1:${tp.edgePort}/`, { headers: { host } });
    const refused = await new Promise<number>((resolve, reject) => {
      socket.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      socket.once('open', () => reject(new Error('the upgrade was accepted')));
      socket.once('error', reject);
    });
    socket.terminate();
    expect(refused).toBe(status);
  });
});

describe('static sites at the edge', () => {
  it('serves files by their decoded name, once', async () => {
    expect((await viaEdge(tp.edgePort, 'edge-site.localhost', '/a%20b.txt')).body).toBe('with a space');
    // `%25` is a literal percent sign: decoding twice would serve "a b.txt" here.
    expect((await viaEdge(tp.edgePort, 'edge-site.localhost', '/a%2520b.txt')).body).toBe('with a percent');
  });

  it('answers 400 to a malformed path, and keeps serving', async () => {
    const bad = await viaEdge(tp.edgePort, 'edge-site.localhost', '/%E0%A4%A');
    expect(bad.status).toBe(400);
    expect((await viaEdge(tp.edgePort, 'edge-site.localhost', '/notes.txt')).body).toBe('plain notes');
  });

  it('serves nothing above its root and no dotfiles', async () => {
    for (const path of [
      '/../../../../etc/passwd',
      '/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
      '/..%2f..%2f..%2fetc/passwd',
      '/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd',
    ]) {
      const answer = await viaEdge(tp.edgePort, 'edge-site.localhost', path);
      expect(answer.body, path).not.toContain('root:');
      // Refused, or the site's own index.html (the single-page fallback of a path with no extension).
      if (answer.status === 200) expect(answer.body, path).toBe('<h1>edge site</h1>');
      else expect([400, 403, 404], path).toContain(answer.status);
    }
    for (const path of ['/.env', '/%2eenv']) {
      const dotfile = await viaEdge(tp.edgePort, 'edge-site.localhost', path);
      expect(dotfile.status, path).not.toBe(200);
      expect(dotfile.body, path).not.toContain('SECRET');
    }
  });
});

/** A request to the edge with exactly these headers (viaEdge always sends `host:port`). */
function rawRequest(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: tp.edgePort, method, path, headers, agent: false, timeout: 10_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer')));
    req.on('error', reject);
    req.end(body);
  });
}
