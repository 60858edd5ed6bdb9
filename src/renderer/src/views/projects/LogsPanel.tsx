// The project's logs (build, runtime and system output), followed live while the panel is open.
// Search highlights and keeps the matching lines; the service and stream filters narrow further. Pause
// holds new lines back (and counts them) until Resume; Copy puts the lines shown on the clipboard. The
// view follows the newest line until the user scrolls up, and again once they scroll back down.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import type { Project } from '../../../../shared/api/projects.js';
import { Icon } from '../../components/Icon';
import { ErrorNotice } from '../../components/Notice';
import { copyText } from '../../lib/clipboard';
import { plural } from '../../lib/format';
import {
  LOG_STREAM_NAMES,
  NO_FILTER,
  formatLogLines,
  highlight,
  isFiltering,
  logView,
  serviceOptions,
  type LogEntry,
  type LogFilter,
  type LogStream,
} from '../../lib/log-view';
import { useFollowLogs, useProjectLogs } from '../../stores/logs/selectors';

const timeOfDay = new Intl.DateTimeFormat(undefined, {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});

const STREAM_LABELS: Record<LogStream, string> = { build: 'Build', runtime: 'Runtime', system: 'System' };

/** How close to the bottom (px) still counts as "at the newest line". */
const BOTTOM_SLACK_PX = 24;
const COPIED_MS = 2_000;

