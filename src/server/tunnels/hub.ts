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
import { HEARTBEAT_MS } from '../../core/tunnel/protocol.js';
import type { CapturedRequest, Tunnel as TunnelView } from '../../shared/api/tunnels.js';
import type { Authenticator } from '../auth/authenticate.js';
import type { PlatformConfig } from '../config.js';
import { accountLimits } from '../limits.js';
import type { Store } from '../store/open.js';
import type { Cluster } from '../cluster/cluster.js';
import type { NodeForwarder } from '../cluster/forward.js';
import { type HopSigner, clientOf, isHopped } from '../cluster/hop.js';
import type { Holder, TunnelHolders } from '../cluster/tunnels.js';
import { publicProto } from '../edge/forwarded.js';
import { type UpgradeContext, acceptTunnel, callerOf, refuse } from './accept.js';
import { openTrafficFeed } from './feed.js';
import { TunnelRegistry } from './registry.js';
import { type Reroute, TunnelRelay } from './relay.js';
import { replayThroughTunnel } from './replay.js';
import type { Tunnel } from './tunnel.js';

/** What the hub needs of the other nodes: who holds which tunnel, and the hop to them. */
export interface TunnelCluster {
  cluster: Cluster;
  holders: TunnelHolders;
  signer: HopSigner;
  forwarder: NodeForwarder;
}

export class TunnelHub {
  private readonly tunnels: TunnelRegistry;
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
  private readonly upgrades: UpgradeContext;
  private readonly relays: TunnelRelay;
  /** Whether public exchanges are captured (always, but for measuring what capture costs). */
  capture = true;
  /** How long a public connection on the byte path is kept without a request (the edge's keep-alive). */
  idleMs = 65_000;
  /** How often the edge PINGs each tunnel client; one that leaves a PING unanswered that long is let go. */
  heartbeatMs = HEARTBEAT_MS;
  /**
   * Every connection taken by an upgrade (tunnel clients, live feeds) until it closes: the HTTP server
   * no longer ends them, and a tunnel connection replaced by a newer one is no longer any tunnel's.
   */
  private readonly upgraded = new Set<Duplex>();

  constructor(
    private readonly config: PlatformConfig,
    db: Store,
    auth: Authenticator,
    private readonly nodes: TunnelCluster,
  ) {
    this.tunnels = new TunnelRegistry(config, db);
    this.upgrades = {
      config,
      tunnels: this.tunnels,
      limits: accountLimits(config),
      auth,
      wss: this.wss,
      holders: nodes.holders,
      settings: this,
    };
    // The relay reads this hub's capture and idleMs as they are when each connection or request comes.
    this.relays = new TunnelRelay(config, this.tunnels, this);
    // A client that connected to another node takes its tunnel there: this node lets its connection go.
    nodes.cluster.on((event) => {
      if (event.kind === 'tunnel-taken' && event.node !== nodes.cluster.nodeId) this.letGo(event.subdomain);
    });
    nodes.cluster.onRevived(() => {
      const online = [...this.tunnels.all()].filter((tunnel) => tunnel.online);
      nodes.holders
        .restore(
          online,
          (subdomain, id) => this.tunnels.get(subdomain)?.id === id && this.tunnels.isOnline(subdomain),
        )
        .catch((error: unknown) => nodes.cluster.onError(error as Error, 'recording the tunnels held again'));
    });
  }

  /** The tunnel's client connected elsewhere: its connection here is told so (a GOAWAY) and closed. */
  private letGo(subdomain: string): void {
    const tunnel = this.tunnels.get(subdomain);
    const session = tunnel?.session;
    if (!tunnel || !session || session.closed || session.destroyed) return;
    tunnel.replaced(session, tunnel.captures);
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
    for (const socket of this.upgraded) socket.destroy();
    this.wss.close();
    this.relays.close();
    this.nodes.forwarder.close();
  }

  /**
   * A public request for a tunnel host, relayed over the tunnel here (relay.ts), or sent on to the node that holds
   * it (a request that came from another node is never sent on again).
   */
  relayAnywhere(req: IncomingMessage, res: ServerResponse, subdomain: string): void | Promise<void> {
    if (!this.forOtherNode(req, subdomain)) {
      this.relays.relay(req, res, subdomain);
      return;
    }
    // The body waits while the holder is looked up: none of it may go by before a reader is there.
    req.pause();
    return this.nodes.holders
      .elsewhere(subdomain)
      .catch(() => null)
      .then((holder) => {
        if (holder) {
          this.nodes.forwarder.web(req, res, holder.url, this.clientOf(req), req.headers.host ?? '');
          return;
        }
        req.resume();
        this.relays.relay(req, res, subdomain);
      });
  }

  /**
   * A public Upgrade (a WebSocket) for a tunnel host, the same way: relayed as a raw stream (the app's
   * 101 and frames flow back as bytes), or sent on to the holder.
   */
  async relayUpgradeAnywhere(req: IncomingMessage, socket: Duplex, head: Buffer, subdomain: string) {
    const holder = await this.holderFor(req, subdomain);
    if (holder)
      this.nodes.forwarder.ws(req, socket, head, holder.url, this.clientOf(req), req.headers.host ?? '');
    else this.relays.relayUpgrade(req, socket, head, subdomain);
  }

