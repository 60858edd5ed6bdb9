// The batch results table's filters (by status and by reason, combined) and its CSV export: one row
// per result with every field of the API, flat (MX hosts joined by spaces, the SMTP reply in columns).
import Papa from 'papaparse';
import { EMAIL_REASONS, EMAIL_STATUSES, type EmailVerification } from '../../../../shared/api/email.js';

export type EmailStatus = (typeof EMAIL_STATUSES)[number];
export type EmailReason = (typeof EMAIL_REASONS)[number];

export interface ResultFilter {
  status: EmailStatus | 'all';
  reason: EmailReason | 'all';
}

export const NO_FILTER: ResultFilter = { status: 'all', reason: 'all' };

export function filterResults(
  results: readonly EmailVerification[],
  filter: ResultFilter,
): EmailVerification[] {
  return results.filter(
    (result) =>
      (filter.status === 'all' || result.status === filter.status) &&
      (filter.reason === 'all' || result.reason === filter.reason),
  );
}

/** How many results have each status (every status present, zero when none). */
export function countByStatus(results: readonly EmailVerification[]): Record<EmailStatus, number> {
  const counts = Object.fromEntries(EMAIL_STATUSES.map((status) => [status, 0])) as Record<
    EmailStatus,
    number
  >;
  for (const result of results) counts[result.status]++;
  return counts;
}

/** The reasons that occur among the results (of the chosen status), in the API's precedence order. */
export function reasonsPresent(
  results: readonly EmailVerification[],
  status: ResultFilter['status'] = 'all',
): EmailReason[] {
  const present = new Set(
    results.filter((r) => status === 'all' || r.status === status).map((r) => r.reason),
  );
  return EMAIL_REASONS.filter((reason) => present.has(reason));
}

/** The total cost of the results, in USD, without floating-point dust. */
export function totalCost(results: readonly EmailVerification[]): number {
  return Math.round(results.reduce((sum, r) => sum + r.cost_usd, 0) * 1e6) / 1e6;
}

export const CSV_COLUMNS = [
  'email',
  'normalized',
  'status',
  'reason',
  'score',
  'syntax_valid',
  'has_mx',
  'mx_records',
  'disposable',
  'role_account',
  'free_provider',
  'catch_all',
  'mailbox_exists',
  'suggestion',
  'smtp_mx_host',
  'smtp_code',
  'smtp_enhanced_code',
  'smtp_message',
  'cost_usd',
  'checked_at',
] as const;

type CsvCell = string | number | boolean | null;

function csvRow(result: EmailVerification): CsvCell[] {
  return [
    result.email,
    result.normalized,
    result.status,
    result.reason,
    result.score,
    result.syntax_valid,
    result.has_mx,
    result.mx_records.join(' '),
    result.disposable,
    result.role_account,
    result.free_provider,
    result.catch_all,
    result.mailbox_exists,
    result.suggestion,
    result.smtp?.mx_host ?? null,
    result.smtp?.code ?? null,
    result.smtp?.enhanced_code ?? null,
    result.smtp?.message ?? null,
    result.cost_usd,
    result.checked_at,
  ];
}

/**
 * CSV text of the results, with a header row. Cells that a spreadsheet would run as a formula
 * (starting with =, +, - or @) are escaped, since addresses and SMTP messages come from outside.
 */
export function toCsv(results: readonly EmailVerification[]): string {
  return Papa.unparse(
    { fields: [...CSV_COLUMNS], data: results.map(csvRow) },
    { escapeFormulae: true, newline: '\r\n' },
  );
}

/** `email-results-2025-01-31.csv`, or with the filter named when one is set. */
export function csvFileName(filter: ResultFilter, now = new Date()): string {
  const day = now.toISOString().slice(0, 10);
  const parts = [filter.status, filter.reason].filter((part) => part !== 'all');
  return `email-results${parts.length ? `-${parts.join('-')}` : ''}-${day}.csv`;
}
