// Tunnels, as a compact bar above the requests: one chip per tunnel (its state, `localhost:PORT →` its
// public URL to open, Copy, Stop). "New tunnel" (in the screen's header: NewTunnelButton) opens the
// start form below the chips (a local port, an optional subdomain, and what Host header the local app
// sees). With no tunnel yet, the bar says in a line what a tunnel is and the form is open. Below the chips, what needs the user:
// nothing listening on a tunnel's local port (requests would get 502), a tunnel reconnecting or
// refused and why, a failed stop. Starting needs the platform: offline, the bar says so (the history
// below still works, it comes from this computer).
import { useId, useState, type FormEvent } from 'react';
import type { LocalTunnel } from '../../../../shared/bridge.js';
import { isDnsLabel } from '../../../../shared/dns-label.js';
import { CopyButton } from '../../components/CopyButton';
import { FieldFrame, TextField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { ErrorNotice, FormErrors } from '../../components/Notice';
import { fieldErrorsOf, unplacedErrors } from '../../lib/field-errors';
import { formatWhen } from '../../lib/format';
import { bareUrl, tunnelLabel } from '../../lib/traffic-tunnels';
import { useConnection } from '../../stores/platform/selectors';
import {
  useTunnelActions,
  useTunnelList,
  useTunnelStopError,
  useTunnelStopping,
} from '../../stores/tunnels/selectors';
import type { BridgeErrorShape } from '../../../../shared/bridge.js';
import type { FieldError } from '../../../../shared/errors.js';

type HostMode = 'preserve' | 'rewrite' | 'custom';

interface FormErrorsState {
  port?: string;
  subdomain?: string;
  hostHeader?: string;
}

/** Whether the start form shows: as the user chose, else while no tunnel runs (the way in, first). */
export function useTunnelFormOpen(choice: boolean | null): boolean {
  const { tunnels } = useTunnelList();
  return choice ?? (tunnels !== null && tunnels.length === 0);
}

/** The header's "New tunnel": opens (and closes) the bar's start form. */
export function NewTunnelButton({
  open,
  formId,
  onToggle,
}: {
  open: boolean;
  formId: string;
  onToggle: () => void;
}) {
  return (
    <button
      type="button"
      className={`btn btn-sm btn-primary tunnel-new${open ? ' is-open' : ''}`}
      aria-expanded={open}
      aria-controls={formId}
      onClick={onToggle}
      data-testid="tunnel-new"
    >
      <Icon name="plus" />
      New tunnel
    </button>
  );
}

export function TunnelsPanel({
  formOpen,
  formId,
  onFormOpen,
}: {
  /** Null: open while no tunnel runs; else as the user chose. */
  formOpen: boolean | null;
  formId: string;
  onFormOpen: (open: boolean | null) => void;
}) {
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
    if (sub && !isDnsLabel(sub)) found.subdomain = 'lowercase letters, digits and inner hyphens only';
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
      setPort('');
      // Its chip shows now; the form closes (and opens again by itself once no tunnel runs).
      onFormOpen(null);
      return;
    }
    const byField = fieldErrorsOf(outcome.error);
    const placed = { port: byField.port, subdomain: byField.subdomain, hostHeader: byField.hostHeader };
    setErrors(placed);
    const rest = unplacedErrors(byField, (path) => path in placed);
    if (rest.length > 0 || !Object.values(placed).some(Boolean)) setRefused({ error: outcome.error, rest });
  };

  const running = tunnels ?? [];
  const open = useTunnelFormOpen(formOpen);
  return (
    <section className="card tunnel-bar" aria-labelledby="tunnels-title" data-testid="tunnels-panel">
      <div className="tunnel-bar-row">
        <h2 className="sr-only" id="tunnels-title">
          Tunnels
        </h2>
        {running.length > 0 ? (
          <ul
            className={`tunnel-chips${running.length > 1 ? ' is-several' : ''}`}
            aria-label="Tunnels"
            data-testid="tunnel-list"
          >
            {running.map((tunnel) => (
              <TunnelChip key={tunnel.id} tunnel={tunnel} />
            ))}
          </ul>
        ) : tunnels ? (
          <p className="tunnel-intro">
            <span className="tunnel-none" data-testid="tunnels-none">
              No tunnel is running.
            </span>{' '}
            <span className="muted">
              A tunnel puts a port of this computer on a public URL; every request through it shows below.
            </span>
          </p>
        ) : (
          <span className="tunnel-intro muted">Loading the tunnels…</span>
        )}
      </div>
      {online === false ? (
        <p className="inline-warning tunnel-notice" role="status" data-testid="tunnels-offline">
          <Icon name="alert" />
          <span>
            The platform cannot be reached{problem ? ` (${problem})` : ''}: new tunnels start once it answers.
            The history below comes from this computer.
          </span>
        </p>
      ) : null}
      {running.map((tunnel) => (
        <TunnelNotice key={tunnel.id} tunnel={tunnel} />
      ))}
      {open ? (
        <form
          id={formId}
          className="tunnel-form"
          onSubmit={(event) => void submit(event)}
          onKeyDown={(event) => {
            // Escape closes the form when a tunnel runs (with none, it is the screen's way in).
            if (event.key === 'Escape' && running.length > 0) {
              event.preventDefault();
              onFormOpen(false);
            }
          }}
          noValidate
          aria-label="New tunnel"
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
            autoFocus={formOpen === true}
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
      ) : null}
      {refused ? (
        <div className="tunnel-notice">
          <FormErrors
            message={`The tunnel could not start: ${refused.error.detail}`}
            errors={refused.rest}
            testId="tunnel-start-error"
          />
        </div>
      ) : null}
      {loadError && !tunnels ? (
        <div className="tunnel-notice">
          <ErrorNotice
            error={loadError}
            title="The tunnels could not be listed"
            action={
              <button type="button" className="btn btn-sm" onClick={() => void load()}>
                Retry
              </button>
            }
          />
        </div>
      ) : null}
    </section>
  );
}

