// The tunnels an Engine runs: each one a TunnelClient to the platform with its local port watched,
// known by every id it went by (its local `local_…` key, then each platform id), its view kept for the
// Bridge (`LocalTunnel`), and every exchange it captures handed on to be stored. The Engine owns one
// and tells it how to reach the platform and where its exchanges go.
import { randomBytes } from 'node:crypto';
import { ERROR_STATUS, type ErrorCode } from '../../shared/errors.js';
import { BridgeError, type LocalTunnel, type StartTunnelInput } from '../../shared/bridge.js';
import { parseBridgeInput } from '../../shared/bridge-inputs.js';
import type { CapturedExchange } from '../capture/capture.js';
import type { CaptureOrigin } from '../mirror/captures.js';
import { TunnelClient, TunnelRefusedError, type TunnelState } from './client.js';
import { PortWatch } from './port-watch.js';

/** A tunnel this Engine runs. */
export interface RunningTunnel {
  /** The Engine's own id (`local_…`): stable while it runs, whatever the platform calls it. */
  key: string;
  client: TunnelClient;
  view: LocalTunnel;
  /** Whether its local app listens (checked at start, when it comes back online, after a refusal). */
  port: PortWatch;
  /** Every id it went by (the local one, and each platform id it had): any of them finds it. */
  ids: Set<string>;
  /** Set by stop, so its `stopped` state is not taken for a refusal. */
  stopping: boolean;
}

export interface TunnelsOptions {
  /** The platform to open tunnels on and the key to do it with (rejects when it has none). */
  platform(): Promise<{ origin: string; apiKey: string }>;
  /** Where each captured exchange goes, with where it came from. */
  store(exchange: CapturedExchange, origin: CaptureOrigin): void;
  /** Called whenever a tunnel's view changed (started, state, listening, stopped). */
  changed(): void;
  /** Whether the Engine is shutting down: a tunnel that comes online then is closed at once. */
  closing(): boolean;
  backoffMs?: number;
  portCheckMs?: number;
}

export class Tunnels {
  private readonly running = new Map<string, RunningTunnel>();

  constructor(private readonly options: TunnelsOptions) {}

  /** The views of the running tunnels, as the Bridge shows them. */
  views(): LocalTunnel[] {
    return [...this.running.values()].map((tunnel) => ({ ...tunnel.view }));
  }

  /** The running tunnel known by its key. */
  get(key: string): RunningTunnel | undefined {
    return this.running.get(key);
  }

  /** The running tunnel known by any of its ids (local, or a platform id it had). */
  find(id: string): RunningTunnel | null {
    for (const tunnel of this.running.values()) if (tunnel.ids.has(id)) return tunnel;
    return null;
  }

  /**
   * The names a tunnel's traffic is filed under: for a running tunnel, every id it went by, its key
   * and its subdomain (so earlier sessions on the same public URL count too); else the name as given
   * (a platform tunnel id, a key or a subdomain from the history).
   */
  names(id: string): string[] {
    const tunnel = this.find(id);
    if (!tunnel) return [id];
    return [...tunnel.ids, ...(tunnel.view.subdomain ? [tunnel.view.subdomain] : [])];
  }

