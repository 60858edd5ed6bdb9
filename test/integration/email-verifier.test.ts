// The email verifier end to end on loopback: a real DNS server (dns2) answering from a zone and real
// SMTP servers (smtp-server) playing mail hosts that accept, reject, greylist, block, stall or refuse.
// All MX hosts share one SMTP port on different loopback addresses, as the verifier probes one port.
import { createSocket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/server/config.js';
import {
  CATCH_ALL_TTL_MS,
  EmailVerifier,
  type EmailVerifierOptions,
  isBillable,
} from '../../src/server/email/index.js';
import { EmailVerification } from '../../src/shared/api/email.js';
import { type FakeSmtp, startSmtp } from '../helpers/mail.js';
import { type FakeDns, type Zone, startDns } from '../helpers/dns.js';

// Generous for the fakes that answer (a busy machine may stall a reply); the slow ones wait longer still.
const REPLY_TIMEOUT_MS = 1_500;
const BATCH_DOMAINS = 10;

let dns: FakeDns;
const servers: FakeSmtp[] = [];
let main: FakeSmtp;
let provider: FakeSmtp;
const batchServers: FakeSmtp[] = [];
let port: number;
const verifiers: EmailVerifier[] = [];

function rcptFor(address: string): { code: number; message: string } | null {
  const [local, domain] = address.toLowerCase().split('@') as [string, string];
  switch (domain) {
    case 'catchall.test':
      return local === 'disabled' ? { code: 550, message: '5.2.1 mailbox disabled' } : null;
    case 'grey.test':
      return { code: 451, message: '4.7.1 Greylisting in action, please come back later' };
    case 'postgrey.test':
      return {
        code: 450,
        message: `4.2.0 <${address}>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/`,
      };
    case 'blocked.test':
      return { code: 554, message: '5.7.1 Service unavailable; client host blocked using zen.spamhaus.org' };
    case 'full.test':
      return { code: 552, message: '5.2.2 mailbox full' };
    default:
      // Every other domain knows alice, bob and info only.
      return ['alice', 'bob', 'info'].includes(local) ? null : { code: 550, message: '5.1.1 user unknown' };
  }
}

const mx = (exchange: string, priority = 10) => ({ exchange, priority });

const zone: Zone = {
  'mx.local.test': { A: ['127.0.0.1'] },
  'dead.local.test': { A: ['127.0.0.2'] },
  'busy.local.test': { A: ['127.0.0.3'] },
  'slow.local.test': { A: ['127.0.0.4'] },
  'silent.local.test': { A: ['127.0.0.5'] },
  'old.local.test': { A: ['127.0.0.6'] },
  'exists.test': { MX: [mx('mx.local.test')] },
  'catchall.test': { MX: [mx('mx.local.test')] },
  'grey.test': { MX: [mx('mx.local.test')] },
  'postgrey.test': { MX: [mx('mx.local.test')] },
  'blocked.test': { MX: [mx('mx.local.test')] },
  'full.test': { MX: [mx('mx.local.test')] },
  'sorted.test': { MX: [mx('mx.local.test', 20), mx('dead.local.test', 30), mx('busy.local.test', 5)] },
  'noMX.test': { A: ['127.0.0.1'] },
  'nothing.test': {},
  'nullmx.test': { MX: [mx('', 0)], A: ['127.0.0.1'] },
  'broken.test': { servfail: true },
  'fallback.test': { MX: [mx('dead.local.test', 10), mx('mx.local.test', 20)] },
  'busy.test': { MX: [mx('busy.local.test', 10), mx('mx.local.test', 20)] },
  'slow.test': { MX: [mx('slow.local.test', 10), mx('mx.local.test', 20)] },
  'slowonly.test': { MX: [mx('slow.local.test')] },
  'silent.test': { MX: [mx('silent.local.test')] },
  'old.test': { MX: [mx('old.local.test')] },
  'alias.test': { CNAME: 'exists.test' },
  'mailinator.com': { MX: [mx('mx.local.test')] },
  'inbox.mailinator.com': { MX: [mx('mx.local.test')] },
  'gmial.com': { MX: [mx('mx.local.test')] },
  'a.provider.test': { A: ['127.0.0.7'] },
  'b.provider.test': { A: ['127.0.0.7'] },
  'p1.test': { MX: [mx('a.provider.test')] },
  'p2.test': { MX: [mx('b.provider.test')] },
};
for (let i = 0; i < BATCH_DOMAINS; i += 1) {
  zone[`b${i}.test`] = { MX: [mx(`mx.b${i}.test`)] };
  zone[`mx.b${i}.test`] = { A: [`127.0.0.${10 + i}`] };
}

beforeAll(async () => {
  dns = await startDns(zone);
  main = await startSmtp({ rcpt: rcptFor });
  port = main.port;
  servers.push(main);
  servers.push(await startSmtp({ host: '127.0.0.3', port, greeting421: true }));
  servers.push(await startSmtp({ host: '127.0.0.4', port, bannerDelayMs: REPLY_TIMEOUT_MS + 1_000 }));
  servers.push(await startSmtp({ host: '127.0.0.5', port, silent: true }));
  servers.push(await startSmtp({ host: '127.0.0.6', port, ehlo: 'reject', rcpt: rcptFor }));
  provider = await startSmtp({ host: '127.0.0.7', port, replyDelayMs: 10, rcpt: rcptFor });
  servers.push(provider);
  for (let i = 0; i < BATCH_DOMAINS; i += 1)
    batchServers.push(await startSmtp({ host: `127.0.0.${10 + i}`, port, replyDelayMs: 15, rcpt: rcptFor }));
  servers.push(...batchServers);
});

afterAll(async () => {
  for (const verifier of verifiers) verifier.close();
  await Promise.all(servers.map((server) => server.close()));
  await dns?.close();
});

function verifier(overrides: Partial<EmailVerifierOptions['email']> = {}, now?: () => number): EmailVerifier {
  const config = resolveConfig({
    email: {
      smtpPort: port,
      connectTimeoutMs: REPLY_TIMEOUT_MS,
      replyTimeoutMs: REPLY_TIMEOUT_MS,
      allowPrivate: true,
      ...overrides,
    },
  });
  const created = new EmailVerifier({
    dnsServers: [dns.server],
    dnsTimeoutMs: 1_500,
    email: config.email,
    now,
  });
  verifiers.push(created);
  return created;
}

const probe = { smtp: true };

/** Verifies with a fresh verifier (no cached catch-all answer) and checks the result's schema. */
async function check(address: string, overrides: Partial<EmailVerifierOptions['email']> = {}) {
  const result = await verifier(overrides).verify(address, probe);
  expect(EmailVerification.safeParse(result).success).toBe(true);
  return result;
}

describe('mailboxes that exist or not', () => {
  it('finds an existing mailbox: valid, mailbox_exists, confidence 97, with the deciding 250', async () => {
    const result = await check('alice@exists.test');
    expect(result).toMatchObject({
      email: 'alice@exists.test',
      normalized: 'alice@exists.test',
      domain: 'exists.test',
      score: 'valid',
      reason: 'mailbox_exists',
      syntax_valid: true,
      has_mx: true,
      disposable: false,
      role_based: false,
      free_provider: false,
      suggestion: '',
      mailbox_checked: true,
      catch_all: false,
      confidence: 97,
      mx_records: ['mx.local.test'],
      cost_usd: 0,
      smtp: { mx_host: 'mx.local.test', code: 250 },
    });
    // SPEC.md §2.5 names only: the words of the old shape are gone.
    expect(result).not.toHaveProperty('status');
    expect(result).not.toHaveProperty('role_account');
    expect(result).not.toHaveProperty('mailbox_exists');
    expect(isBillable(result)).toBe(true);
  });

  it('reads 550 5.1.1 as invalid/mailbox_not_found and does not test for catch-all', async () => {
    const before = main.stats.rcpts.length;
    const result = await check('nobody@exists.test');
    expect(result).toMatchObject({
      score: 'invalid',
      reason: 'mailbox_not_found',
      confidence: 5,
      mailbox_checked: true,
      catch_all: false,
      smtp: { mx_host: 'mx.local.test', code: 550, enhanced_code: '5.1.1', message: 'user unknown' },
    });
    expect(main.stats.rcpts.slice(before)).toEqual(['nobody@exists.test']);
  });

  it('tells a catch-all domain: risky/catch_all, the target probed before the random address', async () => {
    const before = main.stats.rcpts.length;
    const result = await check('whoever@catchall.test');
    expect(result).toMatchObject({
      score: 'risky',
      reason: 'catch_all',
      confidence: 60,
      catch_all: true,
      mailbox_checked: true,
    });
    const rcpts = main.stats.rcpts.slice(before);
    expect(rcpts).toHaveLength(2);
    expect(rcpts[0]).toBe('whoever@catchall.test');
    expect(rcpts[1]).toMatch(/^wharf-probe-[0-9a-f]+@catchall\.test$/);
  });

  it('caches the catch-all answer per domain for an hour of the injected clock', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z');
    const shared = verifier({}, () => clock);
    const rcpts = async (address: string) => {
      const before = main.stats.rcpts.length;
      const result = await shared.verify(address, probe);
      expect(result.reason).toBe('catch_all');
      return main.stats.rcpts.slice(before).length;
    };
    expect(await rcpts('one@catchall.test')).toBe(2);
    clock += CATCH_ALL_TTL_MS - 1;
    expect(await rcpts('two@catchall.test')).toBe(1);
    clock += 1;
    expect(await rcpts('three@catchall.test')).toBe(2);
  });

  it('reads 550 5.2.1 on a catch-all domain as mailbox_not_found', async () => {
    const result = await check('disabled@catchall.test');
    expect(result).toMatchObject({
      score: 'invalid',
      reason: 'mailbox_not_found',
      smtp: { code: 550, enhanced_code: '5.2.1', message: 'mailbox disabled' },
    });
  });

  it('falls back to HELO when EHLO is refused', async () => {
    const result = await check('bob@old.test');
    expect(result).toMatchObject({
      reason: 'mailbox_exists',
      smtp: { mx_host: 'old.local.test', code: 250 },
    });
  });
});

