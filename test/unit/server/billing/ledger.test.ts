// The billing ledger on a real SQLite database in a temporary dir, with an injected clock: the
// allowance is drawn before the top-up, nothing ever goes negative, retries with one idempotency key
// charge once, the allowance renews once per calendar month (UTC) however many first uses race, and
// the entries always add up to the balance.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAccount } from '../../../../src/server/accounts/accounts.js';
import { Ledger, MICROS_PER_USD, usdToMicros } from '../../../../src/server/billing/ledger.js';
import { resolveConfig } from '../../../../src/server/config.js';
import { ApiError } from '../../../../src/server/errors.js';
import { type Store, openStore } from '../../../../src/server/store/open.js';
import { testStoreLocation } from '../../../helpers/test-store.js';
import { UsageEntry } from '../../../../src/shared/api/account.js';

const USD = MICROS_PER_USD;
const dir = mkdtempSync(join(tmpdir(), 'wharf-ledger-'));
const config = resolveConfig({
  dataDir: dir,
  plans: { free: { allowance_usd: 5 }, pro: { allowance_usd: 50 }, none: { allowance_usd: 0 } },
});
let db: Store;
let store: Awaited<ReturnType<typeof testStoreLocation>>;
let now: Date;
let ledger: Ledger;
let accounts = 0;

async function newAccount(plan = 'free'): Promise<string> {
  accounts += 1;
  const { accountId } = await createAccount(db, {
    email: `ledger${accounts}@example.com`,
    verified: true,
    plan,
    scopes: ['full'],
  });
  return accountId;
}

async function entries(accountId: string) {
  return db
    .selectFrom('ledger_entries')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute();
}

/** The ledger's own invariant: entries add up to what the balances row says is available. */
async function expectConsistent(accountId: string): Promise<void> {
  const sum = (await entries(accountId)).reduce((total, e) => total + e.amount_micros, 0);
  const row = await db
    .selectFrom('balances')
    .selectAll()
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  expect(row.allowance_used_micros).toBeGreaterThanOrEqual(0);
  expect(row.allowance_used_micros).toBeLessThanOrEqual(row.allowance_micros);
  expect(row.topup_micros).toBeGreaterThanOrEqual(0);
  expect(sum).toBe(row.allowance_micros - row.allowance_used_micros + row.topup_micros);
  expect(await ledger.availableMicros(accountId)).toBe(sum);
}

