// API.md §6: email address verification, single and batch. The result is SPEC.md §2.5 field by field;
// the extras after it (confidence, mx_records, smtp, cost_usd, checked_at) only add detail.
import { z } from 'zod';
import { Timestamp, Usd } from './common.js';

/** SPEC.md §2.5 `score`: the verdict in one word. */
export const EMAIL_SCORES = ['valid', 'risky', 'invalid', 'unknown'] as const;

/** Reasons in order of precedence (API.md §6): the first that applies is the result's reason. */
export const EMAIL_REASONS = [
  'invalid_syntax',
  'no_mail_server',
  'disposable',
  'mailbox_not_found',
  'smtp_inconclusive',
  'catch_all',
  'role_account',
  'mailbox_exists',
  'ok',
] as const;

const Address = z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters');

export const VerifyEmailRequest = z
  .strictObject({ email: Address, smtp_probe: z.boolean().optional() })
  .meta({ id: 'VerifyEmailRequest' });
export type VerifyEmailRequest = z.infer<typeof VerifyEmailRequest>;

export const VerifyEmailBatchRequest = z
  .strictObject({
    emails: z
      .array(Address)
      .min(1, 'must list at least one address')
      .max(100, 'must list at most 100 addresses'),
    smtp_probe: z.boolean().optional(),
  })
  .meta({ id: 'VerifyEmailBatchRequest' });
export type VerifyEmailBatchRequest = z.infer<typeof VerifyEmailBatchRequest>;

export const SmtpProbe = z.object({
  mx_host: z.string().nullable(),
  code: z.number().int().nullable(),
  enhanced_code: z.string().nullable(),
  message: z.string().nullable(),
});

export const EmailVerification = z
  .object({
    email: z.string().meta({ description: 'The address as submitted.' }),
    normalized: z.string().meta({
      description:
        'local@domain with the domain in lowercase ASCII; for an address that is not valid syntax, the input trimmed.',
    }),
    domain: z.string().meta({
      description:
        'The domain part (lowercase ASCII); for invalid syntax, the text after the last @ in lowercase, or the empty string when there is none.',
    }),
    score: z.enum(EMAIL_SCORES),
    reason: z.enum(EMAIL_REASONS),
    syntax_valid: z.boolean(),
    has_mx: z.boolean().meta({
      description:
        'The domain has a mail server (an MX, or its own A/AAAA as RFC 5321 allows). False when DNS could not tell: score and reason then say unknown.',
    }),
    disposable: z.boolean(),
    role_based: z.boolean().meta({ description: 'A role or shared inbox (info@, sales@…).' }),
    free_provider: z.boolean(),
    suggestion: z.string().meta({
      description:
        'The likely-intended domain when the domain looks like a typo (`gmail.com` for `jane@gmial.con`); the empty string otherwise.',
    }),
    mailbox_checked: z.boolean().meta({ description: 'Whether a live SMTP probe ran for this address.' }),
    catch_all: z.boolean().meta({
      description:
        'The domain accepts any address; false when not found out (no probe, or it was inconclusive).',
    }),
    confidence: z
      .number()
      .int()
      .min(0)
      .max(100)
      .meta({ description: 'How sure the score is, 0–100; fixed by the reason.' }),
    mx_records: z.array(z.string()),
    smtp: SmtpProbe.nullable(),
    cost_usd: Usd,
    checked_at: Timestamp,
  })
  .meta({ id: 'EmailVerification' });
export type EmailVerification = z.infer<typeof EmailVerification>;

export const EmailBatchResult = z
  .object({ count: z.number().int(), results: z.array(EmailVerification) })
  .meta({ id: 'EmailBatchResult' });
export type EmailBatchResult = z.infer<typeof EmailBatchResult>;

/** The address with the suggested domain in place of its own (`jane@gmial.con` → `jane@gmail.com`), or null. */
export function suggestedAddress(result: Pick<EmailVerification, 'email' | 'suggestion'>): string | null {
  if (result.suggestion === '') return null;
  const at = result.email.lastIndexOf('@');
  return `${at === -1 ? result.email.trim() : result.email.slice(0, at).trim()}@${result.suggestion}`;
}
