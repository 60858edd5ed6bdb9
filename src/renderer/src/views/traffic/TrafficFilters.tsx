// The filter bar above the list: full-text search (method, path, headers and bodies, by the Mirror),
// the tunnel (once there are several, by name), status class toggles, and a panel of further filters (methods, exact codes, path, header, duration).
// What is typed applies once typing pauses; toggles at once. A field that does not parse says why and
// is left out of the query until it does.
import { useId, useState, type ReactNode, type RefObject } from 'react';
import { Icon } from '../../components/Icon';
import {
  COMMON_METHODS,
  STATUS_CLASSES,
  filterProblems,
  type StatusClass,
  type TrafficFilter,
} from '../../lib/traffic-filter';
import { tunnelLabel } from '../../lib/traffic-tunnels';
import { useTrafficActions, useTrafficFilter, useTunnelOptions } from '../../stores/traffic/selectors';

const STATUS_LABELS: Record<StatusClass, string> = {
  '2xx': '2xx',
  '3xx': '3xx',
  '4xx': '4xx',
  '5xx': '5xx',
  error: 'Error',
};

/** Filters that live in the panel (the search and the status toggles are always in view). */
function panelCount(filter: TrafficFilter): number {
  return (
    (filter.methods.length > 0 ? 1 : 0) +
    (filter.statusCodes.trim() ? 1 : 0) +
    (filter.path.trim() ? 1 : 0) +
    (filter.header.trim() ? 1 : 0) +
    (filter.minDuration.trim() || filter.maxDuration.trim() ? 1 : 0)
  );
}

