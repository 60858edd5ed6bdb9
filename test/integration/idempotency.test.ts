// Idempotency-Key on the metered email endpoints (API.md §1, §6), against a local DNS server and a slow
// local MX host: the key is reserved before any work, so concurrent duplicates run the verification
// once and are charged once; the same key with another body is refused (422) without any work or
// charge; a failed first attempt leaves nothing that blocks its retry; keys are the account's own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Account, UsageEntry } from '../../src/shared/api/account.js';
import { EmailVerification } from '../../src/shared/api/email.js';
import { type FakeSmtp, startSmtp } from '../helpers/mail.js';
import { type FakeDns, startDns } from '../helpers/dns.js';
import { call, expectProblem, startPlatform, type TestPlatform } from '../helpers/platform.js';

let dns: FakeDns;
let smtp: FakeSmtp;
let p: TestPlatform;

/** The probe price: a new (free) account's $5 allowance covers one probe and not two. */
const PROBE_USD = 3;

beforeAll(async () => {
  dns = await startDns({
    'idem.test': { MX: [{ exchange: 'mx.idem.test', priority: 10 }] },
    'mx.idem.test': { A: ['127.0.0.1'] },
  });
  // Every reply waits, so a probe lasts long enough for duplicates to arrive while it runs.
  smtp = await startSmtp({ replyDelayMs: 150 });
  p = await startPlatform({
    dnsServers: [dns.server],
    dnsTimeoutMs: 1_000,
    emailDailyCap: 1_000,
    prices: { email_verification_usd: 0.5, email_smtp_probe_usd: PROBE_USD },
    email: { smtpPort: smtp.port, allowPrivate: true, connectTimeoutMs: 2_000, replyTimeoutMs: 3_000 },
  });
}, 30_000);

afterAll(async () => {
  await p?.close();
  await smtp?.close();
  await dns?.close();
});

async function usage(key: string): Promise<UsageEntry[]> {
  return UsageEntry.array().parse((await call(`${p.api}/account/usage`, { key })).body);
}

async function account(key: string): Promise<Account> {
  return Account.parse((await call(`${p.api}/account`, { key })).body);
}

const charges = async (key: string) => (await usage(key)).filter((e) => e.kind === 'email_verification');
const probesOf = (address: string) => smtp.stats.rcpts.filter((rcpt) => rcpt === address).length;

function verify(key: string, body: unknown, idempotencyKey?: string, path = '/email/verify') {
  return call(`${p.api}${path}`, {
    key,
    body,
    headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey },
  });
}

