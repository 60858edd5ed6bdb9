// A replay beside its original: status, timing and size of each, the response headers paired by name
// (what changed, appeared or went), and both response bodies side by side.
import type { CapturedRequestDetail } from '../../../../shared/api/tunnels.js';
import { CloseButton } from '../../components/CloseButton';
import { Icon } from '../../components/Icon';
import { ErrorNotice } from '../../components/Notice';
import { formatBytes } from '../../lib/format';
import { diffHeaders } from '../../lib/replay';
import { exchangeTone, formatDuration, statusLabel } from '../../lib/traffic-format';
import { routeHref } from '../../stores/navigation/store';
import { useTrafficActions } from '../../stores/traffic/selectors';
import type { ReplayState } from '../../stores/traffic/store';
import { BodyView } from './BodyView';

/** Headers that differ on every exchange, or with the connection (hop-by-hop): dimmed, not flagged. */
const VOLATILE = new Set([
  'date',
  'age',
  'etag',
  'last-modified',
  'expires',
  'x-request-id',
  'set-cookie',
  'connection',
  'keep-alive',
]);

export function ReplayCompare({
  original,
  replay,
}: {
  original: CapturedRequestDetail | null;
  replay: ReplayState;
}) {
  const { closeReplay } = useTrafficActions();
  const result = replay.result;
  const id = replay.input.id;
  const label = replay.edited ? 'Edited replay' : 'Replay';

  return (
    <section
      className="replay-compare"
      aria-label={`${label} beside the original`}
      data-testid="replay-compare"
    >
      <header className="replay-compare-head">
        <h3 className="section-title">
          <Icon name="replay" /> {label}
          {replay.pending ? (
            <span className="muted replay-pending" role="status">
              <Icon name="spinner" className="spin" /> sending…
            </span>
          ) : null}
        </h3>
        <div className="button-row">
          {result ? (
            <a
              className="btn btn-sm"
              href={routeHref({ screen: 'traffic', requestId: result.id })}
              data-testid="open-replay"
            >
              Open the replay
            </a>
          ) : null}
          <CloseButton
            label="Close the comparison"
            onClick={() => closeReplay(id)}
            data-testid="close-compare"
          />
        </div>
      </header>
      {replay.error ? (
        <ErrorNotice error={replay.error} title="The replay failed" testId="replay-error" />
      ) : null}
      {original ? (
        <div className="compare-grid">
          <Side title="Original" exchange={original} testId="compare-original" />
          {result ? (
            <Side title={label} exchange={result} testId="compare-replay" />
          ) : (
            <div className="compare-side compare-waiting">
              {replay.pending ? 'Waiting for the answer…' : '—'}
            </div>
          )}
        </div>
      ) : null}
      {original && result ? (
        <>
          <HeadersDiff original={original} result={result} />
          <div className="compare-grid compare-bodies">
            <BodyView
              title="Original response"
              body={original.response_body}
              headers={original.response_header_list}
              truncated={original.response_body_truncated}
              size={original.response_size}
              testId="compare-original-body"
            />
            <BodyView
              title={`${label} response`}
              body={result.response_body}
              headers={result.response_header_list}
              truncated={result.response_body_truncated}
              size={result.response_size}
              testId="compare-replay-body"
            />
          </div>
        </>
      ) : null}
    </section>
  );
}

function Side({
  title,
  exchange,
  testId,
}: {
  title: string;
  exchange: CapturedRequestDetail;
  testId: string;
}) {
  return (
    <div className="compare-side" data-testid={testId}>
      <h4 className="compare-title">{title}</h4>
      <p className="compare-status">
        <span className="status-pill" data-tone={exchangeTone(exchange)} data-testid={`${testId}-status`}>
          {statusLabel(exchange)}
        </span>
        <span>{formatDuration(exchange.duration_ms)}</span>
        <span>{formatBytes(exchange.response_size)}</span>
      </p>
      <p className="mono compare-request" title={exchange.path} data-testid={`${testId}-request`}>
        {exchange.method} {exchange.path}
      </p>
      {exchange.error ? <p className="pane-error">{exchange.error}</p> : null}
    </div>
  );
}

function HeadersDiff({
  original,
  result,
}: {
  original: CapturedRequestDetail;
  result: CapturedRequestDetail;
}) {
  const rows = diffHeaders(original.response_header_list, result.response_header_list);
  if (rows.length === 0) return null;
  return (
    <table className="kv-table diff-table" data-testid="compare-headers">
      <caption className="diff-caption">Response headers</caption>
      <thead>
        <tr>
          <th scope="col">Header</th>
          <th scope="col">Original</th>
          <th scope="col">Replay</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => {
          const volatile = VOLATILE.has(row.name.toLowerCase());
          return (
            <tr key={row.name} data-change={volatile && row.change !== 'same' ? 'volatile' : row.change}>
              <th scope="row" className="mono">
                {row.name}
              </th>
              <td className="mono">{row.before ?? <span className="muted">—</span>}</td>
              <td className="mono">
                {row.after ?? <span className="muted">—</span>}
                {row.change !== 'same' && !volatile ? <span className="sr-only"> ({row.change})</span> : null}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
