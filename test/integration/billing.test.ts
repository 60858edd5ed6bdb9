// Billing over HTTP and the CLI: GET /account reports the ledger's real balance and today's email
// verifications, GET /account/usage lists the account's ledger entries (API.md §3), and
// `wharf admin credit` adds a top-up to a running platform's data dir.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Account, UsageEntry } from '../../src/shared/api/account.js';
import { describeLocation } from '../../src/server/store/location.js';
import { assertBuilt, runWharf } from '../helpers/cli.js';
import { call, expectProblem, startPlatform, type TestPlatform } from '../helpers/platform.js';

let p: TestPlatform;

/** The CLI, pointed at the platform's PostgreSQL database when it runs on one (the postgres project). */
const run = (args: string[]) =>
  runWharf(
    args,
    p?.platform.config.databaseUrl ? { env: { WHARF_DATABASE_URL: p.platform.config.databaseUrl } } : {},
  );
/** How `wharf admin` names the store of the test platform. */
const storeName = () =>
  p.platform.config.databaseUrl ? describeLocation(p.platform.config.databaseUrl) : p.dataDir;

async function account(key = p.key): Promise<Account> {
  const result = await call(`${p.api}/account`, { key });
  expect(result.status).toBe(200);
  return Account.parse(result.body);
}

beforeAll(async () => {
  assertBuilt();
  p = await startPlatform({ emailDailyCap: 50 });
});

afterAll(async () => {
  await p?.close();
});

describe('GET /account', () => {
  it("reports the plan's allowance for a fresh account, and the daily cap", async () => {
    const fresh = await p.newAccount();
    const body = await account(fresh.key);
    expect(body.balance).toEqual({
      allowance_usd: 5,
      allowance_used_usd: 0,
      allowance_resets_at: expect.stringMatching(/^\d{4}-\d{2}-01T00:00:00\.000Z$/),
      topup_usd: 0,
      available_usd: 5,
    });
    expect(new Date(body.balance.allowance_resets_at).getTime()).toBeGreaterThan(Date.now());
    expect(body.email_verifications_today).toBe(0);
    expect(body.email_daily_cap).toBe(50);
  });

  it('reports usage, top-ups and email verifications today as the ledger and the cap record them', async () => {
    const user = await p.newAccount();
    const { ledger, dailyCap } = p.platform;
    await ledger.charge({
      accountId: user.accountId,
      micros: 1_250_000,
      kind: 'email_verification',
      description: 'a@example.com',
      idempotencyKey: 'v1',
    });
    await ledger.topUp({ accountId: user.accountId, micros: 20_000_000, description: 'credit' });
    await ledger.charge({
      accountId: user.accountId,
      micros: 4_000_000,
      kind: 'ai',
      description: 'build',
      idempotencyKey: 'v2',
    });
    await dailyCap.take(user.accountId, 7);
    const body = await account(user.key);
    expect(body.balance).toMatchObject({
      allowance_usd: 5,
      allowance_used_usd: 5,
      topup_usd: 19.75,
      available_usd: 19.75,
    });
    expect(body.email_verifications_today).toBe(7);
    // The app's decoration carries the same objects, for routes of other modules.
    expect(p.platform.app.platform.ledger).toBe(ledger);
    expect(p.platform.app.platform.dailyCap).toBe(dailyCap);
  });
});

describe('GET /account/usage', () => {
  it("lists the account's own entries newest first, in US dollars", async () => {
    const user = await p.newAccount({ scopes: ['email'] });
    await p.platform.ledger.charge({
      accountId: user.accountId,
      micros: 4_000,
      kind: 'email_verification',
      description: 'smtp probe of b@example.com',
      idempotencyKey: 'u1',
    });
    await p.platform.ledger.topUp({ accountId: user.accountId, micros: 2_000_000, description: 'credit' });
    const result = await call<unknown[]>(`${p.api}/account/usage`, { key: user.key });
    expect(result.status).toBe(200);
    const entries = result.body.map((e) => UsageEntry.parse(e));
    expect(entries.map((e) => Object.keys(e).sort())).toEqual(
      entries.map(() => ['amount_usd', 'at', 'description', 'id', 'kind']),
    );
    expect(entries.map((e) => [e.kind, e.amount_usd, e.description])).toEqual([
      ['topup', 2, 'credit'],
      ['email_verification', -0.004, 'smtp probe of b@example.com'],
      ['allowance_grant', 5, expect.stringMatching(/^Monthly allowance of \d{4}-\d{2} \(plan free\)$/)],
    ]);
    const limited = await call<unknown[]>(`${p.api}/account/usage?limit=1`, { key: user.key });
    expect(limited.body).toHaveLength(1);
    // Another account sees none of them.
    const other = await p.newAccount();
    const theirs = await call<UsageEntry[]>(`${p.api}/account/usage`, { key: other.key });
    expect(theirs.body.map((e) => e.kind)).toEqual(['allowance_grant']);
  });

  it.each(['0', '1001', 'abc', '1.5'])('refuses limit=%s with 422', async (limit) => {
    const problem = expectProblem(
      await call(`${p.api}/account/usage?limit=${limit}`, { key: p.key }),
      422,
      'validation_failed',
    );
    expect(problem.errors?.[0]?.path).toBe('querystring.limit');
  });

  it('needs a key', async () => {
    expectProblem(await call(`${p.api}/account/usage`), 401, 'unauthorized');
  });
});

