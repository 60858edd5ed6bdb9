// `wharf email verify` as a user runs it: the built bin/wharf.js in a child process, against a real
// platform whose DNS server and MX host are local fakes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmailVerification } from '../../src/shared/api/email.js';
import { addressesOf } from '../../src/cli/email.js';
import { type CliResult, assertBuilt, runWharf } from '../helpers/cli.js';
import { type FakeSmtp, startSmtp } from '../helpers/mail.js';
import { type FakeDns, startDns } from '../helpers/dns.js';
import { startPlatform, type TestPlatform } from '../helpers/platform.js';

let home: string;
let dns: FakeDns;
let smtp: FakeSmtp;
let t: TestPlatform;
let origin: string;

beforeAll(async () => {
  assertBuilt();
  home = mkdtempSync(join(tmpdir(), 'wharf-cli-email-'));
  dns = await startDns({
    'example.test': { MX: [{ exchange: 'mx.example.test', priority: 10 }] },
    'mx.example.test': { A: ['127.0.0.1'] },
  });
  smtp = await startSmtp({
    rcpt: (address) => (address.startsWith('jane@') ? null : { code: 550, message: '5.1.1 unknown user' }),
  });
  t = await startPlatform({
    dnsServers: [dns.server],
    dnsTimeoutMs: 1_000,
    emailDailyCap: 150,
    email: { smtpPort: smtp.port, allowPrivate: true, connectTimeoutMs: 1_000, replyTimeoutMs: 1_000 },
  });
  origin = new URL(t.api).origin;
}, 30_000);

afterAll(async () => {
  await t?.close();
  await smtp?.close();
  await dns?.close();
  rmSync(home, { recursive: true, force: true });
});

function wharf(args: string[], key = t.key): Promise<CliResult> {
  return runWharf([...args, '--platform', origin, '--api-key', key], { home, timeoutMs: 30_000 });
}

describe('wharf email verify', () => {
  it('prints a row per address with the score word, confidence, reason and a typo suggestion', async () => {
    const result = await wharf(['email', 'verify', 'jane@example.test', 'bob@gmial.com', 'nope']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^EMAIL\s+SCORE\s+CONFIDENCE\s+REASON/);
    expect(lines[1]).toMatch(/^jane@example\.test\s+valid\s+80\s+ok/);
    expect(lines[2]).toMatch(/^bob@gmial\.com\s+.*did you mean bob@gmail\.com\?/);
    expect(lines[3]).toMatch(/^nope\s+invalid\s+0\s+invalid_syntax/);
    expect(lines.at(-1)).toMatch(/^3 checked: 1 valid, 2 invalid; cost \$/);
  });

  it('probes over SMTP with --smtp and prints the API results with --json', async () => {
    const result = await wharf([
      'email',
      'verify',
      '--smtp',
      '--json',
      'jane@example.test',
      'ghost@example.test',
    ]);
    expect(result.code).toBe(0);
    const results = EmailVerification.array().parse(JSON.parse(result.stdout));
    expect(results.map((r) => [r.email, r.reason])).toEqual([
      ['jane@example.test', 'mailbox_exists'],
      ['ghost@example.test', 'mailbox_not_found'],
    ]);
    expect(results[0]!.smtp?.code).toBe(250);
    // SPEC.md §2.5 field by field, as a script reading --json sees them.
    expect(results[0]).toMatchObject({
      domain: 'example.test',
      score: 'valid',
      mailbox_checked: true,
      catch_all: false,
      role_based: false,
      suggestion: '',
    });
    expect(results[1]).toMatchObject({ score: 'invalid', mailbox_checked: true });
  });

  it('reads a list file (lines or a CSV column) and checks it in batches of 100, in order', async () => {
    const file = join(home, 'list.csv');
    const addresses = Array.from({ length: 120 }, (_, i) => `user${i}@example.test`);
    writeFileSync(file, ['name,email', ...addresses.map((a, i) => `User ${i},${a}`)].join('\n'));
    const result = await wharf(['email', 'verify', '--file', file, '--json']);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('checked 100 of 120');
    const results = EmailVerification.array().parse(JSON.parse(result.stdout));
    expect(results.map((r) => r.email)).toEqual(addresses);
  });

  it('says what is wrong with no addresses, an unreadable file, or a refusing platform', async () => {
    const none = await wharf(['email', 'verify']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('give at least one address');
    const missing = await wharf(['email', 'verify', '--file', join(home, 'nothing.txt')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('ENOENT');
    const deployOnly = await t.newAccount({ scopes: ['deploy'] });
    const refused = await wharf(['email', 'verify', 'jane@example.test'], deployOnly.key);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/scope/i);
  });
});

describe('addressesOf', () => {
  it('takes lines, skips blanks and comments, and picks the column with an @ from CSV lines', () => {
    expect(
      addressesOf('# list\n a@x.test \n\nname;mail\n"Bo";"bo@x.test"\nsolo,no-at-here\nc@x.test\r\n'),
    ).toEqual(['a@x.test', 'bo@x.test', 'c@x.test']);
  });
});
