// The tunnel edge: accepts tunnel clients on `GET /api/v1/tunnels/connect` (accept.ts), keeps their
// tunnels (registry.ts), relays public requests for `<subdomain>.<tunnel_domain>` over them (relay.ts),
// and feeds what each captures to the traffic WebSocket (feed.ts); replay is replay.ts.
// Every exchange is captured (the last 1,000 per tunnel, in memory); a request that finds the client
// offline is captured too, with its error.
// Per account (config.limits): tunnels connected at once, stream slots (each tunnel connection and
// traffic feed holds one), and capture memory, shared out between the account's tunnels: a new tunnel
// gets the per-tunnel budget if the account's budget has room, made first by forgetting the account's
// offline tunnels, those offline longest first; else what is left (possibly nothing: its exchanges are
// then captured without bodies).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { CapturedRequest, Tunnel as TunnelView } from '../../shared/api/tunnels.js';
import type { Authenticator } from '../auth/authenticate.js';
import type { PlatformConfig } from '../config.js';
import { accountLimits } from '../limits.js';
import type { Store } from '../store/open.js';
import { type UpgradeContext, acceptTunnel, refuse } from './accept.js';
import { openTrafficFeed } from './feed.js';
import { TunnelRegistry } from './registry.js';
import { type Reroute, TunnelRelay } from './relay.js';
import { replayThroughTunnel } from './replay.js';
import type { Tunnel } from './tunnel.js';

export class TunnelHub {
  private readonly tunnels: TunnelRegistry;
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
  private readonly upgrades: UpgradeContext;
  private readonly relays: TunnelRelay;
  /** Whether public exchanges are captured (always, but for measuring what capture costs). */
  capture = true;
  /** How long a public connection on the byte path is kept without a request (the edge's keep-alive). */
  idleMs = 65_000;

  constructor(
    private readonly config: PlatformConfig,
    db: Store,
    auth: Authenticator,
  ) {
    this.tunnels = new TunnelRegistry(config, db);
    this.upgrades = { config, tunnels: this.tunnels, limits: accountLimits(config), auth, wss: this.wss };
    // The relay reads this hub's capture and idleMs as they are when each connection or request comes.
    this.relays = new TunnelRelay(config, this.tunnels, this);
  }

  /**
   * What an account's tunnels hold for captures: the budgets granted (the most their bodies may take)
   * and the bytes of bodies kept now, over its tunnels online and offline.
   */
  captureUsage(accountId: string): { tunnels: number; grantedBytes: number; keptBytes: number } {
    return this.tunnels.captureUsage(accountId);
  }

  /** Ends the relay of a public request (its body went over the edge's limit): the app sees it aborted. */
  cancelRelay(req: IncomingMessage, reason: string): void {
    this.relays.cancelRelay(req, reason);
  }

  /** The tunnel's subdomain when `host` is under the tunnel domain. */
  subdomainOf(host: string): string | null {
    return this.tunnels.subdomainOf(host);
  }

  /** Whether a tunnel client serves `subdomain` right now. */
  isOnline(subdomain: string): boolean {
    return this.tunnels.isOnline(subdomain);
  }

  /** The account whose tunnel serves `subdomain` right now, or null. */
  ownerOf(subdomain: string): string | null {
    return this.tunnels.ownerOf(subdomain);
  }

  /** The caller's connected tunnels. */
  list(accountId: string): TunnelView[] {
    return this.tunnels.list(accountId);
  }

  /** `:tunnelUrl` of API.md §7: a host name, a whole URL (percent-encoded), or a bare subdomain. */
  find(accountId: string, tunnelUrl: string): Tunnel {
    return this.tunnels.find(accountId, tunnelUrl);
  }

  close(): void {
    for (const tunnel of this.tunnels.all()) {
      tunnel.captures?.end();
      tunnel.session?.close();
      tunnel.session?.destroy();
    }
    this.wss.close();
    this.relays.close();
  }

  /** The API server's `upgrade` requests: tunnel connections and the traffic feed. */
  async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, prefix: string): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'http://platform');
    if (url.pathname === `${prefix}/tunnels/connect`) {
      await acceptTunnel(this.upgrades, req, socket, head, url).catch((error: unknown) =>
        refuse(socket, error),
      );
      return true;
    }
    const feed = new RegExp(`^${prefix}/ws/traffic/([^/]+)$`).exec(url.pathname);
    if (feed) {
      await openTrafficFeed(this.upgrades, req, socket, head, decodeParam(feed[1]!)).catch((error: unknown) =>
        refuse(socket, error),
      );
      return true;
    }
    return false;
  }

  /** Puts a public connection for a tunnel host on the byte path, if it can go there (see relay.ts). */
  claim(socket: Socket, first: Buffer, host: string, reroute: Reroute): boolean {
    return this.relays.claim(socket, first, host, reroute);
  }

  /** Relays a public request for a tunnel host. */
  relay(req: IncomingMessage, res: ServerResponse, subdomain: string): void {
    this.relays.relay(req, res, subdomain);
  }

  /** Relays a public Upgrade (a WebSocket) as a raw stream: the app's 101 and frames flow back as bytes. */
  relayUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, subdomain: string): void {
    this.relays.relayUpgrade(req, socket, head, subdomain);
  }

  /** Sends a captured request again through the tunnel (see replay.ts). */
  async replay(accountId: string, tunnelUrl: string, requestId: string): Promise<CapturedRequest> {
    return replayThroughTunnel(this.find(accountId, tunnelUrl), requestId, this.config.tunnelDomain);
  }
}

/** A percent-encoded path segment; a malformed one is kept as it is (and then matches no tunnel). */
function decodeParam(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
