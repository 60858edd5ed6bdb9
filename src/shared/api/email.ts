// API.md §6: email address verification, single and batch.
import { z } from 'zod';
import { Timestamp, Usd } from './common.js';

export const EMAIL_STATUSES = ['valid', 'invalid', 'risky', 'unknown'] as const;

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
    email: z.string(),
    normalized: z.string().nullable(),
    status: z.enum(EMAIL_STATUSES),
    reason: z.enum(EMAIL_REASONS),
    score: z.number().int().min(0).max(100),
    syntax_valid: z.boolean(),
    has_mx: z.boolean().nullable(),
    mx_records: z.array(z.string()),
    disposable: z.boolean(),
    role_account: z.boolean(),
    free_provider: z.boolean(),
    catch_all: z.boolean().nullable(),
    mailbox_exists: z.boolean().nullable(),
    suggestion: z.string().nullable(),
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
