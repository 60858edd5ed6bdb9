// The app edge: the public HTTP server that routes by Host. `<subdomain>.<base_domain>` goes to a
// project's main service and `<subdomain>-<service>.<base_domain>` to each service, with WebSocket
// upgrades and X-Forwarded-* headers; a verified custom domain linked to a project goes to its main
// service; static sites are served from their release folder. Unknown hosts
// get a 404 page, apps that are down or being deployed a 502 or 503 page.
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { Duplex } from 'node:stream';
import send from '@fastify/send';
import httpProxy from 'http-proxy';
import type { PlatformConfig } from '../config.js';
import type { EdgeTarget, Runtime } from '../runtime/runtime.js';
import type { Store } from '../store/open.js';
import type { TunnelHub } from '../tunnels/hub.js';
import { type EdgePage, sendPage } from './pages.js';

interface Route {
  projectId: string;
  /** Null: the project's main service. */
  service: string | null;
}

const ROUTE_TTL_MS = 2_000;

export class Edge {
  readonly server: Server;
  private readonly proxy = httpProxy.createProxyServer({ xfwd: true, ws: true });
  /** Host label → route, briefly: most requests then cost no query. */
  private readonly routes = new Map<string, { route: Route | null; until: number }>();
  /** Custom domain → route, the same way; forgetDomain() drops one when it is verified or deleted. */
  private readonly domainRoutes = new Map<string, { route: Route | null; until: number }>();
  private readonly suffix: string;
  private readonly tunnelSuffix: string;
  /** Upgraded connections (WebSockets): the HTTP server no longer tracks them, so close() must. */
  private readonly upgraded = new Set<Duplex>();

