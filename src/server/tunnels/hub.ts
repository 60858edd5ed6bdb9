// The tunnel edge: accepts tunnel clients on `GET /api/v1/tunnels/connect` (upgraded to the raw
// `wharf-tunnel` stream or a WebSocket), runs HTTP/2 over each connection as the client side, and
// relays public requests for `<subdomain>.<tunnel_domain>` as streams, bodies streamed both ways.
// Every exchange is captured (the last 1,000 per tunnel, in memory) and fed live to the traffic
// WebSocket; a request that finds the client offline is captured too, with its error.
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import http2, { type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import type { Duplex } from 'node:stream';
import { WebSocketServer, createWebSocketStream } from 'ws';
import {
  CaptureRing,
  type CapturedExchange,
  Exchange,
  headerList,
  headerListOf,
} from '../../core/capture/capture.js';
import {
  SESSION_SETTINGS,
  SESSION_WINDOW,
  STREAM_HEADERS,
  requestHeadersToH2,
} from '../../core/tunnel/protocol.js';
import {
  TUNNEL_HEADERS,
  TUNNEL_UPGRADE_PROTOCOL,
  type CapturedRequest,
  type Tunnel as TunnelView,
} from '../../shared/api/tunnels.js';
import { RESERVED_SUBDOMAINS } from '../../shared/dns-label.js';
import type { Authenticator, Caller } from '../auth/authenticate.js';
import { assertScope } from '../auth/authenticate.js';
import { type PlatformConfig, edgeUrl } from '../config.js';
import { ApiError, notFound, problem, validationError } from '../errors.js';
import { newId, randomBase62 } from '../ids.js';
import type { Store } from '../store/open.js';
import { type EdgePage, renderPage } from '../edge/pages.js';

const SUBDOMAIN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export class Tunnel {
  readonly ring = new CaptureRing();
  readonly feed = new EventEmitter();
  session: ClientHttp2Session | null = null;
  connectedAt = new Date().toISOString();

  constructor(
    readonly id: string,
    readonly accountId: string,
    readonly subdomain: string,
    readonly url: string,
  ) {
    this.feed.setMaxListeners(0);
  }

  get online(): boolean {
    return this.session !== null && !this.session.closed && !this.session.destroyed;
  }

  view(): TunnelView {
    return {
      id: this.id,
      subdomain: this.subdomain,
      url: this.url,
      connected_at: this.connectedAt,
      requests_captured: this.ring.total,
    };
  }

  record(exchange: CapturedExchange): void {
    this.ring.add(exchange);
    this.feed.emit('request', exchange.request);
  }
}

export class TunnelHub {
  /** By subdomain; a tunnel stays (offline) after its client leaves, so its captures remain. */
  private readonly tunnels = new Map<string, Tunnel>();
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
  private readonly suffix: string;

  constructor(
    private readonly config: PlatformConfig,
    private readonly db: Store,
    private readonly auth: Authenticator,
  ) {
    this.suffix = `.${config.tunnelDomain}`;
  }

  /** The tunnel's subdomain when `host` is under the tunnel domain. */
  subdomainOf(host: string): string | null {
    if (!host.endsWith(this.suffix)) return null;
    const label = host.slice(0, -this.suffix.length);
    return SUBDOMAIN.test(label) ? label : null;
  }

  /** The caller's connected tunnels. */
  list(accountId: string): TunnelView[] {
    return [...this.tunnels.values()]
      .filter((t) => t.accountId === accountId && t.online)
      .map((t) => t.view());
  }

  /** `:tunnelUrl` of API.md §7: a host name, a whole URL (percent-encoded), or a bare subdomain. */
  find(accountId: string, tunnelUrl: string): Tunnel {
    let host = tunnelUrl.trim().toLowerCase();
    try {
      if (/^https?:\/\//.test(host)) host = new URL(host).hostname;
    } catch {
      // not a URL: a host or a subdomain
    }
    host = host.replace(/:\d+$/, '');
    const subdomain = this.subdomainOf(host) ?? host;
    const tunnel = this.tunnels.get(subdomain);
    if (!tunnel || tunnel.accountId !== accountId) throw notFound(`tunnel ${tunnelUrl}`);
    return tunnel;
  }

  close(): void {
    for (const tunnel of this.tunnels.values()) {
      tunnel.session?.close();
      tunnel.session?.destroy();
    }
    this.wss.close();
  }

  /** The API server's `upgrade` requests: tunnel connections and the traffic feed. */
  async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, prefix: string): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'http://platform');
    if (url.pathname === `${prefix}/tunnels/connect`) {
      await this.connect(req, socket, head, url).catch((error: unknown) => refuse(socket, error));
      return true;
    }
    const feed = new RegExp(`^${prefix}/ws/traffic/([^/]+)$`).exec(url.pathname);
    if (feed) {
      await this.traffic(req, socket, head, decodeURIComponent(feed[1]!)).catch((error: unknown) =>
        refuse(socket, error),
      );
      return true;
    }
    return false;
  }

  private async connect(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> {
    const caller = await this.caller(req);
    const protocol = String(req.headers.upgrade ?? '').toLowerCase();
    if (protocol !== TUNNEL_UPGRADE_PROTOCOL && protocol !== 'websocket') {
      throw new ApiError(
        'bad_request',
        `upgrade to "${TUNNEL_UPGRADE_PROTOCOL}" (or "websocket"), not "${protocol || 'nothing'}"`,
      );
    }
    const asked = url.searchParams.get('subdomain');
    const subdomain = asked === null || asked === '' ? await this.randomSubdomain() : asked;
    if (!SUBDOMAIN.test(subdomain)) {
      throw validationError([{ path: 'subdomain', message: 'must be a lowercase DNS label' }]);
    }
    if (RESERVED_SUBDOMAINS.has(subdomain)) {
      throw validationError([{ path: 'subdomain', message: `"${subdomain}" is reserved for the platform` }]);
    }
    await this.reserve(caller.accountId, subdomain);

    let tunnel = this.tunnels.get(subdomain);
    if (!tunnel || tunnel.accountId !== caller.accountId) {
      tunnel = new Tunnel(
        newId('tun'),
        caller.accountId,
        subdomain,
        edgeUrl(this.config, `${subdomain}.${this.config.tunnelDomain}`),
      );
      this.tunnels.set(subdomain, tunnel);
    }
    // The same account connecting again takes the subdomain over from its older connection.
    tunnel.session?.close();
    const responseHeaders = [
      `${TUNNEL_HEADERS.id}: ${tunnel.id}`,
      `${TUNNEL_HEADERS.subdomain}: ${subdomain}`,
      `${TUNNEL_HEADERS.url}: ${tunnel.url}`,
    ];
    let transport: Duplex;
    if (protocol === 'websocket') {
      transport = await new Promise<Duplex>((resolve) => {
        this.wss.once('headers', (headers) => headers.push(...responseHeaders));
        this.wss.handleUpgrade(req, socket, head, (ws) => resolve(createWebSocketStream(ws)));
      });
    } else {
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${TUNNEL_UPGRADE_PROTOCOL}\r\n${responseHeaders.join('\r\n')}\r\n\r\n`,
      );
      if (head.length > 0) socket.unshift(head);
      transport = socket;
    }
    const session = http2.connect(`http://${subdomain}`, {
      createConnection: () => transport,
      settings: SESSION_SETTINGS,
    });
    session.on('connect', () => session.setLocalWindowSize(SESSION_WINDOW));
    session.on('error', () => undefined);
    session.once('close', () => {
      if (tunnel.session === session) tunnel.session = null;
      transport.destroy();
    });
    transport.once('close', () => session.destroy());
    tunnel.session = session;
    tunnel.connectedAt = new Date().toISOString();
  }

  /** Relays a public request for a tunnel host. */
  relay(req: IncomingMessage, res: ServerResponse, subdomain: string): void {
    const tunnel = this.tunnels.get(subdomain);
    const exchange = new Exchange({
      tunnelId: tunnel?.id ?? 'tun_none',
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      url: edgeUrl(this.config, `${subdomain}.${this.config.tunnelDomain}`) + (req.url ?? '/'),
      httpVersion: `HTTP/${req.httpVersion}`,
      requestHeaders: headerList(req.rawHeaders),
      remoteAddr: req.socket.remoteAddress ?? null,
    });
    if (!tunnel) {
      page(res, {
        status: 404,
        title: 'No tunnel here',
        message: `No tunnel is connected at ${subdomain}.${this.config.tunnelDomain}.`,
        hint: 'Start one with `wharf http <port>` or from the Traffic screen in Wharf.',
      });
      return;
    }
    const stream = this.open(tunnel, req, exchange);
    if (!stream) {
      req.resume();
      tunnel.record(exchange.finish('tunnel offline'));
      page(res, {
        status: 502,
        title: 'Tunnel offline',
        message: `The tunnel client for ${subdomain} is not connected right now.`,
        hint: 'It reconnects by itself when it can; this page retries every 5 s.',
        retryAfter: 5,
      });
      return;
    }
    req.on('data', (chunk: Buffer) => exchange.requestBody.push(chunk));
    req.pipe(stream);
    let failed: string | null = null;
    stream.on('response', (headers) => {
      const status = Number(headers[':status']);
      const list = headerListOf(headers);
      exchange.response(status, list);
      const out: Record<string, string | string[]> = {};
      for (const { name, value } of list) {
        const existing = out[name];
        out[name] =
          existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
      }
      res.writeHead(status, out);
    });
    stream.on('data', (chunk: Buffer) => {
      exchange.responseBody.push(chunk);
      if (!res.write(chunk)) {
        stream.pause();
        res.once('drain', () => stream.resume());
      }
    });
    stream.on('end', () => res.end());
    stream.on('error', (error) => (failed = error.message));
    stream.on('close', () => {
      if (!res.headersSent) {
        failed ??= 'the tunnel client closed the stream without a response';
        page(res, {
          status: 502,
          title: 'No response',
          message: `The tunnel client did not answer: ${failed}.`,
        });
      } else if (!res.writableEnded) {
        failed ??= 'the response was cut off';
        res.destroy();
      }
      tunnel.record(exchange.finish(failed));
    });
    res.on('close', () => {
      if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
    });
  }

  /** Relays a public Upgrade (a WebSocket) as a raw stream: the app's 101 and frames flow back as bytes. */
  relayUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, subdomain: string): void {
    socket.on('error', () => socket.destroy());
    const tunnel = this.tunnels.get(subdomain);
    if (!tunnel?.online) {
      socket.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const stream = tunnel.session!.request(
      {
        ...requestHeadersToH2(
          req.rawHeaders,
          { method: 'GET', path: req.url ?? '/', authority: req.headers.host ?? subdomain, scheme: 'http' },
          {
            [STREAM_HEADERS.upgrade]: String(req.headers.upgrade ?? 'websocket'),
            [STREAM_HEADERS.remoteAddr]: req.socket.remoteAddress ?? '',
          },
        ),
        // The app needs the hop-by-hop headers of an upgrade; they travel in one header of ours.
        'wharf-upgrade-headers': JSON.stringify({
          connection: req.headers.connection,
          upgrade: req.headers.upgrade,
        }),
      },
      { endStream: false },
    );
    if (head.length > 0) stream.write(head);
    stream.on('response', () => {
      stream.pipe(socket);
      socket.pipe(stream);
    });
    stream.on('error', () => socket.destroy());
    stream.on('close', () => socket.destroy());
    socket.on('close', () => {
      if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
    });
  }

  /** Sends a captured request again through the tunnel; resolves with the new captured request. */
  async replay(accountId: string, tunnelUrl: string, requestId: string): Promise<CapturedRequest> {
    const tunnel = this.find(accountId, tunnelUrl);
    const original = tunnel.ring.get(requestId);
    if (!original) throw notFound(`request ${requestId}`);
    if (!tunnel.online) {
      throw new ApiError('tunnel_unavailable', `the tunnel client for ${tunnel.subdomain} is offline`);
    }
    const { request } = original;
    const exchange = new Exchange({
      tunnelId: tunnel.id,
      method: request.method,
      path: request.path,
      url: request.url,
      httpVersion: 'HTTP/2',
      requestHeaders: request.request_headers,
      remoteAddr: null,
      replayOf: request.id,
    });
    const raw = request.request_headers.flatMap(({ name, value }) => [name, value]);
    const stream = tunnel.session!.request(
      requestHeadersToH2(
        raw,
        {
          method: request.method,
          path: request.path,
          authority: `${tunnel.subdomain}.${this.config.tunnelDomain}`,
          scheme: 'http',
        },
        { [STREAM_HEADERS.requestId]: exchange.id, [STREAM_HEADERS.replayOf]: request.id },
      ),
    );
    exchange.requestBody.push(original.requestBody);
    stream.end(original.requestBody);
    const error = await new Promise<string | null>((resolve) => {
      stream.on('response', (headers) =>
        exchange.response(Number(headers[':status']), headerListOf(headers)),
      );
      stream.on('data', (chunk: Buffer) => exchange.responseBody.push(chunk));
      stream.on('error', (e) => resolve(e.message));
      stream.on('end', () => resolve(null));
      stream.on('close', () => resolve('the tunnel client closed the stream'));
    });
    const captured = exchange.finish(error);
    tunnel.record(captured);
    return captured.request;
  }

  private open(tunnel: Tunnel, req: IncomingMessage, exchange: Exchange): ClientHttp2Stream | null {
    if (!tunnel.online) return null;
    try {
      return tunnel.session!.request(
        requestHeadersToH2(
          req.rawHeaders,
          {
            method: req.method ?? 'GET',
            path: req.url ?? '/',
            authority: req.headers.host ?? tunnel.subdomain,
            scheme: 'http',
          },
          {
            [STREAM_HEADERS.requestId]: exchange.id,
            [STREAM_HEADERS.remoteAddr]: req.socket.remoteAddress ?? '',
            'x-forwarded-for': forwardedFor(req),
            'x-forwarded-proto': 'http',
            'x-forwarded-host': req.headers.host ?? '',
          },
        ),
        { endStream: false },
      );
    } catch {
      return null;
    }
  }

  private async traffic(req: IncomingMessage, socket: Duplex, head: Buffer, tunnelUrl: string) {
    const caller = await this.caller(req);
    const tunnel = this.find(caller.accountId, tunnelUrl);
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const send = (request: CapturedRequest) => ws.send(JSON.stringify(request));
      tunnel.feed.on('request', send);
      ws.on('close', () => tunnel.feed.off('request', send));
      ws.on('error', () => ws.terminate());
    });
  }

  private async caller(req: IncomingMessage): Promise<Caller> {
    const caller = await this.auth.authenticate({ headers: req.headers });
    assertScope(caller, 'deploy');
    return caller;
  }

  private async reserve(accountId: string, subdomain: string): Promise<void> {
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

  private async randomSubdomain(): Promise<string> {
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

function forwardedFor(req: IncomingMessage): string {
  const previous = req.headers['x-forwarded-for'];
  const address = req.socket.remoteAddress ?? '';
  return previous ? `${String(previous)}, ${address}` : address;
}

function page(res: ServerResponse, edgePage: EdgePage): void {
  const body = renderPage(edgePage);
  res.writeHead(edgePage.status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    ...(edgePage.retryAfter ? { 'retry-after': String(edgePage.retryAfter) } : {}),
  });
  res.end(body);
}

/** Answers a refused upgrade with its problem+json, then closes the socket. */
function refuse(socket: Duplex, error: unknown): void {
  const apiError =
    error instanceof ApiError
      ? error
      : new ApiError('internal', (error as Error).message || 'internal error');
  const body = problem(apiError.code, apiError.detail, apiError.fields);
  const json = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${body.status} ${body.title}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(json)}\r\nconnection: close\r\n\r\n${json}`,
  );
}
