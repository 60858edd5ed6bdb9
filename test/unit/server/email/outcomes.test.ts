// The binding table of reasons (score word, confidence), the precedence order, and what is billed.
import { describe, expect, it } from 'vitest';
import { REASON_OUTCOMES, isBillable } from '../../../../src/server/email/index.js';
import { EMAIL_REASONS, type EmailVerification } from '../../../../src/shared/api/email.js';

describe('REASON_OUTCOMES', () => {
  it('gives each reason its score word (SPEC.md §2.5) and numeric confidence', () => {
    expect(REASON_OUTCOMES).toEqual({
      invalid_syntax: { score: 'invalid', confidence: 0 },
      no_mail_server: { score: 'invalid', confidence: 5 },
      disposable: { score: 'risky', confidence: 15 },
      mailbox_not_found: { score: 'invalid', confidence: 5 },
      smtp_inconclusive: { score: 'unknown', confidence: 50 },
      catch_all: { score: 'risky', confidence: 60 },
      role_account: { score: 'risky', confidence: 65 },
      ok: { score: 'valid', confidence: 80 },
      mailbox_exists: { score: 'valid', confidence: 97 },
    });
  });

  it('covers exactly the reasons of the schema', () => {
    expect(Object.keys(REASON_OUTCOMES).sort()).toEqual([...EMAIL_REASONS].sort());
  });
});

describe('isBillable', () => {
  const result = (score: EmailVerification['score'], reason: EmailVerification['reason']) =>
    ({ score, reason }) as EmailVerification;

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