export function LogsPanel({ project, offline }: { project: Project; offline: boolean }) {
  const follow = useFollowLogs();
  useEffect(() => follow(project.id), [follow, project.id]);
  const logs = useProjectLogs(project.id);

  const [filter, setFilter] = useState<LogFilter>(NO_FILTER);
  const [pausedAt, setPausedAt] = useState<number | null>(null);
  const [copied, setCopied] = useState<'copied' | 'failed' | null>(null);
  const view = useMemo(() => logView(logs.entries, filter, pausedAt), [logs.entries, filter, pausedAt]);
  const declared = useMemo(
    () => project.build_config.services.map((service) => service.name),
    [project.build_config.services],
  );
  const services = useMemo(() => serviceOptions(logs.entries, declared), [logs.entries, declared]);

  const scroller = useRef<HTMLDivElement>(null);
  const stuckRef = useRef(true);
  const [stuck, setStuck] = useState(true);
  useLayoutEffect(() => {
    const element = scroller.current;
    if (element && stuckRef.current) element.scrollTop = element.scrollHeight;
  }, [view.visible]);

  useEffect(() => {
    if (!copied) return;
    const timer = setTimeout(() => setCopied(null), COPIED_MS);
    return () => clearTimeout(timer);
  }, [copied]);

  const paused = pausedAt !== null;
  const loading = logs.next === null && !logs.error;
  const filtering = isFiltering(filter);
  const state = offline
    ? 'offline'
    : logs.error
      ? 'error'
      : loading
        ? 'connecting'
        : paused
          ? 'paused'
          : 'live';

  const toggleStream = (stream: LogStream) =>
    setFilter((current) => {
      const streams = new Set(current.streams);
      if (streams.has(stream)) streams.delete(stream);
      else streams.add(stream);
      return { ...current, streams };
    });

  const jumpToLatest = () => {
    const element = scroller.current;
    if (!element) return;
    stuckRef.current = true;
    setStuck(true);
    element.scrollTop = element.scrollHeight;
  };

  const copy = async () => {
    setCopied((await copyText(formatLogLines(view.visible))) ? 'copied' : 'failed');
  };

  return (
    <section className="card" id="logs" aria-labelledby="logs-title" data-testid="project-logs">
      <header className="card-header">
        <div>
          <div className="title-row">
            <h2 className="card-title" id="logs-title">
              Logs
            </h2>
            <span className="live-indicator" data-state={state} data-testid="logs-state">
              <span className="live-dot" aria-hidden="true" />
              {STATE_LABELS[state]}
            </span>
          </div>
          <p className="card-description">
            {offline
              ? 'Logs are not kept offline: they follow again once the platform answers.'
              : 'Build, runtime and system output, as it happens.'}
          </p>
        </div>
        <div className="button-row">
          <button
            type="button"
            className="btn btn-sm"
            aria-pressed={paused}
            onClick={() => setPausedAt(paused ? null : (logs.next ?? 0))}
            data-testid="logs-pause"
          >
            <Icon name={paused ? 'play' : 'pause'} />
            {paused ? 'Resume' : 'Pause'}
          </button>
          <button
            type="button"
            className="btn btn-sm"
            onClick={() => void copy()}
            disabled={view.visible.length === 0}
            data-testid="logs-copy"
          >
            <Icon name={copied === 'copied' ? 'check' : 'copy'} />
            {copied === 'copied' ? 'Copied' : copied === 'failed' ? 'Copy failed' : 'Copy'}
          </button>
        </div>
      </header>

      <div className="logs-toolbar">
        <label className="logs-search">
          <Icon name="search" className="logs-search-icon" />
          <span className="sr-only">Search the logs</span>
          <input
            type="search"
            className="input"
            placeholder="Search the logs"
            value={filter.query}
            onChange={(event) => setFilter((current) => ({ ...current, query: event.target.value }))}
            spellCheck={false}
            autoComplete="off"
            data-testid="logs-search"
          />
        </label>
        <label className="logs-service">
          <span className="sr-only">Service</span>
          <select
            className="input"
            value={filter.service}
            // A project without services has nothing to choose between.
            disabled={services.length < 2}
            onChange={(event) => setFilter((current) => ({ ...current, service: event.target.value }))}
            data-testid="logs-service"
          >
            {services.map((option) => (
              <option key={option.value} value={option.value}>
                {option.label}
              </option>
            ))}
          </select>
        </label>
        <div className="stream-toggles" role="group" aria-label="Streams">
          {LOG_STREAM_NAMES.map((stream) => (
            <button
              key={stream}
              type="button"
              className="stream-toggle"
              data-stream={stream}
              aria-pressed={filter.streams.has(stream)}
              onClick={() => toggleStream(stream)}
              data-testid={`logs-stream-${stream}`}
            >
              {STREAM_LABELS[stream]}
            </button>
          ))}
        </div>
      </div>

      {logs.error ? (
        <div className="card-body">
          <ErrorNotice error={logs.error} title="The logs could not be followed" testId="logs-error" />
        </div>
      ) : null}

      {paused ? (
        <div className="logs-held" role="status" data-testid="logs-held">
          <span>
            Paused
            {view.held > 0 ? ` · ${plural(view.held, 'new line')}` : ' · new lines wait here'}
          </span>
          <button type="button" className="btn btn-sm btn-ghost" onClick={() => setPausedAt(null)}>
            Resume
          </button>
        </div>
      ) : null}

      <div
        ref={scroller}
        className="logs"
        role="log"
        aria-live="off"
        aria-label="Log lines"
        aria-busy={loading}
        tabIndex={0}
        onScroll={(event) => {
          const element = event.currentTarget;
          const atBottom = element.scrollHeight - element.scrollTop - element.clientHeight <= BOTTOM_SLACK_PX;
          stuckRef.current = atBottom;
          setStuck(atBottom);
        }}
        data-testid="logs-lines"
      >
        {view.visible.length > 0 ? (
          view.visible.map((entry) => <Line key={entry.seq} entry={entry} query={filter.query} />)
        ) : (
          <p className="logs-empty" data-testid="logs-empty">
            {loading
              ? 'Loading the logs…'
              : logs.entries.length === 0
                ? 'No log lines yet. Deploy the project to see its build and runtime output here.'
                : paused && view.held > 0
                  ? 'New lines are held while paused.'
                  : 'No lines match the search and filters.'}
          </p>
        )}
      </div>

      <footer className="logs-footer">
        <span className="muted" data-testid="logs-count">
          {filtering
            ? `Showing ${view.visible.length.toLocaleString()} of ${plural(logs.entries.length, 'line')}`
            : plural(view.visible.length, 'line')}
        </span>
        <span className="button-row">
          {filtering ? (
            <button type="button" className="btn btn-sm btn-ghost" onClick={() => setFilter(NO_FILTER)}>
              Clear filters
            </button>
          ) : null}
          {!stuck ? (
            <button type="button" className="btn btn-sm" onClick={jumpToLatest} data-testid="logs-jump">
              <Icon name="arrow-down" />
              Latest
            </button>
          ) : null}
        </span>
      </footer>
    </section>
  );
}

const STATE_LABELS = {
  live: 'Live',
  paused: 'Paused',
  connecting: 'Connecting…',
  offline: 'Offline',
  error: 'Not following',
} as const;

function Line({ entry, query }: { entry: LogEntry; query: string }) {
  const { line } = entry;
  // A blank line (npm prints some around each script) is a thin gap, not a row of its own: it stays in
  // the list, and in what Copy takes, as the output had it.
  const blank = line.line.trim() === '';
  return (
    <div
      className={blank ? 'log-line log-line-blank' : 'log-line'}
      data-stream={line.stream}
      data-blank={blank || undefined}
      data-testid="log-line"
    >
      <time className="log-time" dateTime={line.ts} title={line.ts}>
        {formatTime(line.ts)}
      </time>
      <span className="log-stream">{line.service ? `${line.stream}:${line.service}` : line.stream}</span>
      <span className="log-text">
        {highlight(line.line, query).map((part, i) =>
          part.match ? <mark key={i}>{part.text}</mark> : <span key={i}>{part.text}</span>,
        )}
      </span>
    </div>
  );
}

function formatTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? '' : timeOfDay.format(date);
}