  /**
   * The tunnel the caller names, when this node holds it; else, when another live node holds it for
   * the caller's account, that node (to send the call on to); else not found.
   */
  async locate(req: IncomingMessage, accountId: string, tunnelUrl: string): Promise<Tunnel | Holder> {
    try {
      return this.tunnels.find(accountId, tunnelUrl);
    } catch (error) {
      this.nodes.signer.verify(req, req.headers.host ?? '');
      if (isHopped(req)) throw error;
      const holder = await this.nodes.holders.elsewhere(this.tunnels.subdomainIn(tunnelUrl));
      if (holder?.accountId !== accountId) throw error;
      return holder;
    }
  }

  /** An API call about a tunnel another node holds, made there; its answer as it came. */
  forwardApi(
    holder: Holder,
    request: { method: string; url: string; headers: IncomingMessage['headers']; body?: unknown },
    req: IncomingMessage,
  ) {
    return this.nodes.forwarder.api(holder.url, request, this.clientOf(req));
  }

  /** The caller's tunnels held by other nodes, as those nodes list them. */
  async listElsewhere(
    accountId: string,
    request: { url: string; headers: IncomingMessage['headers'] },
    req: IncomingMessage,
  ): Promise<TunnelView[]> {
    this.nodes.signer.verify(req, req.headers.host ?? '');
    if (isHopped(req)) return [];
    const urls = await this.nodes.holders.nodesHolding(accountId);
    const lists = await Promise.all(
      urls.map(async (url) => {
        const answer = await this.nodes.forwarder
          .api(url, { method: 'GET', url: request.url, headers: request.headers }, this.clientOf(req))
          .catch(() => null);
        if (answer?.status !== 200) return [];
        return JSON.parse(answer.body.toString()) as TunnelView[];
      }),
    );
    return lists.flat();
  }

  /**
   * Whether a request for a tunnel host may be for another node: in a cluster, when no client of the
   * tunnel is connected here and the request did not come from another node.
   */
  private forOtherNode(req: IncomingMessage, subdomain: string): boolean {
    this.nodes.signer.verify(req, req.headers.host ?? '');
    return this.nodes.cluster.clustered && !isHopped(req) && !this.tunnels.isOnline(subdomain);
  }

  private async holderFor(req: IncomingMessage, subdomain: string): Promise<Holder | null> {
    if (!this.forOtherNode(req, subdomain)) return null;
    return this.nodes.holders.elsewhere(subdomain).catch(() => null);
  }

  private clientOf(req: IncomingMessage) {
    return clientOf(req, publicProto(req.socket));
  }

  /** The API server's `upgrade` requests: tunnel connections and the traffic feed. */
  async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, prefix: string): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'http://platform');
    if (!socket.destroyed) {
      this.upgraded.add(socket);
      socket.once('close', () => this.upgraded.delete(socket));
    }
    if (url.pathname === `${prefix}/tunnels/connect`) {
      await acceptTunnel(this.upgrades, req, socket, head, url).catch((error: unknown) =>
        refuse(socket, error),
      );
      return true;
    }
    const feed = new RegExp(`^${prefix}/ws/traffic/([^/]+)$`).exec(url.pathname);
    if (feed) {
      const tunnelUrl = decodeParam(feed[1]!);
      const open = async () => {
        if (await this.feedElsewhere(req, socket, head, tunnelUrl)) return;
        await openTrafficFeed(this.upgrades, req, socket, head, tunnelUrl);
      };
      await open().catch((error: unknown) => refuse(socket, error));
      return true;
    }
    return false;
  }

  /**
   * A live feed of a tunnel another node holds: sent on there, where the caller is authenticated. The
   * caller is authenticated here first, so that nothing is said of tunnels to anyone else.
   */
  private async feedElsewhere(req: IncomingMessage, socket: Duplex, head: Buffer, tunnelUrl: string) {
    if (!this.nodes.cluster.clustered) return false;
    this.nodes.signer.verify(req, req.headers.host ?? '');
    if (isHopped(req)) return false;
    const subdomain = this.tunnels.subdomainIn(tunnelUrl);
    if (this.tunnels.get(subdomain)) return false;
    const holder = await this.nodes.holders.elsewhere(subdomain);
    if (!holder) return false;
    const caller = await callerOf(this.upgrades.auth, req);
    if (caller.accountId !== holder.accountId) return false;
    this.nodes.forwarder.apiUpgrade(req, socket, head, holder.url, this.clientOf(req));
    return true;
  }

  /** Puts a public connection for a tunnel host on the byte path, if it can go there (see relay.ts). */
  claim(socket: Socket, first: Buffer, host: string, reroute: Reroute): boolean {
    return this.relays.claim(socket, first, host, reroute);
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
