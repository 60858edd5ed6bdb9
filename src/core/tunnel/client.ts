// The tunnel client: one outbound connection to the platform, upgraded to the raw `wharf-tunnel`
// stream (or a WebSocket), on which it is the HTTP/2 server. Each stream the edge opens is a public
// request, answered from the local app; each exchange is captured. It reconnects with backoff and
// keeps its subdomain.
import { EventEmitter } from 'node:events';
import { type IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import http2, { type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { isIPv6, connect as netConnect } from 'node:net';
import { type Duplex, Readable } from 'node:stream';
import { type Dispatcher, Pool } from 'undici';
import WebSocket, { createWebSocketStream } from 'ws';
import { RemoteAddr, TUNNEL_HEADERS, TUNNEL_UPGRADE_PROTOCOL } from '../../shared/api/tunnels.js';
import { trustedCas } from '../trust.js';
import {
  CLIENT_WENT_AWAY_STATUS,
  type CapturedExchange,
  Exchange,
  ResponseHeadReader,
  formatAddress,
  headerList,
  headerListOf,
} from '../capture/capture.js';
import {
  GOAWAY_REPLACED,
  PIPE_FEATURE,
  SESSION_SETTINGS,
  SESSION_WINDOW,
  STREAM_HEADERS,
  h2HeadersToHttp1,
  noAnswerText,
  responseHeadersToH2,
  sessionTransport,
} from './protocol.js';
import { answerPipe } from './pipe.js';

export interface TunnelClientOptions {
  /** The platform's origin, e.g. `http://127.0.0.1:8787` or `https://api.example.com`. */
  platformUrl: string;
  apiKey: string;
  localPort: number;
  localHost?: string;
  subdomain?: string;
  /** `preserve` sends the public Host to the app; `rewrite` sends `localhost:<port>`; else that host. */
  hostHeader?: 'preserve' | 'rewrite' | string;
  transport?: 'raw' | 'websocket';
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
}

export interface TunnelInfo {
  id: string;
  subdomain: string;
  url: string;
}

export type TunnelState = 'connecting' | 'online' | 'reconnecting' | 'stopped';

/** A refusal the client cannot fix by trying again (bad key, subdomain held by another account). */
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
  /** The connection to the platform the session runs over (a socket, or a WebSocket's stream). */
  private transport: Duplex | null = null;
  private stopped = false;
  private attempt = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly pool: Pool;
  info: TunnelInfo | null = null;
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
    this.session = null;
    if (session) {
      await new Promise<void>((resolve) => {
        session.close(() => resolve());
        setTimeout(() => {
          session.destroy();
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

  /** The protocol features this client speaks, offered on connect. */
  private featureHeaders(): Record<string, string> {
    return this.options.pipe === false ? {} : { [TUNNEL_HEADERS.features]: PIPE_FEATURE };
  }

  private connectUrl(): URL {
    const url = new URL('/api/v1/tunnels/connect', this.options.platformUrl);
    const subdomain = this.info?.subdomain ?? this.options.subdomain;
    if (subdomain) url.searchParams.set('subdomain', subdomain);
    return url;
  }

  private async connect(): Promise<TunnelInfo> {
    const { transport, info } = await (this.options.transport === 'websocket'
      ? this.openWebSocket()
      : this.openRaw());
    if (this.stopped) {
      // stop() was called while this connection was being made.
      transport.destroy();
      throw new Error('the tunnel client was stopped');
    }
    this.info = info;
    this.attempt = 0;
    const session = http2.performServerHandshake(transport, {
      settings: SESSION_SETTINGS,
    });
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
      if (this.transport === transport) this.transport = null;
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
    this.transport = transport;
    this.heartbeat(session, transport);
    this.setState('online');
    return info;
  }

  /** PINGs the edge every `heartbeatMs`; an unanswered one ends the connection (and so reconnects). */
  private heartbeat(session: ServerHttp2Session, transport: Duplex) {
    const every = this.options.heartbeatMs ?? 15_000;
    if (every <= 0) return;
    let waiting = false;
    const timer = setInterval(() => {
      if (session.destroyed) return;
      if (waiting) {
        transport.destroy();
        return;
      }
      waiting = true;
      try {
        session.ping((error) => {
          waiting = false;
          if (error && !session.destroyed) transport.destroy();
        });
      } catch {
        transport.destroy();
      }
    }, every);
    timer.unref();
    session.once('close', () => clearInterval(timer));
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

  private openRaw(): Promise<{ transport: Duplex; info: TunnelInfo }> {
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
        resolve({ transport: sessionTransport(socket), info: infoOf(res.headers) });
      });
      req.on('response', (res) => refusal(res, url).then(reject, reject));
      req.on('timeout', () => req.destroy(new Error(`no answer from ${url.origin}`)));
      req.on('error', (error) => reject(new Error(`cannot reach ${url.origin}: ${error.message}`)));
      req.end();
    });
  }

  private openWebSocket(): Promise<{ transport: Duplex; info: TunnelInfo }> {
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
      ws.once('upgrade', (res) => (info = infoOf(res.headers)));
      ws.once('open', () => resolve({ transport: createWebSocketStream(ws), info: info! }));
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

  /** One public request: forwarded to the local app, its response streamed back, the exchange captured. */
  private answer(stream: ServerHttp2Stream, headers: IncomingHttpHeaders) {
    stream.on('error', () => undefined);
    if (headers[STREAM_HEADERS.upgrade]) {
      this.answerUpgrade(stream, headers);
      return;
    }
    if (headers[STREAM_HEADERS.pipe]) {
      const authority = headers[':authority'] as string | undefined;
      answerPipe(stream, headers, {
        localHost: this.options.localHost ?? '127.0.0.1',
        localPort: this.options.localPort,
        hostFor: (publicHost) => this.localHostHeader(publicHost),
        capture:
          (this.options.capture ?? true)
            ? {
                tunnelId: this.info?.id ?? 'tun_unknown',
                url: this.info?.url ?? `http://${authority}`,
                remoteAddr: this.remoteAddrOf(headers),
              }
            : null,
        emit: (exchange) => this.emit('exchange', exchange),
      });
      return;
    }
    const method = String(headers[':method'] ?? 'GET');
    const path = String(headers[':path'] ?? '/');
    const authority = headers[':authority'] as string | undefined;
    const exchange =
      (this.options.capture ?? true)
        ? new Exchange({
            id: headers[STREAM_HEADERS.requestId] as string | undefined,
            tunnelId: this.info?.id ?? 'tun_unknown',
            method,
            path,
            url: `${this.info?.url ?? `http://${authority}`}${path}`,
            httpVersion: 'HTTP/1.1',
            // Host travels as HTTP/2's :authority; the capture shows it as the public client sent it.
            requestHeaders: [
              ...(authority ? [{ name: 'host', value: authority }] : []),
              ...headerListOf(headers).filter((h) => !h.name.startsWith('wharf-')),
            ],
            remoteAddr: this.remoteAddrOf(headers),
            replayOf: (headers[STREAM_HEADERS.replayOf] as string | undefined) ?? null,
          })
        : null;
    const localHost = this.localHostHeader(authority);
    // The edge ends a stream with its HEADERS when the public request has no body; otherwise the body
    // streams on, with its length if the public request gave one, else chunked.
    const bodiless = stream.endAfterHeaders;
    /** Set once the exchange has ended, one way or another. */
    let settled = false;
    let controller: Dispatcher.DispatchController | null = null;
    const fail = (reason: string) => {
      if (settled) return;
      settled = true;
      controller?.abort(new Error(reason));
      if (!stream.headersSent && !stream.closed && !stream.destroyed) {
        const body = Buffer.from(noAnswerText(reason));
        exchange?.response(502, [{ name: 'content-type', value: 'text/plain; charset=utf-8' }]);
        exchange?.responseBody.push(body);
        stream.respond({
          ':status': 502,
          'content-type': 'text/plain; charset=utf-8',
          'content-length': body.length,
          [STREAM_HEADERS.error]: reason.replace(/[^\x20-\x7e]/g, ' '),
        });
        stream.end(body);
      } else if (!stream.closed && !stream.destroyed) {
        // A reset without END_STREAM (close() would end the stream first): the edge then cuts the
        // public response off instead of passing a truncated body as a whole one.
        stream.destroy(new Error(reason));
      }
      if (exchange) this.emit('exchange', exchange.finish(reason));
    };
    // The request body reaches undici through a stream of its own: undici destroys the body it was
    // given once it has sent it, and this HTTP/2 stream still has a response to carry.
    let body: Readable | null = null;
    if (!bodiless) {
      const requestBody = new Readable({ read: () => void stream.resume() });
      stream.on('data', (chunk: Buffer) => {
        exchange?.requestBody.push(chunk);
        if (!requestBody.push(chunk)) stream.pause();
      });
      stream.on('end', () => requestBody.push(null));
      body = requestBody;
    }
    /**
     * A response whose length is known ends with its last chunk (`end(chunk)`: one DATA frame with
     * END_STREAM instead of a write and an empty frame). Anything else is written as it comes: an
     * event stream must not wait for the next event.
     */
    let remaining = -1;
    let ended = false;
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: (c) => {
        controller = c;
        if (settled) c.abort(new Error('the public client went away'));
      },
      onResponseStart: (c, status, responseHeaders) => {
        if (settled) return c.abort(new Error('the public client went away'));
        if (status < 200) return; // an informational response: the final one follows
        try {
          stream.respond(responseHeadersToH2(status, responseHeaders), { endStream: false });
        } catch (error) {
          // A status HTTP/2 cannot carry (one past 599).
          fail(`its response cannot be relayed: ${(error as Error).message}`);
          return;
        }
        exchange?.response(status, headerList(rawHeaderStrings(c.rawHeaders)));
        const length = responseHeaders['content-length'];
        if (method !== 'HEAD' && typeof length === 'string' && /^\d+$/.test(length))
          remaining = Number(length);
      },
      onResponseData: (c, chunk) => {
        if (settled) return;
        exchange?.responseBody.push(chunk);
        if (remaining >= 0) {
          remaining -= chunk.length;
          if (remaining === 0) {
            ended = true;
            stream.end(chunk);
            return;
          }
        }
        if (!stream.write(chunk)) {
          c.pause();
          stream.once('drain', () => c.resume());
        }
      },
      onResponseEnd: () => {
        if (settled) return;
        settled = true;
        if (!ended) stream.end();
        if (exchange) this.emit('exchange', exchange.finish());
      },
      onResponseError: (_c, error: NodeJS.ErrnoException) => {
        fail(
          error.code === 'ECONNREFUSED'
            ? `nothing is listening on ${this.options.localHost ?? '127.0.0.1'}:${this.options.localPort}`
            : error.code === 'UND_ERR_SOCKET' || error.code === 'ECONNRESET'
              ? 'the app closed the connection in the middle of its response'
              : error.message,
        );
      },
    };
    try {
      this.pool.dispatch(
        {
          method,
          path,
          headers: localRequestHeaders(headers, localHost),
          body,
          // A tunnel carries long polls and event streams: the app takes the time it takes.
          headersTimeout: 0,
          bodyTimeout: 0,
        },
        handler,
      );
    } catch (error) {
      // Headers the app's HTTP/1.1 cannot be sent (undici refuses them before anything is sent).
      fail(`the request cannot be sent to the app: ${(error as Error).message}`);
    }
    if (bodiless) {
      // Read the (empty) request side, or Node resets the stream once the response is sent.
      stream.resume();
    }
    // The edge reset the stream (the public client went away): the app's request is aborted too.
    stream.on('close', () => {
      if (settled) return;
      settled = true;
      if (ended) {
        // The whole response went out; undici has yet to say so.
        if (exchange) this.emit('exchange', exchange.finish());
        return;
      }
      controller?.abort(new Error('the public client went away'));
      exchange?.noResponse(CLIENT_WENT_AWAY_STATUS);
      if (exchange) this.emit('exchange', exchange.finish('the public client went away'));
    });
  }

  /** A public Upgrade: the request head goes to the app over a new connection, then bytes flow raw. */
  private answerUpgrade(stream: ServerHttp2Stream, headers: IncomingHttpHeaders) {
    const socket = netConnect(this.options.localPort, this.options.localHost ?? '127.0.0.1');
    socket.setNoDelay(true);
    let hop: Record<string, string | undefined> = {};
    try {
      hop = JSON.parse(String(headers[STREAM_HEADERS.upgradeHeaders] ?? '{}')) as typeof hop;
    } catch {
      // defaults below
    }
    const lines = [`GET ${String(headers[':path'] ?? '/')} HTTP/1.1`];
    lines.push(`host: ${this.localHostHeader(headers[':authority'] as string | undefined)}`);
    for (const [name, value] of Object.entries(h2HeadersToHttp1(headers))) {
      for (const one of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${one}`);
    }
    lines.push(`connection: ${hop.connection ?? 'Upgrade'}`, `upgrade: ${hop.upgrade ?? 'websocket'}`);
    // The handshake is captured like any exchange; the frames that follow are not.
    const path = String(headers[':path'] ?? '/');
    const authority = headers[':authority'] as string | undefined;
    const exchange =
      (this.options.capture ?? true)
        ? new Exchange({
            id: headers[STREAM_HEADERS.requestId] as string | undefined,
            tunnelId: this.info?.id ?? 'tun_unknown',
            method: 'GET',
            path,
            url: `${this.info?.url ?? `http://${authority}`}${path}`,
            httpVersion: 'HTTP/1.1',
            requestHeaders: [
              ...(authority ? [{ name: 'host', value: authority }] : []),
              ...headerListOf(headers).filter((h) => !h.name.startsWith('wharf-')),
              { name: 'connection', value: hop.connection ?? 'Upgrade' },
              { name: 'upgrade', value: hop.upgrade ?? 'websocket' },
            ],
            remoteAddr: this.remoteAddrOf(headers),
          })
        : null;
    let recorded = false;
    const record = (error: string | null) => {
      if (recorded || !exchange) return;
      recorded = true;
      this.emit('exchange', exchange.finish(error));
    };
    const reader = new ResponseHeadReader();
    const onData = (chunk: Buffer) => {
      const head = reader.push(chunk);
      if (head) exchange?.response(head.status, head.headers);
      if (reader.done) {
        socket.off('data', onData);
        record(head ? null : 'the app did not answer the upgrade with an HTTP response');
      }
    };
    if (exchange) socket.on('data', onData);
    socket.once('connect', () => {
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      stream.respond({ ':status': 200 });
      stream.pipe(socket);
      socket.pipe(stream);
    });
    socket.on('close', () => record('the app closed the connection before answering the upgrade'));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      record(
        error.code === 'ECONNREFUSED'
          ? `nothing is listening on ${this.options.localHost ?? 'localhost'}:${this.options.localPort}`
          : error.message,
      );
      if (!stream.headersSent && !stream.closed) {
        stream.respond({ ':status': 502 });
        stream.end();
      } else stream.close(http2.constants.NGHTTP2_CANCEL);
    });
    socket.on('close', () => {
      if (!stream.closed) stream.end();
    });
    // Ended, not destroyed: what the public client sent last (a close frame) still reaches the app.
    stream.on('close', () => {
      socket.end();
      setTimeout(() => socket.destroy(), 5_000).unref();
    });
  }
}

/** The public request's headers for the app: HTTP/1.1 ones as a flat list, Host the one chosen. */
function localRequestHeaders(headers: IncomingHttpHeaders, host: string): string[] {
  const list = ['host', host];
  for (const [name, value] of Object.entries(h2HeadersToHttp1(headers))) {
    // `Expect: 100-continue` was answered by the edge already; the body is on its way.
    if (name === 'expect') continue;
    if (Array.isArray(value)) for (const one of value) list.push(name, one);
    else list.push(name, value);
  }
  return list;
}

/** undici's raw response headers (buffers, name and value alternating) as strings. */
function rawHeaderStrings(raw: Dispatcher.DispatchController['rawHeaders']): string[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((part) => (typeof part === 'string' ? part : part.toString('latin1')));
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
