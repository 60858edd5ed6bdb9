// The batch results table: filters by score and reason, the counts beside them, and the CSV export
// (every field, flat, formula-safe, readable back by a CSV parser).
import Papa from 'papaparse';
import { describe, expect, it } from 'vitest';
import type { EmailVerification } from '../../../src/shared/api/email.js';
import {
  CSV_COLUMNS,
  NO_FILTER,
  catchAllFinding,
  countByScore,
  csvFileName,
  filterResults,
  mailboxFinding,
  reasonsPresent,
  toCsv,
  totalCost,
} from '../../../src/renderer/src/stores/email/results.js';

function result(extra: Partial<EmailVerification>): EmailVerification {
  return {
    email: 'ada@example.com',
    normalized: 'ada@example.com',
    domain: 'example.com',
    score: 'valid',
    reason: 'ok',
    syntax_valid: true,
    has_mx: true,
    disposable: false,
    role_based: false,
    free_provider: false,
    suggestion: '',
    mailbox_checked: false,
    catch_all: false,
    confidence: 80,
    mx_records: ['mx1.example.com', 'mx2.example.com'],
    smtp: null,
    cost_usd: 0.001,
    checked_at: '2025-01-31T14:03:07.123Z',
    ...extra,
  };
}

const results = [
  result({ email: 'ada@example.com' }),
  result({
    email: 'info@example.com',
    score: 'risky',
    reason: 'role_account',
    role_based: true,
    confidence: 65,
  }),
  result({
    email: 'bad@',
    normalized: 'bad@',
    domain: '',
    score: 'invalid',
    reason: 'invalid_syntax',
    syntax_valid: false,
    has_mx: false,
    confidence: 0,
    cost_usd: 0,
  }),
  result({
    email: 'x@nomx.test',
    domain: 'nomx.test',
    score: 'invalid',
    reason: 'no_mail_server',
    has_mx: false,
    mx_records: [],
  }),
  result({ email: 'slow@example.com', score: 'unknown', reason: 'smtp_inconclusive', cost_usd: 0 }),
];

describe('filterResults', () => {
  it('answers everything, in order, without a filter', () => {
    expect(filterResults(results, NO_FILTER)).toEqual(results);
  });

  it('keeps one score', () => {
    expect(filterResults(results, { score: 'invalid', reason: 'all' }).map((r) => r.email)).toEqual([
      'bad@',
      'x@nomx.test',
    ]);
  });

  it('keeps one reason, and combines score and reason with AND', () => {
    expect(filterResults(results, { score: 'all', reason: 'role_account' }).map((r) => r.email)).toEqual([
      'info@example.com',
    ]);
    expect(filterResults(results, { score: 'valid', reason: 'role_account' })).toEqual([]);
  });
});

describe('countByScore and reasonsPresent', () => {
  it('counts every score word, zero included', () => {
    expect(countByScore(results)).toEqual({ valid: 1, invalid: 2, risky: 1, unknown: 1 });
    expect(countByScore([])).toEqual({ valid: 0, invalid: 0, risky: 0, unknown: 0 });
  });

  it('lists the reasons that occur, in the API precedence order, for a score or all', () => {
    expect(reasonsPresent(results)).toEqual([
      'invalid_syntax',
      'no_mail_server',
      'smtp_inconclusive',
      'role_account',
      'ok',
    ]);
    expect(reasonsPresent(results, 'invalid')).toEqual(['invalid_syntax', 'no_mail_server']);
  });

  it('sums costs without floating-point dust', () => {
    expect(totalCost([result({ cost_usd: 0.1 }), result({ cost_usd: 0.2 })])).toBe(0.3);
  });
});

