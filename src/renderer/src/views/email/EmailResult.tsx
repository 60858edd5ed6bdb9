// One verification explained: the score word and the confidence up top with the reason in words, then each flag with
// what it means, the SMTP reply when the server was asked, the cost, and "Did you mean …?" when the
// platform suggests a likelier address.
import { type EmailVerification, suggestedAddress } from '../../../../shared/api/email.js';
import { formatUsd, formatWhen } from '../../lib/format';
import { catchAllFinding, mailboxFinding } from '../../stores/email/results';
import { REASON_LABELS, REASON_MEANINGS, SCORE_LABELS, SCORE_MEANINGS, yesNo } from './explain';

export function EmailScoreBadge({ score }: { score: EmailVerification['score'] }) {
  return (
    <span className="badge" data-status={`email-${score}`} data-testid="email-status">
      <span className="badge-dot" aria-hidden="true" />
      {SCORE_LABELS[score]}
    </span>
  );
}

export function EmailResult({
  result,
  onSuggestion,
  smtpProbe,
}: {
  result: EmailVerification;
  onSuggestion: (address: string) => void;
  /** Whether the check asked for an SMTP probe (so "not probed" can say why). */
  smtpProbe: boolean;
}) {
  const suggested = suggestedAddress(result);
  const notProbed = smtpProbe
    ? 'Not tested: the check stopped before the mail server was asked'
    : 'Not tested: turn on the SMTP probe to ask the mail server';
  const flags: Array<{ label: string; value: string; key: string }> = [
    {
      key: 'syntax',
      label: 'Syntax',
      value: result.syntax_valid
        ? `Well formed${result.normalized && result.normalized !== result.email ? ` (as ${result.normalized})` : ''}`
        : 'Not a valid address',
    },
    {
      key: 'mx',
      label: 'Mail servers (MX)',
      value: !result.syntax_valid
        ? 'Not looked up'
        : !result.has_mx && result.reason === 'smtp_inconclusive'
          ? 'Unknown: DNS did not answer'
          : result.mx_records.length > 0
            ? result.mx_records.join(', ')
            : result.has_mx
              ? 'No MX records; mail goes to the domain’s own address'
              : 'None: the domain cannot receive mail',
    },
    {
      key: 'disposable',
      label: 'Disposable',
      value: result.disposable ? 'Yes: a throwaway mailbox service' : 'No',
    },
    {
      key: 'role',
      label: 'Role address',
      value: result.role_based ? 'Yes: a shared address such as info@ or support@' : 'No: a personal address',
    },
    {
      key: 'free',
      label: 'Free provider',
      value: result.free_provider ? 'Yes: a free webmail provider such as Gmail' : 'No',
    },
    {
      key: 'catch-all',
      label: 'Catch-all',
      value: yesNo(
        catchAllFinding(result),
        'Yes: the server accepts mail for any address at this domain',
        'No: the server refuses unknown addresses',
        !result.mailbox_checked
          ? notProbed
          : result.reason === 'mailbox_not_found'
            ? 'Not tested: the address itself was refused'
            : 'Not found out: the server gave no clear answer',
      ),
    },
    {
      key: 'mailbox',
      label: 'Mailbox exists',
      value: yesNo(
        mailboxFinding(result),
        'Yes: the server accepted this recipient',
        'No: the server refused this recipient',
        !result.mailbox_checked
          ? notProbed
          : result.catch_all
            ? 'Cannot tell: the server accepts any address at this domain'
            : 'Not found out: the server gave no clear answer',
      ),
    },
  ];

  return (
    <div
      className="email-result"
      data-testid="email-result"
      data-status={result.score}
      data-reason={result.reason}
    >
      <div className="email-result-head">
        <div className="email-result-title">
          <span className="mono email-result-address">{result.email}</span>
          <EmailScoreBadge score={result.score} />
          <span
            className="email-score"
            data-testid="email-score"
            aria-label={`Confidence ${result.confidence} of 100`}
            title="Confidence"
          >
            {result.confidence}
            <span className="muted">/100 confidence</span>
          </span>
        </div>
        <p className="email-status-meaning">{SCORE_MEANINGS[result.score]}</p>
        <p data-testid="email-reason">
          <span className="tag">{REASON_LABELS[result.reason]}</span> {REASON_MEANINGS[result.reason]}
        </p>
        {suggested ? (
          <p>
            <button
              type="button"
              className="link-button"
              onClick={() => onSuggestion(suggested)}
              data-testid="email-suggestion"
            >
              Did you mean <span className="mono">{suggested}</span>?
            </button>
          </p>
        ) : null}
      </div>
      <dl className="overview email-flags">
        {flags.map((flag) => (
          <div className="overview-item" key={flag.key} data-testid={`email-flag-${flag.key}`}>
            <dt>{flag.label}</dt>
            <dd>{flag.value}</dd>
          </div>
        ))}
        <div className="overview-item" data-testid="email-flag-smtp">
          <dt>SMTP reply</dt>
          <dd>
            {result.smtp ? (
              <>
                {result.smtp.code !== null ? (
                  <span className="mono">
                    {result.smtp.code}
                    {result.smtp.enhanced_code ? ` ${result.smtp.enhanced_code}` : ''}
                  </span>
                ) : (
                  'No reply'
                )}
                {result.smtp.message ? <> — {result.smtp.message}</> : null}
                {result.smtp.mx_host ? <span className="muted"> (from {result.smtp.mx_host})</span> : null}
              </>
            ) : (
              notProbed
            )}
          </dd>
        </div>
        <div className="overview-item" data-testid="email-flag-cost">
          <dt>Cost</dt>
          <dd>
            {result.cost_usd > 0 ? formatUsd(result.cost_usd) : 'Free'}
            <span className="muted"> · checked at {formatWhen(result.checked_at)}</span>
          </dd>
        </div>
      </dl>
    </div>
  );
}
