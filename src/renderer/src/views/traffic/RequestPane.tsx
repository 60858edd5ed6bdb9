// The detail pane of one exchange: what it was (method, URL, status, timing, sizes, where it came
// from, what it replays), its request and response headers, query, and bodies; and what can be done
// with it: Replay (r), Edit and replay (e), Copy as cURL, and a HAR of it. A replay's answer is shown
// beside the original's (ReplayCompare); the editor takes the pane while it is open.
import { useEffect, useState, type ReactNode } from 'react';
import type { CapturedRequest, CapturedRequestDetail, HeaderList } from '../../../../shared/api/tunnels.js';
import { CopyButton } from '../../components/CopyButton';
import { CloseButton } from '../../components/CloseButton';
import { Icon } from '../../components/Icon';
import { ErrorNotice, capitalize } from '../../components/Notice';
import { queryParams } from '../../../../shared/form.js';
import { downloadText } from '../../lib/download';
import { formatBytes, formatDate } from '../../lib/format';
import {
  exchangeTone,
  formatClock,
  formatDuration,
  harFileName,
  headersText,
  statusLabel,
  withoutAppResponse,
} from '../../lib/traffic-format';
import { bareUrl, originOf, requestTunnelLabel } from '../../lib/traffic-tunnels';
import { routeHref } from '../../stores/navigation/store';
import {
  useReplay,
  useRequestDetail,
  useTrafficActions,
  useTrafficRow,
  useTunnelOptions,
} from '../../stores/traffic/selectors';
import { showErrorToast } from '../../stores/toasts/store';
import { BodyView, NameValueTable } from './BodyView';
import { ReplayCompare } from './ReplayCompare';
import { ReplayEditor } from './ReplayEditor';

