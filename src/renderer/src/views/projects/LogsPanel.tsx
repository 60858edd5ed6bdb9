// The project's most recent log lines (build, runtime, system), as the platform last returned them.
import type { LogLine } from '../../../../shared/api/projects.js';
import { Icon } from '../../components/Icon';
import { plural } from '../../lib/format';

const SHOWN_LINES = 200;
const timeOfDay = new Intl.DateTimeFormat(undefined, {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});

export function LogsPanel({
  logs,
  onRefresh,
  refreshing,
  cached,
}: {
  logs: LogLine[];
  onRefresh: () => void;
  refreshing: boolean;
  cached: boolean;
}) {
  const shown = logs.slice(-SHOWN_LINES);
  return (
    <section className="card" aria-labelledby="logs-title" data-testid="project-logs">
      <header className="card-header">
        <div>
          <h2 className="card-title" id="logs-title">
            Recent logs
          </h2>
          <p className="card-description">
            {cached
              ? 'Logs are not kept offline: they show once the platform answers again.'
              : logs.length === 0
                ? 'Build, runtime and system output.'
                : `The last ${shown.length === logs.length ? '' : `${shown.length} of `}${plural(logs.length, 'line')}.`}
          </p>
        </div>
        <button type="button" className="btn btn-sm" onClick={onRefresh} disabled={refreshing}>
          <Icon name="refresh" className={refreshing ? 'spin' : undefined} />
          Refresh
        </button>
      </header>
      {shown.length > 0 ? (
        <pre className="logs" tabIndex={0} aria-label="Log lines">
          {shown.map((line, i) => (
            <span key={i} className={`log-line log-${line.stream}`}>
              <span className="log-time">{formatTime(line.ts)}</span>
              <span className="log-stream">
                {line.service ? `${line.stream}:${line.service}` : line.stream}
              </span>
              <span className="log-text">{line.line}</span>
              {'\n'}
            </span>
          ))}
        </pre>
      ) : (
        <div className="card-body">
          <p className="muted">No log lines yet.</p>
        </div>
      )}
    </section>
  );
}

function formatTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? '' : timeOfDay.format(date);
}
