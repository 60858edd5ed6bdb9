// The 4040 inspector server: the Bridge over HTTP and WebSocket, and its hostile-web defences.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { Engine } from '../../src/core/engine.js';
import { startInspector, type RunningInspector } from '../../src/core/inspector/server.js';
import { FileSecretStore } from '../../src/core/secret-store.js';
import { nodeAppTarball } from '../fixtures/tarball.js';
import { startPlatform, type TestPlatform } from '../helpers/platform.js';

let platform: TestPlatform;
let engine: Engine;
let inspector: RunningInspector;
let home: string;

beforeAll(async () => {
  platform = await startPlatform();
  home = mkdtempSync(join(tmpdir(), 'wharf-inspector-'));
  const staticDir = join(home, 'ui');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(staticDir);
  writeFileSync(join(staticDir, 'index.html'), '<!doctype html><title>Wharf</title>');
  engine = new Engine({
    home,
    secrets: new FileSecretStore(join(home, 'secrets.json')),
    localPlatform: async () => ({ url: platform.api.replace(/\/api\/v1$/, ''), apiKey: platform.key }),
    pollIntervalMs: 100,
  });
  inspector = await startInspector({ bridge: engine, port: 0, staticDir });
});

afterAll(async () => {
  let t = Date.now();
  await inspector.close();
  console.log('inspector', Date.now() - t);
  t = Date.now();
  await engine.close();
  console.log('engine', Date.now() - t);
  t = Date.now();
  await platform.close();
  console.log('platform', Date.now() - t);
  rmSync(home, { recursive: true, force: true });
});

/** A raw request, so Host and Origin can be set to anything. */
function raw(
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: inspector.port,
        path,
        method: options.method ?? 'GET',
        headers: options.headers,
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const invoke = (operation: string, input: unknown, headers: Record<string, string> = {}) =>
  raw(`/bridge/invoke/${operation}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-wharf-token': inspector.token, ...headers },
    body: JSON.stringify(input),
  });

function openSocket(
  headers: Record<string, string> = {},
): Promise<{ socket: WebSocket; messages: unknown[]; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`ws://127.0.0.1:${inspector.port}/bridge/events`, {
      headers: { origin: inspector.origin, ...headers },
    });
    const messages: unknown[] = [];
    const closed = new Promise<number>((done) => socket.on('close', (code) => done(code)));
    socket.on('message', (data) => messages.push(JSON.parse(String(data))));
    socket.on('open', () => resolve({ socket, messages, closed }));
    socket.on('unexpected-response', (_req, res) =>
      reject(new Error(`upgrade refused with ${res.statusCode}`)),
    );
    socket.on('error', reject);
  });
}

async function waitFor(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the Bridge over HTTP', () => {
  it('serves the UI and a page URL carrying the token in its fragment', async () => {
    expect(inspector.pageUrl).toBe(`http://127.0.0.1:${inspector.port}/#token=${inspector.token}`);
    const page = await raw('/', { headers: { host: `127.0.0.1:${inspector.port}` } });
    expect(page.status).toBe(200);
    expect(page.body).toContain('<title>Wharf</title>');
    const viaLocalhost = await raw('/', { headers: { host: `localhost:${inspector.port}` } });
    expect(viaLocalhost.status).toBe(200);
  });

  it('invokes operations with the token and returns results as { ok, value }', async () => {
    const created = await invoke(
      'projects.create',
      { name: 'Via HTTP', subdomain: 'via-http', image: 'nginx' },
      { host: `127.0.0.1:${inspector.port}` },
    );
    expect(created.status).toBe(200);
    expect(JSON.parse(created.body)).toMatchObject({ ok: true, value: { subdomain: 'via-http' } });
    const list = JSON.parse(
      (await invoke('projects.list', null, { host: `127.0.0.1:${inspector.port}` })).body,
    );
    expect(list.value.projects.map((p: { subdomain: string }) => p.subdomain)).toContain('via-http');
  });

  it('returns platform errors as { ok: false, error } with the status and field paths', async () => {
    const result = await invoke(
      'projects.create',
      { name: 'x', subdomain: 'Bad!', image: 'nginx' },
      { host: `127.0.0.1:${inspector.port}` },
    );
    expect(result.status).toBe(422);
    expect(JSON.parse(result.body)).toMatchObject({
      ok: false,
      error: { code: 'validation_failed', errors: [{ path: 'subdomain' }] },
    });
  });

  it('uploads raw archive bytes for projects.upload', async () => {
    const created = JSON.parse(
      (
        await invoke(
          'projects.create',
          { name: 'Up', subdomain: 'via-upload', deploy_source: 'upload' },
          { host: `127.0.0.1:${inspector.port}` },
        )
      ).body,
    );
    const upload = await raw(`/bridge/upload/${created.value.id}?fileName=app.tar.gz`, {
      method: 'POST',
      headers: {
        host: `127.0.0.1:${inspector.port}`,
        'content-type': 'application/octet-stream',
        'x-wharf-token': inspector.token,
      },
      body: nodeAppTarball(),
    });
    expect(upload.status).toBe(200);
    expect(JSON.parse(upload.body)).toMatchObject({ ok: true, value: { files: 2 } });
  });

  it('answers an unknown operation with 404', async () => {
    const result = await invoke('projects.explode', null, { host: `127.0.0.1:${inspector.port}` });
    expect(result.status).toBe(404);
    expect(JSON.parse(result.body).error.code).toBe('unknown_operation');
  });
});