export function RequestPane({
  requestId,
  editing,
  onEdit,
  onClose,
}: {
  requestId: string;
  editing: boolean;
  onEdit: (open: boolean) => void;
  onClose: () => void;
}) {
  const row = useTrafficRow(requestId);
  const { detail, loading, error } = useRequestDetail(requestId);
  const replay = useReplay(requestId);
  const { loadDetail, replay: sendReplay, har, curl } = useTrafficActions();

  useEffect(() => {
    void loadDetail(requestId);
  }, [requestId, loadDetail]);

  const summary: CapturedRequest | null = detail ?? row;
  const titleId = `pane-title-${requestId}`;

  if (!summary) {
    return (
      <section className="request-pane" aria-label="Request" data-testid="request-pane">
        <div className="pane-header pane-header-bare">
          <span className="muted">{requestId}</span>
          <PaneClose onClose={onClose} />
        </div>
        <div className="pane-body">
          {error ? (
            <ErrorNotice
              error={error}
              title={
                error.code === 'not_found'
                  ? 'This request is not in the history'
                  : 'The request could not be loaded'
              }
              testId="request-error"
            />
          ) : (
            <div className="skeleton-block short" aria-busy="true" aria-label="Loading the request" />
          )}
        </div>
      </section>
    );
  }

  const exportHar = async () => {
    const outcome = await har([requestId]);
    if (outcome.ok) downloadText(harFileName(new Date(), 'request'), outcome.value);
    else showErrorToast(`HAR export failed: ${outcome.error.detail}`);
  };

  const tone = exchangeTone(summary);
  return (
    <section
      className="request-pane"
      aria-labelledby={titleId}
      data-testid="request-pane"
      data-id={requestId}
    >
      <header className="pane-header">
        <div className="pane-title-row">
          <span className="method-tag" data-method={summary.method}>
            {summary.method}
          </span>
          <h2 className="pane-title mono" id={titleId} title={summary.path}>
            {summary.path}
          </h2>
          <PaneClose onClose={onClose} />
        </div>
        <p className="pane-summary">
          <span className="status-pill" data-tone={tone} data-testid="pane-status">
            {statusLabel(summary)}
          </span>
          <span>{formatDuration(summary.duration_ms)}</span>
          <span>{formatBytes(summary.response_size)}</span>
          <span className="muted">{formatClock(summary.timestamp)}</span>
          {summary.replay_of ? (
            <a
              className="replay-of-link"
              href={routeHref({ screen: 'traffic', requestId: summary.replay_of })}
            >
              <Icon name="replay" size={13} />
              Replay of {summary.replay_of.slice(0, 14)}…
            </a>
          ) : null}
        </p>
        <div className="button-row pane-actions">
          <button
            type="button"
            className="btn btn-sm"
            onClick={() => void sendReplay({ id: requestId }, false)}
            disabled={replay?.pending}
            aria-keyshortcuts="r"
            data-testid="replay"
          >
            <Icon name="replay" />
            Replay <kbd className="kbd">r</kbd>
          </button>
          <button
            type="button"
            className="btn btn-sm"
            onClick={() => onEdit(!editing)}
            aria-pressed={editing}
            aria-keyshortcuts="e"
            data-testid="edit-replay"
          >
            <Icon name="edit" />
            Edit and replay <kbd className="kbd">e</kbd>
          </button>
          <CopyButton
            label="Copy as cURL"
            text={async () => {
              const outcome = await curl(requestId);
              return outcome.ok ? outcome.value : null;
            }}
            testId="copy-curl"
          />
          <button
            type="button"
            className="btn btn-sm"
            onClick={() => void exportHar()}
            data-testid="export-har-one"
          >
            <Icon name="download" />
            HAR
          </button>
        </div>
      </header>

      <div className="pane-body">
        {editing ? (
          detail ? (
            <ReplayEditor
              original={detail}
              onCancel={() => onEdit(false)}
              onSend={(input) => {
                onEdit(false);
                void sendReplay(input, true);
              }}
            />
          ) : (
            <div className="skeleton-block short" aria-busy="true" aria-label="Loading the request" />
          )
        ) : (
          <>
            {replay ? <ReplayCompare original={detail} replay={replay} /> : null}
            {error ? (
              <ErrorNotice error={error} title="The bodies could not be loaded" testId="request-error" />
            ) : null}
            <Overview request={summary} />
            <Section
              title="Request headers"
              count={summary.request_header_list.length}
              copy={headersText(summary.request_header_list)}
              testId="request-headers"
            >
              <HeadersTable headers={summary.request_header_list} caption="Request headers" />
            </Section>
            <QuerySection path={summary.path} />
            <BodySection side="request" request={summary} detail={detail} loading={loading} />
            <Section
              title="Response headers"
              count={summary.response_header_list.length}
              copy={headersText(summary.response_header_list)}
              testId="response-headers"
            >
              {withoutAppResponse(summary) ? (
                <p className="body-empty muted">No response{summary.error ? `: ${summary.error}` : ''}</p>
              ) : (
                <HeadersTable headers={summary.response_header_list} caption="Response headers" />
              )}
            </Section>
            <BodySection side="response" request={summary} detail={detail} loading={loading} />
          </>
        )}
      </div>
    </section>
  );
}

function PaneClose({ onClose }: { onClose: () => void }) {
  return (
    <CloseButton
      label="Close the request (Escape)"
      className="pane-close"
      onClick={onClose}
      aria-keyshortcuts="Escape"
      title="Close (Escape)"
      data-testid="pane-close"
    />
  );
}

/** The request's or the response's body, once the detail has come (a skeleton while it loads). */
function BodySection({
  side,
  request,
  detail,
  loading,
}: {
  side: 'request' | 'response';
  request: CapturedRequest;
  detail: CapturedRequestDetail | null;
  loading: boolean;
}) {
  const title = side === 'request' ? 'Request body' : 'Response body';
  return (
    <Section title={title} testId={`${side}-body-section`}>
      {detail ? (
        <BodyView
          title={title}
          body={side === 'request' ? detail.request_body : detail.response_body}
          headers={side === 'request' ? request.request_header_list : request.response_header_list}
          truncated={side === 'request' ? detail.request_body_truncated : detail.response_body_truncated}
          size={side === 'request' ? request.request_size : request.response_size}
          testId={`${side}-body`}
          showTitle={false}
        />
      ) : loading ? (
        <div className="skeleton-line" aria-busy="true" aria-label="Loading the body" />
      ) : null}
    </Section>
  );
}

