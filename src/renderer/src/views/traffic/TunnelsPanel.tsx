// Tunnels: a local port on a public URL. The form starts one (port, an optional subdomain, and what
// Host header the local app sees); below it, each tunnel this Engine runs with its state (online,
// connecting, reconnecting and why), its public URL with Copy, and Stop. Starting needs the platform:
// offline, the form says so (the history below still works, it comes from this computer).
import { useId, useState, type FormEvent } from 'react';
import type { LocalTunnel } from '../../../../shared/bridge.js';
import { CopyButton } from '../../components/CopyButton';
import { FieldFrame, TextField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { ErrorNotice, FormErrors, capitalize } from '../../components/Notice';
import { fieldErrorsOf, unplacedErrors } from '../../lib/field-errors';
import { formatWhen } from '../../lib/format';
import { useConnection } from '../../stores/platform/selectors';
import {
  useTunnelActions,
  useTunnelList,
  useTunnelStopError,
  useTunnelStopping,
} from '../../stores/tunnels/selectors';
import type { BridgeErrorShape } from '../../../../shared/bridge.js';
import type { FieldError } from '../../../../shared/errors.js';

const SUBDOMAIN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

type HostMode = 'preserve' | 'rewrite' | 'custom';

interface FormErrorsState {
  port?: string;
  subdomain?: string;
  hostHeader?: string;
}

export function TunnelsPanel() {
  const { tunnels, loadError, starting } = useTunnelList();
  const { start, load } = useTunnelActions();
  const { online, problem } = useConnection();
  const [port, setPort] = useState('');
  const [subdomain, setSubdomain] = useState('');
  const [hostMode, setHostMode] = useState<HostMode>('preserve');
  const [customHost, setCustomHost] = useState('');
  const [errors, setErrors] = useState<FormErrorsState>({});
  const [refused, setRefused] = useState<{ error: BridgeErrorShape; rest: FieldError[] } | null>(null);
  const hostId = useId();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const found: FormErrorsState = {};
    const portNumber = Number(port.trim());
    if (!/^\d+$/.test(port.trim()) || portNumber < 1 || portNumber > 65_535) {
      found.port = 'a port from 1 to 65535';
    }
    const sub = subdomain.trim().toLowerCase();
    if (sub && !SUBDOMAIN.test(sub)) found.subdomain = 'lowercase letters, digits and inner hyphens only';
    const host = hostMode === 'custom' ? customHost.trim() : hostMode;
    if (hostMode === 'custom' && !/^[A-Za-z0-9.-]+(:\d+)?$/.test(host))
      found.hostHeader = 'a host name, e.g. myapp.test';
    setErrors(found);
    setRefused(null);
    if (Object.keys(found).length > 0) return;
    const outcome = await start({
      port: portNumber,
      ...(sub ? { subdomain: sub } : {}),
      hostHeader: host,
    });
    if (outcome.ok) {
      setSubdomain('');
      return;
    }
    const byField = fieldErrorsOf(outcome.error);
    const placed = { port: byField.port, subdomain: byField.subdomain, hostHeader: byField.hostHeader };
    setErrors(placed);
    const rest = unplacedErrors(byField, (path) => path in placed);
    if (rest.length > 0 || !Object.values(placed).some(Boolean)) setRefused({ error: outcome.error, rest });
  };

  const running = tunnels ?? [];
  return (
    <section className="card tunnels-card" aria-labelledby="tunnels-title" data-testid="tunnels-panel">
      <header className="card-header">
        <div>
          <h2 className="card-title" id="tunnels-title">
            Tunnels
          </h2>
          <p className="card-description">
            Put a local port on a public URL. Every request through it is listed below.
          </p>
        </div>
      </header>
      <div className="card-body stack">
        {online === false ? (
          <p className="inline-warning" role="status" data-testid="tunnels-offline">
            <Icon name="alert" />
            <span>
              The platform cannot be reached{problem ? ` (${problem})` : ''}: new tunnels start once it
              answers. The history below comes from this computer.
            </span>
          </p>
        ) : null}
        <form
          className="tunnel-form"
          onSubmit={(event) => void submit(event)}
          noValidate
          data-testid="tunnel-form"
        >
          <TextField
            label="Local port"
            fieldClassName="tunnel-port"
            className="mono"
            inputMode="numeric"
            placeholder="3000"
            value={port}
            onChange={(event) => setPort(event.target.value)}
            error={errors.port}
            required
            data-testid="tunnel-port"
          />
          <TextField
            label="Subdomain"
            fieldClassName="tunnel-subdomain"
            className="mono"
            placeholder="random"
            value={subdomain}
            onChange={(event) => setSubdomain(event.target.value)}
            error={errors.subdomain}
            hint={undefined}
            data-testid="tunnel-subdomain"
          />
          <FieldFrame label="Host header" error={errors.hostHeader} className="tunnel-host">
            {({ id, describedBy, invalid }) => (
              <div className="tunnel-host-inputs">
                <select
                  id={id}
                  className="input"
                  value={hostMode}
                  onChange={(event) => setHostMode(event.target.value as HostMode)}
                  aria-describedby={describedBy}
                  data-testid="tunnel-host-mode"
                >
                  <option value="preserve">Keep the public host</option>
                  <option value="rewrite">Rewrite to localhost:{port.trim() || 'port'}</option>
                  <option value="custom">Another host…</option>
                </select>
                {hostMode === 'custom' ? (
                  <input
                    id={hostId}
                    className="input mono"
                    placeholder="myapp.test"
                    aria-label="Host header to send"
                    aria-invalid={invalid || undefined}
                    value={customHost}
                    onChange={(event) => setCustomHost(event.target.value)}
                    spellCheck={false}
                    data-testid="tunnel-host-custom"
                  />
                ) : null}
              </div>
            )}
          </FieldFrame>
          <button
            type="submit"
            className="btn btn-primary tunnel-start"
            disabled={starting}
            data-testid="tunnel-start"
          >
            <Icon name={starting ? 'spinner' : 'play'} className={starting ? 'spin' : undefined} />
            {starting ? 'Starting…' : 'Start tunnel'}
          </button>
        </form>
        {refused ? (
          <FormErrors
            message={`The tunnel could not start: ${refused.error.detail}`}
            errors={refused.rest}
            testId="tunnel-start-error"
          />
        ) : null}
        {loadError && !tunnels ? (
          <ErrorNotice
            error={loadError}
            title="The tunnels could not be listed"
            action={
              <button type="button" className="btn btn-sm" onClick={() => void load()}>
                Retry
              </button>
            }
          />
        ) : null}
        {running.length > 0 ? (
          <ul className="tunnel-list" aria-label="Tunnels" data-testid="tunnel-list">
            {running.map((tunnel) => (
              <TunnelRow key={tunnel.id} tunnel={tunnel} />
            ))}
          </ul>
        ) : tunnels ? (
          <p className="muted" data-testid="tunnels-none">
            No tunnel is running.
          </p>
        ) : null}
      </div>
    </section>
  );
}