async function rejection(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

beforeAll(async () => {
  store = await testStoreLocation(dir);
  db = await openStore(store.location);
});

beforeEach(() => {
  now = new Date('2025-01-15T10:00:00.000Z');
  ledger = new Ledger(db, config, () => now);
});

afterAll(async () => {
  await db.destroy();
  await store.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('Ledger', () => {
  it("grants a new account its plan's allowance for the calendar month, resetting on the 1st UTC", async () => {
    const id = await newAccount();
    expect(await ledger.balance(id)).toEqual({
      allowance_usd: 5,
      allowance_used_usd: 0,
      allowance_resets_at: '2025-02-01T00:00:00.000Z',
      topup_usd: 0,
      available_usd: 5,
    });
    const pro = await newAccount('pro');
    expect((await ledger.balance(pro)).allowance_usd).toBe(50);
    const none = await newAccount('none');
    expect(await ledger.availableMicros(none)).toBe(0);
    const unknownPlan = await newAccount('gold');
    expect(await ledger.availableMicros(unknownPlan)).toBe(0);
    expect(await entries(none)).toEqual([]);
  });

  it('draws the allowance first, then the top-up', async () => {
    const id = await newAccount();
    await ledger.charge({
      accountId: id,
      micros: 2 * USD,
      kind: 'test',
      description: 'two',
      idempotencyKey: 'a',
    });
    await ledger.topUp({ accountId: id, micros: 3 * USD, description: 'top-up' });
    expect(await ledger.balance(id)).toMatchObject({
      allowance_used_usd: 2,
      topup_usd: 3,
      available_usd: 6,
    });
    await ledger.charge({
      accountId: id,
      micros: 4 * USD,
      kind: 'test',
      description: 'four',
      idempotencyKey: 'b',
    });
    expect(await ledger.balance(id)).toMatchObject({
      allowance_used_usd: 5,
      topup_usd: 2,
      available_usd: 2,
    });
    const four = (await entries(id)).find((e) => e.idempotency_key === 'b')!;
    expect(four).toMatchObject({ amount_micros: -4 * USD, allowance_micros: -3 * USD, topup_micros: -USD });
    await expectConsistent(id);
  });

  it('refuses a charge the balance cannot cover with 402 required_usd/available_usd, and charges nothing', async () => {
    const id = await newAccount();
    await ledger.charge({
      accountId: id,
      micros: 4_500_000,
      kind: 'test',
      description: 'most',
      idempotencyKey: 'x1',
    });
    const before = await entries(id);
    const error = await rejection(
      ledger.charge({
        accountId: id,
        micros: 600_000,
        kind: 'test',
        description: 'too much',
        idempotencyKey: 'x2',
      }),
    );
    expect(error.status).toBe(402);
    expect(error.code).toBe('insufficient_balance');
    expect(error.extra).toEqual({ required_usd: 0.6, available_usd: 0.5 });
    expect(error.detail).toMatch(/costs \$0\.60 but only \$0\.50 is available/);
    expect(await entries(id)).toEqual(before);
    expect(await ledger.availableMicros(id)).toBe(500_000);
    // Exactly what is left still goes through, to zero and not below.
    await ledger.charge({
      accountId: id,
      micros: 500_000,
      kind: 'test',
      description: 'rest',
      idempotencyKey: 'x3',
    });
    expect(await ledger.availableMicros(id)).toBe(0);
    await expect(
      ledger.charge({ accountId: id, micros: 1, kind: 'test', description: 'one', idempotencyKey: 'x4' }),
    ).rejects.toMatchObject({
      code: 'insufficient_balance',
      extra: { required_usd: 0.000001, available_usd: 0 },
    });
    await expectConsistent(id);
  });

  it('assertAvailable throws the same 402 without charging, and passes when covered', async () => {
    const id = await newAccount();
    await ledger.assertAvailable(id, 5 * USD);
    const error = await rejection(ledger.assertAvailable(id, 5 * USD + 1));
    expect(error).toMatchObject({ status: 402, extra: { required_usd: 5.000001, available_usd: 5 } });
    expect(await ledger.availableMicros(id)).toBe(5 * USD);
  });

  it('charges once for one idempotency key, also when the retries race', async () => {
    const id = await newAccount();
    const input = { accountId: id, micros: USD, kind: 'test', description: 'once', idempotencyKey: 'k' };
    const first = await ledger.charge(input);
    expect(first).toEqual({ id: expect.stringMatching(/^led_/), replayed: false });
    expect(await ledger.charge({ ...input, micros: 3 * USD })).toEqual({ id: first.id, replayed: true });
    const raced = await Promise.all(
      Array.from({ length: 10 }, () => ledger.charge({ ...input, idempotencyKey: 'race' })),
    );
    expect(raced.filter((r) => !r.replayed)).toHaveLength(1);
    expect(new Set(raced.map((r) => r.id)).size).toBe(1);
    const usage = (await entries(id)).filter((e) => e.kind === 'test');
    expect(usage).toHaveLength(2);
    expect(await ledger.availableMicros(id)).toBe(3 * USD);
    // The same key on another account is another charge.
    const other = await newAccount();
    expect((await ledger.charge({ ...input, accountId: other })).replayed).toBe(false);
    await expectConsistent(id);
  });

  it('lets exactly as many concurrent charges through as the balance covers', async () => {
    const id = await newAccount();
    const results = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) =>
        ledger.charge({
          accountId: id,
          micros: USD,
          kind: 'test',
          description: `#${i}`,
          idempotencyKey: `c${i}`,
        }),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused).toHaveLength(7);
    for (const r of refused) expect((r as PromiseRejectedResult).reason).toMatchObject({ status: 402 });
    expect(await ledger.availableMicros(id)).toBe(0);
    await expectConsistent(id);
  });

  it('renews the allowance in a new month, keeps the top-up, and expires the unused allowance', async () => {
    const id = await newAccount();
    await ledger.charge({
      accountId: id,
      micros: 2 * USD,
      kind: 'test',
      description: 'jan',
      idempotencyKey: 'j',
    });
    await ledger.topUp({ accountId: id, micros: 1 * USD, description: 'top-up' });
    now = new Date('2025-01-31T23:59:59.999Z');
    expect(await ledger.availableMicros(id)).toBe(4 * USD);
    now = new Date('2025-02-01T00:00:00.000Z');
    expect(await ledger.balance(id)).toEqual({
      allowance_usd: 5,
      allowance_used_usd: 0,
      allowance_resets_at: '2025-03-01T00:00:00.000Z',
      topup_usd: 1,
      available_usd: 6,
    });
    const kinds = (await entries(id)).map((e) => [e.kind, e.amount_micros, e.period]);
    expect(kinds).toEqual([
      ['allowance_grant', 5 * USD, '2025-01'],
      ['test', -2 * USD, '2025-01'],
      ['topup', USD, '2025-01'],
      ['allowance_expiry', -3 * USD, '2025-01'],
      ['allowance_grant', 5 * USD, '2025-02'],
    ]);
    // Rolling over again in the same month changes nothing.
    now = new Date('2025-02-20T00:00:00.000Z');
    await ledger.balance(id);
    expect(await entries(id)).toHaveLength(5);
    // A clock that goes back does not grant January again.
    now = new Date('2025-01-31T12:00:00.000Z');
    expect(await ledger.availableMicros(id)).toBe(6 * USD);
    expect(await entries(id)).toHaveLength(5);
    await expectConsistent(id);
  });

  it('grants a new month once when the first uses race (two ledgers, one database)', async () => {
    const id = await newAccount();
    await ledger.balance(id);
    now = new Date('2025-03-02T08:00:00.000Z');
    const second = new Ledger(db, config, () => now);
    const results = await Promise.all([
      ledger.balance(id),
      second.balance(id),
      ledger.charge({ accountId: id, micros: USD, kind: 'test', description: 'm', idempotencyKey: 'm1' }),
      second.charge({ accountId: id, micros: USD, kind: 'test', description: 'm', idempotencyKey: 'm2' }),
      ledger.availableMicros(id),
    ]);
    expect(results).toHaveLength(5);
    const grants = (await entries(id)).filter((e) => e.kind === 'allowance_grant');
    expect(grants.map((g) => g.period)).toEqual(['2025-01', '2025-03']);
    expect(await ledger.availableMicros(id)).toBe(3 * USD);
    await expectConsistent(id);
  });

  it('never goes negative and always adds up, over a long random run', async () => {
    const id = await newAccount();
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let i = 0; i < 300; i++) {
      const roll = random();
      if (roll < 0.1) {
        await ledger.topUp({ accountId: id, micros: Math.ceil(random() * 2 * USD), description: 'r' });
      } else if (roll < 0.13) {
        now = new Date(now.getTime() + 20 * 86_400_000);
      } else {
        const micros = Math.ceil(random() * 0.8 * USD);
        const before = await ledger.availableMicros(id);
        const key = `r${Math.floor(random() * 250)}`;
        const result = await ledger
          .charge({ accountId: id, micros, kind: 'test', description: 'r', idempotencyKey: key })
          .catch((e: unknown) => e);
        const after = await ledger.availableMicros(id);
        if (result instanceof ApiError) {
          expect(micros).toBeGreaterThan(before);
          expect(after).toBe(before);
        } else if ((result as { replayed: boolean }).replayed) {
          expect(after).toBe(before);
        } else {
          expect(after).toBe(before - micros);
        }
        expect(after).toBeGreaterThanOrEqual(0);
      }
    }
    await expectConsistent(id);
  });

  it('lists usage newest first in US dollars, in the UsageEntry shape, with a limit', async () => {
    const id = await newAccount();
    await ledger.charge({
      accountId: id,
      micros: 1_500,
      kind: 'email_verification',
      description: 'a@b.c',
      idempotencyKey: 'u1',
    });
    now = new Date(now.getTime() + 1_000);
    await ledger.topUp({ accountId: id, micros: 10 * USD, description: 'credit' });
    const usage = await ledger.usage(id);
    expect(usage.map((u) => UsageEntry.parse(u))).toEqual(usage);
    expect(usage.map((u) => [u.kind, u.amount_usd, u.description])).toEqual([
      ['topup', 10, 'credit'],
      ['email_verification', -0.0015, 'a@b.c'],
      ['allowance_grant', 5, 'Monthly allowance of 2025-01 (plan free)'],
    ]);
    expect(await ledger.usage(id, 1)).toHaveLength(1);
  });

  it('returns the first entry for a repeated top-up key', async () => {
    const id = await newAccount();
    const first = await ledger.topUp({
      accountId: id,
      micros: USD,
      description: 't',
      idempotencyKey: 'pay_1',
    });
    const again = await ledger.topUp({
      accountId: id,
      micros: USD,
      description: 't',
      idempotencyKey: 'pay_1',
    });
    expect(again.id).toBe(first.id);
    expect((await ledger.balance(id)).topup_usd).toBe(1);
  });

  it('answers 404 for an unknown account and refuses amounts that are not positive whole micro-dollars', async () => {
    await expect(ledger.balance('acc_nobody')).rejects.toMatchObject({ status: 404, code: 'not_found' });
    const id = await newAccount();
    for (const micros of [0, -1, 1.5, Number.NaN]) {
      await expect(
        ledger.charge({
          accountId: id,
          micros,
          kind: 'test',
          description: 'bad',
          idempotencyKey: `bad${micros}`,
        }),
      ).rejects.toBeInstanceOf(RangeError);
      await expect(ledger.topUp({ accountId: id, micros, description: 'bad' })).rejects.toBeInstanceOf(
        RangeError,
      );
    }
    await expect(
      ledger.charge({ accountId: id, micros: 1, kind: 'test', description: 'no key', idempotencyKey: '' }),
    ).rejects.toBeInstanceOf(RangeError);
    await expect(ledger.assertAvailable(id, -1)).rejects.toBeInstanceOf(RangeError);
    expect(await ledger.availableMicros(id)).toBe(5 * USD);
  });

  it('converts dollars to micro-dollars exactly', () => {
    expect(usdToMicros(0.1 + 0.2)).toBe(300_000);
    expect(usdToMicros(0.004)).toBe(4_000);
    expect(usdToMicros(12.34)).toBe(12_340_000);
    expect(() => usdToMicros(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });
});