describe('replies that prove nothing', () => {
  it.each([
    ['451 greylisting', 'someone@grey.test', 451, '4.7.1'],
    ['Postgrey 450 4.2.0 Greylisted', 'someone@postgrey.test', 450, '4.2.0'],
    ['554 5.7.1 blocklist', 'someone@blocked.test', 554, '5.7.1'],
    ['552 5.2.2 mailbox full', 'someone@full.test', 552, '5.2.2'],
  ])('reads %s as unknown/smtp_inconclusive, never invalid', async (_name, address, code, enhanced) => {
    const result = await check(address);
    expect(result).toMatchObject({
      score: 'unknown',
      reason: 'smtp_inconclusive',
      confidence: 50,
      mailbox_checked: true,
      catch_all: false,
      smtp: { code, enhanced_code: enhanced },
    });
    expect(isBillable(result)).toBe(false);
  });

  it('gives up on a banner slower than the reply time-out', async () => {
    const started = Date.now();
    const result = await check('alice@slowonly.test');
    expect(result).toMatchObject({ score: 'unknown', reason: 'smtp_inconclusive', has_mx: true });
    expect(result.smtp?.message).toMatch(new RegExp(`no banner within ${REPLY_TIMEOUT_MS} ms`));
    // Gave up at the time-out, before the banner would have come.
    expect(Date.now() - started).toBeLessThan(REPLY_TIMEOUT_MS + 1_000);
  });

  it('gives up on a host that accepts the connection and never speaks', async () => {
    const result = await check('alice@silent.test');
    expect(result).toMatchObject({ score: 'unknown', reason: 'smtp_inconclusive' });
    expect(result.smtp?.message).toMatch(/silent\.local\.test.*no banner/);
  });
});