function Overview({ request }: { request: CapturedRequest }) {
  const tunnels = useTunnelOptions();
  const finished = new Date(new Date(request.timestamp).getTime() + request.duration_ms).toISOString();
  return (
    <Section title="Overview" testId="request-overview">
      <dl className="pane-overview">
        <Item label="URL">
          <span className="mono break" data-testid="request-url">
            {request.url}
          </span>{' '}
          <CopyButton
            text={request.url}
            iconOnly
            ariaLabel="Copy the URL"
            className="icon-button inline-copy"
          />
        </Item>
        <Item label="Status">
          <span className="status-pill" data-tone={exchangeTone(request)}>
            {statusLabel(request)}
          </span>
          {request.error ? (
            <span className="pane-error" data-testid="request-error-text">
              {' '}
              {capitalize(request.error)}
            </span>
          ) : null}
        </Item>
        <Item label="Started">
          {formatDate(request.timestamp)} · <span className="mono">{formatClock(request.timestamp)}</span>
        </Item>
        <Item label="Finished">
          <span className="mono">{formatClock(finished)}</span>
        </Item>
        <Item label="Duration">{formatDuration(request.duration_ms)}</Item>
        <Item label="Sizes">
          Request {formatBytes(request.request_size)} · response {formatBytes(request.response_size)}
        </Item>
        <Item label="From">
          <span className="mono" data-testid="request-remote-addr">
            {request.remote_addr}
          </span>
          <span className="muted"> · {request.http_version}</span>
        </Item>
        <Item label="Tunnel">
          <span data-testid="request-tunnel">{requestTunnelLabel(request.url, tunnels)}</span>
          <span className="muted"> · {bareUrl(originOf(request.url))}</span>
        </Item>
        {request.replay_of ? (
          <Item label="Replay of">
            <a
              className="mono"
              href={routeHref({ screen: 'traffic', requestId: request.replay_of })}
              data-testid="replay-of"
            >
              {request.replay_of}
            </a>
          </Item>
        ) : null}
      </dl>
    </Section>
  );
}

function QuerySection({ path }: { path: string }) {
  const params = queryParams(path);
  if (params.length === 0) return null;
  return (
    <Section title="Query" count={params.length} testId="request-query">
      <NameValueTable rows={params} caption="Query parameters" nameLabel="Parameter" />
    </Section>
  );
}

export function HeadersTable({ headers, caption }: { headers: HeaderList; caption: string }) {
  return <NameValueTable rows={headers} caption={caption} nameLabel="Header" />;
}

function Item({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="pane-overview-item">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** A collapsible part of the pane, open by default. */
function Section({
  title,
  count,
  copy,
  testId,
  children,
}: {
  title: string;
  count?: number;
  copy?: string;
  testId?: string;
  children: ReactNode;
}) {
  const [open, setOpen] = useState(true);
  return (
    <section className="pane-section" data-testid={testId}>
      <h3 className="pane-section-head">
        <button type="button" className="section-toggle" aria-expanded={open} onClick={() => setOpen(!open)}>
          <Icon name="back" size={14} className="section-chevron" />
          {title}
          {count !== undefined ? <span className="muted section-count">{count}</span> : null}
        </button>
        {copy && open ? (
          <CopyButton
            text={copy}
            iconOnly
            ariaLabel={`Copy the ${title.toLowerCase()}`}
            className="icon-button"
          />
        ) : null}
      </h3>
      {open ? <div className="pane-section-body">{children}</div> : null}
    </section>
  );
}
