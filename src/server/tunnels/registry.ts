// The tunnels the edge knows, by subdomain: found by host, URL or account, online or not, kept a while
// offline for their captures; subdomains reserved per account (and random ones), and each new tunnel's
// share of its account's capture memory.
import type { Tunnel as TunnelView } from '../../shared/api/tunnels.js';
import { isDnsLabel } from '../../shared/dns-label.js';
import type { PlatformConfig } from '../config.js';
import { ApiError, notFound } from '../errors.js';
import { randomBase62 } from '../ids.js';
import type { Store } from '../store/open.js';
import type { Tunnel } from './tunnel.js';

const OFFLINE_TUNNEL_KEPT_MS = 60 * 60_000;

export class TunnelRegistry {
  /** By subdomain; a tunnel stays (offline) after its client leaves, so its captures remain. */
  private readonly tunnels = new Map<string, Tunnel>();
  private readonly suffix: string;

  constructor(
    private readonly config: PlatformConfig,
    private readonly db: Store,
  ) {
    this.suffix = `.${config.tunnelDomain}`;
  }

  /** The tunnel at `subdomain`, online or offline. */
  get(subdomain: string): Tunnel | undefined {
    return this.tunnels.get(subdomain);
  }

  /** Every tunnel kept, online or offline. */
  all(): IterableIterator<Tunnel> {
    return this.tunnels.values();
  }

  /** Keeps `tunnel` at its subdomain (a reconnect keeps the same one). */
  add(tunnel: Tunnel): void {
    this.tunnels.set(tunnel.subdomain, tunnel);
  }

  /** An offline tunnel keeps its captures for a while (its client may come back), then goes. */
  forgetLater(tunnel: Tunnel): void {
    setTimeout(() => {
      if (!tunnel.online && tunnel.slot === null && this.tunnels.get(tunnel.subdomain) === tunnel)
        this.tunnels.delete(tunnel.subdomain);
    }, OFFLINE_TUNNEL_KEPT_MS).unref();
  }

  /**
   * What an account's tunnels hold for captures: the budgets granted (the most their bodies may take)
   * and the bytes of bodies kept now, over its tunnels online and offline.
   */
  captureUsage(accountId: string): { tunnels: number; grantedBytes: number; keptBytes: number } {
    let tunnels = 0;
    let grantedBytes = 0;
    let keptBytes = 0;
    for (const tunnel of this.tunnels.values()) {
      if (tunnel.accountId !== accountId) continue;
      tunnels += 1;
      grantedBytes += tunnel.captureBytes;
      keptBytes += tunnel.ring.keptBytes;
    }
    return { tunnels, grantedBytes, keptBytes };
  }

  /** The tunnel's subdomain when `host` is under the tunnel domain. */
  subdomainOf(host: string): string | null {
    if (!host.endsWith(this.suffix)) return null;
    const label = host.slice(0, -this.suffix.length);
    return isDnsLabel(label) ? label : null;
  }

  /** Whether a tunnel client serves `subdomain` right now. */
  isOnline(subdomain: string): boolean {
    return this.tunnels.get(subdomain)?.online === true;
  }

  /** The account whose tunnel serves `subdomain` right now, or null. */
  ownerOf(subdomain: string): string | null {
    const tunnel = this.tunnels.get(subdomain);
    return tunnel?.online ? tunnel.accountId : null;
  }

  /** The caller's connected tunnels. */
  list(accountId: string): TunnelView[] {
    return [...this.tunnels.values()]
      .filter((t) => t.accountId === accountId && t.online)
      .map((t) => t.view());
  }

  /** `:tunnelUrl` of API.md §7: a host name, a whole URL (percent-encoded), or a bare subdomain. */
  find(accountId: string, tunnelUrl: string): Tunnel {
    const tunnel = this.tunnels.get(this.subdomainIn(tunnelUrl));
    if (!tunnel || tunnel.accountId !== accountId) throw notFound(`tunnel ${tunnelUrl}`);
    return tunnel;
  }

  /** The subdomain `:tunnelUrl` names: a host name, a whole URL (percent-encoded), or a bare subdomain. */
  subdomainIn(tunnelUrl: string): string {
    let host = tunnelUrl.trim().toLowerCase();
    try {
      if (/^https?:\/\//.test(host)) host = new URL(host).hostname;
    } catch {
      // not a URL: a host or a subdomain
    }
    host = host.replace(/:\d+$/, '');
    return this.subdomainOf(host) ?? host;
  }

  /**
   * The capture budget of a new tunnel of the account: the per-tunnel budget when the account's budget
   * has room for it, room made first by forgetting the account's offline tunnels, those offline longest
   * first (a tunnel in use matters more than what one whose client left captured); else what is left.
   */
  grantCapture(accountId: string): number {
    const { captureBytesPerTunnel: perTunnel, captureBytesPerAccount: budget } = this.config.limits;
    const own = [...this.tunnels.values()].filter((t) => t.accountId === accountId);
    let granted = own.reduce((sum, t) => sum + t.captureBytes, 0);
    const offline = own
      .filter((t) => t.slot === null && t.captureBytes > 0)
      .sort((a, b) => a.offlineSince - b.offlineSince);
    for (const tunnel of offline) {
      if (budget - granted >= perTunnel) break;
      this.tunnels.delete(tunnel.subdomain);
      granted -= tunnel.captureBytes;
    }
    return Math.max(0, Math.min(perTunnel, budget - granted));
  }

  /** Holds `subdomain` for the account (for good), or refuses when another account holds it. */
  async reserve(accountId: string, subdomain: string): Promise<void> {
    const held = await this.db
      .selectFrom('tunnel_subdomains')
      .select('account_id')
      .where('subdomain', '=', subdomain)
      .executeTakeFirst();
    if (held && held.account_id !== accountId) {
      throw new ApiError('conflict', `the tunnel subdomain "${subdomain}" is held by another account`);
    }
    if (!held) {
      await this.db
        .insertInto('tunnel_subdomains')
        .values({ subdomain, account_id: accountId, reserved_at: new Date().toISOString() })
        .onConflict((c) => c.doNothing())
        .execute();
      const owner = await this.db
        .selectFrom('tunnel_subdomains')
        .select('account_id')
        .where('subdomain', '=', subdomain)
        .executeTakeFirst();
      if (owner?.account_id !== accountId) {
        throw new ApiError('conflict', `the tunnel subdomain "${subdomain}" is held by another account`);
      }
    }
  }

  /** A subdomain nobody holds, for a connect that asks for none. */
  async randomSubdomain(): Promise<string> {
    for (;;) {
      const candidate = randomBase62(10).toLowerCase();
      if (!/^[a-z0-9]+$/.test(candidate)) continue;
      const taken = await this.db
        .selectFrom('tunnel_subdomains')
        .select('subdomain')
        .where('subdomain', '=', candidate)
        .executeTakeFirst();
      if (!taken) return candidate;
    }
  }
}
