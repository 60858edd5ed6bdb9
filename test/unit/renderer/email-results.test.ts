// The batch results table: filters by status and reason, the counts beside them, and the CSV export
// (every field, flat, formula-safe, readable back by a CSV parser).
import Papa from 'papaparse';
import { describe, expect, it } from 'vitest';
import type { EmailVerification } from '../../../src/shared/api/email.js';
import {
  CSV_COLUMNS,
  NO_FILTER,
  countByStatus,
  csvFileName,
  filterResults,
  reasonsPresent,
  toCsv,
  totalCost,
} from '../../../src/renderer/src/stores/email/results.js';

function result(extra: Partial<EmailVerification>): EmailVerification {
  return {
    email: 'ada@example.com',
    normalized: 'ada@example.com',
    status: 'valid',
    reason: 'ok',
    score: 90,
    syntax_valid: true,
    has_mx: true,
    mx_records: ['mx1.example.com', 'mx2.example.com'],
    disposable: false,
    role_account: false,
    free_provider: false,
    catch_all: null,
    mailbox_exists: null,
    suggestion: null,
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
    status: 'risky',
    reason: 'role_account',
    role_account: true,
    score: 60,
  }),
  result({ email: 'bad@', status: 'invalid', reason: 'invalid_syntax', syntax_valid: false, cost_usd: 0 }),
  result({
    email: 'x@nomx.test',
    status: 'invalid',
    reason: 'no_mail_server',
    has_mx: false,
    mx_records: [],
  }),
  result({ email: 'slow@example.com', status: 'unknown', reason: 'smtp_inconclusive', cost_usd: 0 }),
];

describe('filterResults', () => {
  it('answers everything, in order, without a filter', () => {
    expect(filterResults(results, NO_FILTER)).toEqual(results);
  });

  it('keeps one status', () => {
    expect(filterResults(results, { status: 'invalid', reason: 'all' }).map((r) => r.email)).toEqual([
      'bad@',
      'x@nomx.test',
    ]);
  });

  it('keeps one reason, and combines status and reason with AND', () => {
    expect(filterResults(results, { status: 'all', reason: 'role_account' }).map((r) => r.email)).toEqual([
      'info@example.com',
    ]);
    expect(filterResults(results, { status: 'valid', reason: 'role_account' })).toEqual([]);
  });
});

describe('countByStatus and reasonsPresent', () => {
  it('counts every status, zero included', () => {
    expect(countByStatus(results)).toEqual({ valid: 1, invalid: 2, risky: 1, unknown: 1 });
    expect(countByStatus([])).toEqual({ valid: 0, invalid: 0, risky: 0, unknown: 0 });
  });

  it('lists the reasons that occur, in the API precedence order, for a status or all', () => {
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
      status: 'valid',
      reason: 'ok',
      score: '90',
      mx_records: 'mx1.example.com mx2.example.com',
      catch_all: '',
      cost_usd: '0.001',
    });
    expect(parsed.data[1]).toMatchObject({ email: 'info@example.com', role_account: 'true' });
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
    expect(csvFileName({ status: 'invalid', reason: 'no_mail_server' }, day)).toBe(
      'email-results-invalid-no_mail_server-2025-01-31.csv',
    );
  });
});
