// The daily cap on email verifications, on a real SQLite database with an injected clock: it counts per
// account per UTC day, refuses with 429 daily_cap_reached and a Retry-After up to midnight UTC while
// counting nothing, and holds under concurrent takes. Also: the 402/429 leave as problem+json with
// their extension members and headers.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAccount } from '../../../../src/server/accounts/accounts.js';
import { DailyCap, Ledger } from '../../../../src/server/billing/index.js';
import { resolveConfig } from '../../../../src/server/config.js';
import { ApiError, problemHandler } from '../../../../src/server/errors.js';
import { type Store, openStore } from '../../../../src/server/store/open.js';
import { testStoreLocation } from '../../../helpers/test-store.js';

const dir = mkdtempSync(join(tmpdir(), 'wharf-cap-'));
const config = resolveConfig({ dataDir: dir, emailDailyCap: 3 });
let db: Store;
let store: Awaited<ReturnType<typeof testStoreLocation>>;
let now: Date;
let cap: DailyCap;
let accounts = 0;

async function newAccount(): Promise<string> {
  accounts += 1;
  const created = await createAccount(db, {
    email: `cap${accounts}@example.com`,
    verified: true,
    plan: 'free',
    scopes: ['full'],
  });
  return created.accountId;
}

beforeAll(async () => {
  store = await testStoreLocation(dir);
  db = await openStore(store.location);
});

beforeEach(() => {
  now = new Date('2025-06-10T23:59:00.000Z');
  cap = new DailyCap(db, config, () => now);
});

afterAll(async () => {
  await db.destroy();
  await store.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('DailyCap', () => {
  it('counts up to the cap, then refuses with 429 and Retry-After to midnight UTC, counting nothing', async () => {
    const id = await newAccount();
    expect(await cap.used(id)).toBe(0);
    await cap.take(id, 2);
    await cap.take(id, 1);
    expect(await cap.used(id)).toBe(3);
    const error = await cap.take(id, 1).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      status: 429,
      code: 'daily_cap_reached',
      headers: { 'retry-after': '60' },
    });
    expect((error as ApiError).detail).toMatch(/daily cap of 3 email verifications is reached/);
    expect(await cap.used(id)).toBe(3);
  });

  it('refuses a batch that would pass the cap as a whole, and takes nothing of it', async () => {
    const id = await newAccount();
    await cap.take(id, 1);
    await expect(cap.take(id, 3)).rejects.toMatchObject({ code: 'daily_cap_reached' });
    expect(await cap.used(id)).toBe(1);
    await cap.take(id, 2);
    expect(await cap.used(id)).toBe(3);
  });

  it('starts afresh on the next UTC day, per account', async () => {
    const id = await newAccount();
    const other = await newAccount();
    await cap.take(id, 3);
    expect(await cap.used(other)).toBe(0);
    await cap.take(other, 3);
    now = new Date('2025-06-11T00:00:00.000Z');
    expect(await cap.used(id)).toBe(0);
    await cap.take(id, 3);
    expect(await cap.used(id)).toBe(3);
    // The earlier day's count was dropped when the new one began.
    const days = await db
      .selectFrom('email_daily_counts')
      .select('day')
      .where('account_id', '=', id)
      .execute();
    expect(days).toEqual([{ day: '2025-06-11' }]);
  });

  it('lets exactly cap takes through when they race', async () => {
    const id = await newAccount();
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => cap.take(id, 1)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    expect(await cap.used(id)).toBe(3);
  });

  it('gives a Retry-After of at least one second just before midnight', async () => {
    const id = await newAccount();
    await cap.take(id, 3);
    now = new Date('2025-06-10T23:59:59.999Z');
    await expect(cap.take(id, 1)).rejects.toMatchObject({ headers: { 'retry-after': '1' } });
    // At midnight sharp, a full day to wait.
    now = new Date('2025-06-11T00:00:00.000Z');
    await cap.take(id, 3);
    await expect(cap.take(id, 1)).rejects.toMatchObject({ headers: { 'retry-after': '86400' } });
  });

  it('refuses counts that are not whole numbers', async () => {
    const id = await newAccount();
    for (const n of [-1, 1.5, Number.NaN]) await expect(cap.take(id, n)).rejects.toBeInstanceOf(RangeError);
    await cap.take(id, 0);
    expect(await cap.used(id)).toBe(0);
  });
});

describe('problem+json of billing errors', () => {
  it('sends the 402 with required_usd and available_usd, and the 429 with Retry-After', async () => {
    const id = await newAccount();
    const ledger = new Ledger(db, config, () => now);
    await cap.take(id, 3);
    const app = Fastify();
    app.setErrorHandler(problemHandler);
    app.get('/charge', async () =>
      ledger.charge({
        accountId: id,
        micros: 7_000_000,
        kind: 'test',
        description: 'x',
        idempotencyKey: 'p',
      }),
    );
    app.get('/cap', async () => cap.take(id, 1));
    try {
      const charged = await app.inject({ url: '/charge' });
      expect(charged.statusCode).toBe(402);
      expect(charged.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(charged.json()).toEqual({
        type: 'about:blank',
        title: 'Insufficient balance',
        status: 402,
        code: 'insufficient_balance',
        detail: expect.stringMatching(/costs \$7\.00 but only \$5\.00 is available/),
        required_usd: 7,
        available_usd: 5,
      });
      const capped = await app.inject({ url: '/cap' });
      expect(capped.statusCode).toBe(429);
      expect(capped.headers['retry-after']).toBe('60');
      expect(capped.json()).toMatchObject({
        status: 429,
        code: 'daily_cap_reached',
        daily_cap: 3,
        used_today: 3,
      });
    } finally {
      await app.close();
    }
  });

  it('never lets an extension member replace a standard one', async () => {
    const app = Fastify();
    app.setErrorHandler(problemHandler);
    app.get('/', async () => {
      throw new ApiError('conflict', 'taken', undefined, undefined, { status: 200, code: 'ok', hint: 'x' });
    });
    try {
      const result = await app.inject({ url: '/' });
      expect(result.statusCode).toBe(409);
      expect(result.json()).toMatchObject({ status: 409, code: 'conflict', hint: 'x' });
    } finally {
      await app.close();
    }
  });
});