const STATE_LABELS: Record<LocalTunnel['state'], string> = {
  connecting: 'Connecting…',
  online: 'Online',
  reconnecting: 'Reconnecting…',
  stopped: 'Stopped',
};

function TunnelRow({ tunnel }: { tunnel: LocalTunnel }) {
  const { stop, start } = useTunnelActions();
  const stopping = useTunnelStopping(tunnel.id);
  const stopError = useTunnelStopError(tunnel.id);
  const stopped = tunnel.state === 'stopped';
  return (
    <li
      className="tunnel-row"
      data-state={tunnel.state}
      data-testid="tunnel-row"
      data-port={tunnel.localPort}
      data-subdomain={tunnel.subdomain ?? ''}
    >
      <span className="tunnel-state" data-testid="tunnel-state">
        <span className={`status-dot is-${tunnel.state}`} aria-hidden="true" />
        {STATE_LABELS[tunnel.state]}
      </span>
      <div className="tunnel-main">
        <div className="tunnel-route">
          <span className="mono tunnel-local">localhost:{tunnel.localPort}</span>
          <span className="tunnel-arrow" aria-label="served at">
            →
          </span>
          {tunnel.url ? (
            <a
              className="external-link mono"
              href={tunnel.url}
              target="_blank"
              rel="noopener noreferrer"
              data-testid="tunnel-url"
            >
              {tunnel.url.replace(/^https?:\/\//, '')}
              <Icon name="external" size={13} />
            </a>
          ) : (
            <span className="muted">
              {tunnel.subdomain
                ? `${tunnel.subdomain} (waiting for the platform)`
                : 'waiting for the platform'}
            </span>
          )}
        </div>
        <p className="tunnel-detail muted">
          {tunnel.detail ? `${capitalize(tunnel.detail)} · ` : ''}
          {tunnel.hostHeader === 'preserve'
            ? 'Public Host header kept'
            : tunnel.hostHeader === 'rewrite'
              ? `Host rewritten to localhost:${tunnel.localPort}`
              : `Host set to ${tunnel.hostHeader}`}
          {' · started '}
          {formatWhen(tunnel.startedAt)}
        </p>
        {stopError ? (
          <p className="field-error" role="alert">
            {capitalize(stopError.detail)}
          </p>
        ) : null}
      </div>
      <div className="button-row tunnel-actions">
        {tunnel.url && !stopped ? (
          <CopyButton text={tunnel.url} label="Copy URL" testId="tunnel-copy" />
        ) : null}
        {stopped ? (
          <button
            type="button"
            className="btn btn-sm"
            onClick={() =>
              void start({
                port: tunnel.localPort,
                ...(tunnel.subdomain ? { subdomain: tunnel.subdomain } : {}),
                hostHeader: tunnel.hostHeader,
              })
            }
            data-testid="tunnel-restart"
          >
            <Icon name="play" />
            Start again
          </button>
        ) : (
          <button
            type="button"
            className="btn btn-sm"
            onClick={() => void stop(tunnel.id)}
            disabled={stopping}
            aria-label={`Stop the tunnel of port ${tunnel.localPort}`}
            data-testid="tunnel-stop"
          >
            <Icon name="stop" />
            {stopping ? 'Stopping…' : 'Stop'}
          </button>
        )}
      </div>
    </li>
  );
}
