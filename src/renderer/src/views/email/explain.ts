// Plain words for an email verification's score, reason and flags (API.md §6), for people who do not
// know what an MX record or a catch-all server is.
import type { EmailReason, EmailScore } from '../../stores/email/results';

export const SCORE_LABELS: Record<EmailScore, string> = {
  valid: 'Valid',
  invalid: 'Invalid',
  risky: 'Risky',
  unknown: 'Unknown',
};

export const SCORE_MEANINGS: Record<EmailScore, string> = {
  valid: 'Mail to this address should be delivered.',
  invalid: 'Mail to this address would bounce: do not send to it.',
  risky: 'Mail may be delivered, but the address has a trait that often means trouble.',
  unknown: 'The check could not reach a conclusion; nothing was charged for it.',
};

export const REASON_LABELS: Record<EmailReason, string> = {
  invalid_syntax: 'Invalid syntax',
  no_mail_server: 'No mail server',
  disposable: 'Disposable',
  mailbox_not_found: 'Mailbox not found',
  smtp_inconclusive: 'Inconclusive',
  catch_all: 'Catch-all',
  role_account: 'Role account',
  mailbox_exists: 'Mailbox exists',
  ok: 'OK',
};

export const REASON_MEANINGS: Record<EmailReason, string> = {
  invalid_syntax: 'This is not a well-formed email address.',
  no_mail_server: 'The domain has no mail server, so mail to it cannot be delivered.',
  disposable: 'A throwaway address from a disposable email service.',
  mailbox_not_found: 'The mail server said this mailbox does not exist.',
  smtp_inconclusive:
    'The mail server neither accepted nor refused the address (a temporary error, a full mailbox or a policy block).',
  catch_all: 'The mail server accepts mail for any address at this domain, so this one cannot be confirmed.',
  role_account: 'A role address (such as info@ or support@), usually read by a team rather than a person.',
  mailbox_exists: 'The mail server confirmed that the mailbox exists.',
  ok: 'The address is well formed and its domain accepts mail.',
};

/** "Yes"/"No"/"Not checked" with what it means, for the flags of a result. */
export function yesNo(value: boolean | null, yes: string, no: string, unknown: string): string {
  return value === null ? unknown : value ? yes : no;
}