describe('wharf admin credit', () => {
  it('adds a top-up to an account of a running platform, seen at once by GET /account', async () => {
    const user = await p.newAccount();
    const result = await run([
      'admin',
      'credit',
      '--data-dir',
      p.dataDir,
      '--account',
      user.accountId,
      '--usd',
      '12.50',
      '--json',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      id: expect.stringMatching(/^led_/),
      account_id: user.accountId,
      amount_usd: 12.5,
      balance: expect.objectContaining({ topup_usd: 12.5, available_usd: 17.5 }),
    });
    expect((await account(user.key)).balance).toMatchObject({ topup_usd: 12.5, available_usd: 17.5 });

    const words = await run([
      'admin',
      'credit',
      '--data-dir',
      p.dataDir,
      '--account',
      user.accountId,
      '--usd',
      '3',
    ]);
    expect(words.code).toBe(0);
    expect(words.stdout).toMatch(
      new RegExp(`^Credited \\$3\\.00 to ${user.accountId} \\(entry led_\\w+\\)$`, 'm'),
    );
    expect(words.stdout).toMatch(/^Top-up now \$15\.50, available \$20\.50$/m);
    const usage = await call<UsageEntry[]>(`${p.api}/account/usage`, { key: user.key });
    expect(usage.body.slice(0, 2).map((e) => [e.kind, e.amount_usd])).toEqual([
      ['topup', 3],
      ['topup', 12.5],
    ]);
  });

  it('refuses an account that does not exist, and a data dir without a platform, with exit code 1', async () => {
    const missing = await run([
      'admin',
      'credit',
      '--data-dir',
      p.dataDir,
      '--account',
      'acc_nobody',
      '--usd',
      '5',
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe(`wharf: there is no account acc_nobody in ${storeName()}`);
    expect(missing.stderr).not.toContain(
      new URL(p.platform.config.databaseUrl ?? 'postgres://x:unset@h/d').password,
    );
    // A data dir without a platform: for SQLite, whose file opening would create.
    if (p.platform.config.databaseUrl) return;
    const empty = mkdtempSync(join(tmpdir(), 'wharf-credit-'));
    try {
      const result = await run(['admin', 'credit', '--data-dir', empty, '--account', 'acc_x', '--usd', '5']);
      expect(result.code).toBe(1);
      expect(result.stderr.trim()).toBe(`wharf: there is no platform database in ${empty}`);
      expect(existsSync(join(empty, 'platform.db'))).toBe(false);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it.each([
    [['--usd', '0'], /must be more than 0/],
    [['--usd', '-5'], /--usd/],
    [['--usd', '1.234'], /at most 2 decimals/],
    [['--usd', 'ten'], /at most 2 decimals/],
    [['--usd', '1000001'], /at most 1000000/],
    [[], /--usd/],
  ])('exits with 2 and says what is wrong for %j', async (extra, message) => {
    const result = await run([
      'admin',
      'credit',
      '--data-dir',
      p.dataDir,
      '--account',
      p.accountId,
      ...extra,
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });

  it('exits with 2 for a malformed or missing --account', async () => {
    const bad = await run(['admin', 'credit', '--data-dir', p.dataDir, '--account', 'bob', '--usd', '1']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/must be an account id/);
    expect((await run(['admin', 'credit', '--data-dir', p.dataDir, '--usd', '1'])).code).toBe(2);
    // Nothing was credited by any of the refused commands.
    expect((await account()).balance.topup_usd).toBe(0);
  });
});