export function TrafficFilters({
  searchRef,
  count,
}: {
  searchRef: RefObject<HTMLInputElement | null>;
  count: ReactNode;
}) {
  const { filter, query } = useTrafficFilter();
  const { setFilter, resetFilter } = useTrafficActions();
  const inPanel = panelCount(filter);
  const [open, setOpen] = useState(inPanel > 0);
  const panelId = useId();
  const problems = filterProblems(filter);
  const narrowing = Object.keys(query).length > 0 || inPanel > 0 || filter.q.trim() !== '';
  const tunnels = useTunnelOptions();
  const chosenKnown = tunnels.some((tunnel) => tunnel.subdomain === filter.tunnel);

  const toggle = <T extends string>(list: readonly T[], value: T): T[] =>
    list.includes(value) ? list.filter((v) => v !== value) : [...list, value];

  return (
    <div
      className="traffic-filters"
      role="search"
      aria-label="Filter the requests"
      data-testid="traffic-filters"
    >
      <div className="traffic-filter-row">
        <label className="logs-search traffic-search">
          <Icon name="search" className="logs-search-icon" />
          <span className="sr-only">Search methods, paths, headers and bodies</span>
          <input
            ref={searchRef}
            type="search"
            className="input"
            placeholder="Search paths, headers and bodies"
            value={filter.q}
            onChange={(event) => setFilter({ q: event.target.value }, { typing: true })}
            onKeyDown={(event) => {
              if (event.key === 'Escape') event.currentTarget.blur();
            }}
            spellCheck={false}
            autoComplete="off"
            aria-keyshortcuts="/"
            data-testid="traffic-search"
          />
          <kbd className="kbd search-kbd" aria-hidden="true">
            /
          </kbd>
        </label>
        {tunnels.length > 1 || filter.tunnel ? (
          <select
            className={`input traffic-tunnel-filter${filter.tunnel ? ' is-set' : ''}`}
            aria-label="Tunnel"
            value={filter.tunnel}
            onChange={(event) => setFilter({ tunnel: event.target.value })}
            data-testid="traffic-filter-tunnel"
          >
            <option value="">All tunnels</option>
            {tunnels.map((tunnel) => (
              <option key={tunnel.subdomain} value={tunnel.subdomain}>
                {tunnel.label}
              </option>
            ))}
            {filter.tunnel && !chosenKnown ? (
              <option value={filter.tunnel}>{tunnelLabel(filter.tunnel, null)}</option>
            ) : null}
          </select>
        ) : null}
        <div className="stream-toggles" role="group" aria-label="Status">
          {STATUS_CLASSES.map((cls) => (
            <button
              key={cls}
              type="button"
              className="stream-toggle status-toggle"
              data-class={cls}
              aria-pressed={filter.statusClasses.includes(cls)}
              onClick={() => setFilter({ statusClasses: toggle(filter.statusClasses, cls) })}
              data-testid={`traffic-status-${cls}`}
            >
              {STATUS_LABELS[cls]}
            </button>
          ))}
        </div>
        <button
          type="button"
          className="btn btn-sm"
          aria-expanded={open}
          aria-controls={panelId}
          onClick={() => setOpen(!open)}
          data-testid="traffic-more-filters"
        >
          <Icon name="filter" />
          Filters
          {inPanel > 0 ? <span className="count-badge">{inPanel}</span> : null}
        </button>
        {narrowing ? (
          <button
            type="button"
            className="btn btn-sm btn-ghost"
            onClick={resetFilter}
            data-testid="traffic-clear-filters"
          >
            Clear
          </button>
        ) : null}
        <span className="traffic-count muted" data-testid="traffic-count">
          {count}
        </span>
      </div>

      {open ? (
        <div className="traffic-filter-panel" id={panelId} data-testid="traffic-filter-panel">
          <div className="filter-field filter-methods">
            <span className="filter-label" id={`${panelId}-methods`}>
              Method
            </span>
            <div className="stream-toggles" role="group" aria-labelledby={`${panelId}-methods`}>
              {COMMON_METHODS.map((method) => (
                <button
                  key={method}
                  type="button"
                  className="stream-toggle"
                  aria-pressed={filter.methods.includes(method)}
                  onClick={() => setFilter({ methods: toggle(filter.methods, method) })}
                  data-testid={`traffic-method-${method}`}
                >
                  {method}
                </button>
              ))}
            </div>
          </div>
          <FilterInput
            label="Path contains"
            value={filter.path}
            placeholder="/api/orders"
            onChange={(path) => setFilter({ path }, { typing: true })}
            testId="traffic-filter-path"
            className="filter-path"
          />
          <FilterInput
            label="Header"
            value={filter.header}
            placeholder="content-type: json"
            onChange={(header) => setFilter({ header }, { typing: true })}
            testId="traffic-filter-header"
            className="filter-header"
          />
          <FilterInput
            label="Status codes"
            value={filter.statusCodes}
            placeholder="404, 503"
            onChange={(statusCodes) => setFilter({ statusCodes }, { typing: true })}
            error={problems.statusCodes}
            testId="traffic-filter-codes"
            className="filter-codes"
          />
          <div className="filter-field filter-duration">
            <span className="filter-label" id={`${panelId}-duration`}>
              Duration (ms)
            </span>
            <div className="duration-range" role="group" aria-labelledby={`${panelId}-duration`}>
              <input
                className="input mono"
                inputMode="decimal"
                placeholder="min"
                aria-label="Minimum duration in milliseconds"
                value={filter.minDuration}
                aria-invalid={problems.minDuration ? true : undefined}
                onChange={(event) => setFilter({ minDuration: event.target.value }, { typing: true })}
                data-testid="traffic-filter-min"
              />
              <span aria-hidden="true">–</span>
              <input
                className="input mono"
                inputMode="decimal"
                placeholder="max"
                aria-label="Maximum duration in milliseconds"
                value={filter.maxDuration}
                aria-invalid={problems.maxDuration ? true : undefined}
                onChange={(event) => setFilter({ maxDuration: event.target.value }, { typing: true })}
                data-testid="traffic-filter-max"
              />
            </div>
            {problems.minDuration || problems.maxDuration ? (
              <p className="field-error">
                {problems.minDuration
                  ? `Minimum: ${problems.minDuration}`
                  : `Maximum: ${problems.maxDuration}`}
              </p>
            ) : null}
          </div>
        </div>
      ) : null}
    </div>
  );
}

function FilterInput({
  label,
  value,
  placeholder,
  onChange,
  error,
  testId,
  className,
}: {
  label: string;
  value: string;
  placeholder: string;
  onChange: (value: string) => void;
  error?: string | undefined;
  testId: string;
  className: string;
}) {
  const id = useId();
  return (
    <div className={`filter-field ${className}`}>
      <label className="filter-label" htmlFor={id}>
        {label}
      </label>
      <input
        id={id}
        className="input mono"
        value={value}
        placeholder={placeholder}
        onChange={(event) => onChange(event.target.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
        spellCheck={false}
        autoComplete="off"
        data-testid={testId}
      />
      {error ? (
        <p className="field-error" id={`${id}-error`}>
          {error[0]!.toUpperCase() + error.slice(1)}
        </p>
      ) : null}
    </div>
  );
}
