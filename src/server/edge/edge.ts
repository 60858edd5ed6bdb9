// The app edge: the public HTTP server that routes by Host. `<subdomain>.<base_domain>` goes to a
// project's main service and `<subdomain>-<service>.<base_domain>` to each service, with WebSocket
// upgrades and X-Forwarded-* headers; a verified custom domain linked to a project goes to its main
// service; static sites are served from their release folder, never a file whose real location (links
// followed) leaves the site's root. Unknown hosts get a 404 page, apps that are down or being deployed
// a 502 or 503 page that says nothing of why: the owner reads that in Wharf. A request body over
// config.limits.bodyBytes is answered 413, whoever it was for (body-limit.ts). Routes are looked up and
// kept briefly by route-cache.ts.
import {
  type IncomingMessage,
  type Server,
  type ServerResponse,
  createServer,
  maxHeaderSize,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Http2SecureServer } from 'node:http2';
import type { Duplex } from 'node:stream';
import httpProxy from 'http-proxy';
import { HOP_HEADER } from '../cluster/hop.js';
import type { PlatformConfig } from '../config.js';
import { formatBytes } from '../limits.js';
import type { EdgeTarget, Runtime } from '../runtime/runtime.js';
import type { Store } from '../store/open.js';
import type { TunnelHub } from '../tunnels/hub.js';
import { openAppConduit } from './app-conduit.js';
import { BodyLimit } from './body-limit.js';
import { normalizeHost } from './conduit.js';
import { type GiveToServer, takeConnections } from './handoff.js';
import { forwardingHeaders, publicProto } from './forwarded.js';
import { type EdgeTlsServer, createEdgeTlsServer, forHttp2Client } from './http2.js';
import { type EdgePage, notRunningPage, sendPage } from './pages.js';
import { type Route, RouteCache } from './route-cache.js';
import { serveStaticSite } from './static-site.js';
import type { CertificateManager } from '../tls/certificates.js';
import { CHALLENGE_PATH, type HttpChallenges } from '../tls/challenges.js';

const HOP_IN_HEAD = new RegExp(`\r\n${HOP_HEADER}:`, 'i');

/** A year, as HSTS preload lists ask; sent only for custom domains whose owner turned it on. */
const HSTS = 'max-age=31536000';

/** How long an idle client connection is kept (longer than the 60 s of most load balancers in front). */
const KEEP_ALIVE_MS = 65_000;

const EMPTY = Buffer.alloc(0);

export class Edge {
  readonly server: Server;
  /**
   * The HTTPS server (HTTP/2 and HTTP/1.1), once enableTls() made it (servePlatform listens on the
   * HTTPS port).
   */
  secureServer: Http2SecureServer | null = null;
  private secure: EdgeTlsServer | null = null;
  /** `api.<base_domain>`: the platform's API, handed to its own server in this process. */
  readonly apiHost: string;
  private api: Server | null = null;
  private challenges: HttpChallenges | null = null;
  // No `xfwd`: the forwarding headers are the edge's own (setForwarding), as on the byte path.
  private readonly proxy = httpProxy.createProxyServer({ ws: true });
  private readonly routes: RouteCache;
  /** Upgraded connections (WebSockets): the HTTP server no longer tracks them, so close() must. */
  private readonly upgraded = new Set<Duplex>();
  /** Ends every connection of the plain server, wherever it went (the HTTP server, a byte path). */
  private readonly endConnections: () => void;
  private readonly bodyLimit: BodyLimit;

  constructor(
    private readonly config: PlatformConfig,
    private readonly db: Store,
    private readonly runtime: Runtime,
    private readonly tunnels: TunnelHub,
  ) {
    this.routes = new RouteCache(config, db);
    this.bodyLimit = new BodyLimit(config.limits.bodyBytes, (req, reason) =>
      this.tunnels.cancelRelay(req, reason),
    );
    this.apiHost = `api.${config.baseDomain}`;
    this.proxy.on('proxyReq', (proxyReq, req) => this.bodyLimit.proxied(req, proxyReq));
    this.proxy.on('proxyRes', (proxyRes, req) => {
      if (req.httpVersionMajor === 2) forHttp2Client(proxyRes);
    });
    this.proxy.on('error', (error, _req, res) => {
      if (isServerResponse(res) && this.bodyLimit.answered(res)) return;
      if (isServerResponse(res)) {
        if (!res.headersSent) this.page(res, notRunningPage(502));
        else res.destroy();
      } else (res as Duplex).destroy();
    });
    this.server = createServer((req, res) => this.onRequest(req, res));
    this.server.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
    this.server.keepAliveTimeout = KEEP_ALIVE_MS;
    this.tunnels.idleMs = KEEP_ALIVE_MS;
    this.endConnections = takeConnections(this.server, (socket, give) => this.sniff(socket, give));
  }

