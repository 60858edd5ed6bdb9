// The live list of exchanges, newest first, virtualized by hand: rows have one fixed height, only the
// rows in view (and a few around them) are in the DOM, and the list's height is that of every row that
// matches, loaded or not, so the scrollbar tells the truth at 100,000 rows. Rows not loaded yet show as
// placeholders while the next older page is asked for. New rows go straight in at the top; when the
// user has scrolled down they wait behind an "N new" pill instead, so the row under the pointer stays
// put. The list is one ARIA grid: focus stays on it, and the selected row is its active descendant.
import {
  memo,
  useCallback,
  useEffect,
  useLayoutEffect,
  useMemo,
  useRef,
  useState,
  type KeyboardEvent,
} from 'react';
import type { CapturedRequest } from '../../../../shared/api/tunnels.js';
import { Icon } from '../../components/Icon';
import { ErrorNotice } from '../../components/Notice';
import { formatBytes, plural } from '../../lib/format';
import { queryKey } from '../../lib/traffic-filter';
import {
  exchangeTone,
  formatClock,
  formatDuration,
  statusLabel,
  withoutAppResponse,
} from '../../lib/traffic-format';
import { moveIndex, needsMore, scrollToReveal, virtualWindow } from '../../lib/virtual-window';
import { originOf, requestTunnel } from '../../lib/traffic-tunnels';
import {
  useTrafficActions,
  useTrafficFilter,
  useTrafficList,
  useTunnelOptions,
} from '../../stores/traffic/selectors';

export const ROW_HEIGHT = 30;
const HEADER_HEIGHT = 32;
/** The list's columns: each cell's class suffix (`cell-time`…) and its header. */
const COLUMNS = [
  ['time', 'Time'],
  ['tunnel', 'Tunnel'],
  ['method', 'Method'],
  ['path', 'Path'],
  ['status', 'Status'],
  ['duration', 'Duration'],
  ['size', 'Size'],
] as const;
const OVERSCAN = 8;
/** Older rows are asked for when the window comes this close to the last loaded one. */
const LOAD_AHEAD = 100;

export function rowDomId(id: string): string {
  return `traffic-row-${id}`;
}

export function TrafficList({
  selectedId,
  onSelect,
  emptyHint,
}: {
  selectedId: string | null;
  onSelect: (id: string) => void;
  emptyHint: string;
}) {
  const { rows, total, held, following, exhausted, status, error, loadingMore, moreError } = useTrafficList();
  const { query } = useTrafficFilter();
  const { loadMore, setFollowing, reload, resetFilter } = useTrafficActions();
  const tunnels = useTunnelOptions();
  const scroller = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [viewport, setViewport] = useState(0);

  useLayoutEffect(() => {
    const element = scroller.current;
    if (!element) return;
    const measure = () => setViewport(Math.max(0, element.clientHeight - HEADER_HEIGHT));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);

  const count = Math.max(total, rows.length);
  const slice = virtualWindow({
    scrollTop,
    viewportHeight: viewport,
    rowHeight: ROW_HEIGHT,
    count,
    overscan: OVERSCAN,
  });

  // Older pages as the window nears the end of what is loaded.
  useEffect(() => {
    if (status !== 'ready' || loadingMore || moreError) return;
    if (rows.length > 0 && needsMore(slice.end, rows.length, { exhausted, threshold: LOAD_AHEAD }))
      void loadMore();
  }, [slice.end, rows.length, exhausted, status, loadingMore, moreError, loadMore]);

  // A new query starts at the top.
  const key = queryKey(query);
  const lastKey = useRef(key);
  useEffect(() => {
    if (lastKey.current === key) return;
    lastKey.current = key;
    if (scroller.current) scroller.current.scrollTop = 0;
  }, [key]);

  const selectedIndex = useMemo(
    () => (selectedId ? rows.findIndex((row) => row.id === selectedId) : -1),
    [rows, selectedId],
  );

  // The selected row is brought into view when the selection changes (j/k, a link, a reload).
  const revealed = useRef<string | null>(null);
  useLayoutEffect(() => {
    const element = scroller.current;
    if (!element || selectedIndex < 0 || revealed.current === selectedId) return;
    revealed.current = selectedId;
    const top = scrollToReveal(selectedIndex, {
      scrollTop: element.scrollTop,
      viewportHeight: element.clientHeight - HEADER_HEIGHT,
      rowHeight: ROW_HEIGHT,
    });
    if (top !== null) element.scrollTop = top;
  }, [selectedId, selectedIndex]);

  const onScroll = useCallback(() => {
    const element = scroller.current;
    if (!element) return;
    setScrollTop(element.scrollTop);
    setFollowing(element.scrollTop < ROW_HEIGHT / 2);
  }, [setFollowing]);

  const showNewest = () => {
    if (scroller.current) scroller.current.scrollTop = 0;
    setFollowing(true);
  };

  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    const page = Math.max(1, Math.floor(viewport / ROW_HEIGHT) - 1);
    const steps: Record<string, number> = {
      ArrowDown: 1,
      ArrowUp: -1,
      PageDown: page,
      PageUp: -page,
      Home: -Infinity,
      End: Infinity,
    };
    const step = steps[event.key];
    if (step === undefined || rows.length === 0) return;
    event.preventDefault();
    const next =
      step === -Infinity
        ? 0
        : step === Infinity
          ? rows.length - 1
          : moveIndex(selectedIndex, step, rows.length);
    const row = rows[next];
    if (row) onSelect(row.id);
  };

  const visible: Array<CapturedRequest | null> = [];
  for (let i = slice.start; i < slice.end; i++) visible.push(rows[i] ?? null);
  const empty = status === 'ready' && count === 0 && held === 0;
  const filtering = Object.keys(query).length > 0;

  return (
    <div className="traffic-list-frame">
      {held > 0 && !following ? (
        <button type="button" className="new-pill" onClick={showNewest} data-testid="traffic-new-pill">
          <Icon name="arrow-down" className="new-pill-icon" />
          {held.toLocaleString()} new
        </button>
      ) : null}
      <div
        ref={scroller}
        className="traffic-list"
        role="grid"
        aria-label="Captured requests, newest first"
        aria-rowcount={count + 1}
        aria-colcount={7}
        aria-busy={status === 'loading'}
        aria-activedescendant={selectedIndex >= 0 && selectedId ? rowDomId(selectedId) : undefined}
        tabIndex={0}
        onScroll={onScroll}
        onKeyDown={onKeyDown}
        data-testid="traffic-list"
        data-total={count}
      >
        <div
          className="traffic-row traffic-head"
          role="row"
          aria-rowindex={1}
          style={{ height: HEADER_HEIGHT }}
        >
          {COLUMNS.map(([cell, label]) => (
            <span key={cell} role="columnheader" className={`cell-${cell}`}>
              {label}
            </span>
          ))}
        </div>
        <div className="traffic-rows" style={{ height: slice.totalHeight }} role="presentation">
          <div
            className="traffic-window"
            style={{ transform: `translateY(${slice.offset}px)` }}
            role="presentation"
          >
            {visible.map((request, i) => {
              if (!request)
                return <Placeholder key={`placeholder-${slice.start + i}`} index={slice.start + i} />;
              const tunnel = requestTunnel(request.url, tunnels);
              return (
                <Row
                  key={request.id}
                  request={request}
                  tunnelName={tunnel.subdomain}
                  tunnelPort={tunnel.port}
                  index={slice.start + i}
                  selected={request.id === selectedId}
                  onSelect={onSelect}
                />
              );
            })}
          </div>
        </div>
        {empty ? (
          <div className="traffic-empty" data-testid="traffic-empty">
            {filtering ? (
              <>
                <p>No requests match the filters.</p>
                <button type="button" className="btn btn-sm" onClick={resetFilter}>
                  Clear filters
                </button>
              </>
            ) : (
              <p>{emptyHint}</p>
            )}
          </div>
        ) : null}
        {status === 'loading' && rows.length === 0 ? (
          <div className="traffic-empty" aria-hidden="true">
            <p>Loading the history…</p>
          </div>
        ) : null}
      </div>
      {status === 'error' && error ? (
        <div className="traffic-list-error">
          <ErrorNotice
            error={error}
            title="The traffic history could not be read"
            testId="traffic-error"
            action={
              <button type="button" className="btn btn-sm" onClick={() => void reload()}>
                Retry
              </button>
            }
          />
        </div>
      ) : null}
      {moreError ? (
        <div className="traffic-more-error" role="alert">
          Older requests could not be loaded: {moreError.detail}
          <button type="button" className="btn btn-sm btn-ghost" onClick={() => void loadMore()}>
            Retry
          </button>
        </div>
      ) : null}
      <p className="sr-only" role="status">
        {status === 'ready' ? plural(count, 'request') : ''}
      </p>
    </div>
  );
}