const STATE_LABELS: Record<LocalTunnel['state'], string> = {
  connecting: 'Connecting…',
  online: 'Online',
  reconnecting: 'Reconnecting…',
  stopped: 'Stopped',
};

/** What the tunnel chip's tooltip tells besides its route: the Host mode and when it started. */
function tunnelSummary(tunnel: LocalTunnel): string {
  const host =
    tunnel.hostHeader === 'preserve'
      ? 'Public Host header kept'
      : tunnel.hostHeader === 'rewrite'
        ? `Host rewritten to localhost:${tunnel.localPort}`
        : `Host set to ${tunnel.hostHeader}`;
  return `${host} · started ${formatWhen(tunnel.startedAt)}`;
}

function TunnelChip({ tunnel }: { tunnel: LocalTunnel }) {
  const { stop, start } = useTunnelActions();
  const stopping = useTunnelStopping(tunnel.id);
  const stopped = tunnel.state === 'stopped';
  const name = tunnelLabel(tunnel.subdomain, tunnel.localPort);
  return (
    <li
      className="tunnel-chip"
      data-state={tunnel.state}
      data-listening={tunnel.listening === null ? undefined : String(tunnel.listening)}
      data-testid="tunnel-row"
      data-port={tunnel.localPort}
      data-subdomain={tunnel.subdomain ?? ''}
      title={tunnelSummary(tunnel)}
    >
      <span className="tunnel-state" data-testid="tunnel-state">
        <span className={`status-dot is-${tunnel.state}`} aria-hidden="true" />
        {/* Online is what a tunnel mostly is: its green dot says it; the other states in words. */}
        <span className={tunnel.state === 'online' ? 'sr-only' : undefined}>
          {STATE_LABELS[tunnel.state]}
        </span>
      </span>
      {tunnel.listening === false && !stopped ? (
        <Icon name="alert" size={13} className="tunnel-local-alert" />
      ) : null}
      <span className="tunnel-route">
        <span className="mono tunnel-local">localhost:{tunnel.localPort}</span>
        <span className="tunnel-arrow" aria-label="served at">
          →
        </span>
        {tunnel.url ? (
          <a
            className="external-link mono tunnel-url"
            href={tunnel.url}
            target="_blank"
            rel="noopener noreferrer"
            title={`Open ${tunnel.url}`}
            data-testid="tunnel-url"
          >
            <span className="tunnel-url-text">{bareUrl(tunnel.url)}</span>
            <Icon name="external" size={13} />
          </a>
        ) : (
          <span className="muted tunnel-waiting">
            {tunnel.subdomain ? `${tunnel.subdomain}, waiting for the platform` : 'waiting for the platform'}
          </span>
        )}
      </span>
      {tunnel.url ? (
        <a
          className="external-link mono tunnel-short"
          href={tunnel.url}
          target="_blank"
          rel="noopener noreferrer"
          title={`localhost:${tunnel.localPort} → ${tunnel.url}`}
          data-testid="tunnel-short"
        >
          <span className="tunnel-short-text">{name}</span>
          <Icon name="external" size={13} />
        </a>
      ) : (
        <span className="mono tunnel-short tunnel-local">{name}</span>
      )}
      {tunnel.url && !stopped ? (
        <CopyButton
          text={tunnel.url}
          label="Copy URL"
          ariaLabel={`Copy the URL of ${name}`}
          iconOnly
          className="icon-button tunnel-chip-button"
          testId="tunnel-copy"
        />
      ) : null}
      {stopped ? (
        <button
          type="button"
          className="btn btn-sm tunnel-chip-restart"
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
          className="icon-button tunnel-chip-button tunnel-chip-stop"
          onClick={() => void stop(tunnel.id)}
          disabled={stopping}
          aria-label={`Stop the tunnel of port ${tunnel.localPort}`}
          title={stopping ? 'Stopping…' : `Stop ${name}`}
          data-testid="tunnel-stop"
        >
          <Icon name={stopping ? 'spinner' : 'stop'} className={stopping ? 'spin' : undefined} />
        </button>
      )}
    </li>
  );
}

/** A line under the chips about one tunnel: nothing listening on its port, why it reconnects, a failed stop. */
function TunnelNotice({ tunnel }: { tunnel: LocalTunnel }) {
  const stopError = useTunnelStopError(tunnel.id);
  const name = tunnelLabel(tunnel.subdomain, tunnel.localPort);
  return (
    <>
      {tunnel.listening === false && tunnel.state !== 'stopped' ? (
        <p
          className="inline-warning tunnel-notice"
          role="status"
          data-testid="tunnel-no-listener"
          data-port={tunnel.localPort}
        >
          <Icon name="alert" />
          <span>
            Nothing listens on <span className="mono">localhost:{tunnel.localPort}</span> yet — start your
            app; requests to {tunnel.subdomain ?? 'this tunnel'} get 502 until it does.
          </span>
        </p>
      ) : null}
      {tunnel.detail && tunnel.state !== 'online' ? (
        <p className="tunnel-notice tunnel-detail muted" data-testid="tunnel-detail">
          {name}: {tunnel.detail}
        </p>
      ) : null}
      {stopError ? (
        <p className="tunnel-notice field-error" role="alert">
          {name} could not be stopped: {stopError.detail}
        </p>
      ) : null}
    </>
  );
}
