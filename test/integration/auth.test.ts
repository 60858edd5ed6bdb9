// API.md §2, authentication: the X-API-Key and Bearer JWT matrix on a few representative endpoints,
// scopes, and the tokens of POST /auth/token (lifetime, tampering, revocation of the minting key).
// Every rejection must be problem+json (§1).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenResponse, type Scope } from '../../src/shared/api/account.js';
import { call, expectProblem, startPlatform, type TestPlatform } from '../helpers/platform.js';

interface Endpoint {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
}

/** One endpoint of each scope class: `deploy` (projects), `any` (account), `full` (keys). */
const ENDPOINTS: Endpoint[] = [
  { method: 'GET', path: '/projects' },
  { method: 'GET', path: '/account' },
  { method: 'POST', path: '/keys', body: { scopes: ['deploy'], name: 'matrix' } },
];

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const unknownKey = () =>
  'wk_' + Array.from({ length: 32 }, (_, i) => BASE62[(i * 7 + 3) % BASE62.length]).join('');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** Changes one character in the middle of a base64url segment to another base64url character. */
function flipCharacter(segment: string): string {
  const at = Math.floor(segment.length / 2);
  const replacement = segment[at] === 'A' ? 'B' : 'A';
  return segment.slice(0, at) + replacement + segment.slice(at + 1);
}

function readSecret(dataDir: string): Uint8Array {
  return new Uint8Array(Buffer.from(readFileSync(join(dataDir, 'secret'), 'utf8').trim(), 'base64'));
}

let p: TestPlatform;

async function createKey(scopes: Scope[], name = 'test'): Promise<{ id: string; key: string }> {
  const created = await call<{ id: string; key: string }>(`${p.api}/keys`, {
    key: p.key,
    body: { scopes, name },
  });
  expect(created.status).toBe(201);
  return created.body;
}

async function revoke(id: string): Promise<void> {
  const deleted = await call(`${p.api}/keys/${id}`, { method: 'DELETE', key: p.key });
  expect(deleted.status).toBe(200);
}

async function mintToken(
  credential: { key: string } | { headers: Record<string, string> },
): Promise<{ token: string; expires_at: string }> {
  const minted = await call<{ token: string; expires_at: string }>(`${p.api}/auth/token`, {
    method: 'POST',
    ...('key' in credential ? { key: credential.key } : { headers: credential.headers }),
  });
  expect(minted.status, JSON.stringify(minted.body)).toBe(200);
  return minted.body;
}

function request(endpoint: Endpoint, auth: { key?: string; headers?: Record<string, string> }) {
  return call(`${p.api}${endpoint.path}`, {
    method: endpoint.method,
    body: endpoint.body,
    ...auth,
  });
}

beforeAll(async () => {
  p = await startPlatform();
});

afterAll(async () => {
  await p?.close();
});

