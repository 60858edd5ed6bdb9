// Where a host routes (a project's service, or a verified custom domain's project), looked up in the
// store and kept briefly, so that most requests cost no query and many for one host wait on one lookup.
import type { PlatformConfig } from '../config.js';
import type { Store } from '../store/open.js';

export interface Route {
  projectId: string;
  /** Null: the project's main service. */
  service: string | null;
  /** A custom domain whose owner turned HSTS on. */
  hsts?: boolean;
}

const ROUTE_TTL_MS = 2_000;

export class RouteCache {
  /** Host label → route, briefly: most requests then cost no query. */
  private readonly routes = new Map<string, { route: Route | null; until: number }>();
  /** Custom domain → route, the same way; forget() drops one when it is verified or deleted. */
  private readonly domainRoutes = new Map<string, { route: Route | null; until: number }>();
  /** Route lookups under way, so that many requests for one host wait on one query. */
  private readonly lookups = new Map<string, Promise<Route | null>>();
  private readonly suffix: string;
  private readonly tunnelSuffix: string;

  constructor(
    private readonly config: PlatformConfig,
    private readonly db: Store,
  ) {
    this.suffix = `.${config.baseDomain}`;
    this.tunnelSuffix = `.${config.tunnelDomain}`;
  }

  /** Where `host` routes, or null when nothing is there. */
  route(host: string): Promise<Route | null> {
    const entry = this.entry(host);
    if (entry && entry.until > Date.now()) return Promise.resolve(entry.route);
    let lookup = this.lookups.get(host);
    if (lookup === undefined) {
      lookup = this.lookUp(host).finally(() => this.lookups.delete(host));
      this.lookups.set(host, lookup);
    }
    return lookup;
  }

  /**
   * Whether `host` still routes to `route`, as far as the edge knows now: a routing change (a domain
   * moved or deleted, a project renamed) reaches a kept-alive connection within the route cache's
   * time (a lookup is started once it is out of date), and the connection is routed afresh.
   */
  stillRoutes(host: string, route: Route): boolean {
    const entry = this.entry(host);
    if (entry === undefined || entry.until <= Date.now()) this.route(host).catch(() => undefined);
    if (entry === undefined) return true;
    const now = entry.route;
    return now !== null && now.projectId === route.projectId && now.service === route.service;
  }

  /** A custom domain's routing changed (verified, unverified, deleted): look it up afresh. */
  forget(domain: string): void {
    this.domainRoutes.delete(domain);
  }

  /** The cache's entry for `host`, however old. */
  private entry(host: string): { route: Route | null; until: number } | undefined {
    if (!host.endsWith(this.suffix)) return this.domainRoutes.get(host);
    return this.routes.get(host.slice(0, -this.suffix.length));
  }

  private async lookUp(host: string): Promise<Route | null> {
    if (!host.endsWith(this.suffix)) return this.customDomainRoute(host);
    const label = host.slice(0, -this.suffix.length);
    if (label.includes('.') || label === '') return null;
    const row = await this.db
      .selectFrom('project_hosts')
      .innerJoin('projects', 'projects.id', 'project_hosts.project_id')
      .select(['projects.id', 'projects.subdomain'])
      .where('project_hosts.label', '=', label)
      .executeTakeFirst();
    const route = row
      ? { projectId: row.id, service: label === row.subdomain ? null : label.slice(row.subdomain.length + 1) }
      : null;
    if (this.routes.size > 10_000) this.routes.clear();
    this.routes.set(label, { route, until: Date.now() + ROUTE_TTL_MS });
    return route;
  }

  private async customDomainRoute(host: string): Promise<Route | null> {
    if (host === '' || host === this.config.baseDomain) return null;
    if (host === this.config.tunnelDomain || host.endsWith(this.tunnelSuffix)) return null;
    const row = await this.db
      .selectFrom('domains')
      .select(['project_id', 'hsts'])
      .where('domain', '=', host)
      .where('verified', '=', 1)
      .executeTakeFirst();
    const route = row?.project_id ? { projectId: row.project_id, service: null, hsts: row.hsts === 1 } : null;
    if (this.domainRoutes.size > 10_000) this.domainRoutes.clear();
    this.domainRoutes.set(host, { route, until: Date.now() + ROUTE_TTL_MS });
    return route;
  }
}
