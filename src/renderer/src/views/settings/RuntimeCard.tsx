// How the platform of the saved settings runs apps: its runtime (containers, the bubblewrap sandbox, or
// plain processes) with the platform's own notes, the releases it keeps for a rollback, and a warning
// with what to install when apps run as the platform's own user. Loaded again whenever the platform
// changes (here or in another window) and when it comes back after being unreachable.
import { Icon } from '../../components/Icon';
import { useConnection } from '../../stores/platform/selectors';
import { usePlatformLoad } from '../../stores/platform/use-platform-load';
import { useRuntime, useSettingsActions } from '../../stores/settings/selectors';
import { runtimeSummary, runtimeUnavailable } from './runtime';
import { Card, CardHeader } from '../../components/Card';
import { RefreshButton } from '../../components/RefreshButton';

export function RuntimeCard() {
  const { info, error, loading } = useRuntime();
  const { loadRuntime } = useSettingsActions();
  const { mode, platformUrl } = useConnection();

  // On opening, ask again (the platform may have restarted with another runtime).
  usePlatformLoad(loadRuntime, error);

  const summary = info ? runtimeSummary(info) : null;
  const problem = !info && error ? runtimeUnavailable(error) : null;

  return (
    <Card titleId="runtime-title" testId="runtime">
      <CardHeader
        title="Runtime"
        actions={<RefreshButton onClick={() => void loadRuntime()} busy={loading} testId="runtime-refresh" />}
      >
        How apps run on{' '}
        {mode === 'remote' && platformUrl ? (
          <span className="mono">{platformUrl}</span>
        ) : mode === 'local' ? (
          'the local platform'
        ) : (
          'the platform'
        )}
        .
      </CardHeader>
      <div className="card-body stack" aria-busy={loading && !summary && !problem}>
        {problem ? (
          <div
            className={`notice notice-${problem.tone}`}
            role={problem.tone === 'error' ? 'alert' : 'note'}
            data-testid="runtime-unavailable"
            data-code={error?.code}
          >
            <Icon name="alert" className="notice-icon" />
            <div className="notice-body">
              <p className="notice-title">{problem.title}</p>
              <p>{problem.detail}</p>
            </div>
          </div>
        ) : null}
        {!summary && !problem ? <div className="skeleton-block short" data-testid="runtime-loading" /> : null}
        {summary ? (
          <>
            <dl className="runtime-facts">
              <div className="runtime-fact runtime-fact-main" data-runtime={summary.kind}>
                <dt>Apps run as</dt>
                <dd data-testid="runtime-label" data-runtime={summary.kind}>
                  {summary.label}
                </dd>
              </div>
              <div className="runtime-fact">
                <dt>Kept for rollback</dt>
                <dd data-testid="runtime-keep">{summary.keptReleases}</dd>
              </div>
            </dl>
            <p className="muted" data-testid="runtime-description">
              {summary.description}
            </p>
            {summary.warning ? (
              <div className="notice notice-warning" role="note" data-testid="runtime-warning">
                <Icon name="alert" className="notice-icon" />
                <div className="notice-body">
                  <p className="notice-title">{summary.warning.title}</p>
                  <p>{summary.warning.text}</p>
                  <p>To isolate apps, install on the platform’s machine:</p>
                  <ul className="notice-list">
                    {summary.warning.install.map((item) => (
                      <li key={item}>{item}</li>
                    ))}
                  </ul>
                  <p>{summary.warning.then}</p>
                </div>
              </div>
            ) : null}
            {summary.notes.length > 0 ? (
              <div className="runtime-notes-block">
                <h3 className="section-title">What the platform says</h3>
                <ul className="runtime-notes" data-testid="runtime-notes">
                  {summary.notes.map((note, index) => (
                    <li key={`${index}:${note}`} data-testid="runtime-note">
                      {note}
                    </li>
                  ))}
                </ul>
              </div>
            ) : null}
          </>
        ) : null}
      </div>
    </Card>
  );
}
