// The inspector's /api (ngrok-shaped) over real HTTP: tunnels, the request list with search and
// paging, details with bodies, replay (edited too) to the local app, clear, HAR and cURL exports, body
// downloads, problem+json errors, and the Host/Origin/token rules that keep other web pages and other
// local processes out.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/core/engine.js';
import { startInspector, type RunningInspector } from '../../src/core/inspector/server.js';
import { FileSecretStore } from '../../src/core/secret-store.js';
import type { Har } from '../../src/core/capture/har.js';
import type { CapturedRequestDetail } from '../../src/shared/api/tunnels.js';
import { expectSpecCapturedRequest } from '../helpers/captured-request.js';
import { startRecordingApp, type RecordingApp } from '../helpers/local-app.js';
import { expectProblem, startPlatform, type ProblemBody, type TestPlatform } from '../helpers/platform.js';
import { until } from '../helpers/poll.js';

let tp: TestPlatform;
let engine: Engine;
let inspector: RunningInspector;
let home: string;
let app: RecordingApp;
let appPort: number;
let host: string;

beforeAll(async () => {
  tp = await startPlatform();
  home = mkdtempSync(join(tmpdir(), 'wharf-inspector-api-'));
  const staticDir = join(home, 'ui');
  mkdirSync(staticDir);
  writeFileSync(join(staticDir, 'index.html'), '<!doctype html><title>Wharf</title>');
  app = await startRecordingApp((req, res) => {
    res.setHeader('content-type', 'text/plain; charset=utf-8');
    res.end(`${req.method} ${req.url} ${req.body}`);
  });
  appPort = app.port;
  engine = new Engine({
    home,
    secrets: new FileSecretStore(join(home, 'secrets.json')),
    localPlatform: async () => ({ url: new URL(tp.api).origin, apiKey: tp.key }),
    version: '1.0.0-test',
  });
  inspector = await startInspector({
    bridge: engine,
    port: 0,
    staticDir,
    infoFile: join(home, 'inspector.json'),
  });
  host = `127.0.0.1:${inspector.port}`;
});

afterAll(async () => {
  await inspector?.close();
  await engine?.close();
  await app?.close();
  await tp?.close();
  rmSync(home, { recursive: true, force: true });
});

interface Answer<T = unknown> {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON (as the caller says it is; undefined when it is not JSON). */
  json: T;
}

type ApiRequest = CapturedRequestDetail & { uri: string; tunnel_name: string | null };
interface ApiList {
  uri: string;
  requests: ApiRequest[];
  total: number;
}
interface ApiTunnel {
  name: string;
  public_url: string | null;
  config: { addr: string };
}

/** A raw request, so that Host and Origin can be anything. */
function raw<T = unknown>(
  port: number,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer<T>> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers: options.headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: json as T });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A call to the inspector as a local script does: our Host, and the token unless told otherwise. */
function api<T = unknown>(
  path: string,
  options: { method?: string; body?: unknown; headers?: Record<string, string>; token?: boolean } = {},
): Promise<Answer<T>> {
  const method = options.method ?? (options.body === undefined ? 'GET' : 'POST');
  const headers: Record<string, string> = { host, ...options.headers };
  if ((options.token ?? true) && headers['x-wharf-token'] === undefined)
    headers['x-wharf-token'] = inspector.token;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  return raw<T>(inspector.port, path, { method, headers, ...(body === undefined ? {} : { body }) });
}

function edge(
  path: string,
  options: { method?: string; body?: string; headers?: Record<string, string> } = {},
) {
  return raw(tp.edgePort, path, {
    ...options,
    headers: { ...options.headers, host: `insp.tunnel.localhost:${tp.edgePort}` },
  });
}

async function waitForRequests(count: number): Promise<ApiRequest[]> {
  let requests: ApiRequest[] = [];
  await until(
    async () => {
      requests = (await api<ApiList>('/api/requests/http?tunnel_name=insp&limit=1000')).json.requests;
      return requests.length >= count;
    },
    `${count} requests listed`,
    5_000,
    20,
  );
  return requests;
}

