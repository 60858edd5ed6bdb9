// The tunnel edge: accepts tunnel clients on `GET /api/v1/tunnels/connect` (upgraded to the raw
// `wharf-tunnel` stream or a WebSocket), runs HTTP/2 over each connection as the client side, and
// relays public requests for `<subdomain>.<tunnel_domain>` as streams, bodies streamed both ways.
// Every exchange is captured (the last 1,000 per tunnel, in memory) and fed live to the traffic
// WebSocket; a request that finds the client offline is captured too, with its error.
// Per account (config.limits): tunnels connected at once, stream slots (each tunnel connection and
// traffic feed holds one), and capture memory, shared out between the account's tunnels: a new tunnel
// gets the per-tunnel budget if the account's budget has room, made first by forgetting the account's
// offline tunnels, those offline longest first; else what is left (possibly nothing: its exchanges are
// then captured without bodies).
import type { IncomingMessage, ServerResponse } from 'node:http';
import http2, { type ClientHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import { replayThroughTunnel } from './replay.js';
import { Tunnel } from './tunnel.js';
import { openTunnelConduit } from './tunnel-conduit.js';
import type { Duplex } from 'node:stream';
import { WebSocketServer, createWebSocketStream } from 'ws';
import {
  CLIENT_WENT_AWAY_STATUS,
  Exchange,
  headerList,
  headerListOf,
  peerAddress,
  ResponseHeadReader,
} from '../../core/capture/capture.js';
import {
  GOAWAY_REPLACED,
  PIPE_FEATURE,
  SESSION_SETTINGS,
  SESSION_WINDOW,
  STREAM_HEADERS,
  requestHeadersToH2,
  sessionTransport,
} from '../../core/tunnel/protocol.js';
import {
  TUNNEL_HEADERS,
  TUNNEL_UPGRADE_PROTOCOL,
  type CapturedRequest,
  type HeaderList,
  type Tunnel as TunnelView,
} from '../../shared/api/tunnels.js';
import { RESERVED_SUBDOMAINS, isDnsLabel } from '../../shared/dns-label.js';
import type { Authenticator, Caller } from '../auth/authenticate.js';
import { assertScope } from '../auth/authenticate.js';
import { type PlatformConfig, edgeUrl } from '../config.js';
import { ApiError, notFound, problem, validationError } from '../errors.js';
import { newId, randomBase62 } from '../ids.js';
import { type AccountLimits, type Lease, accountLimits, formatBytes } from '../limits.js';
import type { Store } from '../store/open.js';
import { forwardingHeaders, publicProto } from '../edge/forwarded.js';
import { sendPage } from '../edge/pages.js';

const OFFLINE_TUNNEL_KEPT_MS = 60 * 60_000;
/** What one live-feed subscriber may have waiting to be sent before entries are skipped. */
const FEED_BUFFER_BYTES = 4 * 1024 * 1024;

export class TunnelHub {
  /** By subdomain; a tunnel stays (offline) after its client leaves, so its captures remain. */
  private readonly tunnels = new Map<string, Tunnel>();
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
  private readonly suffix: string;
  private readonly limits: AccountLimits;
  /** The relay stream of each public request in flight, so that the edge can cancel one. */
  private readonly relays = new WeakMap<IncomingMessage, ClientHttp2Stream>();
  /** Public connections on the byte path: close() ends them. */
  private readonly piped = new Set<Socket>();
  /** Whether public exchanges are captured (always, but for measuring what capture costs). */
  capture = true;

  constructor(
    private readonly config: PlatformConfig,
    private readonly db: Store,
    private readonly auth: Authenticator,
  ) {
    this.suffix = `.${config.tunnelDomain}`;
    this.limits = accountLimits(config);
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
      for (const { id } of tunnel.ring.list()) {
        const kept = tunnel.ring.get(id);
        if (kept) keptBytes += kept.requestBody.length + kept.responseBody.length;
      }
    }
    return { tunnels, grantedBytes, keptBytes };
  }

  /** Ends the relay of a public request (its body went over the edge's limit): the app sees it aborted. */
  cancelRelay(req: IncomingMessage, reason: string): void {
    const stream = this.relays.get(req);
    if (stream && !stream.closed && !stream.destroyed) stream.destroy(new Error(reason));
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
    for (const socket of this.piped) socket.destroy();
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
      await this.traffic(req, socket, head, decodeParam(feed[1]!)).catch((error: unknown) =>
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
    if (!isDnsLabel(subdomain)) {
      throw validationError([{ path: 'subdomain', message: 'must be a lowercase DNS label' }]);
    }
    if (RESERVED_SUBDOMAINS.has(subdomain)) {
      throw validationError([{ path: 'subdomain', message: `"${subdomain}" is reserved for the platform` }]);
    }
    // Refused before the subdomain is claimed, when this could only be refused after.
    const held = this.tunnels.get(subdomain);
    if (held?.accountId !== caller.accountId || held.slot === null) {
      this.limits.tunnels.check(caller.accountId);
      this.limits.streams.check(caller.accountId);
    }
    await this.reserve(caller.accountId, subdomain);

    const existing = this.tunnels.get(subdomain);
    const known = existing?.accountId === caller.accountId ? existing : undefined;
    // A reconnect of the subdomain takes its older connection's tunnel slot and stream slot over; any
    // other connect takes new ones, or is refused at the account's limits.
    const slot = known?.slot ?? this.limits.tunnels.acquire(caller.accountId);
    known?.stream?.release();
    let stream: Lease;
    try {
      stream = this.limits.streams.acquire(caller.accountId);
    } catch (error) {
      if (slot !== known?.slot) slot.release();
      throw error;
    }
    const tunnel =
      known ??
      new Tunnel(
        newId('tun'),
        caller.accountId,
        subdomain,
        edgeUrl(this.config, `${subdomain}.${this.config.tunnelDomain}`),
        this.grantCapture(caller.accountId),
      );
    this.tunnels.set(subdomain, tunnel);
    tunnel.slot = slot;
    tunnel.stream = stream;
    tunnel.offlineSince = 0;
    tunnel.pipes = String(req.headers[TUNNEL_HEADERS.features] ?? '')
      .split(',')
      .some((feature) => feature.trim() === PIPE_FEATURE);
    const generation = ++tunnel.generation;
    socket.once('close', () => stream.release());
    /** This connection is gone: the tunnel slot goes back, unless a newer connection holds it now. */
    const leave = () => {
      if (tunnel.generation !== generation) return;
      tunnel.slot?.release();
      tunnel.slot = null;
      tunnel.offlineSince = Date.now();
    };
    // The same account connecting again takes the subdomain over from its older connection, and tells
    // that one why, so that it stops instead of reconnecting and taking it back in turn.
    const previous = tunnel.session;
    if (previous && !previous.closed && !previous.destroyed) {
      try {
        previous.goaway(http2.constants.NGHTTP2_NO_ERROR, 0, Buffer.from(GOAWAY_REPLACED));
      } catch {
        // already going away
      }
      previous.close();
    }
    const responseHeaders = [
      `${TUNNEL_HEADERS.id}: ${tunnel.id}`,
      `${TUNNEL_HEADERS.subdomain}: ${subdomain}`,
      `${TUNNEL_HEADERS.url}: ${tunnel.url}`,
    ];
    let transport: Duplex;
    if (protocol === 'websocket') {
      transport = await new Promise<Duplex>((resolve, reject) => {
        const addHeaders = (headers: string[], request: IncomingMessage) => {
          if (request !== req) return;
          headers.push(...responseHeaders);
          this.wss.off('headers', addHeaders);
        };
        // A client gone before the handshake ends: the slots it took go back.
        const gone = () => {
          this.wss.off('headers', addHeaders);
          leave();
          reject(new Error('the tunnel client went away during the upgrade'));
        };
        socket.once('close', gone);
        this.wss.on('headers', addHeaders);
        this.wss.handleUpgrade(req, socket, head, (ws) => {
          socket.off('close', gone);
          resolve(createWebSocketStream(ws));
        });
      });
    } else {
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${TUNNEL_UPGRADE_PROTOCOL}\r\n${responseHeaders.join('\r\n')}\r\n\r\n`,
      );
      if (head.length > 0) socket.unshift(head);
      // Small frames (a request's HEADERS) must not wait for Nagle.
      (socket as Partial<Socket>).setNoDelay?.(true);
      transport = sessionTransport(socket);
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
      leave();
      // An offline tunnel keeps its captures for a while (its client may come back), then goes.
      setTimeout(() => {
        if (!tunnel.online && tunnel.slot === null && this.tunnels.get(subdomain) === tunnel)
          this.tunnels.delete(subdomain);
      }, OFFLINE_TUNNEL_KEPT_MS).unref();
    });
    transport.once('close', () => session.destroy());
    tunnel.session = session;
    tunnel.connectedAt = new Date().toISOString();
  }

  /**
   * Takes a public HTTP/1.1 connection whose first request (its bytes `first`) is for `host`, a host of
   * this tunnel domain, onto the byte path, when that tunnel's client is online and takes connections
   * whole; false leaves it to the edge's HTTP server (and so to relay()).
   */
  claim(
    socket: Socket,
    first: Buffer,
    host: string,
    reroute: (socket: Socket, rest: Buffer) => void,
  ): boolean {
    const subdomain = this.subdomainOf(host);
    const tunnel = subdomain === null ? undefined : this.tunnels.get(subdomain);
    if (!tunnel?.online || !tunnel.pipes) return false;
    try {
      // The conduit lives as long as the connection and its stream: their events hold it.
      openTunnelConduit({
        tunnel,
        host,
        socket,
        first,
        capture: this.capture,
        bodyLimit: this.config.limits.bodyBytes,
        bodyLimitText: formatBytes(this.config.limits.bodyBytes),
        idleMs: this.idleMs,
        reroute,
      });
      this.piped.add(socket);
      socket.once('close', () => this.piped.delete(socket));
    } catch {
      // The session refused a new stream (it is going away): the HTTP path answers.
      return false;
    }
    return true;
  }

  /** How long a public connection on the byte path is kept without a request (the edge's keep-alive). */
  idleMs = 65_000;

  /** Relays a public request for a tunnel host. */
  relay(req: IncomingMessage, res: ServerResponse, subdomain: string): void {
    const tunnel = this.tunnels.get(subdomain);
    if (!tunnel) {
      page(res, {
        status: 404,
        title: 'No tunnel here',
        message: `No tunnel is connected at ${subdomain}.${this.config.tunnelDomain}.`,
        hint: 'Start one with `wharf http <port>` or from the Traffic screen in Wharf.',
      });
      return;
    }
    const path = req.url ?? '/';
    const exchange = this.capture
      ? new Exchange({
          tunnelId: tunnel.id,
          method: req.method ?? 'GET',
          path,
          url: tunnel.url + path,
          httpVersion: `HTTP/${req.httpVersion}`,
          requestHeaders: headerList(req.rawHeaders),
          remoteAddr: peerAddress(req.socket),
        })
      : null;
    const body = hasBody(req);
    if (body && exchange) req.on('data', (chunk: Buffer) => exchange.requestBody.push(chunk));
    const stream = this.open(tunnel, req, exchange, body);
    if (!stream) {
      req.resume();
      // Recorded once the body went by, so that its size and first bytes are in the capture.
      const record = () => exchange && tunnel.record(exchange, 'tunnel offline');
      if (body && !req.complete && !req.destroyed) req.once('close', record);
      else record();
      page(res, {
        status: 502,
        title: 'Tunnel offline',
        message: `The tunnel client for ${subdomain} is not connected right now.`,
        hint: 'It reconnects by itself when it can; this page retries every 5 s.',
        retryAfter: 5,
      });
      return;
    }
    if (body) req.pipe(stream);
    this.relays.set(req, stream);
    let failed: string | null = null;
    stream.on('response', (headers) => {
      // The edge answered already (the request body went over its limit): nothing more goes out.
      if (res.headersSent) {
        stream.destroy();
        return;
      }
      const status = Number(headers[':status']);
      const error = headers[STREAM_HEADERS.error];
      if (error !== undefined) failed = String(error);
      const list = headerListOf(headers).filter((h) => h.name !== STREAM_HEADERS.error);
      exchange?.response(status, list);
      res.writeHead(status, outgoing(list));
      // Only now: DATA that arrived with the HEADERS must not be written before them.
      stream.on('data', (chunk: Buffer) => {
        exchange?.responseBody.push(chunk);
        if (!res.write(chunk)) {
          stream.pause();
          res.once('drain', () => stream.resume());
        }
      });
      stream.on('end', () => res.end());
    });
    stream.on('error', (error) => (failed ??= error.message));
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
      if (exchange) tunnel.record(exchange, failed);
    });
    res.on('close', () => {
      if (stream.closed || stream.destroyed) return;
      if (res.writableEnded) {
        // The whole response went out: the stream closes by itself (Node may not have marked it closed
        // yet; closing it here would reset it, and resetting every stream trips the client's
        // reset-flood guard). If the request body is still coming, our side ends without it.
        if (!stream.writableEnded) {
          req.unpipe(stream);
          stream.end();
        }
        return;
      }
      // The public client went away. A reset without END_STREAM, so the tunnel client aborts the local
      // request instead of seeing a body that ended normally (close() would end the stream first).
      failed ??= 'the public client went away';
      exchange?.noResponse(CLIENT_WENT_AWAY_STATUS);
      stream.destroy(new Error(failed));
    });
  }

  /** Relays a public Upgrade (a WebSocket) as a raw stream: the app's 101 and frames flow back as bytes. */
  relayUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, subdomain: string): void {
    socket.on('error', () => socket.destroy());
    const tunnel = this.tunnels.get(subdomain);
    // The handshake is captured like any exchange (the frames that follow are not).
    const exchange =
      tunnel && this.capture
        ? new Exchange({
            tunnelId: tunnel.id,
            method: req.method ?? 'GET',
            path: req.url ?? '/',
            url: edgeUrl(this.config, `${subdomain}.${this.config.tunnelDomain}`) + (req.url ?? '/'),
            httpVersion: `HTTP/${req.httpVersion}`,
            requestHeaders: headerList(req.rawHeaders),
            remoteAddr: peerAddress(req.socket),
          })
        : null;
    let recorded = false;
    const record = (error: string | null) => {
      if (recorded || !exchange || !tunnel) return;
      recorded = true;
      tunnel.record(exchange, error);
    };
    let stream: ClientHttp2Stream;
    try {
      if (!tunnel?.online) throw new Error('tunnel offline');
      stream = tunnel.session!.request(
        requestHeadersToH2(
          req.rawHeaders,
          { method: 'GET', path: req.url ?? '/', authority: req.headers.host ?? subdomain, scheme: 'http' },
          {
            ...forwarded(req),
            [STREAM_HEADERS.upgrade]: String(req.headers.upgrade ?? 'websocket'),
            [STREAM_HEADERS.remoteAddr]: peerAddress(req.socket),
            ...(exchange ? { [STREAM_HEADERS.requestId]: exchange.id } : {}),
            // The app needs the hop-by-hop headers of an upgrade; they travel in one header of ours.
            [STREAM_HEADERS.upgradeHeaders]: JSON.stringify({
              connection: req.headers.connection,
              upgrade: req.headers.upgrade,
            }),
          },
        ),
        { endStream: false },
      );
    } catch {
      record('tunnel offline');
      socket.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    if (head.length > 0) stream.write(head);
    stream.on('response', (headers) => {
      if (headers[':status'] !== 200) {
        record('the tunnel client could not reach the local app');
        socket.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
        return;
      }
      if (exchange) {
        const reader = new ResponseHeadReader();
        const onData = (chunk: Buffer) => {
          const head = reader.push(chunk);
          if (head) exchange.response(head.status, head.headers);
          if (reader.done) {
            stream.off('data', onData);
            record(head ? null : 'the app did not answer the upgrade with an HTTP response');
          }
        };
        stream.on('data', onData);
      }
      stream.pipe(socket);
      socket.pipe(stream);
    });
    stream.on('error', () => {
      record('the tunnel stream failed');
      socket.destroy();
    });
    // Ended, not destroyed: what the app sent last (a WebSocket close frame) still reaches the client.
    stream.on('close', () => {
      record('the connection closed before the app answered');
      socket.end();
      setTimeout(() => socket.destroy(), 5_000).unref();
    });
    socket.on('close', () => {
      // Ending our side lets the client end the app's connection in turn: no reset on every close.
      if (!stream.closed && !stream.destroyed && !stream.writableEnded) stream.end();
      setTimeout(() => {
        if (!stream.closed && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
      }, 5_000).unref();
    });
  }

  /** Sends a captured request again through the tunnel (see replay.ts). */
  async replay(accountId: string, tunnelUrl: string, requestId: string): Promise<CapturedRequest> {
    return replayThroughTunnel(this.find(accountId, tunnelUrl), requestId, this.config.tunnelDomain);
  }

  private open(
    tunnel: Tunnel,
    req: IncomingMessage,
    exchange: Exchange | null,
    body: boolean,
  ): ClientHttp2Stream | null {
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
            ...forwarded(req),
            ...(exchange ? { [STREAM_HEADERS.requestId]: exchange.id } : {}),
            [STREAM_HEADERS.remoteAddr]: peerAddress(req.socket),
          },
        ),
        // A request without a body ends with its HEADERS: the client then sends none to the app either.
        { endStream: !body },
      );
    } catch {
      return null;
    }
  }

  private async traffic(req: IncomingMessage, socket: Duplex, head: Buffer, tunnelUrl: string) {
    const caller = await this.caller(req);
    const tunnel = this.find(caller.accountId, tunnelUrl);
    // The feed holds one of the account's stream slots until its connection closes.
    this.limits.streams.acquireFor(caller.accountId, socket);
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const send = (request: CapturedRequest) => {
        // A subscriber that does not keep up misses entries rather than growing the edge's memory.
        if (ws.bufferedAmount < FEED_BUFFER_BYTES) ws.send(JSON.stringify(request));
      };
      tunnel.feed.on('request', send);
      ws.on('close', () => tunnel.feed.off('request', send));
      ws.on('error', () => ws.terminate());
    });
  }

  /**
   * The caller of an upgrade: X-API-Key or a Bearer token, or (browsers set no headers) `?token=`,
   * which takes a short-lived JWT only, never an API key.
   */
  private async caller(req: IncomingMessage): Promise<Caller> {
    const { headers } = req;
    const token =
      headers['x-api-key'] === undefined && headers.authorization === undefined
        ? new URL(req.url ?? '/', 'http://platform').searchParams.get('token')
        : null;
    const caller = token
      ? await this.auth.authenticateQueryToken(token)
      : await this.auth.authenticate({ headers });
    assertScope(caller, 'deploy');
    return caller;
  }

  /**
   * The capture budget of a new tunnel of the account: the per-tunnel budget when the account's budget
   * has room for it, room made first by forgetting the account's offline tunnels, those offline longest
   * first (a tunnel in use matters more than what one whose client left captured); else what is left.
   */
  private grantCapture(accountId: string): number {
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

/**
 * X-Forwarded-*, X-Real-IP and Forwarded for the app. The edge is where requests enter: what a public
 * client claims in these headers is replaced, not kept (as the app edge does).
 */
function forwarded(req: IncomingMessage): Record<string, string> {
  return forwardingHeaders(req.socket.remoteAddress ?? '', req.headers.host ?? '', publicProto(req.socket));
}

/** Whether a public request has a body (HTTP/1.1 framing: a length, or chunked). */
function hasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && length !== '0';
}

/** A header list as Node's outgoing headers, repeated names (Set-Cookie) as arrays. */
function outgoing(list: HeaderList): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const { name, value } of list) {
    const existing = out[name];
    if (existing === undefined) out[name] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else out[name] = [existing, value];
  }
  return out;
}

/** A percent-encoded path segment; a malformed one is kept as it is (and then matches no tunnel). */
function decodeParam(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const page = sendPage;

/** Answers a refused upgrade with its problem+json, then closes the socket. */
function refuse(socket: Duplex, error: unknown): void {
  const apiError =
    error instanceof ApiError
      ? error
      : new ApiError('internal', (error as Error).message || 'internal error');
  const body = problem(apiError.code, apiError.detail, apiError.fields, apiError.extra);
  const json = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${body.status} ${body.title}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(json)}\r\nconnection: close\r\n\r\n${json}`,
  );
}
