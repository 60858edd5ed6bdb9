// The email verification endpoints of API.md §6 over HTTP, against a local DNS server and a local MX
// host: results and their cost, the ledger charged only for results that say something, 402 before
// any work when the balance cannot cover it, the daily cap, scopes and bad input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Account, UsageEntry } from '../../src/shared/api/account.js';
import { EmailBatchResult, EmailVerification } from '../../src/shared/api/email.js';
import { type FakeSmtp, startSmtp } from '../helpers/mail.js';
import { type FakeDns, type Zone, startDns } from '../helpers/dns.js';
import { call, expectProblem, startPlatform, type TestPlatform } from '../helpers/platform.js';
import { EMAIL_RESULT, expectSpec } from '../helpers/spec-contract.js';

let dns: FakeDns;
let smtp: FakeSmtp;
let p: TestPlatform;

beforeAll(async () => {
  dns = await startDns({
    'example.test': { MX: [{ exchange: 'mx.example.test', priority: 10 }] },
    'mx.example.test': { A: ['127.0.0.1'] },
    'broken.test': { servfail: true },
  });
  smtp = await startSmtp({
    rcpt: (address) =>
      address.startsWith('ghost@') ? { code: 550, message: '5.1.1 no such user here' } : null,
  });
  p = await startPlatform({
    dnsServers: [dns.server],
    dnsTimeoutMs: 1_000,
    emailDailyCap: 12,
    prices: { email_verification_usd: 0.25, email_smtp_probe_usd: 1 },
    email: {
      smtpPort: smtp.port,
      allowPrivate: true,
      connectTimeoutMs: 1_000,
      replyTimeoutMs: 1_000,
    },
  });
}, 30_000);

afterAll(async () => {
  await p?.close();
  await smtp?.close();
  await dns?.close();
});

async function balance(key: string): Promise<Account> {
  const result = await call(`${p.api}/account`, { key });
  return Account.parse(result.body);
}