  /**
   * A new plain connection (or one a conduit hands back): its first request head is read to see where
   * it goes. A tunnel host's goes onto the byte path when its client takes connections whole; anything
   * else, with the bytes read, to the HTTP server.
   */
  sniff(socket: Socket, give: GiveToServer): void {
    if (this.challenges && !isEncryptedSocket(socket)) {
      // Plain HTTP once HTTPS is on: answered by the HTTP server (challenges, redirects).
      give(socket);
      return;
    }
    // The head's chunks as they come; the blank line that ends it is looked for only where it could
    // be, the new chunk and the three bytes before it (a client sending a byte at a time would cost
    // the edge a copy and a search of all it sent so far on every byte).
    const chunks: Buffer[] = [];
    let length = 0;
    let tail: Buffer = EMPTY;
    const stop = () => {
      socket.off('data', onData);
      socket.off('error', onGone);
      socket.off('close', onGone);
      clearTimeout(timer);
      socket.pause();
    };
    const onGone = () => {
      stop();
      socket.destroy();
    };
    const onData = (chunk: Buffer) => {
      const window = tail.length === 0 ? chunk : Buffer.concat([tail, chunk]);
      const found = window.indexOf('\r\n\r\n');
      const end = found < 0 ? -1 : length - tail.length + found;
      chunks.push(chunk);
      length += chunk.length;
      // Not a request line's method (a TLS hello on the plain port, noise): the HTTP server says so.
      const http = chunks[0]![0]! >= 0x41 && chunks[0]![0]! <= 0x5a;
      if (end < 0 && http && length < maxHeaderSize) {
        tail = window.subarray(Math.max(0, window.length - 3));
        return;
      }
      stop();
      const read = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
      const host = end < 0 ? null : hostInHead(read.subarray(0, end));
      const reroute = (again: Socket, rest: Buffer) => {
        if (rest.length > 0) again.unshift(rest);
        this.sniff(again, give);
      };
      // A request another node sent on (HOP_HEADER) is read whole: its hop is checked first.
      if (host === null || host === this.apiHost || HOP_IN_HEAD.test(read.toString('latin1', 0, end))) {
        give(socket, read);
        return;
      }
      if (this.tunnels.claim(socket, read, host, reroute)) return;
      const first = read;
      this.claimForApp(socket, first, host, reroute).then(
        (claimed) => claimed || give(socket, first),
        () => give(socket, first),
      );
    };
    // A head that does not come is dropped as the HTTP server would drop it.
    const timer = setTimeout(onGone, this.server.headersTimeout);
    socket.on('data', onData);
    socket.on('error', onGone);
    socket.on('close', onGone);
    socket.resume();
  }

  /**
   * Puts a connection whose first request is for a running app (not a static site) on the byte path.
   * False when it is for anything else: the HTTP server answers it (pages, static files, and an HSTS
   * domain over HTTPS, whose header the byte path does not add).
   */
  private async claimForApp(
    socket: Socket,
    first: Buffer,
    host: string,
    reroute: (socket: Socket, rest: Buffer) => void,
  ): Promise<boolean> {
    // While the route is looked up the socket belongs to nobody: an error on it must end it only.
    const lost = () => socket.destroy();
    socket.on('error', lost);
    let route: Route | null;
    try {
      route = await this.routes.route(host);
    } finally {
      socket.off('error', lost);
    }
    if (socket.destroyed) return true;
    if (route === null || (route.hsts && isEncryptedSocket(socket))) return false;
    const routed = this.runtime.target(route.projectId, route.service);
    if (routed?.kind !== 'proxy') return false;
    // Only where the app runs is wanted here: each request of the connection counts on its own.
    routed.done();
    openAppConduit({
      host,
      socket,
      first,
      appAddress: routed.host,
      port: routed.port,
      target: () =>
        this.routes.stillRoutes(host, route)
          ? this.runtime.target(route.projectId, route.service, { host: routed.host, port: routed.port })
          : null,
      bodyLimit: this.config.limits.bodyBytes,
      bodyLimitText: formatBytes(this.config.limits.bodyBytes),
      idleMs: KEEP_ALIVE_MS,
      reroute,
    });
    return true;
  }

