// The batch results table's filters (by score and by reason, combined) and its CSV export: one row
// per result with every field of the API, flat (MX hosts joined by spaces, the SMTP reply in columns).
import Papa from 'papaparse';
import { EMAIL_REASONS, EMAIL_SCORES, type EmailVerification } from '../../../../shared/api/email.js';

export type EmailScore = (typeof EMAIL_SCORES)[number];
export type EmailReason = (typeof EMAIL_REASONS)[number];

export interface ResultFilter {
  score: EmailScore | 'all';
  reason: EmailReason | 'all';
}

export const NO_FILTER: ResultFilter = { score: 'all', reason: 'all' };

export function filterResults(
  results: readonly EmailVerification[],
  filter: ResultFilter,
): EmailVerification[] {
  return results.filter(
    (result) =>
      (filter.score === 'all' || result.score === filter.score) &&
      (filter.reason === 'all' || result.reason === filter.reason),
  );
}

/** How many results have each score (every score present, zero when none). */
export function countByScore(results: readonly EmailVerification[]): Record<EmailScore, number> {
  const counts = Object.fromEntries(EMAIL_SCORES.map((score) => [score, 0])) as Record<EmailScore, number>;
  for (const result of results) counts[result.score]++;
  return counts;
}

/** The reasons that occur among the results (of the chosen score), in the API's precedence order. */
export function reasonsPresent(
  results: readonly EmailVerification[],
  score: ResultFilter['score'] = 'all',
): EmailReason[] {
  const present = new Set(results.filter((r) => score === 'all' || r.score === score).map((r) => r.reason));
  return EMAIL_REASONS.filter((reason) => present.has(reason));
}

/**
 * Whether the domain is catch-all, as far as the probe found out: null when no probe ran or it ended
 * without an answer (the API then says false, and the reason says why).
 */
export function catchAllFinding(result: EmailVerification): boolean | null {
  if (!result.mailbox_checked || result.reason === 'smtp_inconclusive') return null;
  if (result.reason === 'mailbox_not_found') return null;
  return result.catch_all;
}

/**
 * Whether the mailbox exists, read from the probe's reason: null when no probe ran, it was inconclusive,
 * or the domain is catch-all (its acceptance says nothing about this one address).
 */
export function mailboxFinding(result: EmailVerification): boolean | null {
  if (!result.mailbox_checked || result.reason === 'smtp_inconclusive' || result.catch_all) return null;
  return result.reason !== 'mailbox_not_found';
}

/** The total cost of the results, in USD, without floating-point dust. */
export function totalCost(results: readonly EmailVerification[]): number {
  return Math.round(results.reduce((sum, r) => sum + r.cost_usd, 0) * 1e6) / 1e6;
}

/** SPEC.md §2.5's fields under their own names, then the extras, the SMTP reply flattened. */
export const CSV_COLUMNS = [
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
  'confidence',
  'mx_records',
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
    result.domain,
    result.score,
    result.reason,
    result.syntax_valid,
    result.has_mx,
    result.disposable,
    result.role_based,
    result.free_provider,
    result.suggestion,
    result.mailbox_checked,
    result.catch_all,
    result.confidence,
    result.mx_records.join(' '),
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
  const parts = [filter.score, filter.reason].filter((part) => part !== 'all');
  return `email-results${parts.length ? `-${parts.join('-')}` : ''}-${day}.csv`;
}