describe('defences against other pages and hosts', () => {
  it('refuses a foreign Host header (DNS rebinding), even for the UI', async () => {
    for (const host of ['evil.example:80', `evil.example:${inspector.port}`, '127.0.0.1:1']) {
      const page = await raw('/', { headers: { host } });
      expect(page.status).toBe(403);
      const call = await invoke('projects.list', null, { host });
      expect(call.status).toBe(403);
    }
  });

  it('refuses a foreign Origin on a state-changing request, even with the token', async () => {
    const result = await invoke('projects.list', null, {
      host: `127.0.0.1:${inspector.port}`,
      origin: 'https://evil.example',
    });
    expect(result.status).toBe(403);
    expect(result.body).toMatch(/evil\.example may not use this server/);
    const same = await invoke('projects.list', null, {
      host: `127.0.0.1:${inspector.port}`,
      origin: inspector.origin,
    });
    expect(same.status).toBe(200);
  });

  it('refuses Bridge calls without the token or with a wrong one', async () => {
    const missing = await invoke('projects.list', null, {
      host: `127.0.0.1:${inspector.port}`,
      'x-wharf-token': '',
    });
    expect(missing.status).toBe(401);
    const wrong = await invoke('projects.list', null, {
      host: `127.0.0.1:${inspector.port}`,
      'x-wharf-token': 'guess',
    });
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.body).error.code).toBe('token_refused');
  });

  it('refuses a WebSocket upgrade from a foreign Origin', async () => {
    await expect(openSocket({ origin: 'https://evil.example' })).rejects.toThrow(/403/);
  });

  it('closes an event socket with 4401 when its first message has the wrong token', async () => {
    const { socket, closed } = await openSocket();
    socket.send(JSON.stringify({ type: 'auth', token: 'guess' }));
    expect(await closed).toBe(4401);
  });
});

describe('events over WebSocket', () => {
  it('streams project changes once authenticated', async () => {
    const { socket, messages } = await openSocket();
    socket.send(JSON.stringify({ type: 'auth', token: inspector.token }));
    await waitFor(() => messages.some((m) => (m as { type: string }).type === 'ready'), 'ready');
    await invoke(
      'projects.create',
      { name: 'Live', subdomain: 'via-socket', image: 'nginx' },
      { host: `127.0.0.1:${inspector.port}` },
    );
    await waitFor(
      () =>
        messages.some(
          (m) =>
            (m as { event?: string }).event === 'projects' &&
            (m as { payload: { projects: Array<{ subdomain: string }> } }).payload.projects.some(
              (p) => p.subdomain === 'via-socket',
            ),
        ),
      'a projects event listing the new project',
    );
    socket.close();
  });
});

describe('ports', () => {
  it('takes the next free port when the requested one is in use, and says so', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((done) => blocker.listen(0, '127.0.0.1', done));
    const taken = (blocker.address() as { port: number }).port;
    const second = await startInspector({ bridge: engine, port: taken, staticDir: null });
    try {
      expect(second.port).not.toBe(taken);
      expect(second.movedFromPort).toBe(taken);
    } finally {
      await second.close();
      blocker.close();
    }
  });
});
