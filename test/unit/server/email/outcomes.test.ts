// The binding table of reasons (status, score), the precedence order, and what is billed.
import { describe, expect, it } from 'vitest';
import { REASON_OUTCOMES, isBillable } from '../../../../src/server/email/index.js';
import { EMAIL_REASONS, type EmailVerification } from '../../../../src/shared/api/email.js';

describe('REASON_OUTCOMES', () => {
  it('gives each reason its status and score', () => {
    expect(REASON_OUTCOMES).toEqual({
      invalid_syntax: { status: 'invalid', score: 0 },
      no_mail_server: { status: 'invalid', score: 5 },
      disposable: { status: 'risky', score: 15 },
      mailbox_not_found: { status: 'invalid', score: 5 },
      smtp_inconclusive: { status: 'unknown', score: 50 },
      catch_all: { status: 'risky', score: 60 },
      role_account: { status: 'risky', score: 65 },
      ok: { status: 'valid', score: 80 },
      mailbox_exists: { status: 'valid', score: 97 },
    });
  });

  it('covers exactly the reasons of the schema', () => {
    expect(Object.keys(REASON_OUTCOMES).sort()).toEqual([...EMAIL_REASONS].sort());
  });
});

describe('isBillable', () => {
  const result = (status: EmailVerification['status'], reason: EmailVerification['reason']) =>
    ({ status, reason }) as EmailVerification;

  it('bills what concluded something', () => {
    expect(isBillable(result('valid', 'mailbox_exists'))).toBe(true);
    expect(isBillable(result('invalid', 'mailbox_not_found'))).toBe(true);
    expect(isBillable(result('invalid', 'no_mail_server'))).toBe(true);
    expect(isBillable(result('risky', 'disposable'))).toBe(true);
  });

  it('does not bill unknown results nor bad syntax', () => {
    expect(isBillable(result('unknown', 'smtp_inconclusive'))).toBe(false);
    expect(isBillable(result('invalid', 'invalid_syntax'))).toBe(false);
  });
});