describe('Idempotency-Key on POST /email/verify', () => {
  it('runs 10 concurrent duplicates once: one probe, one charge, the rest the stored answer or 409', async () => {
    const user = await p.newAccount();
    const address = 'parallel@idem.test';
    const body = { email: address, smtp_probe: true };
    const results = await Promise.all(
      Array.from({ length: 10 }, () => verify(user.key, body, 'parallel-key-1')),
    );
    const ok = results.filter((r) => r.status === 200);
    const busy = results.filter((r) => r.status === 409);
    expect(ok.length + busy.length, JSON.stringify(results.map((r) => r.status))).toBe(10);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const conflict of busy) {
      const problem = expectProblem(conflict, 409, 'conflict');
      expect(problem.detail).toMatch(/still in progress/);
    }
    const first = EmailVerification.parse(ok[0]!.body);
    expect(first).toMatchObject({ email: address, has_mx: true, cost_usd: PROBE_USD });
    for (const same of ok) expect(same.body).toEqual(ok[0]!.body);

    expect(probesOf(address)).toBe(1);
    expect(await charges(user.key)).toHaveLength(1);
    expect((await account(user.key)).balance.available_usd).toBe(5 - PROBE_USD);

    // Once it has finished, the same request gets the stored answer: same status, same JSON, no work.
    const again = await verify(user.key, body, 'parallel-key-1');
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(ok[0]!.body);
    expect(probesOf(address)).toBe(1);
    expect(await charges(user.key)).toHaveLength(1);
    // The body's key order and an explicit default do not make another request.
    const reordered = await verify(user.key, { smtp_probe: true, email: address }, 'parallel-key-1');
    expect(reordered.status).toBe(200);
    expect(reordered.body).toEqual(ok[0]!.body);
  }, 30_000);

  it('refuses the same key with another address with 422 idempotency_key_reused, and charges nothing', async () => {
    const user = await p.newAccount();
    const first = await verify(user.key, { email: 'first@idem.test' }, 'reused-key');
    expect(first.status).toBe(200);
    const before = await account(user.key);
    const probesBefore = smtp.stats.rcpts.length;

    const other = await verify(user.key, { email: 'second@idem.test', smtp_probe: true }, 'reused-key');
    const problem = expectProblem(other, 422, 'idempotency_key_reused');
    expect(problem.detail).toMatch(/different request/);
    const flagOnly = await verify(user.key, { email: 'first@idem.test', smtp_probe: true }, 'reused-key');
    expectProblem(flagOnly, 422, 'idempotency_key_reused');

    expect(smtp.stats.rcpts.length).toBe(probesBefore);
    expect(await charges(user.key)).toHaveLength(1);
    const after = await account(user.key);
    expect(after.balance.available_usd).toBe(before.balance.available_usd);
    expect(after.email_verifications_today).toBe(before.email_verifications_today);
  });

  it("treats another account's use of the same key as its own request", async () => {
    const a = await p.newAccount();
    const b = await p.newAccount();
    const fromA = await verify(a.key, { email: 'alice@idem.test', smtp_probe: true }, 'shared-key');
    expect(fromA.status).toBe(200);
    const fromB = await verify(b.key, { email: 'bob@idem.test', smtp_probe: true }, 'shared-key');
    expect(fromB.status).toBe(200);
    expect(fromB.headers.get('idempotent-replayed')).toBeNull();
    expect(EmailVerification.parse(fromB.body).email).toBe('bob@idem.test');
    expect(probesOf('bob@idem.test')).toBe(1);
    expect(await charges(a.key)).toHaveLength(1);
    expect(await charges(b.key)).toHaveLength(1);
    // B's identical request with A's key is not answered with A's result either.
    const sameAsA = await verify(b.key, { email: 'alice@idem.test', smtp_probe: true }, 'shared-key');
    expectProblem(sameAsA, 422, 'idempotency_key_reused');
  });

  it('scopes a key to its endpoint: the batch endpoint runs its own request under the same key', async () => {
    const user = await p.newAccount();
    const single = await verify(user.key, { email: 'one@idem.test' }, 'endpoint-key');
    expect(single.status).toBe(200);
    const batch = await verify(
      user.key,
      { emails: ['two@idem.test'] },
      'endpoint-key',
      '/email/verify/batch',
    );
    expect(batch.status).toBe(200);
    expect(batch.body).toMatchObject({ count: 1, results: [{ email: 'two@idem.test' }] });
    expect(await charges(user.key)).toHaveLength(2);
    const replay = await verify(
      user.key,
      { emails: ['two@idem.test'] },
      'endpoint-key',
      '/email/verify/batch',
    );
    expect(replay.body).toEqual(batch.body);
    expect(await charges(user.key)).toHaveLength(2);
  });

  it('stores nothing for a request refused with 402: the same key runs once the balance covers it', async () => {
    const user = await p.newAccount();
    const first = await verify(user.key, { email: 'paid@idem.test', smtp_probe: true });
    expect(first.status).toBe(200);
    // $2 left: the next probe ($3) is refused before any work.
    const refused = await verify(user.key, { email: 'retry@idem.test', smtp_probe: true }, 'retry-key');
    expectProblem(refused, 402, 'insufficient_balance');
    expect(probesOf('retry@idem.test')).toBe(0);
    await p.platform.ledger.topUp({ accountId: user.accountId, micros: 10_000_000, description: 'test' });
    const retried = await verify(user.key, { email: 'retry@idem.test', smtp_probe: true }, 'retry-key');
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(probesOf('retry@idem.test')).toBe(1);
  });

  it('releases a request whose charge fails after the work (402), so its retry runs anew', async () => {
    const user = await p.newAccount();
    // Both pass the balance check ($5 each covers $3); the second to finish cannot be charged.
    const [one, two] = await Promise.all([
      verify(user.key, { email: 'race-one@idem.test', smtp_probe: true }, 'race-1'),
      verify(user.key, { email: 'race-two@idem.test', smtp_probe: true }, 'race-2'),
    ]);
    const statuses = [one.status, two.status].sort();
    expect(statuses).toEqual([200, 402]);
    const [lostKey, lostEmail] = one.status === 402 ? ['race-1', 'race-one'] : ['race-2', 'race-two'];
    expect(await charges(user.key)).toHaveLength(1);
    const today = (await account(user.key)).email_verifications_today;
    expect(today).toBe(1);

    await p.platform.ledger.topUp({ accountId: user.accountId, micros: 10_000_000, description: 'test' });
    const retried = await verify(user.key, { email: `${lostEmail}@idem.test`, smtp_probe: true }, lostKey);
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(await charges(user.key)).toHaveLength(2);
  }, 30_000);

  it('forgets a stored answer once it expires: the key then names a new request, charged anew', async () => {
    const user = await p.newAccount();
    const first = await verify(user.key, { email: 'old@idem.test' }, 'expiring-key');
    expect(first.status).toBe(200);
    await p.platform.db
      .updateTable('idempotency_keys')
      .set({ expires_at: new Date(Date.now() - 1_000).toISOString() })
      .where('account_id', '=', user.accountId)
      .execute();
    const later = await verify(user.key, { email: 'new@idem.test' }, 'expiring-key');
    expect(later.status).toBe(200);
    expect(EmailVerification.parse(later.body).email).toBe('new@idem.test');
    expect(await charges(user.key)).toHaveLength(2);
    const rows = await p.platform.db
      .selectFrom('idempotency_keys')
      .select('key')
      .where('expires_at', '<=', new Date().toISOString())
      .execute();
    expect(rows).toEqual([]);
  });

  it('runs again a request whose node died while running it (its reservation is freed), not one alive', async () => {
    const user = await p.newAccount();
    const body = { email: 'orphan@idem.test' };
    expect((await verify(user.key, body, 'orphan-key')).status).toBe(200);
    const row = () =>
      p.platform.db.selectFrom('idempotency_keys').selectAll().where('account_id', '=', user.accountId);
    const { node_id: here } = await row().executeTakeFirstOrThrow();
    expect(here).toMatch(/^node_/);
    // As the row of a request still running: on this node (alive), a duplicate waits for it.
    const inFlight = { state: 'in_flight' as const, status: null, response: null };
    await p.platform.db
      .updateTable('idempotency_keys')
      .set(inFlight)
      .where('account_id', '=', user.accountId)
      .execute();
    expectProblem(await verify(user.key, body, 'orphan-key'), 409, 'conflict');
    // On a node that is gone (killed mid-request: nothing charged or stored), the retry runs here.
    await p.platform.db
      .updateTable('idempotency_keys')
      .set({ ...inFlight, node_id: 'node_gone' })
      .where('account_id', '=', user.accountId)
      .execute();
    const retried = await verify(user.key, body, 'orphan-key');
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(await row().select('state').executeTakeFirstOrThrow()).toMatchObject({
      state: 'done',
      node_id: here,
    });
    expect(await charges(user.key)).toHaveLength(2);
  });

  it('refuses a key that is empty, longer than 255 characters or not printable ASCII with 400', async () => {
    const user = await p.newAccount();
    for (const bad of ['', 'k'.repeat(256), 'clé-non-ascii']) {
      const result = await verify(user.key, { email: 'bad-key@idem.test' }, bad);
      const problem = expectProblem(result, 400, 'bad_request');
      expect(problem.detail).toMatch(/Idempotency-Key/);
    }
    expect(await charges(user.key)).toHaveLength(0);
    expect((await account(user.key)).email_verifications_today).toBe(0);
    const longest = await verify(user.key, { email: 'bad-key@idem.test' }, 'k'.repeat(255));
    expect(longest.status).toBe(200);
  });

  it('charges every request sent without a key', async () => {
    const user = await p.newAccount();
    expect((await verify(user.key, { email: 'nokey@idem.test' })).status).toBe(200);
    expect((await verify(user.key, { email: 'nokey@idem.test' })).status).toBe(200);
    expect(await charges(user.key)).toHaveLength(2);
  });
});