describe('MX hosts in preference order', () => {
  it('sorts MX records by preference', async () => {
    const result = await verifier().verify('alice@sorted.test', { smtp: false });
    expect(result.mx_records).toEqual(['busy.local.test', 'mx.local.test', 'dead.local.test']);
  });

  it('moves on from a first MX with nothing listening (connection refused)', async () => {
    const result = await check('alice@fallback.test');
    expect(result).toMatchObject({ reason: 'mailbox_exists', smtp: { mx_host: 'mx.local.test', code: 250 } });
  });

  it('moves on from a first MX greeting with 421', async () => {
    const busy = servers[1]!;
    const before = busy.stats.connections;
    const result = await check('alice@busy.test');
    expect(result).toMatchObject({ reason: 'mailbox_exists', smtp: { mx_host: 'mx.local.test', code: 250 } });
    expect(busy.stats.connections).toBe(before + 1);
  });

  it('moves on from a first MX whose banner is too slow', async () => {
    const result = await check('alice@slow.test');
    expect(result).toMatchObject({ reason: 'mailbox_exists', smtp: { mx_host: 'mx.local.test' } });
  });

  it('refuses MX hosts on loopback or private addresses unless allowPrivate', async () => {
    const before = main.stats.connections;
    const result = await check('alice@exists.test', { allowPrivate: false });
    expect(result).toMatchObject({ score: 'unknown', reason: 'smtp_inconclusive', has_mx: true });
    expect(result.smtp?.message).toMatch(/private or loopback address \(127\.0\.0\.1\)/);
    expect(main.stats.connections).toBe(before);
  });
});

