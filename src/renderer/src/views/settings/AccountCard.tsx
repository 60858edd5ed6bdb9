// The account of the saved settings: who it is, its plan, and its balance.
import { Icon } from '../../components/Icon';
import { ErrorNotice } from '../../components/Notice';
import { formatDate, formatUsd } from '../../lib/format';
import { useAccount, useSettingsActions } from '../../stores/settings/selectors';

export function AccountCard() {
  const { account, error, loading } = useAccount();
  const { loadAccount } = useSettingsActions();

  return (
    <section className="card" aria-labelledby="account-title" data-testid="account">
      <header className="card-header">
        <div>
          <h2 className="card-title" id="account-title">
            Account
          </h2>
          <p className="card-description">On the saved platform.</p>
        </div>
        <button type="button" className="btn btn-sm" onClick={() => void loadAccount()} disabled={loading}>
          <Icon name="refresh" className={loading ? 'spin' : undefined} />
          Refresh
        </button>
      </header>
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
          </>
        ) : null}
      </div>
    </section>
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
