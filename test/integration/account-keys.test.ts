// API.md §3, account and keys: GET /account, and the life of an API key (POST /keys, GET /keys,
// DELETE /keys/:id) with its validation rules, isolation between accounts, and §2's promise that a
// key is stored only as its SHA-256 hash.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Account, ApiKeyInfo, CreatedKey, type Scope } from '../../src/shared/api/account.js';
import { call, expectProblem, startPlatform, type TestPlatform } from '../helpers/platform.js';

const KEY_PATTERN = /^wk_[A-Za-z0-9]{32}$/;

const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

let p: TestPlatform;

async function createKey(
  body: { scopes: Scope[]; name?: string },
  key = p.key,
): Promise<{ id: string; key: string; scopes: Scope[]; name: string }> {
  const created = await call(`${p.api}/keys`, { key, body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return CreatedKey.parse(created.body);
}

async function listKeys(key = p.key) {
  const listed = await call<unknown[]>(`${p.api}/keys`, { key });
  expect(listed.status).toBe(200);
  return { raw: listed.body, keys: listed.body.map((item) => ApiKeyInfo.parse(item)) };
}

beforeAll(async () => {
  p = await startPlatform();
});

afterAll(async () => {
  await p?.close();
});

describe('GET /account', () => {
  it('returns the account in the shape of API.md §3', async () => {
    const result = await call(`${p.api}/account`, { key: p.key });
    expect(result.status).toBe(200);
    expect(result.headers.get('content-type')).toMatch(/^application\/json/);
    const account = Account.parse(result.body);
    expect(Object.keys(result.body as object).sort()).toEqual(
      [
        'id',
        'email',
        'email_verified',
        'plan',
        'balance',
        'ai_key',
        'email_verifications_today',
        'email_daily_cap',
      ].sort(),
    );
    expect(Object.keys(account.balance).sort()).toEqual(
      ['allowance_usd', 'allowance_used_usd', 'allowance_resets_at', 'topup_usd', 'available_usd'].sort(),
    );
  });

  it('shows the local account as verified, with a plan and a balance', async () => {
    const account = Account.parse((await call(`${p.api}/account`, { key: p.key })).body);
    expect(account.id).toBe(p.accountId);
    expect(account.email_verified).toBe(true);
    expect(account.plan).toBe('free');
    expect(account.balance.allowance_usd).toBe(5);
    expect(account.balance.allowance_used_usd).toBeGreaterThanOrEqual(0);
    expect(account.balance.topup_usd).toBeGreaterThanOrEqual(0);
    expect(account.balance.available_usd).toBeCloseTo(
      account.balance.allowance_usd - account.balance.allowance_used_usd + account.balance.topup_usd,
      6,
    );
    const resetsAt = Date.parse(account.balance.allowance_resets_at);
    expect(resetsAt).toBeGreaterThan(Date.now());
    expect(account.ai_key).toBeNull();
    expect(account.email_verifications_today).toBe(0);
    expect(account.email_daily_cap).toBeGreaterThan(0);
  });

  it('shows each key its own account, unverified ones as unverified', async () => {
    const other = await p.newAccount({ verified: false, email: 'Someone@Example.com' });
    const account = Account.parse((await call(`${p.api}/account`, { key: other.key })).body);
    expect(account.id).toBe(other.accountId);
    expect(account.id).not.toBe(p.accountId);
    expect(account.email).toBe('someone@example.com');
    expect(account.email_verified).toBe(false);
  });
});

describe('POST /keys', () => {
  it('returns 201 { id, key, scopes, name } with a wk_ key of 32 base62 characters', async () => {
    const result = await call(`${p.api}/keys`, {
      key: p.key,
      body: { scopes: ['deploy', 'email'], name: 'ci runner' },
    });
    expect(result.status).toBe(201);
    expect(result.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Object.keys(result.body as object).sort()).toEqual(['id', 'key', 'name', 'scopes']);
    const created = CreatedKey.parse(result.body);
    expect(created.id).toMatch(/^key_[A-Za-z0-9]+$/);
    expect(created.key).toMatch(KEY_PATTERN);
    expect(created.scopes).toEqual(['deploy', 'email']);
    expect(created.name).toBe('ci runner');
  });

  it('creates a key that works at once, for the same account, with its scopes', async () => {
    const created = await createKey({ scopes: ['deploy'], name: 'works' });
    const account = await call<{ id: string }>(`${p.api}/account`, { key: created.key });
    expect(account.status).toBe(200);
    expect(account.body.id).toBe(p.accountId);
    expect((await call(`${p.api}/projects`, { key: created.key })).status).toBe(200);
    expectProblem(await call(`${p.api}/keys`, { key: created.key }), 403, 'forbidden');
  });

  it('creates a different key every time', async () => {
    const a = await createKey({ scopes: ['email'] });
    const b = await createKey({ scopes: ['email'] });
    expect(a.key).not.toBe(b.key);
    expect(a.id).not.toBe(b.id);
  });

  it('accepts a key without a name, and a name of exactly 64 characters', async () => {
    const unnamed = await createKey({ scopes: ['deploy'] });
    expect(typeof unnamed.name).toBe('string');
    const long = await createKey({ scopes: ['deploy'], name: 'n'.repeat(64) });
    expect(long.name).toBe('n'.repeat(64));
  });

  describe('rejects bad bodies with 422 validation_failed and the path of each error', () => {
    const cases: Array<{ title: string; body: unknown; path: string | RegExp }> = [
      { title: 'empty scopes', body: { scopes: [], name: 'x' }, path: 'scopes' },
      { title: 'missing scopes', body: { name: 'x' }, path: 'scopes' },
      { title: 'scopes not an array', body: { scopes: 'full' }, path: 'scopes' },
      { title: 'an unknown scope', body: { scopes: ['admin'] }, path: 'scopes[0]' },
      { title: 'an unknown scope after a good one', body: { scopes: ['deploy', 'root'] }, path: 'scopes[1]' },
      { title: 'a repeated scope', body: { scopes: ['deploy', 'deploy'] }, path: /^scopes(\[1\])?$/ },
      { title: 'an unknown field', body: { scopes: ['deploy'], colour: 'red' }, path: 'colour' },
      {
        title: 'a name over 64 characters',
        body: { scopes: ['deploy'], name: 'n'.repeat(65) },
        path: 'name',
      },
      { title: 'an empty name', body: { scopes: ['deploy'], name: '' }, path: 'name' },
      { title: 'a name that is not a string', body: { scopes: ['deploy'], name: 42 }, path: 'name' },
      { title: 'a name with a newline', body: { scopes: ['deploy'], name: 'a\nb' }, path: 'name' },
    ];

    it.each(cases)('$title', async ({ body, path }) => {
      const before = (await listKeys()).keys.length;
      const problem = expectProblem(
        await call(`${p.api}/keys`, { key: p.key, body }),
        422,
        'validation_failed',
      );
      expect(problem.errors, JSON.stringify(problem)).toBeInstanceOf(Array);
      expect(problem.errors!.length).toBeGreaterThan(0);
      for (const error of problem.errors!) {
        expect(error).toEqual({ path: expect.any(String), message: expect.any(String) });
        expect(error.message).not.toBe('');
      }
      const paths = problem.errors!.map((e) => e.path);
      if (typeof path === 'string') expect(paths).toContain(path);
      else
        expect(
          paths.some((p) => path.test(p)),
          paths.join(', '),
        ).toBe(true);
      expect((await listKeys()).keys.length).toBe(before);
    });

    it('a JSON array instead of an object', async () => {
      expectProblem(
        await call(`${p.api}/keys`, { key: p.key, body: [{ scopes: ['deploy'] }] }),
        422,
        'validation_failed',
      );
    });
  });
});

describe('GET /keys', () => {
  it('lists the active keys without their secrets', async () => {
    const created = await createKey({ scopes: ['deploy'], name: 'listed' });
    const { raw, keys } = await listKeys();
    const listed = keys.find((k) => k.id === created.id);
    expect(listed).toBeDefined();
    expect(listed!.name).toBe('listed');
    expect(listed!.scopes).toEqual(['deploy']);
    const text = JSON.stringify(raw);
    expect(text).not.toContain(created.key);
    expect(text).not.toContain(p.key);
    expect(text).not.toContain(created.key.slice(3));
    expect(text).not.toContain(sha256Hex(created.key));
    for (const item of raw) expect(item).not.toHaveProperty('key');
  });

  it('lists the local key too, by its name', async () => {
    const { keys } = await listKeys();
    expect(keys.some((k) => k.name === 'local' && k.scopes.includes('full'))).toBe(true);
  });

  it('lists newest first', async () => {
    const first = await createKey({ scopes: ['email'], name: 'older' });
    const second = await createKey({ scopes: ['email'], name: 'newer' });
    const { keys } = await listKeys();
    expect(keys[0]!.id).toBe(second.id);
    expect(keys[1]!.id).toBe(first.id);
    const times = keys.map((k) => Date.parse(k.created_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('shows an account only its own keys', async () => {
    const other = await p.newAccount();
    const mine = await createKey({ scopes: ['deploy'], name: 'mine' });
    const { keys: theirs } = await listKeys(other.key);
    expect(theirs).toHaveLength(1);
    expect(theirs.some((k) => k.id === mine.id)).toBe(false);
  });
});

describe('GET /keys: which key is the caller’s own (`current`)', () => {
  const currentIds = (keys: Array<{ id: string; current: boolean }>) =>
    keys.filter((k) => k.current).map((k) => k.id);

  it('marks only the key the request was sent with, whichever key that is', async () => {
    const second = await createKey({ scopes: ['full'], name: 'second app' });
    const asLocal = (await listKeys()).keys;
    const local = asLocal.find((k) => k.name === 'local');
    expect(local).toBeDefined();
    expect(currentIds(asLocal)).toEqual([local!.id]);

    const asSecond = (await listKeys(second.key)).keys;
    expect(currentIds(asSecond)).toEqual([second.id]);
    expect(asSecond.find((k) => k.id === local!.id)?.current).toBe(false);
    for (const item of (await listKeys(second.key)).raw) {
      expect(typeof (item as { current?: unknown }).current).toBe('boolean');
    }
  });

  it('marks the key that minted the JWT when the request carries a token', async () => {
    const minter = await createKey({ scopes: ['full'], name: 'minter' });
    const minted = await call<{ token: string }>(`${p.api}/auth/token`, { method: 'POST', key: minter.key });
    expect(minted.status).toBe(200);
    const listed = await call<unknown[]>(`${p.api}/keys`, {
      headers: { authorization: `Bearer ${minted.body.token}` },
    });
    expect(listed.status).toBe(200);
    const keys = listed.body.map((item) => ApiKeyInfo.parse(item));
    expect(currentIds(keys)).toEqual([minter.id]);
    expect(keys.find((k) => k.name === 'local')?.current).toBe(false);
  });

  it('shows another account only its own keys, its own marked, and never lets it revoke mine', async () => {
    const other = await p.newAccount();
    const mine = await createKey({ scopes: ['deploy'], name: 'not theirs' });
    const theirs = (await listKeys(other.key)).keys;
    expect(theirs).toHaveLength(1);
    expect(theirs[0]!.current).toBe(true);
    expect(theirs.some((k) => k.id === mine.id)).toBe(false);
    expectProblem(
      await call(`${p.api}/keys/${mine.id}`, { method: 'DELETE', key: other.key }),
      404,
      'not_found',
    );
    expect((await listKeys()).keys.some((k) => k.id === mine.id)).toBe(true);
    expect((await call(`${p.api}/account`, { key: mine.key })).status).toBe(200);
  });

  it('is refused (403 forbidden) to a key without the full scope, listing nothing', async () => {
    const narrow = await createKey({ scopes: ['deploy', 'email'], name: 'narrow' });
    const problem = expectProblem(await call(`${p.api}/keys`, { key: narrow.key }), 403, 'forbidden');
    expect(problem.detail).toMatch(/full/);
    expectProblem(
      await call(`${p.api}/keys`, { key: narrow.key, body: { scopes: ['full'], name: 'escalate' } }),
      403,
      'forbidden',
    );
  });

  it('answers a POST without a body, or with a body that is not JSON, with a problem', async () => {
    const none = expectProblem(
      await call(`${p.api}/keys`, { method: 'POST', key: p.key }),
      400,
      'invalid_json',
    );
    expect(none.detail).toMatch(/body is required/);
    expectProblem(
      await call(`${p.api}/keys`, {
        method: 'POST',
        key: p.key,
        body: '{"scopes": [',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_json',
    );
  });
});

describe('DELETE /keys/:id', () => {
  it('revokes the key: { id, deleted: true }, then 401 for it and gone from the list', async () => {
    const created = await createKey({ scopes: ['full'], name: 'doomed' });
    expect((await call(`${p.api}/account`, { key: created.key })).status).toBe(200);

    const deleted = await call(`${p.api}/keys/${created.id}`, { method: 'DELETE', key: p.key });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: created.id, deleted: true });

    const problem = expectProblem(await call(`${p.api}/account`, { key: created.key }), 401, 'unauthorized');
    expect(problem.detail).toMatch(/revoked/i);
    const { keys } = await listKeys();
    expect(keys.some((k) => k.id === created.id)).toBe(false);
  });

  it('lets a key revoke itself', async () => {
    const created = await createKey({ scopes: ['full'], name: 'self' });
    const deleted = await call(`${p.api}/keys/${created.id}`, { method: 'DELETE', key: created.key });
    expect(deleted.status).toBe(200);
    expectProblem(await call(`${p.api}/account`, { key: created.key }), 401, 'unauthorized');
  });

  it('answers 404 not_found when the key is deleted a second time', async () => {
    const created = await createKey({ scopes: ['deploy'], name: 'twice' });
    expect((await call(`${p.api}/keys/${created.id}`, { method: 'DELETE', key: p.key })).status).toBe(200);
    expectProblem(
      await call(`${p.api}/keys/${created.id}`, { method: 'DELETE', key: p.key }),
      404,
      'not_found',
    );
  });

  it("answers 404 not_found (never 403) for another account's key, and leaves it working", async () => {
    const other = await p.newAccount();
    const theirs = await createKey({ scopes: ['deploy'], name: 'theirs' }, other.key);
    expectProblem(
      await call(`${p.api}/keys/${theirs.id}`, { method: 'DELETE', key: p.key }),
      404,
      'not_found',
    );
    expect((await call(`${p.api}/projects`, { key: theirs.key })).status).toBe(200);
    expect((await listKeys(other.key)).keys.some((k) => k.id === theirs.id)).toBe(true);
  });

  it('answers 404 not_found for an id that never existed or is not a key id', async () => {
    for (const id of ['key_0000000000000000000000', 'prj_abc', 'nonsense', '%20']) {
      expectProblem(await call(`${p.api}/keys/${id}`, { method: 'DELETE', key: p.key }), 404, 'not_found');
    }
  });
});

describe('key storage', () => {
  it('stores only the SHA-256 hash of a key, never the key itself', async () => {
    const created = await createKey({ scopes: ['deploy'], name: 'stored' });
    // Read as the store has it (SQLite, or PostgreSQL in the postgres project).
    const rows = (await p.platform.db.selectFrom('api_keys').selectAll().execute()) as unknown as Array<
      Record<string, unknown>
    >;
    const row = rows.find((r) => r.id === created.id);
    expect(row).toBeDefined();
    expect(row!.hash).toBe(sha256Hex(created.key));
    expect(rows.length).toBeGreaterThan(1);
    for (const stored of [created.key, p.key]) {
      const secretPart = stored.slice(3);
      for (const r of rows) {
        for (const value of Object.values(r)) {
          if (typeof value !== 'string') continue;
          expect(value).not.toContain(stored);
          expect(value).not.toContain(secretPart);
        }
      }
    }

    // And in the bytes of a SQLite store's files.
    for (const file of ['platform.db', 'platform.db-wal']) {
      const path = join(p.dataDir, file);
      if (!existsSync(path)) continue;
      const bytes = readFileSync(path);
      expect(bytes.includes(created.key.slice(3)), `${file} holds the key`).toBe(false);
    }
  });
});