describe('DNS', () => {
  it('delivers to the domain itself when it has an address but no MX', async () => {
    const result = await check('alice@noMX.test');
    expect(result).toMatchObject({
      normalized: 'alice@nomx.test',
      domain: 'nomx.test',
      has_mx: true,
      mx_records: ['nomx.test'],
      reason: 'mailbox_exists',
      smtp: { mx_host: 'nomx.test' },
    });
  });

  it('follows a CNAME to the MX of its target', async () => {
    const result = await verifier().verify('alice@alias.test', { smtp: false });
    expect(result).toMatchObject({
      has_mx: true,
      mx_records: ['mx.local.test'],
      score: 'valid',
      reason: 'ok',
      confidence: 80,
      mailbox_checked: false,
      catch_all: false,
    });
  });

  it.each([
    ['a null MX', 'alice@nullmx.test'],
    ['no records', 'alice@nothing.test'],
    ['NXDOMAIN', 'alice@nowhere.test'],
  ])('reads %s as invalid/no_mail_server without a probe', async (_name, address) => {
    const before = main.stats.connections;
    const result = await check(address);
    expect(result).toMatchObject({
      score: 'invalid',
      reason: 'no_mail_server',
      confidence: 5,
      has_mx: false,
      mailbox_checked: false,
      mx_records: [],
      smtp: null,
    });
    expect(main.stats.connections).toBe(before);
  });

  it('reads a DNS server failure as unknown: has_mx false (a boolean), the score and reason saying unknown', async () => {
    const result = await check('alice@broken.test');
    expect(result).toMatchObject({
      score: 'unknown',
      reason: 'smtp_inconclusive',
      has_mx: false,
      mailbox_checked: false,
      catch_all: false,
      smtp: null,
    });
    expect(isBillable(result)).toBe(false);
  });

  it('reads a resolver saying a well-known provider does not exist as unknown and free, not invalid', async () => {
    // The fake DNS has no gmail.com: it answers NXDOMAIN, as a filtering or broken resolver does.
    const result = await check('alice@gmail.com');
    expect(result).toMatchObject({
      score: 'unknown',
      reason: 'smtp_inconclusive',
      has_mx: false,
      free_provider: true,
      mailbox_checked: false,
    });
    expect(isBillable(result)).toBe(false);
  });

  it('never calls a reserved example domain a free provider, whatever a list says', async () => {
    expect((await check('alice@example.com')).free_provider).toBe(false);
    expect((await check('alice@mail.example.org')).free_provider).toBe(false);
  });

  it('reads a DNS time-out as unknown', async () => {
    // A UDP socket that reads queries and never answers.
    const mute = createSocket('udp4');
    await new Promise<void>((resolve) => mute.bind(0, '127.0.0.1', resolve));
    try {
      const timeoutVerifier = new EmailVerifier({
        dnsServers: [`127.0.0.1:${mute.address().port}`],
        dnsTimeoutMs: 200,
        email: resolveConfig().email,
      });
      verifiers.push(timeoutVerifier);
      const started = Date.now();
      const result = await timeoutVerifier.verify('alice@example.org', { smtp: false });
      expect(result).toMatchObject({ score: 'unknown', reason: 'smtp_inconclusive', has_mx: false });
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      mute.close();
    }
  });
});

describe('lists, roles and suggestions', () => {
  it('finds an existing role address: risky/role_account', async () => {
    const result = await check('info@exists.test');
    expect(result).toMatchObject({
      score: 'risky',
      reason: 'role_account',
      confidence: 65,
      role_based: true,
      mailbox_checked: true,
      catch_all: false,
    });
  });

  it('puts mailbox_not_found before role_account', async () => {
    const result = await check('sales@exists.test');
    expect(result).toMatchObject({ score: 'invalid', reason: 'mailbox_not_found', role_based: true });
  });

  it.each(['someone@mailinator.com', 'someone@inbox.mailinator.com'])(
    'does not probe the disposable %s',
    async (address) => {
      const before = main.stats.connections;
      const result = await check(address);
      expect(result).toMatchObject({
        score: 'risky',
        reason: 'disposable',
        confidence: 15,
        disposable: true,
        free_provider: false,
        has_mx: true,
        mailbox_checked: false,
        smtp: null,
      });
      expect(main.stats.connections).toBe(before);
      expect(main.stats.rcpts.filter((rcpt) => rcpt.includes('mailinator'))).toEqual([]);
    },
  );

  it('suggests the corrected address for a typo domain', async () => {
    const result = await check('jane@gmial.com');
    expect(result.suggestion).toBe('gmail.com');
    expect(result.reason).toBe('mailbox_not_found');
  });

  it('suggests for a typo TLD even when the domain does not exist', async () => {
    const result = await check('jane@gmail.con');
    expect(result).toMatchObject({ reason: 'no_mail_server', suggestion: 'gmail.com' });
  });
});

