// The 4040 inspector server: the Bridge over HTTP and WebSocket, and its hostile-web defences.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
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
import { until } from '../helpers/poll.js';

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
  await inspector.close();
  await engine.close();
  await platform.close();
  rmSync(home, { recursive: true, force: true });
});

/** A raw request, so Host and Origin can be set to anything. */
function raw(
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
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
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
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

  it('refuses every /bridge route to a local process without the token, a forged Origin included', async () => {
    const created = JSON.parse(
      (
        await invoke(
          'projects.create',
          { name: 'Locked', subdomain: 'locked-upload', deploy_source: 'upload' },
          { host: `127.0.0.1:${inspector.port}` },
        )
      ).body,
    );
    const forged = { host: `127.0.0.1:${inspector.port}`, origin: inspector.origin };
    const attempts: Array<Record<string, string>> = [
      {},
      { 'x-wharf-token': 'guess' },
      { cookie: `wharf_inspector_${inspector.port}=guess` },
    ];
    for (const headers of attempts) {
      const call = await raw('/bridge/invoke/projects.list', {
        method: 'POST',
        headers: { ...forged, 'content-type': 'application/json', ...headers },
        body: 'null',
      });
      expect(call.status).toBe(401);
      expect(call.body).not.toContain('via-http');
      expect(JSON.parse(call.body).error.code).toBe('token_refused');
      const upload = await raw(`/bridge/upload/${created.value.id}?fileName=app.tar.gz`, {
        method: 'POST',
        headers: { ...forged, 'content-type': 'application/octet-stream', ...headers },
        body: nodeAppTarball(),
      });
      expect(upload.status).toBe(401);
      const session = await raw('/bridge/session', { method: 'POST', headers: { ...forged, ...headers } });
      expect(session.status).toBe(401);
      expect(session.headers['set-cookie']).toBeUndefined();
    }
    const detail = JSON.parse(
      (await raw('/bridge/invoke/projects.list', { method: 'POST', headers: forged })).body,
    ).error.detail as string;
    expect(detail).toMatch(/X-Wharf-Token/);
    expect(detail).not.toContain(inspector.token);
  });

  it('gives the page an HttpOnly SameSite=Strict cookie for its token, which then authorizes calls', async () => {
    const host = `127.0.0.1:${inspector.port}`;
    const session = await raw('/bridge/session', {
      method: 'POST',
      headers: { host, origin: inspector.origin, 'x-wharf-token': inspector.token },
    });
    expect(session.status).toBe(204);
    const setCookie = String(session.headers['set-cookie']);
    expect(setCookie).toMatch(/; HttpOnly/);
    expect(setCookie).toMatch(/; SameSite=Strict/);
    expect(setCookie).toMatch(/; Path=\//);
    expect(setCookie).not.toContain(inspector.token);
    const cookie = setCookie.split(';')[0]!;
    const call = await raw('/bridge/invoke/projects.list', {
      method: 'POST',
      headers: { host, origin: inspector.origin, cookie, 'content-type': 'application/json' },
      body: 'null',
    });
    expect(call.status).toBe(200);
    expect(JSON.parse(call.body).ok).toBe(true);
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
  const sawProject = (messages: unknown[], subdomain: string) =>
    messages.some(
      (m) =>
        (m as { event?: string }).event === 'projects' &&
        (m as { payload: { projects: Array<{ subdomain: string }> } }).payload.projects.some(
          (p) => p.subdomain === subdomain,
        ),
    );

  it('streams project changes once authenticated by its first message', async () => {
    const { socket, messages } = await openSocket();
    socket.send(JSON.stringify({ type: 'auth', token: inspector.token }));
    await until(() => messages.some((m) => (m as { type: string }).type === 'ready'), 'ready');
    await invoke(
      'projects.create',
      { name: 'Live', subdomain: 'via-socket', image: 'nginx' },
      { host: `127.0.0.1:${inspector.port}` },
    );
    await until(() => sawProject(messages, 'via-socket'), 'a projects event listing the new project');
    socket.close();
  });

  it('sends nothing to a socket without the token, a forged Origin included, and closes it on a wrong one', async () => {
    const bare = await openSocket();
    const wrongCookie = await openSocket({ cookie: `wharf_inspector_${inspector.port}=guess` });
    const wrongHeader = await openSocket({ 'x-wharf-token': 'guess' });
    await invoke(
      'projects.create',
      { name: 'Unseen', subdomain: 'unseen-event', image: 'nginx' },
      { host: `127.0.0.1:${inspector.port}` },
    );
    // A socket authenticated now sees the projects event; the others must not have seen anything.
    const witness = await openSocket({ 'x-wharf-token': inspector.token });
    await invoke(
      'projects.create',
      { name: 'Seen', subdomain: 'seen-event', image: 'nginx' },
      { host: `127.0.0.1:${inspector.port}` },
    );
    await until(() => sawProject(witness.messages, 'seen-event'), 'the witness to see the event');
    for (const { socket, messages, closed } of [bare, wrongCookie, wrongHeader]) {
      expect(messages).toEqual([]);
      socket.send(JSON.stringify({ type: 'auth', token: 'guess' }));
      expect(await closed).toBe(4401);
      expect(messages).toEqual([]);
    }
    witness.socket.close();
  });

  it('is ready at once, without an auth message, when the upgrade carries the header or the cookie', async () => {
    const host = `127.0.0.1:${inspector.port}`;
    const session = await raw('/bridge/session', {
      method: 'POST',
      headers: { host, 'x-wharf-token': inspector.token },
    });
    const cookie = String(session.headers['set-cookie']).split(';')[0]!;
    for (const [via, headers] of [
      ['header', { 'x-wharf-token': inspector.token }],
      ['cookie', { cookie }],
    ] as const) {
      const { socket, messages } = await openSocket(headers);
      await until(() => messages.some((m) => (m as { type: string }).type === 'ready'), 'ready');
      // The page sends its auth message anyway: it changes nothing.
      socket.send(JSON.stringify({ type: 'auth', token: inspector.token }));
      const subdomain = `pre-auth-${via}`;
      await invoke('projects.create', { name: 'Pre', subdomain, image: 'nginx' }, { host });
      await until(() => sawProject(messages, subdomain), 'the projects event');
      expect(messages.filter((m) => (m as { type: string }).type === 'ready')).toHaveLength(1);
      socket.close();
    }
  });
});

describe('the token file for local scripts', () => {
  it('writes url, port and token to a 0600 file while running and removes it on close', async () => {
    const infoFile = join(home, 'scripts', 'inspector.json');
    const running = await startInspector({ bridge: engine, port: 0, staticDir: null, infoFile });
    try {
      expect(statSync(infoFile).mode & 0o777).toBe(0o600);
      const info = JSON.parse(readFileSync(infoFile, 'utf8')) as Record<string, unknown>;
      expect(info).toMatchObject({ url: running.origin, port: running.port, token: running.token });
      const listed = await fetch(`${running.origin}/api/tunnels`, {
        headers: { 'x-wharf-token': String(info.token) },
      });
      expect(listed.status).toBe(200);
      const refused = await fetch(`${running.origin}/api/tunnels`);
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { detail: string }).detail).toContain(infoFile);
    } finally {
      await running.close();
    }
    expect(existsSync(infoFile)).toBe(false);
  });

  it('leaves the file of another inspector that took it over', async () => {
    const infoFile = join(home, 'inspector.json');
    const first = await startInspector({ bridge: engine, port: 0, staticDir: null, infoFile });
    const second = await startInspector({ bridge: engine, port: 0, staticDir: null, infoFile });
    await first.close();
    expect(JSON.parse(readFileSync(infoFile, 'utf8'))).toMatchObject({ token: second.token });
    await second.close();
    expect(existsSync(infoFile)).toBe(false);
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
