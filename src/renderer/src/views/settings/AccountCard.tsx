// The account of the saved settings: who it is, its plan, its balance, and its recent usage (the
// ledger of charges such as email checks).
import { useEffect } from 'react';
import { ErrorNotice } from '../../components/Notice';
import { formatDate, formatDateTime, formatUsd, formatWhen } from '../../lib/format';
import { useEmailActions, useUsage } from '../../stores/email/selectors';
import { useAccount, useSettingsActions } from '../../stores/settings/selectors';
import { Card, CardHeader } from '../../components/Card';
import { RefreshButton } from '../../components/RefreshButton';

/** Ledger entries shown here; the newest first. */
const USAGE_SHOWN = 8;

export function AccountCard() {
  const { account, error, loading } = useAccount();
  const { loadAccount } = useSettingsActions();
  const { loadUsage } = useEmailActions();

  useEffect(() => {
    void loadUsage();
  }, [loadUsage]);

  const refresh = () => {
    void loadAccount();
    void loadUsage();
  };

  return (
    <Card titleId="account-title" testId="account">
      <CardHeader title="Account" actions={<RefreshButton onClick={refresh} busy={loading} />}>
        On the saved platform.
      </CardHeader>
      <div className="card-body stack">
        {error && !account ? <ErrorNotice error={error} title="The account could not be loaded" /> : null}
        {!account && !error ? <div className="skeleton-block short" aria-busy="true" /> : null}
        {account ? (
          <>
            <div className="account-identity">
              <span className="avatar" aria-hidden="true">
                {account.email.slice(0, 1).toUpperCase()}
              </span>
              <div>
                <p className="account-email" data-testid="account-email">
                  {account.email}
                </p>
                <p className="muted">
                  <span className="tag">{account.plan}</span>{' '}
                  {account.email_verified ? 'Email verified' : 'Email not verified'}
                </p>
              </div>
            </div>
            <dl className="balance" data-testid="account-balance">
              <div className="balance-item balance-available">
                <dt>Available</dt>
                <dd data-testid="balance-available">{formatUsd(account.balance.available_usd)}</dd>
              </div>
              <div className="balance-item">
                <dt>Monthly allowance</dt>
                <dd>{formatUsd(account.balance.allowance_usd)}</dd>
              </div>
              <div className="balance-item">
                <dt>Allowance used</dt>
                <dd>{formatUsd(account.balance.allowance_used_usd)}</dd>
              </div>
              <div className="balance-item">
                <dt>Top-up</dt>
                <dd>{formatUsd(account.balance.topup_usd)}</dd>
              </div>
            </dl>
            <UsageMeter used={account.balance.allowance_used_usd} allowance={account.balance.allowance_usd} />
            <p className="muted">
              The allowance resets on {formatDate(account.balance.allowance_resets_at)}.
            </p>
            <RecentUsage />
          </>
        ) : null}
      </div>
    </Card>
  );
}

function UsageMeter({ used, allowance }: { used: number; allowance: number }) {
  const fraction = allowance > 0 ? Math.min(1, used / allowance) : 0;
  return (
    <div
      className="meter"
      role="meter"
      aria-label="Allowance used"
      aria-valuemin={0}
      aria-valuemax={allowance}
      aria-valuenow={used}
      aria-valuetext={`${formatUsd(used)} of ${formatUsd(allowance)}`}
    >
      <div className="meter-bar" style={{ width: `${fraction * 100}%` }} />
    </div>
  );
}

function RecentUsage() {
  const { entries, error } = useUsage();
  return (
    <div className="usage" data-testid="account-usage">
      <h3 className="section-title">Recent usage</h3>
      {error && !entries ? <p className="muted">The usage could not be loaded: {error.detail}</p> : null}
      {entries && entries.length === 0 ? <p className="muted">No charges yet.</p> : null}
      {entries && entries.length > 0 ? (
        <table className="usage-table">
          <caption className="sr-only">The latest charges and top-ups, newest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">What</th>
              <th scope="col" className="cell-cost">
                Amount
              </th>
            </tr>
          </thead>
          <tbody>
            {entries.slice(0, USAGE_SHOWN).map((entry) => (
              <tr key={entry.id} data-testid="usage-row">
                <td className="muted usage-when" title={formatDateTime(entry.at)}>
                  {formatWhen(entry.at)}
                </td>
                <td title={entry.kind}>{entry.description}</td>
                <td className="cell-cost">{formatUsd(entry.amount_usd)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}
