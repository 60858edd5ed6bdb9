// API.md §1, errors: bodies that are not JSON, bodies over 1 MiB and unknown routes all answer with
// problem+json and the code of the table; and the public OpenAPI document describes the whole contract.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectProblem, startPlatform, type TestPlatform } from '../helpers/platform.js';

let p: TestPlatform;
let origin: string;

beforeAll(async () => {
  p = await startPlatform();
  origin = new URL(p.api).origin;
});

afterAll(async () => {
  await p?.close();
});

/** Two JSON endpoints of different scopes, with a body each would accept. */
const JSON_ENDPOINTS = [
  { path: '/keys', valid: { scopes: ['deploy'], name: 'valid' } },
  { path: '/projects', valid: { name: 'valid', subdomain: 'valid-json', image: 'nginx:1.27' } },
];

describe('bodies that are not JSON', () => {
  it.each(JSON_ENDPOINTS)('rejects malformed JSON on POST $path with 400 invalid_json', async ({ path }) => {
    for (const text of ['{"scopes": [', '{scopes: ["deploy"]}', "{'a': 1}", 'nope', '{"a":1}}']) {
      expectProblem(
        await call(`${p.api}${path}`, {
          method: 'POST',
          key: p.key,
          body: text,
          headers: { 'content-type': 'application/json' },
        }),
        400,
        'invalid_json',
      );
    }
  });

  it.each(JSON_ENDPOINTS)(
    'rejects a JSON body sent as text/plain on POST $path with 400 invalid_json',
    async ({ path, valid }) => {
      expectProblem(
        await call(`${p.api}${path}`, {
          method: 'POST',
          key: p.key,
          body: JSON.stringify(valid),
          headers: { 'content-type': 'text/plain' },
        }),
        400,
        'invalid_json',
      );
    },
  );

  it.each(JSON_ENDPOINTS)(
    'rejects a form-urlencoded body on POST $path with 400 invalid_json',
    async ({ path }) => {
      expectProblem(
        await call(`${p.api}${path}`, {
          method: 'POST',
          key: p.key,
          body: 'scopes=deploy&name=form',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
        400,
        'invalid_json',
      );
    },
  );

  it('rejects a JSON body sent with another content type (text/html, multipart) with 400 invalid_json', async () => {
    for (const contentType of ['text/html', 'application/xml']) {
      expectProblem(
        await call(`${p.api}/keys`, {
          method: 'POST',
          key: p.key,
          body: JSON.stringify({ scopes: ['deploy'] }),
          headers: { 'content-type': contentType },
        }),
        400,
        'invalid_json',
      );
    }
  });

  it.each(JSON_ENDPOINTS)('rejects POST $path with no body with 400 invalid_json', async ({ path }) => {
    expectProblem(await call(`${p.api}${path}`, { method: 'POST', key: p.key }), 400, 'invalid_json');
  });

  it.each(JSON_ENDPOINTS)(
    'rejects POST $path with an empty application/json body with 400 invalid_json',
    async ({ path }) => {
      expectProblem(
        await call(`${p.api}${path}`, {
          method: 'POST',
          key: p.key,
          body: '',
          headers: { 'content-type': 'application/json' },
        }),
        400,
        'invalid_json',
      );
    },
  );

  it('accepts application/json with a charset parameter', async () => {
    const created = await call(`${p.api}/keys`, {
      key: p.key,
      body: { scopes: ['deploy'], name: 'charset' },
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(created.status).toBe(201);
  });

  it('refuses a NUL character (U+0000) in a body, a path or a query with 400, and creates nothing', async () => {
    const before = await call<unknown[]>(`${p.api}/projects`, { key: p.key });
    for (const body of [
      { name: 'Nul\u0000name', subdomain: 'nul-name', image: 'nginx' },
      { name: 'Nul', subdomain: 'nul-env', image: 'nginx', env_vars: { KEY: 'v\u0000' } },
      { name: 'Nul', subdomain: 'nul-key', image: 'nginx', ['x\u0000']: 1 },
    ]) {
      const refused = await call(`${p.api}/projects`, { key: p.key, body });
      expectProblem(refused, 400, 'bad_request');
      expect((refused.body as { detail: string }).detail).toMatch(/NUL character/);
    }
    expectProblem(await call(`${p.api}/projects/prj_%00abc`, { key: p.key }), 400, 'bad_request');
    expectProblem(await call(`${p.api}/projects?q=%00`, { key: p.key }), 400, 'bad_request');
    const after = await call<unknown[]>(`${p.api}/projects`, { key: p.key });
    expect(after.body).toHaveLength(before.body.length);
  });

  it('judges a body of half a million array elements on its content (422), not with a 500', async () => {
    const body = `[${new Array(500_000).fill('0').join(',')}]`;
    const answer = await call(`${p.api}/projects`, {
      key: p.key,
      body,
      headers: { 'content-type': 'application/json' },
    });
    expectProblem(answer, 422, 'validation_failed');
  });

  it('creates nothing when the body is rejected', async () => {
    const before = await call<unknown[]>(`${p.api}/projects`, { key: p.key });
    await call(`${p.api}/projects`, {
      method: 'POST',
      key: p.key,
      body: JSON.stringify(JSON_ENDPOINTS[1]!.valid),
      headers: { 'content-type': 'text/plain' },
    });
    const after = await call<unknown[]>(`${p.api}/projects`, { key: p.key });
    expect(after.body).toHaveLength(before.body.length);
  });
});

describe('bodies over the limit', () => {
  it('rejects a JSON body over 1 MiB (POST /projects with a 1.1 MiB name) with 413 payload_too_large', async () => {
    const name = 'a'.repeat(Math.ceil(1.1 * 1024 * 1024));
    expectProblem(
      await call(`${p.api}/projects`, {
        key: p.key,
        body: { name, subdomain: 'too-large', image: 'nginx:1.27' },
      }),
      413,
      'payload_too_large',
    );
  });

  it('rejects a JSON body over 1 MiB on POST /keys with 413 payload_too_large', async () => {
    expectProblem(
      await call(`${p.api}/keys`, {
        key: p.key,
        body: { scopes: ['deploy'], name: 'x'.repeat(1024 * 1024 + 1) },
      }),
      413,
      'payload_too_large',
    );
  });

  it('accepts a body of exactly 1 MiB and judges it on its content (422, not 413)', async () => {
    const prefix = '{"scopes":["deploy"],"name":"';
    const suffix = '"}';
    const body = prefix + 'n'.repeat(1024 * 1024 - prefix.length - suffix.length) + suffix;
    expect(Buffer.byteLength(body)).toBe(1024 * 1024);
    const problem = expectProblem(
      await call(`${p.api}/keys`, {
        method: 'POST',
        key: p.key,
        body,
        headers: { 'content-type': 'application/json' },
      }),
      422,
      'validation_failed',
    );
    expect(problem.errors?.map((e) => e.path)).toEqual(['name']);
  });

  it('rejects a body of 1 MiB and one byte with 413 payload_too_large', async () => {
    const prefix = '{"scopes":["deploy"],"name":"';
    const suffix = '"}';
    const body = prefix + 'n'.repeat(1024 * 1024 + 1 - prefix.length - suffix.length) + suffix;
    expectProblem(
      await call(`${p.api}/keys`, {
        method: 'POST',
        key: p.key,
        body,
        headers: { 'content-type': 'application/json' },
      }),
      413,
      'payload_too_large',
    );
  });

  it('rejects a chunked JSON body (no Content-Length) over 1 MiB with 413 payload_too_large', async () => {
    const big = Buffer.from(
      JSON.stringify({ name: 'a'.repeat(1.2 * 1024 * 1024), subdomain: 'chunked', image: 'nginx:1.27' }),
    );
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < big.length; at += 64 * 1024)
          controller.enqueue(big.subarray(at, at + 64 * 1024));
        controller.close();
      },
    });
    const response = await fetch(`${p.api}/projects`, {
      method: 'POST',
      headers: { 'x-api-key': p.key, 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit & { duplex: 'half' });
    expectProblem(
      { status: response.status, headers: response.headers, body: await response.json() },
      413,
      'payload_too_large',
    );
  });

  it('judges a body just under 1 MiB on its content (422, not 413)', async () => {
    const name = 'a'.repeat(1024 * 1024 - 200);
    expectProblem(
      await call(`${p.api}/projects`, {
        key: p.key,
        body: { name, subdomain: 'almost-large', image: 'nginx:1.27' },
      }),
      422,
      'validation_failed',
    );
  });
});

describe('unknown routes', () => {
  it('answers an unknown /api/v1 route with 404 problem+json', async () => {
    expectProblem(await call(`${p.api}/no-such-thing`, { key: p.key }), 404, 'not_found');
  });

  it('answers an unknown method on a known path with a problem+json error', async () => {
    const result = await call(`${p.api}/account`, { method: 'PATCH', key: p.key, body: {} });
    expect([404, 405]).toContain(result.status);
    expectProblem(result, result.status, result.status === 404 ? 'not_found' : 'method_not_allowed');
  });

  it('answers a path outside /api/v1 with 404 problem+json', async () => {
    expectProblem(await call(`${origin}/no-such-thing`), 404, 'not_found');
    expectProblem(await call(`${origin}/api/v2/projects`, { key: p.key }), 404, 'not_found');
  });

  it('answers a malformed percent-encoded URL with a problem+json 400 or 404, never a bare Fastify error', async () => {
    for (const path of ['/projects/%E0%A4%A', '/keys/%E0%A4%A', '/%ZZ']) {
      const result = await call(`${p.api}${path}`, {
        method: path.startsWith('/keys') ? 'DELETE' : 'GET',
        key: p.key,
      });
      expect([400, 404], `${path}: ${JSON.stringify(result.body)}`).toContain(result.status);
      expectProblem(result, result.status, result.status === 400 ? 'bad_request' : 'not_found');
    }
  });

  it('answers an unknown project id with 404 problem+json', async () => {
    expectProblem(await call(`${p.api}/projects/prj_doesnotexist`, { key: p.key }), 404, 'not_found');
  });
});

describe('GET /api/v1/openapi.json', () => {
  let doc: {
    openapi: string;
    paths: Record<string, Record<string, unknown>>;
    components: { schemas: Record<string, unknown> };
  };

  beforeAll(async () => {
    const result = await call<typeof doc>(`${p.api}/openapi.json`);
    expect(result.status).toBe(200);
    expect(result.headers.get('content-type')).toMatch(/^application\/json/);
    doc = result.body;
  });

  it('is public: it needs no key', () => {
    expect(doc).toBeTypeOf('object');
  });

  it('is an OpenAPI 3.1.x document', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
  });

  it.each([
    ['/api/v1/projects', ['get', 'post']],
    ['/api/v1/projects/{id}', ['get', 'put', 'delete']],
    ['/api/v1/projects/{id}/upload', ['post']],
    ['/api/v1/keys', ['get', 'post']],
    ['/api/v1/keys/{id}', ['delete']],
    ['/api/v1/account', ['get']],
    ['/api/v1/auth/token', ['post']],
  ])('lists the path %s with its methods', (path, methods) => {
    expect(Object.keys(doc.paths)).toContain(path);
    for (const method of methods) expect(doc.paths[path]).toHaveProperty(method);
  });

  it('does not list itself', () => {
    expect(Object.keys(doc.paths)).not.toContain('/api/v1/openapi.json');
  });

  it.each(['Domain', 'EmailVerification', 'CapturedRequest', 'AgentStep', 'Project', 'Account', 'Problem'])(
    'has a components.schemas entry for %s',
    (name) => {
      const names = Object.keys(doc.components?.schemas ?? {});
      expect(
        names.some((n) => n.includes(name)),
        names.join(', '),
      ).toBe(true);
    },
  );
});