  async start(input: StartTunnelInput): Promise<LocalTunnel> {
    const { port, subdomain, hostHeader } = parseBridgeInput('tunnels.start', input);
    if (subdomain !== undefined) {
      for (const other of this.running.values()) {
        if (other.view.subdomain === subdomain && other.view.state !== 'stopped') {
          throw new BridgeError(
            'conflict',
            409,
            `a tunnel to port ${other.view.localPort} already uses the subdomain "${subdomain}"`,
          );
        }
      }
    }
    const platform = await this.options.platform();
    const key = `local_${randomBytes(8).toString('hex')}`;
    const client = new TunnelClient({
      platformUrl: platform.origin,
      apiKey: platform.apiKey,
      localPort: port,
      hostHeader,
      ...(subdomain === undefined ? {} : { subdomain }),
      ...(this.options.backoffMs === undefined ? {} : { backoffMs: this.options.backoffMs }),
    });
    const tunnel: RunningTunnel = {
      key,
      client,
      ids: new Set([key]),
      stopping: false,
      port: new PortWatch(
        port,
        (listening) => {
          tunnel.view.listening = listening;
          if (!tunnel.stopping && this.running.has(key)) this.options.changed();
        },
        this.options.portCheckMs === undefined ? {} : { intervalMs: this.options.portCheckMs },
      ),
      view: {
        id: key,
        localPort: port,
        hostHeader,
        subdomain: subdomain ?? null,
        url: null,
        state: 'connecting',
        detail: null,
        listening: null,
        startedAt: new Date().toISOString(),
      },
    };
    client.on('state', (state, detail) => this.stateChanged(tunnel, state, detail));
    client.on('exchange', (exchange) => {
      // The app went away since the last check: say so (and watch for it to come back).
      if (exchange.request.error?.startsWith('nothing is listening')) void tunnel.port.check();
      this.options.store(exchange, {
        tunnelKey: key,
        subdomain: tunnel.view.subdomain,
        localPort: port,
        hostHeader,
      });
    });
    // Whether the app listens is known from the first event on (a local connect: a few ms at most).
    await tunnel.port.check();
    this.running.set(key, tunnel);
    this.options.changed();
    try {
      await client.start();
    } catch (error) {
      const stoppedMeanwhile = tunnel.stopping;
      tunnel.port.stop();
      client.removeAllListeners('state');
      this.running.delete(key);
      await client.stop().catch(() => undefined);
      if (!stoppedMeanwhile) this.options.changed();
      throw stoppedMeanwhile ? this.stoppedWhileStarting() : tunnelError(error, platform.origin);
    }
    if (tunnel.stopping || this.options.closing()) {
      // Stopped while it connected: the connection it just made must not outlive it.
      await client.stop();
      throw this.stoppedWhileStarting();
    }
    return { ...tunnel.view };
  }

  async stop(tunnel: RunningTunnel): Promise<LocalTunnel> {
    tunnel.stopping = true;
    tunnel.port.stop();
    await tunnel.client.stop();
    this.running.delete(tunnel.key);
    tunnel.view.state = 'stopped';
    tunnel.view.detail = null;
    tunnel.view.listening = null;
    this.options.changed();
    return { ...tunnel.view };
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.running.values()].map((tunnel) => this.stop(tunnel)));
  }

  private stoppedWhileStarting(): BridgeError {
    return this.options.closing()
      ? new BridgeError('unavailable', 503, 'the Engine is shutting down')
      : new BridgeError('conflict', 409, 'the tunnel was stopped before it came online');
  }

  private stateChanged(tunnel: RunningTunnel, state: TunnelState, detail?: string): void {
    if (tunnel.stopping) return;
    const { view, client } = tunnel;
    if (state === 'online' && client.info) {
      tunnel.ids.add(client.info.id);
      view.id = client.info.id;
      view.subdomain = client.info.subdomain;
      view.url = client.info.url;
    }
    // Back online after a break: the app may have gone meanwhile (the first check covers the start).
    if (state === 'online' && view.state === 'reconnecting') void tunnel.port.check();
    view.state = state;
    view.detail = state === 'online' ? null : (detail ?? null);
    this.options.changed();
  }
}

/** Why a tunnel could not start, as the Bridge reports it: the platform's problem when it answered. */
function tunnelError(error: unknown, origin: string): BridgeError {
  if (error instanceof BridgeError) return error;
  if (error instanceof TunnelRefusedError) {
    const code: ErrorCode =
      error.code in ERROR_STATUS
        ? (error.code as ErrorCode)
        : error.status === 401
          ? 'unauthorized'
          : error.status === 409
            ? 'conflict'
            : error.status >= 500
              ? 'unavailable'
              : 'bad_request';
    return new BridgeError(code, error.status, error.message);
  }
  // The client's own messages already name the platform ("cannot reach <origin>: …").
  const message = (error as Error).message;
  return new BridgeError(
    'offline',
    0,
    message.includes(origin)
      ? `cannot open a tunnel: ${message}`
      : `cannot open a tunnel to ${origin}: ${message}`,
  );
}