describe('syntax', () => {
  it.each(['not-an-address', 'user@[127.0.0.1]', 'a b@exists.test', `${'x'.repeat(65)}@exists.test`])(
    'refuses %s as invalid_syntax without asking DNS',
    async (address) => {
      const queries = dns.queries.length;
      const result = await check(address);
      expect(result).toMatchObject({
        email: address,
        normalized: address,
        score: 'invalid',
        reason: 'invalid_syntax',
        confidence: 0,
        syntax_valid: false,
        has_mx: false,
        disposable: false,
        role_based: false,
        free_provider: false,
        suggestion: '',
        mailbox_checked: false,
        catch_all: false,
        smtp: null,
      });
      expect(isBillable(result)).toBe(false);
      expect(dns.queries.length).toBe(queries);
    },
  );

  it.each([
    ['  Jane@Example.TEST@@Bad.Test  ', 'bad.test'],
    ['a b@Exists.Test', 'exists.test'],
    ['user@[127.0.0.1]', '[127.0.0.1]'],
    ['not-an-address', ''],
    ['trailing@', ''],
  ])(
    'gives %j the domain %j: what follows the last @, lowercased, or the empty string',
    async (address, domain) => {
      const result = await check(address);
      expect(result).toMatchObject({ reason: 'invalid_syntax', normalized: address.trim(), domain });
    },
  );
});

describe('batches', () => {
  it('verifies 100 addresses over 10 domains in input order, two probes at most per domain', async () => {
    for (const server of batchServers) server.stats.maxConcurrent = 0;
    const inputs: string[] = [];
    for (let i = 0; i < 90; i += 1) {
      const domain = `b${i % BATCH_DOMAINS}.test`;
      inputs.push(i % 3 === 0 ? `alice@${domain}` : `user${i}@${domain}`);
    }
    // Ten more: the same addresses again, the domain in capitals (the same normalized address).
    for (let i = 0; i < 10; i += 1)
      inputs.push(inputs[i * 9]!.replace(/@(.*)$/, (_m, d: string) => `@${d.toUpperCase()}`));
    const queriesBefore = dns.queries.length;
    const rcptsBefore = batchServers.map((server) => server.stats.rcpts.length);

    // Generous time-outs: this checks order and limits, not time-outs, on a possibly busy machine.
    const results = await verifier({ replyTimeoutMs: 5_000, connectTimeoutMs: 5_000 }).verifyMany(
      inputs,
      probe,
    );

    expect(results.map((result) => result.email)).toEqual(inputs);
    expect(results.map((result) => result.reason)).toEqual(
      inputs.map((input) => (input.startsWith('alice@') ? 'mailbox_exists' : 'mailbox_not_found')),
    );
    for (const server of batchServers) {
      expect(server.stats.maxConcurrent).toBeGreaterThan(0);
      expect(server.stats.maxConcurrent).toBeLessThanOrEqual(2);
    }
    // Each distinct address probed once (plus the catch-all tests), each domain's MX looked up once.
    const distinct = new Set(inputs.map((input) => input.toLowerCase()));
    const targets = batchServers.flatMap((server, i) =>
      server.stats.rcpts.slice(rcptsBefore[i]).filter((rcpt) => !rcpt.startsWith('wharf-probe-')),
    );
    expect(targets).toHaveLength(distinct.size);
    const mxQueries = dns.queries.slice(queriesBefore).filter((query) => query.startsWith('MX '));
    expect(mxQueries).toHaveLength(BATCH_DOMAINS);
  });

  it('probes at most perProviderConcurrency at once on MX hosts of one provider, across domains', async () => {
    const addresses = ['alice', 'bob', 'info', 'nobody'].flatMap((local) => [
      `${local}@p1.test`,
      `${local}@p2.test`,
    ]);
    for (const [limit, expected] of [
      [1, 1],
      [4, 4],
    ] as const) {
      provider.stats.maxConcurrent = 0;
      const results = await verifier({ perDomainConcurrency: 2, perProviderConcurrency: limit }).verifyMany(
        addresses,
        probe,
      );
      expect(results.map((result) => result.smtp?.mx_host)).toEqual(
        addresses.map((address) => (address.endsWith('p1.test') ? 'a.provider.test' : 'b.provider.test')),
      );
      expect(provider.stats.maxConcurrent).toBe(expected);
    }
  });
});