describe('toCsv', () => {
  it('writes a header and one row per result that a CSV parser reads back', () => {
    const csv = toCsv(results.slice(0, 2));
    const parsed = Papa.parse<Record<string, string>>(csv, { header: true, skipEmptyLines: true });
    expect(parsed.meta.fields).toEqual([...CSV_COLUMNS]);
    expect(parsed.data).toHaveLength(2);
    expect(parsed.data[0]).toMatchObject({
      email: 'ada@example.com',
      domain: 'example.com',
      score: 'valid',
      reason: 'ok',
      confidence: '80',
      mx_records: 'mx1.example.com mx2.example.com',
      suggestion: '',
      mailbox_checked: 'false',
      catch_all: 'false',
      cost_usd: '0.001',
    });
    expect(parsed.data[1]).toMatchObject({ email: 'info@example.com', score: 'risky', role_based: 'true' });
  });

  it('names its columns after SPEC.md §2.5, in its order, before the extras', () => {
    expect(CSV_COLUMNS.slice(0, 13)).toEqual([
      'email',
      'normalized',
      'domain',
      'score',
      'reason',
      'syntax_valid',
      'has_mx',
      'disposable',
      'role_based',
      'free_provider',
      'suggestion',
      'mailbox_checked',
      'catch_all',
    ]);
    expect(CSV_COLUMNS).not.toContain('status');
    expect(CSV_COLUMNS).not.toContain('role_account');
  });

  it('flattens the SMTP reply into its own columns, with commas and quotes kept', () => {
    const csv = toCsv([
      result({
        smtp: {
          mx_host: 'mx.example.com',
          code: 550,
          enhanced_code: '5.1.1',
          message: 'no such user, "ada"',
        },
      }),
    ]);
    const [row] = Papa.parse<Record<string, string>>(csv, { header: true }).data;
    expect(row).toMatchObject({
      smtp_mx_host: 'mx.example.com',
      smtp_code: '550',
      smtp_enhanced_code: '5.1.1',
      smtp_message: 'no such user, "ada"',
    });
  });

  it('escapes cells a spreadsheet would run as a formula', () => {
    const csv = toCsv([result({ email: '=HYPERLINK("http://evil.test")@x.com' })]);
    const [row] = Papa.parse<Record<string, string>>(csv, { header: true }).data;
    expect(row?.email?.startsWith("'=")).toBe(true);
  });

  it('names the file after the day and the filter', () => {
    const day = new Date('2025-01-31T12:00:00Z');
    expect(csvFileName(NO_FILTER, day)).toBe('email-results-2025-01-31.csv');
    expect(csvFileName({ score: 'invalid', reason: 'no_mail_server' }, day)).toBe(
      'email-results-invalid-no_mail_server-2025-01-31.csv',
    );
  });
});

describe('what the probe found out, read from the SPEC fields', () => {
  const probed = (extra: Partial<EmailVerification>) => result({ mailbox_checked: true, ...extra });

  it('says nothing about the mailbox or catch-all when no probe ran, whatever the booleans say', () => {
    expect(mailboxFinding(result({ mailbox_checked: false }))).toBeNull();
    expect(catchAllFinding(result({ mailbox_checked: false, catch_all: false }))).toBeNull();
  });

  it('reads an accepted mailbox, a refused one, and a role address that was accepted', () => {
    expect(mailboxFinding(probed({ reason: 'mailbox_exists' }))).toBe(true);
    expect(mailboxFinding(probed({ reason: 'role_account', role_based: true }))).toBe(true);
    expect(mailboxFinding(probed({ score: 'invalid', reason: 'mailbox_not_found' }))).toBe(false);
    expect(catchAllFinding(probed({ reason: 'mailbox_exists' }))).toBe(false);
  });

  it('cannot tell the mailbox of a catch-all domain nor anything from an inconclusive probe', () => {
    expect(mailboxFinding(probed({ score: 'risky', reason: 'catch_all', catch_all: true }))).toBeNull();
    expect(catchAllFinding(probed({ score: 'risky', reason: 'catch_all', catch_all: true }))).toBe(true);
    expect(mailboxFinding(probed({ score: 'unknown', reason: 'smtp_inconclusive' }))).toBeNull();
    expect(catchAllFinding(probed({ score: 'unknown', reason: 'smtp_inconclusive' }))).toBeNull();
    expect(catchAllFinding(probed({ score: 'invalid', reason: 'mailbox_not_found' }))).toBeNull();
  });
});