/** A row not loaded yet, while its page is asked for. */
function Placeholder({ index }: { index: number }) {
  return (
    <div
      className="traffic-row is-loading-row"
      role="row"
      aria-rowindex={index + 2}
      style={{ height: ROW_HEIGHT }}
    >
      <span role="gridcell" className="loading-bar" aria-label="Loading" />
    </div>
  );
}

const Row = memo(function Row({
  request,
  tunnelName,
  tunnelPort,
  index,
  selected,
  onSelect,
}: {
  request: CapturedRequest;
  /** The tunnel's subdomain and local port, shown as `shop · :3000` (the port goes when narrow). */
  tunnelName: string | null;
  tunnelPort: number | null;
  index: number;
  selected: boolean;
  onSelect: (id: string) => void;
}) {
  const tone = exchangeTone(request);
  return (
    <div
      id={rowDomId(request.id)}
      className={`traffic-row${selected ? ' is-selected' : ''}`}
      role="row"
      aria-rowindex={index + 2}
      aria-selected={selected}
      style={{ height: ROW_HEIGHT }}
      onClick={() => onSelect(request.id)}
      data-testid="traffic-row"
      data-id={request.id}
    >
      <span role="gridcell" className="cell-time" title={request.timestamp}>
        {formatClock(request.timestamp)}
      </span>
      <span
        role="gridcell"
        className="cell-tunnel"
        title={originOf(request.url)}
        data-testid="traffic-row-tunnel"
      >
        {tunnelName ?? ''}
        {tunnelPort ? (
          <span className="cell-tunnel-port">
            {tunnelName ? ' · ' : ''}:{tunnelPort}
          </span>
        ) : null}
      </span>
      <span role="gridcell" className="cell-method" data-method={request.method}>
        {request.method}
      </span>
      <span role="gridcell" className="cell-path" title={request.path}>
        {request.replay_of ? (
          <>
            <Icon name="replay" size={12} className="replay-mark" />
            <span className="sr-only">Replay: </span>
          </>
        ) : null}
        {request.path}
      </span>
      <span role="gridcell" className="cell-status" data-tone={tone} title={request.error ?? undefined}>
        {statusLabel(request)}
      </span>
      <span role="gridcell" className="cell-duration">
        {formatDuration(request.duration_ms)}
      </span>
      <span role="gridcell" className="cell-size">
        {withoutAppResponse(request) ? '—' : formatBytes(request.response_size)}
      </span>
    </div>
  );
});