describe('API keys (X-API-Key)', () => {
  it.each(ENDPOINTS)('rejects $method $path without any credential with 401', async (endpoint) => {
    const problem = expectProblem(await request(endpoint, {}), 401, 'unauthorized');
    expect(problem.type).toBe('about:blank');
  });

  it.each(ENDPOINTS)('rejects $method $path with an unknown well-formed key with 401', async (endpoint) => {
    expectProblem(await request(endpoint, { key: unknownKey() }), 401, 'unauthorized');
  });

  it.each(ENDPOINTS)('rejects $method $path with malformed keys with 401', async (endpoint) => {
    const malformed = [
      'not-a-key',
      'wk_short',
      `wk_${'a'.repeat(33)}`,
      `wk_${'a'.repeat(31)}!`,
      `WK_${'a'.repeat(32)}`,
      `${p.key}x`,
    ];
    for (const key of malformed) {
      expectProblem(await request(endpoint, { key }), 401, 'unauthorized');
    }
  });

  describe('a revoked key', () => {
    let revoked: { id: string; key: string };

    beforeAll(async () => {
      revoked = await createKey(['full'], 'to revoke');
      expect((await call(`${p.api}/account`, { key: revoked.key })).status).toBe(200);
      await revoke(revoked.id);
    });

    it.each(ENDPOINTS)(
      'is rejected on $method $path with 401 and a detail saying it was revoked',
      async (endpoint) => {
        const problem = expectProblem(await request(endpoint, { key: revoked.key }), 401, 'unauthorized');
        expect(problem.detail).toMatch(/revoked/i);
      },
    );

    it('is rejected with 401 when sent as Authorization: Bearer too', async () => {
      const problem = expectProblem(
        await call(`${p.api}/account`, { headers: bearer(revoked.key) }),
        401,
        'unauthorized',
      );
      expect(problem.detail).toMatch(/revoked/i);
    });
  });

  describe('scopes', () => {
    let emailKey: string;
    let deployKey: string;

    beforeAll(async () => {
      emailKey = (await createKey(['email'], 'email only')).key;
      deployKey = (await createKey(['deploy'], 'deploy only')).key;
    });

    it('rejects an email-scoped key on GET /projects with 403 forbidden', async () => {
      expectProblem(await call(`${p.api}/projects`, { key: emailKey }), 403, 'forbidden');
    });

    it('rejects an email-scoped key on POST /projects with 403 forbidden', async () => {
      expectProblem(
        await call(`${p.api}/projects`, {
          key: emailKey,
          body: { name: 'scoped', subdomain: 'scoped-email', image: 'nginx:1.27' },
        }),
        403,
        'forbidden',
      );
    });

    it('rejects a deploy-scoped key on POST /keys with 403 forbidden and creates nothing', async () => {
      const before = await call<unknown[]>(`${p.api}/keys`, { key: p.key });
      expectProblem(
        await call(`${p.api}/keys`, { key: deployKey, body: { scopes: ['full'], name: 'escalate' } }),
        403,
        'forbidden',
      );
      const after = await call<unknown[]>(`${p.api}/keys`, { key: p.key });
      expect(after.body).toHaveLength(before.body.length);
    });

    it('rejects a deploy-scoped key on GET /keys with 403 forbidden', async () => {
      expectProblem(await call(`${p.api}/keys`, { key: deployKey }), 403, 'forbidden');
    });

    it('rejects a deploy-scoped key on DELETE /keys/:id with 403 forbidden and leaves the key alone', async () => {
      const victim = await createKey(['email'], 'victim');
      expectProblem(
        await call(`${p.api}/keys/${victim.id}`, { method: 'DELETE', key: deployKey }),
        403,
        'forbidden',
      );
      expect((await call(`${p.api}/account`, { key: victim.key })).status).toBe(200);
    });

    it('rejects an email-scoped key on the key endpoints with 403 forbidden', async () => {
      expectProblem(await call(`${p.api}/keys`, { key: emailKey }), 403, 'forbidden');
      expectProblem(
        await call(`${p.api}/keys`, { key: emailKey, body: { scopes: ['email'] } }),
        403,
        'forbidden',
      );
    });

    it('lets a deploy-scoped key list and create projects', async () => {
      expect((await call(`${p.api}/projects`, { key: deployKey })).status).toBe(200);
      const created = await call(`${p.api}/projects`, {
        key: deployKey,
        body: { name: 'deploy scoped', subdomain: 'scoped-deploy', image: 'nginx:1.27' },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    });

    it('lets a full key reach projects, the account, keys and tokens', async () => {
      const full = await createKey(['full'], 'full');
      expect((await call(`${p.api}/projects`, { key: full.key })).status).toBe(200);
      expect((await call(`${p.api}/account`, { key: full.key })).status).toBe(200);
      const created = await call<{ id: string }>(`${p.api}/keys`, {
        key: full.key,
        body: { scopes: ['deploy'], name: 'made by full' },
      });
      expect(created.status).toBe(201);
      expect((await call(`${p.api}/keys`, { key: full.key })).status).toBe(200);
      const deleted = await call(`${p.api}/keys/${created.body.id}`, { method: 'DELETE', key: full.key });
      expect(deleted.status).toBe(200);
      expect((await call(`${p.api}/auth/token`, { method: 'POST', key: full.key })).status).toBe(200);
    });

    it('lets a full key of another account reach every endpoint for its own account', async () => {
      const other = await p.newAccount({ scopes: ['full'] });
      expect((await call(`${p.api}/projects`, { key: other.key })).status).toBe(200);
      const account = await call<{ id: string }>(`${p.api}/account`, { key: other.key });
      expect(account.status).toBe(200);
      expect(account.body.id).toBe(other.accountId);
      expect((await call(`${p.api}/keys`, { key: other.key })).status).toBe(200);
    });
  });
});

describe('JWTs (Authorization: Bearer)', () => {
  it('mints { token, expires_at } from an API key, expiring about one hour ahead', async () => {
    const before = Date.now();
    const minted = await call(`${p.api}/auth/token`, { method: 'POST', key: p.key });
    expect(minted.status).toBe(200);
    expect(minted.headers.get('content-type')).toMatch(/^application\/json/);
    const body = TokenResponse.parse(minted.body);
    expect(Object.keys(minted.body as object).sort()).toEqual(['expires_at', 'token']);
    const expiresAt = Date.parse(body.expires_at);
    expect(Number.isNaN(expiresAt)).toBe(false);
    expect(body.expires_at).toMatch(/Z$/);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3600_000 - 60_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3600_000 + 60_000);
  });

  it('mints an HS256 token whose sub is the account id and whose exp is expires_at', async () => {
    const { token, expires_at } = await mintToken({ key: p.key });
    expect(decodeProtectedHeader(token).alg).toBe('HS256');
    const claims = decodeJwt(token);
    expect(claims.sub).toBe(p.accountId);
    expect(claims.exp).toBe(Math.floor(Date.parse(expires_at) / 1000));
  });

  it.each(ENDPOINTS)('accepts a token minted by a full key on $method $path', async (endpoint) => {
    const { token } = await mintToken({ key: p.key });
    const result = await request(endpoint, { headers: bearer(token) });
    expect(result.status, JSON.stringify(result.body)).toBe(endpoint.method === 'POST' ? 201 : 200);
  });

  it('acts for the account of the key that minted it', async () => {
    const other = await p.newAccount({ scopes: ['full'] });
    const { token } = await mintToken({ key: other.key });
    const account = await call<{ id: string }>(`${p.api}/account`, { headers: bearer(token) });
    expect(account.status).toBe(200);
    expect(account.body.id).toBe(other.accountId);
  });

  it('carries the scopes of the key that minted it: a deploy token reaches projects, not keys', async () => {
    const deploy = await createKey(['deploy'], 'deploy for jwt');
    const { token } = await mintToken({ key: deploy.key });
    expect((await call(`${p.api}/projects`, { headers: bearer(token) })).status).toBe(200);
    expectProblem(await call(`${p.api}/keys`, { headers: bearer(token) }), 403, 'forbidden');
    expectProblem(
      await call(`${p.api}/keys`, { headers: bearer(token), body: { scopes: ['full'] } }),
      403,
      'forbidden',
    );
  });

  it('carries the scopes of the key that minted it: an email token does not reach projects', async () => {
    const email = await createKey(['email'], 'email for jwt');
    const { token } = await mintToken({ key: email.key });
    expectProblem(await call(`${p.api}/projects`, { headers: bearer(token) }), 403, 'forbidden');
  });

  it('accepts an API key sent as Authorization: Bearer wk_…', async () => {
    const account = await call<{ id: string }>(`${p.api}/account`, { headers: bearer(p.key) });
    expect(account.status).toBe(200);
    expect(account.body.id).toBe(p.accountId);
    expect((await call(`${p.api}/projects`, { headers: bearer(p.key) })).status).toBe(200);
  });

  it('mints a token from an API key sent as Authorization: Bearer wk_…', async () => {
    const { token } = await mintToken({ headers: bearer(p.key) });
    expect((await call(`${p.api}/account`, { headers: bearer(token) })).status).toBe(200);
  });

  it('refuses to mint a token from another token with 401', async () => {
    const { token } = await mintToken({ key: p.key });
    expectProblem(
      await call(`${p.api}/auth/token`, { method: 'POST', headers: bearer(token) }),
      401,
      'unauthorized',
    );
  });

  it('rejects POST /auth/token without a credential with 401', async () => {
    expectProblem(await call(`${p.api}/auth/token`, { method: 'POST' }), 401, 'unauthorized');
  });

  it('rejects a token whose payload was tampered with with 401', async () => {
    const { token } = await mintToken({ key: p.key });
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const flipped = `${header}.${flipCharacter(payload)}.${signature}`;
    expectProblem(await call(`${p.api}/account`, { headers: bearer(flipped) }), 401, 'unauthorized');

    const other = await p.newAccount();
    const claims = { ...decodeJwt(token), sub: other.accountId };
    const resigned = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
    expectProblem(await call(`${p.api}/account`, { headers: bearer(resigned) }), 401, 'unauthorized');
  });

  it('rejects a token whose signature was tampered with with 401', async () => {
    const { token } = await mintToken({ key: p.key });
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const tampered = `${header}.${payload}.${flipCharacter(signature)}`;
    expectProblem(await call(`${p.api}/account`, { headers: bearer(tampered) }), 401, 'unauthorized');
    const stripped = `${header}.${payload}.`;
    expectProblem(await call(`${p.api}/account`, { headers: bearer(stripped) }), 401, 'unauthorized');
  });

  it('rejects an unsigned (alg "none") token with 401', async () => {
    const { token } = await mintToken({ key: p.key });
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    const unsigned = `${header}.${token.split('.')[1]}.`;
    expectProblem(await call(`${p.api}/account`, { headers: bearer(unsigned) }), 401, 'unauthorized');
  });

  describe('tokens signed outside the server', () => {
    let kid: string;
    let secret: Uint8Array;

    const sign = (claims: { sub: string; exp: number; iat: number }, key: Uint8Array) =>
      new SignJWT({ kid })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(claims.sub)
        .setIssuedAt(claims.iat)
        .setExpirationTime(claims.exp)
        .sign(key);

    beforeAll(async () => {
      const { token } = await mintToken({ key: p.key });
      kid = String(decodeJwt(token).kid);
      secret = readSecret(p.dataDir);
    });

    it('accepts a token signed with the server secret (control for the cases below)', async () => {
      const now = Math.floor(Date.now() / 1000);
      const token = await sign({ sub: p.accountId, iat: now, exp: now + 600 }, secret);
      expect((await call(`${p.api}/account`, { headers: bearer(token) })).status).toBe(200);
    });

    it('rejects an expired token with 401', async () => {
      const now = Math.floor(Date.now() / 1000);
      const token = await sign({ sub: p.accountId, iat: now - 3700, exp: now - 100 }, secret);
      const problem = expectProblem(
        await call(`${p.api}/account`, { headers: bearer(token) }),
        401,
        'unauthorized',
      );
      expect(problem.detail).toMatch(/expired/i);
    });

    it('rejects a token signed with another secret with 401', async () => {
      const now = Math.floor(Date.now() / 1000);
      const otherSecret = new Uint8Array(48).fill(7);
      const token = await sign({ sub: p.accountId, iat: now, exp: now + 600 }, otherSecret);
      expectProblem(await call(`${p.api}/account`, { headers: bearer(token) }), 401, 'unauthorized');
    });
  });

  it('rejects a token from another platform (another secret) with 401', async () => {
    const other = await startPlatform();
    try {
      const minted = await call<{ token: string }>(`${other.api}/auth/token`, {
        method: 'POST',
        key: other.key,
      });
      expect(minted.status).toBe(200);
      expectProblem(
        await call(`${p.api}/account`, { headers: bearer(minted.body.token) }),
        401,
        'unauthorized',
      );
    } finally {
      await other.close();
    }
  });

  it('rejects a token once the key that minted it is revoked, with 401', async () => {
    const minter = await createKey(['full'], 'minter');
    const { token } = await mintToken({ key: minter.key });
    expect((await call(`${p.api}/account`, { headers: bearer(token) })).status).toBe(200);
    await revoke(minter.id);
    for (const endpoint of ENDPOINTS) {
      const problem = expectProblem(await request(endpoint, { headers: bearer(token) }), 401, 'unauthorized');
      expect(problem.detail).toMatch(/revoked/i);
    }
  });

  it('rejects malformed Authorization headers with 401', async () => {
    const { token } = await mintToken({ key: p.key });
    const malformed = [
      'Bearer',
      'Bearer ',
      `Basic ${Buffer.from('user:pass').toString('base64')}`,
      `Token ${token}`,
      token,
      `Bearer ${token} extra`,
      'Bearer not.a.jwt',
      'Bearer garbage',
      `Bearer wk_${'a'.repeat(31)}`,
    ];
    for (const authorization of malformed) {
      expectProblem(await call(`${p.api}/account`, { headers: { authorization } }), 401, 'unauthorized');
    }
  });
});

describe('JWT lifetime', () => {
  let short: TestPlatform;

  beforeAll(async () => {
    short = await startPlatform({ tokenTtlSeconds: 1 });
  });

  afterAll(async () => {
    await short?.close();
  });

  it('rejects a token with 401 once its lifetime (tokenTtlSeconds) has passed', async () => {
    const minted = await call<{ token: string; expires_at: string }>(`${short.api}/auth/token`, {
      method: 'POST',
      key: short.key,
    });
    expect(minted.status).toBe(200);
    expect(Date.parse(minted.body.expires_at)).toBeLessThanOrEqual(Date.now() + 2_000);
    await sleep(Math.max(0, Date.parse(minted.body.expires_at) - Date.now()) + 1_100);
    const problem = expectProblem(
      await call(`${short.api}/account`, { headers: bearer(minted.body.token) }),
      401,
      'unauthorized',
    );
    expect(problem.detail).toMatch(/expired/i);
  });
});
