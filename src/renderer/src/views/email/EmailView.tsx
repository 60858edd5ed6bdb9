// Email verification: the account's balance and today's checks against the daily cap, a single check
// explained flag by flag, and batch checks of pasted lists or CSV files.
import { useEffect, useRef, useState, type FormEvent } from 'react';
import type { Account } from '../../../../shared/api/account.js';
import { TextField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { ErrorNotice } from '../../components/Notice';
import { focusFirstInvalid } from '../../lib/focus';
import { useEmailActions, useSingleCheck } from '../../stores/email/selectors';
import { useAccount, useSettingsActions } from '../../stores/settings/selectors';
import { BatchCheck } from './BatchCheck';
import { CheckError } from './CheckError';
import { EmailResult } from './EmailResult';
import { formatUsd } from '../../lib/format';
import { CardHeader } from '../../components/Card';

export function EmailView() {
  const { loadAccount } = useSettingsActions();

  useEffect(() => {
    void loadAccount();
  }, [loadAccount]);

  return (
    <div className="page" data-testid="email-page">
      <header className="page-header">
        <div className="title-block">
          <h1 className="page-title">Email verification</h1>
          <p className="page-subtitle">Check whether addresses can receive mail before you send to them.</p>
        </div>
      </header>
      <div className="stack">
        <AccountSummary />
        <SingleCheck />
        <BatchCheck />
      </div>
    </div>
  );
}

function AccountSummary() {
  const { account, error, loading } = useAccount();
  const { loadAccount } = useSettingsActions();
  if (error && !account) {
    return (
      <ErrorNotice
        error={error}
        title="The balance could not be loaded"
        action={
          <button type="button" className="btn btn-sm" onClick={() => void loadAccount()} disabled={loading}>
            Retry
          </button>
        }
      />
    );
  }
  if (!account)
    return <div className="skeleton-block short" aria-busy="true" aria-label="Loading the balance" />;
  return <UsageSummary account={account} />;
}

export function UsageSummary({ account }: { account: Account }) {
  const used = account.email_verifications_today;
  const cap = account.email_daily_cap;
  const fraction = cap > 0 ? Math.min(1, used / cap) : 1;
  return (
    <dl className="email-summary" data-testid="email-summary">
      <div className="email-summary-item">
        <dt>Available balance</dt>
        <dd data-testid="email-balance">{formatUsd(account.balance.available_usd)}</dd>
      </div>
      <div className="email-summary-item email-summary-cap">
        <dt>Checks today</dt>
        <dd data-testid="email-today">
          {used.toLocaleString()} <span className="muted">of {cap.toLocaleString()}</span>
        </dd>
        <div
          className={`meter${fraction >= 1 ? ' is-full' : ''}`}
          role="meter"
          aria-label="Checks today against the daily cap"
          aria-valuemin={0}
          aria-valuemax={cap}
          aria-valuenow={Math.min(used, cap)}
          aria-valuetext={`${used} of ${cap} checks today`}
        >
          <div className="meter-bar" style={{ width: `${fraction * 100}%` }} />
        </div>
      </div>
    </dl>
  );
}

function SingleCheck() {
  const single = useSingleCheck();
  const { verify } = useEmailActions();
  const [email, setEmail] = useState('');
  const [smtpProbe, setSmtpProbe] = useState(false);
  const [fieldError, setFieldError] = useState<string | undefined>(undefined);
  const formRef = useRef<HTMLFormElement>(null);

  const check = async (address: string) => {
    if (address.trim() === '') {
      setFieldError('enter an email address to check');
      focusFirstInvalid(formRef.current);
      return;
    }
    setFieldError(undefined);
    const outcome = await verify(address.trim(), smtpProbe);
    if (!outcome.ok) {
      const message = outcome.error.errors?.find((e) => e.path === 'email')?.message;
      if (message) {
        setFieldError(message);
        focusFirstInvalid(formRef.current);
      }
    }
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!single.pending) void check(email);
  };

  return (
    <form
      ref={formRef}
      className="card"
      onSubmit={submit}
      noValidate
      aria-labelledby="single-check-title"
      data-testid="single-check"
    >
      <CardHeader titleId="single-check-title" title="Check an address">
        Syntax, mail servers, disposable and role addresses; with the SMTP probe, the mailbox itself.
      </CardHeader>
      <div className="card-body stack">
        <div className="email-check-row">
          <TextField
            label="Email address"
            type="email"
            value={email}
            onChange={(event) => {
              setEmail(event.target.value);
              setFieldError(undefined);
            }}
            error={fieldError}
            placeholder="someone@example.com"
            className="mono"
            fieldClassName="email-check-input"
            data-testid="email-input"
          />
          <label className="switch">
            <input
              type="checkbox"
              checked={smtpProbe}
              onChange={(event) => setSmtpProbe(event.target.checked)}
              data-testid="smtp-probe"
            />
            <span className="switch-track" aria-hidden="true" />
            <span>
              SMTP probe
              <span className="switch-hint">Asks the mail server whether the mailbox exists. Slower.</span>
            </span>
          </label>
          <button
            type="submit"
            className="btn btn-primary"
            disabled={single.pending}
            data-testid="check-email"
          >
            <Icon
              name={single.pending ? 'spinner' : 'search'}
              className={single.pending ? 'spin' : undefined}
            />
            {single.pending ? 'Checking…' : 'Check'}
          </button>
        </div>
        {single.error && !fieldError ? (
          <CheckError error={single.error} title={`${single.email ?? 'The address'} could not be checked`} />
        ) : null}
        {single.result && !single.pending ? (
          <EmailResult
            result={single.result}
            smtpProbe={single.smtpProbe}
            onSuggestion={(address) => {
              setEmail(address);
              void check(address);
            }}
          />
        ) : null}
      </div>
    </form>
  );
}
