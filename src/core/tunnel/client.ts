// The tunnel client: one outbound connection to the platform, upgraded to the raw `wharf-tunnel`
// stream (or a WebSocket), on which it is the HTTP/2 server. Each stream the edge opens is a public
// request, answered from the local app (answer.ts, pipe.ts); each exchange is captured. It reconnects
// with backoff and keeps its subdomain.
import { EventEmitter } from 'node:events';
import { type IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import http2, { type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { isIPv6 } from 'node:net';
import type { Duplex } from 'node:stream';
import { Pool } from 'undici';
import WebSocket, { createWebSocketStream } from 'ws';
import { RemoteAddr, TUNNEL_HEADERS, TUNNEL_UPGRADE_PROTOCOL } from '../../shared/api/tunnels.js';
import { trustedCas } from '../trust.js';
import { type CapturedExchange, formatAddress } from '../capture/capture.js';
import { type AnswerOptions, answerRequest, answerUpgrade } from './answer.js';
import { CaptureRecordReader } from './capture-records.js';
import {
  CAPTURES_FEATURE,
  MUX_FEATURE,
  GOAWAY_REPLACED,
  HEARTBEAT_MS,
  PIPE_FEATURE,
  RELAY_FEATURE,
  SESSION_SETTINGS,
  SESSION_WINDOW,
  STREAM_HEADERS,
  heartbeat,
  sessionTransport,
} from './protocol.js';
import { Mux, type MuxStream } from './mux.js';
import { type PipeStream, answerPipe, relayPipe } from './pipe.js';

export interface TunnelClientOptions {
  /** The platform's origin, e.g. `http://127.0.0.1:8787` or `https://api.example.com`. */
  platformUrl: string;
  apiKey: string;
  localPort: number;
  localHost?: string;
  subdomain?: string;
  /** `preserve` sends the public Host to the app; `rewrite` sends `localhost:<port>`; else that host. */
  hostHeader?: 'preserve' | 'rewrite' | string;
  /**
   * How the connection to the platform is carried: `raw` (an HTTP Upgrade to a plain stream, the
   * fastest), `websocket`, or `auto` (the default): raw, and a WebSocket when something on the way (a
   * corporate proxy) refuses the raw Upgrade but passes WebSockets; reconnects then go by WebSocket.
   */
  transport?: TunnelTransport;
  /** The first reconnect delay; doubles up to 15 s. */
  backoffMs?: number;
  /**
   * How often the connection is checked with an HTTP/2 PING (default 15 s; 0: never). A PING left
   * unanswered that long means the connection is dead without having said so (a laptop that slept, a
   * NAT that forgot it, or a session HTTP/2 ended on its own after too many resets) and it is replaced.
   */
  heartbeatMs?: number;
  /** Capture each exchange and emit it as `exchange` (default true; off only to measure its cost). */
  capture?: boolean;
  /**
   * Offer the byte path (default true): the edge then passes public HTTP/1.1 connections whole, one
   * stream each, instead of one stream per request. Off: the request-per-stream protocol alone.
   */
  pipe?: boolean;
  /**
   * With the byte path, offer to relay its bytes without reading them (default true): the edge does
   * the HTTP work and sends the captures. Off: the client parses the bytes itself, as clients did
   * before the relay path (and as it does with an edge that does not offer it).
   */
  relay?: boolean;
  /**
   * With the byte path, offer the multiplexer (default true): byte-path streams without HTTP/2's
   * (core/tunnel/mux.ts). Off: they are HTTP/2 streams, as with an edge that does not take it.
   */
  mux?: boolean;
}

/** A connection to the platform, upgraded: its bytes, what the platform said of the tunnel, and whether they are the multiplexer's. */
interface Opened {
  connection: Duplex;
  info: TunnelInfo;
  muxed: boolean;
}

export interface TunnelInfo {
  id: string;
  subdomain: string;
  url: string;
}

export type TunnelState = 'connecting' | 'online' | 'reconnecting' | 'stopped';

/** A refusal the client cannot fix by trying again (bad key, subdomain held by another account). */
export type TunnelTransport = 'raw' | 'websocket' | 'auto';

export class TunnelRefusedError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface TunnelClientEvents {
  exchange: [CapturedExchange];
  state: [TunnelState, string?];
}

export class TunnelClient extends EventEmitter<TunnelClientEvents> {
  private session: ServerHttp2Session | null = null;
  /** The current connection's multiplexer, when the edge took it. */
  private mux: Mux | null = null;
  /** The connection to the platform the session runs over (a socket, or a WebSocket's stream). */
  private transport: Duplex | null = null;
  private stopped = false;
  private attempt = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly pool: Pool;
  info: TunnelInfo | null = null;
  /** The transport of the current (or last) connection; null before the first. */
  transportInUse: 'raw' | 'websocket' | null = null;
  state: TunnelState = 'connecting';

  constructor(private readonly options: TunnelClientOptions) {
    super();
    const host = options.localHost ?? '127.0.0.1';
    this.pool = new Pool(`http://${isIPv6(host) ? `[${host}]` : host}:${options.localPort}`, {
      connections: 512,
      keepAliveTimeout: 10_000,
    });
  }

  /** Connects; resolves with the tunnel once online; rejects when the platform refuses it. */
  async start(): Promise<TunnelInfo> {
    this.stopped = false;
    return this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.setState('stopped');
    const session = this.session;
    const connection = this.transport;
    this.session = null;
    if (session) {
      await new Promise<void>((resolve) => {
        session.close(() => resolve());
        setTimeout(() => {
          session.destroy();
          // On the multiplexer, the session's close waits for the byte streams open (the public
          // connections in flight): like an HTTP/2 session's streams, they get a second, not more.
          connection?.destroy();
          resolve();
        }, 1_000).unref();
      });
    }
    await this.pool.destroy();
  }

  private setState(state: TunnelState, detail?: string) {
    this.state = state;
    this.emit('state', state, detail);
  }

  /** The protocol features this client speaks, offered on connect, and what they need said. */
  private featureHeaders(): Record<string, string> {
    if (this.options.pipe === false) return {};
    const muxed = this.options.mux === false ? [] : [MUX_FEATURE];
    if (this.options.relay === false)
      return { [TUNNEL_HEADERS.features]: [PIPE_FEATURE, ...muxed].join(',') };
    const features = [PIPE_FEATURE, RELAY_FEATURE, ...muxed];
    if (this.options.capture ?? true) features.push(CAPTURES_FEATURE);
    const headers: Record<string, string> = { [TUNNEL_HEADERS.features]: features.join(',') };
    if ((this.options.hostHeader ?? 'preserve') !== 'preserve')
      headers[TUNNEL_HEADERS.appHost] = this.localHostHeader(undefined);
    return headers;
  }

  private connectUrl(): URL {
    const url = new URL('/api/v1/tunnels/connect', this.options.platformUrl);
    const subdomain = this.info?.subdomain ?? this.options.subdomain;
    if (subdomain) url.searchParams.set('subdomain', subdomain);
    return url;
  }

  private async connect(): Promise<TunnelInfo> {
    const { connection, info, muxed } = await this.open();
    if (this.stopped) {
      // stop() was called while this connection was being made.
      connection.destroy();
      throw new Error('the tunnel client was stopped');
    }
    this.info = info;
    this.attempt = 0;
    const mux = muxed ? new Mux(connection, 'client') : null;
    mux?.on('stream', (stream) => this.answerMuxed(stream));
    const transport = sessionTransport(mux ? mux.channel : connection);
    const session = http2.performServerHandshake(transport, {
      settings: SESSION_SETTINGS,
    });
    mux?.runs(session);
    let replaced = false;
    session.on('connect', () => session.setLocalWindowSize(SESSION_WINDOW));
    session.on('stream', (stream, headers) => this.answer(stream, headers));
    session.on('error', () => undefined);
    session.on('goaway', (_code, _lastStreamId, data) => {
      if (data?.toString() === GOAWAY_REPLACED) replaced = true;
    });
    session.once('close', () => {
      transport.destroy();
      if (this.session === session) this.session = null;
      if (this.transport === connection) this.transport = null;
      if (this.mux === mux) this.mux = null;
      if (replaced && !this.stopped) {
        // Another connection of the same account took the subdomain: reconnecting would take it back,
        // and that one would then do the same.
        this.stopped = true;
        this.setState('stopped', `another connection took over ${info.subdomain}`);
        return;
      }
      this.scheduleReconnect('the connection to the platform closed');
    });
    transport.once('close', () => session.destroy());
    transport.on('error', () => undefined);
    this.session = session;
    this.transport = connection;
    this.mux = mux;
    // An unanswered PING ends the connection, and so reconnects.
    heartbeat(session, transport, this.options.heartbeatMs ?? HEARTBEAT_MS);
    this.setState('online');
    return info;
  }

  private scheduleReconnect(reason: string) {
    if (this.stopped) return;
    this.attempt += 1;
    const delay = Math.min((this.options.backoffMs ?? 500) * 2 ** (this.attempt - 1), 15_000);
    this.setState('reconnecting', `${reason}; retrying in ${(delay / 1000).toFixed(1)} s`);
    this.timer = setTimeout(() => {
      this.connect().catch((error: Error) => {
        if (error instanceof TunnelRefusedError && error.status !== 503 && error.status < 500) {
          this.stopped = true;
          this.setState('stopped', error.message);
        } else this.scheduleReconnect(error.message);
      });
    }, delay);
  }

  /** Opens the connection by the transport asked for (see TunnelClientOptions.transport). */
  private async open(): Promise<Opened> {
    const wanted = this.options.transport ?? 'auto';
    const raw = wanted === 'raw' || (wanted === 'auto' && this.transportInUse !== 'websocket');
    if (raw) {
      try {
        const opened = await this.openRaw();
        this.transportInUse = 'raw';
        return opened;
      } catch (error) {
        if (wanted === 'raw' || !upgradeBlocked(error)) throw error;
      }
    }
    const opened = await this.openWebSocket();
    this.transportInUse = 'websocket';
    return opened;
  }

  private openRaw(): Promise<Opened> {
    return new Promise((resolve, reject) => {
      const url = this.connectUrl();
      // https:// platforms are verified against the system's roots (and any CA given with --ca).
      const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = request(url, {
        ...trustedCas(),
        headers: {
          'x-api-key': this.options.apiKey,
          ...this.featureHeaders(),
          connection: 'Upgrade',
          upgrade: TUNNEL_UPGRADE_PROTOCOL,
        },
        timeout: 10_000,
      });
      req.on('upgrade', (res, socket, head) => {
        socket.setNoDelay(true);
        if (head.length > 0) socket.unshift(head);
        resolve({ connection: socket, info: infoOf(res.headers), muxed: this.muxTaken(res.headers) });
      });
      req.on('response', (res) => refusal(res, url).then(reject, reject));
      req.on('timeout', () => req.destroy(new Error(`no answer from ${url.origin}`)));
      req.on('error', (error) => reject(new Error(`cannot reach ${url.origin}: ${error.message}`)));
      req.end();
    });
  }

  private openWebSocket(): Promise<Opened> {
    return new Promise((resolve, reject) => {
      const url = this.connectUrl();
      url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
      const ws = new WebSocket(url, {
        ...trustedCas(),
        headers: { 'x-api-key': this.options.apiKey, ...this.featureHeaders() },
        // A redirect would carry the key elsewhere: it is refused like any other answer (see refusal).
        followRedirects: false,
        perMessageDeflate: false,
      });
      let info: TunnelInfo | null = null;
      let muxed = false;
      ws.once('upgrade', (res) => {
        info = infoOf(res.headers);
        muxed = this.muxTaken(res.headers);
      });
      ws.once('open', () => resolve({ connection: createWebSocketStream(ws), info: info!, muxed }));
      ws.once('unexpected-response', (_req, res) => refusal(res, url).then(reject, reject));
      ws.once('error', (error) => reject(new Error(`cannot reach ${url.origin}: ${error.message}`)));
    });
  }

  /**
   * The public client as the edge saw it, `<host>:<port>`. An edge older than the port in this header
   * sends the host alone, and port 0 then says the port is unknown.
   */
  private remoteAddrOf(headers: IncomingHttpHeaders): string {
    const given = String(headers[STREAM_HEADERS.remoteAddr] ?? '');
    if (RemoteAddr.safeParse(given).success) return given;
    return formatAddress(given === '' ? '0.0.0.0' : given, 0);
  }

  private localHostHeader(publicHost: string | undefined): string {
    const mode = this.options.hostHeader ?? 'preserve';
    if (mode === 'preserve') return publicHost ?? `localhost:${this.options.localPort}`;
    if (mode === 'rewrite') return `localhost:${this.options.localPort}`;
    return mode;
  }

  /**
   * The public client as the edge saw it, and where its exchanges are captured; null when the client
   * does not capture.
   */
  private captureOf(headers: IncomingHttpHeaders): AnswerOptions['capture'] {
    if (!(this.options.capture ?? true)) return null;
    const authority = headers[':authority'] as string | undefined;
    return {
      tunnelId: this.info?.id ?? 'tun_unknown',
      url: this.info?.url ?? `http://${authority}`,
      remoteAddr: this.remoteAddrOf(headers),
    };
  }

  /**
   * A stream the edge opened: an Upgrade, a byte-path connection (relayed, or read), a capture stream,
   * or one request (answer.ts, pipe.ts).
   */
  private answer(stream: ServerHttp2Stream, headers: IncomingHttpHeaders) {
    stream.on('error', () => undefined);
    if (headers[STREAM_HEADERS.captures]) {
      this.readCaptures(stream);
      return;
    }
    if (headers[STREAM_HEADERS.pipe]) {
      this.answerBytePath(stream, headers);
      return;
    }
    const options: AnswerOptions = {
      pool: this.pool,
      localHost: this.options.localHost,
      localPort: this.options.localPort,
      hostFor: (publicHost) => this.localHostHeader(publicHost),
      capture: this.captureOf(headers),
      emit: (exchange) => this.emit('exchange', exchange),
    };
    if (headers[STREAM_HEADERS.upgrade]) answerUpgrade(stream, headers, options);
    else answerRequest(stream, headers, options);
  }

  /** A public connection whole (HTTP/2's stream or the multiplexer's): its bytes relayed, or read here. */
  private answerBytePath(stream: PipeStream, headers: IncomingHttpHeaders) {
    const localHost = this.options.localHost ?? '127.0.0.1';
    const { localPort } = this.options;
    if (headers[STREAM_HEADERS.relay] && this.options.relay !== false) {
      relayPipe(stream, { localHost, localPort });
      return;
    }
    answerPipe(stream, {
      localHost,
      localPort,
      hostFor: (publicHost) => this.localHostHeader(publicHost),
      capture: this.captureOf(headers),
      emit: (exchange) => this.emit('exchange', exchange),
    });
  }

  /** Whether the edge took the multiplexer this client offered (an older edge says nothing of it). */
  private muxTaken(headers: IncomingHttpHeaders): boolean {
    return (
      this.featureHeaders()[TUNNEL_HEADERS.features]?.includes(MUX_FEATURE) === true &&
      headers[TUNNEL_HEADERS.mux] === '1'
    );
  }

  /** A byte-path stream on the multiplexer: the only kind the edge opens there. */
  private answerMuxed(stream: MuxStream) {
    stream.on('error', () => undefined);
    const headers = stream.metadata;
    if (headers[STREAM_HEADERS.captures]) {
      if (!(this.options.capture ?? true)) {
        stream.respond({ ':status': 404 }, { endStream: true });
        stream.resume();
        return;
      }
      stream.respond({ ':status': 200 }, { endStream: true });
      this.readCaptureRecords(stream);
      return;
    }
    if (!headers[STREAM_HEADERS.pipe]) {
      stream.close();
      return;
    }
    this.answerBytePath(stream, headers);
  }

  /** A capture stream: each record is an exchange of the relay path, emitted as the client's own. */
  private readCaptures(stream: ServerHttp2Stream) {
    if (!(this.options.capture ?? true)) {
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    // Nothing to send back: the answer ends this side at once, and the stream closes with the edge's end.
    stream.respond({ ':status': 200, [STREAM_HEADERS.captures]: '1' }, { endStream: true });
    this.readCaptureRecords(stream);
  }

  /** Each record of a capture stream, emitted as an exchange of the client's own. */
  private readCaptureRecords(stream: ServerHttp2Stream | MuxStream) {
    const reader = new CaptureRecordReader();
    stream.on('data', (chunk: Buffer) => {
      let exchanges;
      try {
        exchanges = reader.push(chunk);
      } catch {
        // Not records this client reads: nothing more is taken from this stream.
        stream.close(http2.constants.NGHTTP2_PROTOCOL_ERROR);
        return;
      }
      for (const exchange of exchanges) this.emit('exchange', exchange);
    });
  }
}

function infoOf(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): TunnelInfo {
  return {
    id: String(headers[TUNNEL_HEADERS.id] ?? ''),
    subdomain: String(headers[TUNNEL_HEADERS.subdomain] ?? ''),
    url: String(headers[TUNNEL_HEADERS.url] ?? ''),
  };
}

/** A non-101 answer to the connect request, as an error carrying the platform's problem. */
const REFUSAL_BODY_LIMIT = 64 * 1024;

/**
 * Whether a raw Upgrade failed on the way rather than at the platform: an answer that is not the
 * platform's (it refuses with problem+json, and never redirects), or a connection cut during the
 * Upgrade. A WebSocket may still get through then; a refusal of the platform's would only repeat.
 */
function upgradeBlocked(error: unknown): boolean {
  if (error instanceof TunnelRefusedError) return error.code === 'http_error';
  const message = error instanceof Error ? error.message : '';
  return /socket hang up|ECONNRESET|Parse Error/i.test(message);
}

async function refusal(res: IncomingMessage, asked: URL): Promise<never> {
  const status = res.statusCode ?? 0;
  if (status >= 300 && status < 400) {
    // Redirects are never followed: the next request would carry the API key to wherever it points.
    res.resume();
    const location = res.headers.location;
    let where = 'elsewhere';
    try {
      if (location) where = `to ${new URL(location, asked).origin}`;
    } catch {
      // an unreadable Location: say nothing of it
    }
    throw new TunnelRefusedError(
      status,
      'redirected',
      `the platform answered ${status}, redirecting ${where}: the tunnel client does not follow redirects (its API key would go along), so set the platform URL to the address that answers`,
    );
  }
  // A refusal is a short problem+json; whatever answers may send more, and is not read past this.
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size >= REFUSAL_BODY_LIMIT) {
      res.destroy();
      break;
    }
  }
  const text = Buffer.concat(chunks).subarray(0, REFUSAL_BODY_LIMIT).toString();
  let code = 'http_error';
  let detail = text.trim() || `HTTP ${res.statusCode}`;
  try {
    const problem = JSON.parse(text) as { code?: string; detail?: string };
    code = problem.code ?? code;
    detail = problem.detail ?? detail;
  } catch {
    // not problem+json
  }
  throw new TunnelRefusedError(res.statusCode ?? 0, code, detail);
}