  // Nothing one request does may take the platform down: an unexpected error ends that request only.
  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    this.handle(req, res).catch(() => {
      if (res.headersSent) res.destroy();
      else
        this.page(res, {
          status: 500,
          title: 'Edge error',
          message: 'The edge could not answer this request.',
        });
    });
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.upgrade(req, socket, head).catch(() => socket.destroy());
  }

  /**
   * Turns HTTPS on: a TLS server whose certificate for each name comes from `certificates` (asked for
   * on demand for routed hosts), serving what the plain server serves; the plain server then answers
   * ACME HTTP-01 challenges and redirects everything else to HTTPS.
   */
  enableTls(certificates: CertificateManager, challenges: HttpChallenges): Http2SecureServer {
    this.challenges = challenges;
    this.secure = createEdgeTlsServer(
      {
        minVersion: 'TLSv1.2',
        SNICallback: (servername, done) => {
          certificates.forHandshake(servername).then(
            (context) =>
              context
                ? done(null, context)
                : done(new Error(`no certificate for ${servername || '(no SNI)'}`)),
            (error: unknown) => done(error as Error),
          );
        },
      },
      {
        onRequest: (req, res) => this.onRequest(req, res),
        onUpgrade: (req, socket, head) => this.onUpgrade(req, socket, head),
      },
      KEEP_ALIVE_MS,
    );
    this.secureServer = this.secure.server;
    return this.secureServer;
  }

  /**
   * Serves the platform's API at `api.<base_domain>` too, by handing its requests and upgrades (tunnel
   * clients, traffic feeds) to `server`: over HTTPS, that is the API's public address.
   */
  serveApi(server: Server): void {
    this.api = server;
  }

  /** The account whose tunnel `host` is, while it is online; null for any other host. */
  tunnelOwner(host: string): string | null {
    const tunnel = this.tunnels.subdomainOf(host.toLowerCase());
    return tunnel === null ? null : this.tunnels.ownerOf(tunnel);
  }

  /** Whether the edge serves `host` now (an app or service, a verified custom domain, a tunnel online). */
  async serves(host: string): Promise<boolean> {
    const name = host.toLowerCase();
    if (name === this.apiHost) return this.api !== null;
    const tunnel = this.tunnels.subdomainOf(name);
    if (tunnel !== null) return this.tunnels.isOnline(tunnel);
    return (await this.routes.route(name).catch(() => null)) !== null;
  }

  close(): Promise<void> {
    if (this.secure) {
      this.secure.server.close();
      this.secure.closeAll();
    }
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.endConnections();
      // An open WebSocket would otherwise keep the server, and the platform's shutdown, waiting.
      for (const socket of this.upgraded) socket.destroy();
      this.proxy.close();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.challenges && !isEncrypted(req)) {
      this.plainWithTls(req, res);
      return;
    }
    const host = hostOf(req);
    if (host === this.apiHost && this.api) {
      // The API keeps its own limits (JSON bodies, uploads) and its own answers.
      this.api.emit('request', req, res);
      return;
    }
    if (!this.bodyLimit.admit(req, res)) return;
    const tunnel = this.tunnels.subdomainOf(host);
    if (tunnel !== null) {
      await this.tunnels.relayAnywhere(req, res, tunnel);
      return;
    }
    const route = await this.routes.route(host).catch(() => null);
    if (!route) {
      this.page(res, this.noAppPage(host));
      return;
    }
    if (route.hsts && isEncrypted(req)) res.setHeader('strict-transport-security', HSTS);
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
    setForwarding(req, false);
    this.proxy.web(req, res, { target: `http://${target.host}:${target.port}`, agent: target.agent });
  }

  /**
   * The plain port once HTTPS is on: ACME HTTP-01 challenges are answered (the CA asks over plain HTTP),
   * anything else is sent to the same address over HTTPS.
   */
  private plainWithTls(req: IncomingMessage, res: ServerResponse): void {
    const host = hostOf(req);
    const path = (req.url ?? '/').split('?')[0]!;
    if (path.startsWith(CHALLENGE_PATH)) {
      void this.challenges!.answer(host, path)
        .catch(() => null)
        .then((answer) => {
          res.writeHead(answer === null ? 404 : 200, {
            'content-type': 'text/plain',
            'cache-control': 'no-store',
          });
          res.end(answer ?? 'no such challenge\n');
        });
      return;
    }
    if (!host) {
      this.page(res, { status: 400, title: 'Bad request', message: 'This request names no host.' });
      return;
    }
    const port = this.config.tls.httpsPort;
    const target = `https://${host}${port === 443 || port === null ? '' : `:${port}`}${req.url ?? '/'}`;
    // 308: the method and body are kept (a form posted to http:// is posted again to https://).
    res.writeHead(308, { location: target, 'content-type': 'text/plain', connection: 'close' });
    res.end(`This address is served over HTTPS: ${target}\n`);
    // A body sent with the request is not read: the connection closes after the answer.
    req.resume();
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    if (this.challenges && !isEncrypted(req)) {
      // WebSockets over plain HTTP once HTTPS is on: browsers follow no redirect here, so say where.
      socket.end('HTTP/1.1 426 Upgrade Required\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    this.upgraded.add(socket);
    socket.once('close', () => this.upgraded.delete(socket));
    if (hostOf(req) === this.apiHost && this.api) {
      this.upgraded.delete(socket);
      this.api.emit('upgrade', req, socket, head);
      return;
    }
    const tunnel = this.tunnels.subdomainOf(hostOf(req));
    if (tunnel !== null) {
      await this.tunnels.relayUpgradeAnywhere(req, socket, head, tunnel);
      return;
    }
    const route = await this.routes.route(hostOf(req)).catch(() => null);
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
    setForwarding(req, true);
    this.proxy.ws(req, socket, head, { target: `http://${target.host}:${target.port}` });
  }

  /** A custom domain's routing changed (verified, unverified, deleted): look it up afresh. */
  forgetDomain(domain: string): void {
    this.routes.forget(domain);
  }

  private async unavailable(route: Route, target: EdgeTarget | null): Promise<EdgePage> {
    if (target?.kind === 'no-service') {
      return { status: 404, title: 'No such service', message: `This project has ${target.reason}.` };
    }
    // Why an app is down or failed is for its owner (in Wharf), not for whoever opens its URL.
    if (target?.kind === 'down') return notRunningPage(target.status, 5);
    const project = await this.db
      .selectFrom('projects')
      .select(['name', 'status'])
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
        return notRunningPage(502);
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

  /**
   * The 404 for a host nothing is deployed at. A tunnel of that name that is online is pointed at: a
   * newcomer who started `wharf http 3000 --subdomain demo` tries demo.<base domain> first.
   */
  private noAppPage(host: string): EdgePage {
    const { baseDomain, tunnelDomain } = this.config;
    const label = host.endsWith(`.${baseDomain}`) ? host.slice(0, -baseDomain.length - 1) : '';
    const tunnel = label !== '' && !label.includes('.') && this.tunnels.isOnline(label);
    return {
      status: 404,
      title: 'No app here',
      message: `Nothing is deployed at ${host || 'this address'}.`,
      hint: tunnel
        ? `The tunnel ${label} is online at ${label}.${tunnelDomain}: tunnels answer under ${tunnelDomain}, apps under ${baseDomain}.`
        : `Apps answer at <subdomain>.${baseDomain}; check the project's URL in Wharf.`,
    };
  }

  private serveStatic(req: IncomingMessage, res: ServerResponse, root: string): Promise<void> {
    return serveStaticSite(req, res, root, this.config.dataDir, (r, page) => this.page(r, page));
  }

  private page(res: ServerResponse, page: EdgePage): void {
    sendPage(res, page);
  }
}

function isEncrypted(req: IncomingMessage): boolean {
  return isEncryptedSocket(req.socket);
}

function isEncryptedSocket(socket: object): boolean {
  return publicProto(socket) === 'https';
}

/** The host a request head names (its Host header: lowercase, no port), or null. */
function hostInHead(head: Buffer): string | null {
  const match = /\r\nhost:[ \t]*([^\r\n]*)/i.exec(head.toString('latin1'));
  return match ? normalizeHost(match[1]) : null;
}

function hostOf(req: IncomingMessage): string {
  const host = (req.headers.host ?? '').toLowerCase();
  // `name:port`, or `[v6]:port`: only names route.
  return host.replace(/:\d+$/, '').replace(/\.$/, '');
}

/**
 * Replaces what the public side claims about the hop with what the edge saw: the same headers, by the
 * same rule, as the byte path writes (forwardingHeaders).
 */
function setForwarding(req: IncomingMessage, upgrade: boolean): void {
  const authority = req.headers[':authority'];
  const host = req.headers.host ?? (typeof authority === 'string' ? authority : '');
  const forwarding = forwardingHeaders(
    req.socket.remoteAddress ?? '',
    host,
    publicProto(req.socket),
    upgrade,
  );
  Object.assign(req.headers, forwarding);
}

function isServerResponse(value: unknown): value is ServerResponse {
  return typeof (value as ServerResponse | undefined)?.writeHead === 'function';
}