describe('POST /email/verify', () => {
  it('probes the mailbox, charges the SMTP price and says so in cost_usd and the usage', async () => {
    const user = await p.newAccount();
    const result = await call(`${p.api}/email/verify`, {
      key: user.key,
      body: { email: 'ghost@example.test', smtp_probe: true },
    });
    expect(result.status).toBe(200);
    const body = EmailVerification.parse(result.body);
    expect(body).toMatchObject({
      score: 'invalid',
      reason: 'mailbox_not_found',
      has_mx: true,
      mx_records: ['mx.example.test'],
      mailbox_checked: true,
      cost_usd: 1,
      smtp: { mx_host: 'mx.example.test', code: 550 },
    });
    const account = await balance(user.key);
    expect(account.balance.available_usd).toBe(4);
    expect(account.email_verifications_today).toBe(1);
    const usage = await call(`${p.api}/account/usage`, { key: user.key });
    const entries = UsageEntry.array().parse(usage.body);
    expect(entries[0]).toMatchObject({ kind: 'email_verification', amount_usd: -1 });
    expect(entries[0]!.description).toContain('ghost@example.test');
  });

  it('charges nothing for bad syntax or an unknown result, but counts them toward the cap', async () => {
    const user = await p.newAccount();
    const syntax = await call(`${p.api}/email/verify`, { key: user.key, body: { email: 'not an address' } });
    expect(EmailVerification.parse(syntax.body)).toMatchObject({
      score: 'invalid',
      reason: 'invalid_syntax',
      cost_usd: 0,
    });
    const failing = await call(`${p.api}/email/verify`, { key: user.key, body: { email: 'a@broken.test' } });
    expect(EmailVerification.parse(failing.body)).toMatchObject({ score: 'unknown', cost_usd: 0 });
    const account = await balance(user.key);
    expect(account.balance.available_usd).toBe(5);
    expect(account.email_verifications_today).toBe(2);
  });

  it('answers 402 with what is needed and available before doing any work', async () => {
    const user = await p.newAccount();
    // $5 of allowance pays for five probes at $1 (each finds a catch-all domain: billable); not a sixth.
    for (let i = 0; i < 5; i++) {
      const ok = await call(`${p.api}/email/verify`, {
        key: user.key,
        body: { email: `someone${i}@example.test`, smtp_probe: true },
      });
      expect(ok.status).toBe(200);
    }
    const rcptsBefore = smtp.stats.rcpts.length;
    const refused = await call(`${p.api}/email/verify`, {
      key: user.key,
      body: { email: 'late@example.test', smtp_probe: true },
    });
    const problem = expectProblem(refused, 402, 'insufficient_balance');
    expect(problem).toMatchObject({ required_usd: 1, available_usd: 0 });
    expect(smtp.stats.rcpts.length).toBe(rcptsBefore);
    expect((await balance(user.key)).email_verifications_today).toBe(5);
  });

  it('answers 429 daily_cap_reached with Retry-After once the cap is used up', async () => {
    const user = await p.newAccount();
    const batch = await call(`${p.api}/email/verify/batch`, {
      key: user.key,
      body: { emails: Array.from({ length: 12 }, (_, i) => `user${i}@example.test`) },
    });
    expect(batch.status).toBe(200);
    const capped = await call(`${p.api}/email/verify`, {
      key: user.key,
      body: { email: 'one@example.test' },
    });
    expectProblem(capped, 429, 'daily_cap_reached');
    expect(Number(capped.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('refuses bad bodies with 422 and keys without the email scope with 403', async () => {
    const user = await p.newAccount();
    expectProblem(await call(`${p.api}/email/verify`, { key: user.key, body: {} }), 422, 'validation_failed');
    expectProblem(
      await call(`${p.api}/email/verify`, { key: user.key, body: { email: 'a@b.test', smtp_probe: 'yes' } }),
      422,
      'validation_failed',
    );
    const deployOnly = await p.newAccount({ scopes: ['deploy'] });
    expectProblem(
      await call(`${p.api}/email/verify`, { key: deployOnly.key, body: { email: 'a@example.test' } }),
      403,
      'forbidden',
    );
    const emailOnly = await p.newAccount({ scopes: ['email'] });
    expect(
      (await call(`${p.api}/email/verify`, { key: emailOnly.key, body: { email: 'a@example.test' } })).status,
    ).toBe(200);
  });
});

describe('the result, field by field as SPEC.md §2.5 has it', () => {
  /** SPEC.md §2.5's table: every field and its JSON type. */
  /** What may follow the SPEC fields (API.md §6: extra fields may follow), none repeating one of them. */
  const EXTRAS = ['confidence', 'mx_records', 'smtp', 'cost_usd', 'checked_at'];

  function expectSpecShape(result: Record<string, unknown>) {
    expectSpec(result, EMAIL_RESULT, 'the email result');
    expect(Object.keys(result).sort()).toEqual([...Object.keys(EMAIL_RESULT), ...EXTRAS].sort());
  }

  it.each([
    ['a probed mailbox', { email: 'ghost@example.test', smtp_probe: true }],
    ['a check without a probe', { email: 'Jane@Example.TEST' }],
    ['bad syntax', { email: '  not an address  ' }],
    ['a DNS failure', { email: 'a@broken.test' }],
  ])('has every field with its type, and nothing else but the extras, for %s', async (_name, body) => {
    const user = await p.newAccount();
    const result = await call<Record<string, unknown>>(`${p.api}/email/verify`, { key: user.key, body });
    expect(result.status).toBe(200);
    expectSpecShape(result.body);
  });

  it('says the score as a word, the suggestion as a string and whether a probe ran', async () => {
    const user = await p.newAccount();
    const probed = await call(`${p.api}/email/verify`, {
      key: user.key,
      body: { email: 'Jane@Example.TEST', smtp_probe: true },
    });
    expect(probed.body).toMatchObject({
      email: 'Jane@Example.TEST',
      normalized: 'Jane@example.test',
      domain: 'example.test',
      score: 'risky',
      reason: 'catch_all',
      mailbox_checked: true,
      catch_all: true,
      suggestion: '',
    });
    const plain = await call(`${p.api}/email/verify`, {
      key: user.key,
      body: { email: 'info@example.test' },
    });
    expect(plain.body).toMatchObject({
      score: 'risky',
      reason: 'role_account',
      role_based: true,
      mailbox_checked: false,
      catch_all: false,
    });
    const bad = await call(`${p.api}/email/verify`, { key: user.key, body: { email: '  not an address  ' } });
    expect(bad.body).toMatchObject({
      normalized: 'not an address',
      domain: '',
      score: 'invalid',
      reason: 'invalid_syntax',
      has_mx: false,
      suggestion: '',
    });
  });

  it('answers a batch as { count, results } with each result of that same shape', async () => {
    const user = await p.newAccount();
    const emails = ['jane@example.test', 'bad@', 'x@broken.test'];
    const result = await call<{ count: number; results: Array<Record<string, unknown>> }>(
      `${p.api}/email/verify/batch`,
      { key: user.key, body: { emails } },
    );
    expect(result.status).toBe(200);
    expect(Object.keys(result.body).sort()).toEqual(['count', 'results']);
    expect(result.body.count).toBe(3);
    for (const item of result.body.results) expectSpecShape(item);
    expect(result.body.results[1]).toMatchObject({ email: 'bad@', domain: '', score: 'invalid' });
  });
});

describe('POST /email/verify/batch', () => {
  it('answers in input order, checks a duplicate once and charges it once', async () => {
    const user = await p.newAccount();
    const emails = ['b@example.test', 'not-an-address', 'A@Example.test', 'b@example.test', 'c@broken.test'];
    const result = await call(`${p.api}/email/verify/batch`, { key: user.key, body: { emails } });
    expect(result.status).toBe(200);
    const body = EmailBatchResult.parse(result.body);
    expect(body.count).toBe(5);
    expect(body.results.map((r) => r.email)).toEqual(emails);
    expect(body.results.map((r) => r.cost_usd)).toEqual([0.25, 0, 0.25, 0, 0]);
    expect(body.results[1]!.reason).toBe('invalid_syntax');
    expect(body.results[4]!.score).toBe('unknown');
    expect((await balance(user.key)).balance.available_usd).toBe(4.5);
  });

  it('refuses an empty batch and one over 100 addresses', async () => {
    expectProblem(
      await call(`${p.api}/email/verify/batch`, { key: p.key, body: { emails: [] } }),
      422,
      'validation_failed',
    );
    const tooMany = Array.from({ length: 101 }, (_, i) => `u${i}@example.test`);
    expectProblem(
      await call(`${p.api}/email/verify/batch`, { key: p.key, body: { emails: tooMany } }),
      422,
      'validation_failed',
    );
  });
});

describe('the per-domain probe limit (SPEC.md §4.4), measured at the mail server', () => {
  const DOMAINS = 10;
  let limitDns: FakeDns;
  let mailServer: FakeSmtp;
  let limited: TestPlatform | null = null;

  beforeAll(async () => {
    const zone: Zone = {};
    for (let i = 0; i < DOMAINS; i += 1) {
      // Two MX hosts per domain, both on the one fake server: every connection to either counts.
      zone[`d${i}.limit.test`] = {
        MX: [
          { exchange: `mx1.d${i}.limit.test`, priority: 10 },
          { exchange: `mx2.d${i}.limit.test`, priority: 20 },
        ],
      };
      zone[`mx1.d${i}.limit.test`] = { A: ['127.0.0.1'] };
      zone[`mx2.d${i}.limit.test`] = { A: ['127.0.0.1'] };
    }
    limitDns = await startDns(zone);
    // Every reply held back a little so that probes of one domain overlap; the catch-all test's random
    // address is refused, every other one accepted.
    mailServer = await startSmtp({
      replyDelayMs: 20,
      rcpt: (address) =>
        address.startsWith('wharf-probe-') ? { code: 550, message: '5.1.1 unknown' } : null,
    });
  }, 30_000);

  afterAll(async () => {
    await limited?.close();
    await mailServer?.close();
    await limitDns?.close();
  });

  async function platformWith(perDomainConcurrency?: number): Promise<TestPlatform> {
    await limited?.close();
    limited = await startPlatform({
      dnsServers: [limitDns.server],
      dnsTimeoutMs: 2_000,
      email: {
        smtpPort: mailServer.port,
        allowPrivate: true,
        connectTimeoutMs: 5_000,
        replyTimeoutMs: 5_000,
        ...(perDomainConcurrency === undefined ? {} : { perDomainConcurrency }),
      },
    });
    return limited;
  }

  const batchOf100 = () =>
    Array.from({ length: 100 }, (_, n) => `user${Math.floor(n / DOMAINS)}@d${n % DOMAINS}.limit.test`);

  it.each([
    ['the default of 2', undefined, 2],
    ['email.perDomainConcurrency 1', 1, 1],
    ['email.perDomainConcurrency 3', 3, 3],
  ])(
    'holds %s sessions at once per mail domain through a batch of 100 addresses over 10 domains',
    async (_name, configured, expected) => {
      const platform = await platformWith(configured);
      mailServer.resetConcurrency();
      const emails = batchOf100();
      const result = await call(`${platform.api}/email/verify/batch`, {
        key: platform.key,
        body: { emails, smtp_probe: true },
      });
      expect(result.status, JSON.stringify(result.body)).toBe(200);
      const body = EmailBatchResult.parse(result.body);
      expect(body.results.map((r) => r.email)).toEqual(emails);
      expect(body.results.every((r) => r.reason === 'mailbox_exists' && r.mailbox_checked)).toBe(true);
      const seen = mailServer.stats.maxConcurrentByDomain;
      expect(Object.keys(seen).sort()).toEqual(
        Array.from({ length: DOMAINS }, (_, i) => `d${i}.limit.test`).sort(),
      );
      for (const [domain, most] of Object.entries(seen)) expect(most, domain).toBeLessThanOrEqual(expected);
      // The limit is used, not only respected: some domain had that many probes at once.
      expect(Math.max(...Object.values(seen))).toBe(expected);
    },
    30_000,
  );
});