describe('the inspector API', () => {
  it('starts a tunnel and lists it in ngrok’s shape', async () => {
    const started = await api('/api/tunnels', { body: { addr: String(appPort), subdomain: 'insp' } });
    expect(started.status, started.text).toBe(201);
    const list = await api('/api/tunnels');
    expect(list.status).toBe(200);
    expect(list.json).toEqual({
      uri: '/api/tunnels',
      tunnels: [
        {
          name: 'insp',
          id: expect.stringMatching(/^tun_/),
          uri: '/api/tunnels/insp',
          public_url: `http://insp.tunnel.localhost:${tp.edgePort}`,
          proto: 'http',
          config: { addr: `http://localhost:${appPort}`, inspect: true },
          host_header: 'preserve',
          state: 'online',
          detail: null,
          started_at: expect.any(String),
        },
      ],
    });
    expect((await api<ApiTunnel>('/api/tunnels/insp')).json.name).toBe('insp');
    expectProblem(await api('/api/tunnels/nope'), 404, 'not_found');
    expectProblem(await api('/api/tunnels', { body: { addr: 'example.com:80' } }), 422, 'validation_failed');
  });

  it('lists requests newest first, with search, filters and paging', async () => {
    for (let i = 0; i < 5; i++) await edge(`/page/${i}`);
    await edge('/search', {
      method: 'POST',
      body: '{"fruit":"rambutan"}',
      headers: { 'content-type': 'application/json' },
    });
    const all = await waitForRequests(6);
    expect(all.map((r) => r.path)).toEqual([
      '/search',
      '/page/4',
      '/page/3',
      '/page/2',
      '/page/1',
      '/page/0',
    ]);
    expect(all[0]).toMatchObject({
      method: 'POST',
      status_code: 200,
      tunnel_name: 'insp',
      uri: `/api/requests/http/${all[0]!.id}`,
    });
    // The same names and types as the platform's (SPEC.md §2.4), ngrok's uri and tunnel_name beside them.
    for (const request of all) expectSpecCapturedRequest(request);
    expect(all[0]!.request_headers['content-type']).toBe('application/json');
    expect(all[0]!.request_header_list).toContainEqual({ name: 'content-type', value: 'application/json' });
    const found = await api<ApiList>('/api/requests/http?q=rambutan');
    expect(found.json.requests.map((r) => r.path)).toEqual(['/search']);
    expect((await api('/api/requests/http?q=%22rambutan%20OR')).status).toBe(200);
    const page = await api<ApiList>('/api/requests/http?limit=2');
    expect(page.json.requests).toHaveLength(2);
    expect(page.json.total).toBe(6);
    const next = await api<ApiList>(`/api/requests/http?limit=2&before=${page.json.requests[1]!.id}`);
    expect(next.json.requests.map((r) => r.path)).toEqual(['/page/3', '/page/2']);
    expect((await api<ApiList>('/api/requests/http?method=post')).json.total).toBe(1);
    expect((await api<ApiList>('/api/requests/http?tunnel_name=someone-else')).json.total).toBe(0);
    expectProblem(await api('/api/requests/http?status=9xx'), 422, 'validation_failed');
    expectProblem(await api('/api/requests/http?limit=many'), 422, 'validation_failed');
  });

  it('gives one request with its bodies, its cURL, its HAR and its body downloads', async () => {
    const latest = (await waitForRequests(6))[0]!;
    const detail = await api<ApiRequest>(`/api/requests/http/${latest.id}`);
    expect(detail.status).toBe(200);
    expect(Buffer.from(detail.json.request_body!, 'base64').toString()).toBe('{"fruit":"rambutan"}');
    expect(Buffer.from(detail.json.response_body!, 'base64').toString()).toBe(
      'POST /search {"fruit":"rambutan"}',
    );
    expect(detail.json).toMatchObject({ request_body_truncated: false, response_body_truncated: false });
    expectProblem(await api('/api/requests/http/req_nope'), 404, 'not_found');

    const curl = await api(`/api/requests/http/${latest.id}/curl`);
    expect(curl.headers['content-type']).toMatch(/^text\/plain/);
    expect(curl.text).toContain(`curl http://insp.tunnel.localhost:${tp.edgePort}/search`);
    expect(curl.text).toContain(`--data-binary '{"fruit":"rambutan"}'`);

    const one = await api<Har>(`/api/requests/http/${latest.id}.har`);
    expect(one.status).toBe(200);
    expect(one.headers['content-disposition']).toBe(`attachment; filename="${latest.id}.har"`);
    expect(one.json.log).toMatchObject({ version: '1.2', creator: { name: 'Wharf', version: '1.0.0-test' } });
    expect(one.json.log.entries[0]!.request.postData!.text).toBe('{"fruit":"rambutan"}');

    const all = await waitForRequests(6);
    const some = await api<Har>(`/api/requests/http.har?ids=${all[1]!.id},${all[2]!.id}`);
    expect(some.json.log.entries.map((e) => new URL(e.request.url).pathname)).toEqual(['/page/3', '/page/4']);
    const filtered = await api<Har>('/api/requests/http.har?q=page');
    expect(filtered.json.log.entries).toHaveLength(5);
    expectProblem(await api(`/api/requests/http.har?ids=${all[1]!.id},req_gone`), 404, 'not_found');

    const download = await api(`/api/requests/http/${latest.id}/response-body`);
    expect(download.text).toBe('POST /search {"fruit":"rambutan"}');
    expect(download.headers['content-type']).toBe('application/octet-stream');
    expect(download.headers['content-disposition']).toMatch(/^attachment/);
    expect(download.headers['content-security-policy']).toMatch(/sandbox/);
  });

  it('replays through POST /api/requests/http, edited too, straight to the local app', async () => {
    const latest = (await waitForRequests(6))[0]!;
    app.received.length = 0;
    const replay = await api<ApiRequest>('/api/requests/http', { body: { id: latest.id } });
    expect(replay.status, replay.text).toBe(200);
    expect(replay.json).toMatchObject({
      replay_of: latest.id,
      status_code: 200,
      method: 'POST',
      path: '/search',
    });
    expect(replay.json.uri).toBe(`/api/requests/http/${replay.json.id}`);
    expect(app.received).toMatchObject([{ method: 'POST', url: '/search', body: '{"fruit":"rambutan"}' }]);

    const edited = await api<ApiRequest>('/api/requests/http', {
      body: {
        id: latest.id,
        method: 'PATCH',
        path: '/search?edited=1',
        headers: [{ name: 'x-edited', value: 'yes' }],
        body: Buffer.from('changed').toString('base64'),
      },
    });
    expect(edited.status, edited.text).toBe(200);
    expect(app.received[1]).toMatchObject({ method: 'PATCH', url: '/search?edited=1', body: 'changed' });
    expect(app.received[1]!.headers['x-edited']).toBe('yes');
    expect(Buffer.from(edited.json.response_body!, 'base64').toString()).toBe(
      'PATCH /search?edited=1 changed',
    );
    const listed = await api<ApiList>(`/api/requests/http?q=edited`);
    expect(listed.json.requests[0]).toMatchObject({ id: edited.json.id, replay_of: latest.id });

    expectProblem(await api('/api/requests/http', { body: { id: 'req_nope' } }), 404, 'not_found');
    expectProblem(await api('/api/requests/http', { body: {} }), 422, 'validation_failed');
    expectProblem(
      await api('/api/requests/http', { body: { id: latest.id, method: 'BAD METHOD' } }),
      422,
      'validation_failed',
    );
    expectProblem(await api('/api/requests/http', { body: '{"id":' }), 400, 'invalid_json');
  });

  it('refuses foreign Hosts and Origins, even with the token', async () => {
    // DNS rebinding: a foreign Host is refused even for reads.
    for (const bad of ['evil.example', `evil.example:${inspector.port}`, '127.0.0.1:1']) {
      expectProblem(
        await raw(inspector.port, '/api/requests/http', { headers: { host: bad } }),
        403,
        'forbidden',
      );
    }
    const latest = (await waitForRequests(6))[0]!;
    app.received.length = 0;
    // A page elsewhere: refused, token or not.
    const foreign = await api<ProblemBody>('/api/requests/http', {
      body: { id: latest.id },
      headers: { origin: 'https://evil.example' },
    });
    expectProblem(foreign, 403, 'forbidden');
    expect(foreign.json.detail).toMatch(/evil\.example/);
    expectProblem(
      await api('/api/requests/http', { method: 'DELETE', headers: { origin: 'http://localhost:1' } }),
      403,
      'forbidden',
    );
    // Reads too: a page of another local port shares our cookies (same site), so its Origin is refused.
    for (const origin of ['https://evil.example', 'http://127.0.0.1:1', 'null']) {
      expectProblem(await api('/api/requests/http', { headers: { origin } }), 403, 'forbidden');
    }
    expect(app.received).toEqual([]);
  });

  it('answers 401 unauthorized to every route of a local process without the token, and says where it is', async () => {
    const latest = (await waitForRequests(6))[0]!;
    const reads = [
      '/api/tunnels',
      '/api/tunnels/insp',
      '/api/requests/http',
      '/api/requests/http?q=rambutan',
      '/api/requests/http.har',
      `/api/requests/http.har?ids=${latest.id}`,
      `/api/requests/http/${latest.id}`,
      `/api/requests/http/${latest.id}.har`,
      `/api/requests/http/${latest.id}/curl`,
      `/api/requests/http/${latest.id}/request-body`,
      `/api/requests/http/${latest.id}/response-body`,
      '/api/nothing-here',
      '/api/',
    ];
    for (const path of reads) {
      const variants: Array<Record<string, string>> = [
        {},
        { 'x-wharf-token': 'guessed' },
        { 'x-wharf-token': '' },
      ];
      for (const headers of variants) {
        const refused = await api<ProblemBody>(path, { token: false, headers });
        expectProblem(refused, 401, 'unauthorized');
        expect(refused.text).not.toContain('rambutan');
        expect(refused.text).not.toContain(inspector.token);
      }
      expect((await api(path, { token: false, method: 'HEAD' })).status).toBe(401);
    }
    const refused = await api<ProblemBody>('/api/requests/http', { token: false });
    // Never something another page could run as a script or show in a frame.
    expect(refused.headers['x-content-type-options']).toBe('nosniff');
    expect(refused.headers['x-frame-options']).toBe('DENY');
    expect((await api('/api/requests/http')).headers['x-content-type-options']).toBe('nosniff');
    const detail = refused.json.detail;
    expect(detail).toMatch(/X-Wharf-Token/);
    expect(detail).toMatch(/#token=/);
    expect(detail).toContain(join(home, 'inspector.json'));
    // The same paths spelt otherwise reach the same guard.
    for (const path of ['/%61pi/requests/http', '/api/requests/%68ttp', '/api//requests/http']) {
      expectProblem(await api(path, { token: false }), 401, 'unauthorized');
      expectProblem(await api(path, { headers: { origin: 'http://127.0.0.1:1' } }), 403, 'forbidden');
    }
  });

  it('cannot be driven by a forged Origin naming the inspector: no replay, no clearing, no tunnel', async () => {
    const before = await waitForRequests(6);
    app.received.length = 0;
    const forged = { origin: inspector.origin };
    expectProblem(
      await api('/api/requests/http', { body: { id: before[0]!.id }, token: false, headers: forged }),
      401,
      'unauthorized',
    );
    expectProblem(
      await api('/api/requests/http', { method: 'DELETE', token: false, headers: forged }),
      401,
      'unauthorized',
    );
    expectProblem(
      await api('/api/tunnels', { body: { addr: String(appPort) }, token: false, headers: forged }),
      401,
      'unauthorized',
    );
    expectProblem(
      await api('/api/tunnels/insp', { method: 'DELETE', token: false, headers: forged }),
      401,
      'unauthorized',
    );
    expectProblem(
      await api('/api/requests/http', { body: { id: before[0]!.id }, headers: { 'x-wharf-token': 'wrong' } }),
      401,
      'unauthorized',
    );
    expect(app.received).toEqual([]);
    expect((await waitForRequests(before.length)).map((r) => r.id)).toEqual(before.map((r) => r.id));
    expect((await api<{ tunnels: ApiTunnel[] }>('/api/tunnels')).json.tunnels.map((t) => t.name)).toEqual([
      'insp',
    ]);
  });

  it('accepts the page’s HttpOnly SameSite=Strict cookie, set only for the token, for plain links', async () => {
    const latest = (await waitForRequests(6)).find((r) => r.path === '/search' && r.replay_of === null)!;
    // Without the header, no cookie: a forged Origin or a guessed token gets nothing.
    const attempts: Array<Record<string, string>> = [
      { origin: inspector.origin },
      { 'x-wharf-token': 'guessed' },
    ];
    for (const headers of attempts) {
      const refused = await raw(inspector.port, '/bridge/session', {
        method: 'POST',
        headers: { host, ...headers },
      });
      expect(refused.status).toBe(401);
      expect(refused.headers['set-cookie']).toBeUndefined();
    }
    const session = await raw(inspector.port, '/bridge/session', {
      method: 'POST',
      headers: { host, 'x-wharf-token': inspector.token, origin: inspector.origin },
    });
    expect(session.status).toBe(204);
    const setCookie = session.headers['set-cookie']![0]!;
    const attributes = setCookie.split(';').map((part) => part.trim().toLowerCase());
    expect(attributes).toEqual(expect.arrayContaining(['httponly', 'samesite=strict', 'path=/']));
    const cookie = setCookie.split(';')[0]!;
    expect(cookie).toMatch(new RegExp(`^wharf_inspector_${inspector.port}=`));
    expect(cookie).not.toContain(inspector.token);

    const withCookie = { cookie: `other=1; ${cookie}` };
    const download = await api(`/api/requests/http/${latest.id}/response-body`, {
      token: false,
      headers: withCookie,
    });
    expect(download.status).toBe(200);
    expect(download.text).toBe('POST /search {"fruit":"rambutan"}');
    expect(
      (await api(`/api/requests/http/${latest.id}.har`, { token: false, headers: withCookie })).status,
    ).toBe(200);
    // A cookie of the wrong value, or of another port's inspector, is no cookie.
    const value = cookie.split('=')[1]!;
    for (const wrong of [
      // The last character changed (to one it is not: a value ending in x would stay right).
      `wharf_inspector_${inspector.port}=${value.slice(0, -1)}${value.endsWith('x') ? 'y' : 'x'}`,
      `wharf_inspector_1=${value}`,
      `wharf_inspector_${inspector.port}=${inspector.token}`,
    ]) {
      expectProblem(
        await api('/api/requests/http', { token: false, headers: { cookie: wrong } }),
        401,
        'unauthorized',
      );
    }
    // The cookie cannot mint itself a new one.
    const renewed = await raw(inspector.port, '/bridge/session', {
      method: 'POST',
      headers: { host, cookie },
    });
    expect(renewed.status).toBe(401);
  });

  it('clears the history and stops the tunnel', async () => {
    const cleared = await api('/api/requests/http', { method: 'DELETE' });
    expect(cleared.status).toBe(204);
    expect((await api('/api/requests/http')).json).toMatchObject({ requests: [], total: 0 });
    expectProblem(await api('/api/requests/http.har'), 404, 'not_found');
    const stopped = await api('/api/tunnels/insp', { method: 'DELETE' });
    expect(stopped.status).toBe(204);
    expect((await api<{ tunnels: ApiTunnel[] }>('/api/tunnels')).json.tunnels).toEqual([]);
  });
});