  constructor(
    private readonly config: PlatformConfig,
    private readonly db: Store,
    private readonly runtime: Runtime,
    private readonly tunnels: TunnelHub,
  ) {
    this.suffix = `.${config.baseDomain}`;
    this.tunnelSuffix = `.${config.tunnelDomain}`;
    this.proxy.on('error', (error, _req, res) => {
      if (isServerResponse(res)) {
        if (!res.headersSent) {
          this.page(res, {
            status: 502,
            title: 'The app did not answer',
            message: `The edge could not reach the app (${(error as NodeJS.ErrnoException).code ?? error.message}).`,
          });
        } else res.destroy();
      } else (res as Duplex).destroy();
    });
    // Nothing one request does may take the platform down: an unexpected error ends that request only.
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => {
        if (res.headersSent) res.destroy();
        else
          this.page(res, {
            status: 500,
            title: 'Edge error',
            message: 'The edge could not answer this request.',
          });
      });
    });
    this.server.on('upgrade', (req, socket, head) => {
      this.upgrade(req, socket, head).catch(() => socket.destroy());
    });
    this.server.keepAliveTimeout = 65_000;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
      // An open WebSocket would otherwise keep the server, and the platform's shutdown, waiting.
      for (const socket of this.upgraded) socket.destroy();
      this.proxy.close();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const host = hostOf(req);
    const tunnel = this.tunnels.subdomainOf(host);
    if (tunnel !== null) {
      this.tunnels.relay(req, res, tunnel);
      return;
    }
    const route = await this.route(host).catch(() => null);
    if (!route) {
      this.page(res, {
        status: 404,
        title: 'No app here',
        message: `Nothing is deployed at ${host || 'this address'}.`,
        hint: `Apps answer at <subdomain>.${this.config.baseDomain}; check the project's URL in Wharf.`,
      });
      return;
    }
    const target = this.runtime.target(route.projectId, route.service);
    if (!target || target.kind === 'down' || target.kind === 'no-service') {
      this.page(res, await this.unavailable(route, target));
      return;
    }
    if (target.kind === 'static') {
      await this.serveStatic(req, res, target.root);
      return;
    }
    res.once('close', target.done);
    // The edge is where requests enter: what a client claims in X-Forwarded-* is replaced, not kept.
    stripForwarded(req);
    this.proxy.web(req, res, { target: `http://127.0.0.1:${target.port}`, agent: target.agent });
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    this.upgraded.add(socket);
    socket.once('close', () => this.upgraded.delete(socket));
    const tunnel = this.tunnels.subdomainOf(hostOf(req));
    if (tunnel !== null) {
      this.tunnels.relayUpgrade(req, socket, head, tunnel);
      return;
    }
    const route = await this.route(hostOf(req)).catch(() => null);
    const target = route ? this.runtime.target(route.projectId, route.service) : null;
    if (!target || target.kind !== 'proxy') {
      const status = route ? 503 : 404;
      socket.end(
        `HTTP/1.1 ${status} ${status === 404 ? 'Not Found' : 'Service Unavailable'}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`,
      );
      return;
    }
    // A WebSocket is long-lived: it does not hold a redeploy's drain.
    target.done();
    stripForwarded(req);
    this.proxy.ws(req, socket, head, { target: `http://127.0.0.1:${target.port}` });
  }

  /** A custom domain's routing changed (verified, unverified, deleted): look it up afresh. */
  forgetDomain(domain: string): void {
    this.domainRoutes.delete(domain);
  }

  private async route(host: string): Promise<Route | null> {
    if (!host.endsWith(this.suffix)) return this.customDomainRoute(host);
    const label = host.slice(0, -this.suffix.length);
    if (label.includes('.') || label === '') return null;
    const cached = this.routes.get(label);
    if (cached && cached.until > Date.now()) return cached.route;
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
    const cached = this.domainRoutes.get(host);
    if (cached && cached.until > Date.now()) return cached.route;
    const row = await this.db
      .selectFrom('domains')
      .select('project_id')
      .where('domain', '=', host)
      .where('verified', '=', 1)
      .executeTakeFirst();
    const route = row?.project_id ? { projectId: row.project_id, service: null } : null;
    if (this.domainRoutes.size > 10_000) this.domainRoutes.clear();
    this.domainRoutes.set(host, { route, until: Date.now() + ROUTE_TTL_MS });
    return route;
  }

  private async unavailable(route: Route, target: EdgeTarget | null): Promise<EdgePage> {
    if (target?.kind === 'no-service') {
      return { status: 404, title: 'No such service', message: `This project has ${target.reason}.` };
    }
    if (target?.kind === 'down') {
      return {
        status: target.status,
        title: 'The app is down',
        message: `${capitalize(target.reason)}.`,
        retryAfter: 5,
      };
    }
    const project = await this.db
      .selectFrom('projects')
      .select(['name', 'status', 'last_deploy_error'])
      .where('id', '=', route.projectId)
      .executeTakeFirst();
    switch (project?.status) {
      case 'building':
        return {
          status: 503,
          title: 'Deploying',
          message: `${project.name} is being deployed; this page will work once it is running.`,
          retryAfter: 5,
        };
      case 'running':
        return { status: 503, title: 'Starting', message: `${project.name} is starting.`, retryAfter: 2 };
      case 'failed':
        return {
          status: 502,
          title: 'The deploy failed',
          message: `${project.name} is not running: ${project.last_deploy_error ?? 'its last deploy failed'}.`,
          hint: 'See the logs in Wharf, fix the problem and deploy again.',
        };
      case 'stopped':
        return {
          status: 503,
          title: 'Stopped',
          message: `${project.name} is stopped.`,
          hint: 'Deploy it again from Wharf to bring it back.',
        };
      case 'created':
        return {
          status: 503,
          title: 'Not deployed yet',
          message: `${project.name} has not been deployed yet.`,
          hint: 'Deploy it from Wharf or with `wharf deploy`.',
        };
      default:
        return { status: 404, title: 'No app here', message: 'Nothing is deployed at this address.' };
    }
  }

  private async serveStatic(req: IncomingMessage, res: ServerResponse, root: string): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
      res.end('method not allowed: a static site answers GET and HEAD\n');
      return;
    }
    // Still percent-encoded: send decodes it (once), and answers 400 when it is malformed.
    const path = new URL(req.url ?? '/', 'http://edge').pathname;
    let result = await send(req, path, { root, index: ['index.html'], dotfiles: 'deny' });
    // Single-page apps route on the client: a path without an extension falls back to index.html.
    if (result.statusCode === 404 && !/\.[a-z0-9]+$/i.test(path)) {
      result = await send(req, '/index.html', { root, dotfiles: 'deny' });
    }
    res.writeHead(result.statusCode, result.headers as Record<string, string>);
    // A file that cannot be read after all (its release removed meanwhile) ends this response only.
    result.stream.on('error', () => res.destroy());
    result.stream.pipe(res);
  }

  private page(res: ServerResponse, page: EdgePage): void {
    sendPage(res, page);
  }
}

function hostOf(req: IncomingMessage): string {
  const host = (req.headers.host ?? '').toLowerCase();
  // `name:port`, or `[v6]:port`: only names route.
  return host.replace(/:\d+$/, '').replace(/\.$/, '');
}

function stripForwarded(req: IncomingMessage): void {
  for (const name of ['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-port'])
    delete req.headers[name];
}

function isServerResponse(value: unknown): value is ServerResponse {
  return typeof (value as ServerResponse | undefined)?.writeHead === 'function';
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
