// The tunnel client: one outbound connection to the platform, upgraded to the raw `wharf-tunnel`
// stream (or a WebSocket), on which it is the HTTP/2 server. Each stream the edge opens is a public
// request, answered from the local app; each exchange is captured. It reconnects with backoff and
// keeps its subdomain.
import { EventEmitter } from 'node:events';
import { Agent, type IncomingMessage, request as httpRequest } from 'node:http';
import http2, { type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { connect as netConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import WebSocket, { createWebSocketStream } from 'ws';
import { TUNNEL_HEADERS, TUNNEL_UPGRADE_PROTOCOL } from '../../shared/api/tunnels.js';
import {
  type CapturedExchange,
  Exchange,
  ResponseHeadReader,
  headerList,
  headerListOf,
} from '../capture/capture.js';
import {
  GOAWAY_REPLACED,
  SESSION_SETTINGS,
  SESSION_WINDOW,
  STREAM_HEADERS,
  h2HeadersToHttp1,
  responseHeadersToH2,
} from './protocol.js';

export interface TunnelClientOptions {
  /** The platform's origin, e.g. `http://127.0.0.1:8787`. */
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
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 512 });
  info: TunnelInfo | null = null;
  state: TunnelState = 'connecting';

  constructor(private readonly options: TunnelClientOptions) {
    super();
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
    this.agent.destroy();
  }

  private setState(state: TunnelState, detail?: string) {
    this.state = state;
    this.emit('state', state, detail);
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
      const req = httpRequest(url, {
        headers: {
          'x-api-key': this.options.apiKey,
          connection: 'Upgrade',
          upgrade: TUNNEL_UPGRADE_PROTOCOL,
        },
        timeout: 10_000,
      });
      req.on('upgrade', (res, socket, head) => {
        socket.setNoDelay(true);
        if (head.length > 0) socket.unshift(head);
        resolve({ transport: socket, info: infoOf(res.headers) });
      });
      req.on('response', (res) => refusal(res).then(reject, reject));
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
        headers: { 'x-api-key': this.options.apiKey },
        perMessageDeflate: false,
      });
      let info: TunnelInfo | null = null;
      ws.once('upgrade', (res) => (info = infoOf(res.headers)));
      ws.once('open', () => resolve({ transport: createWebSocketStream(ws), info: info! }));
      ws.once('unexpected-response', (_req, res) => refusal(res).then(reject, reject));
      ws.once('error', (error) => reject(new Error(`cannot reach ${url.origin}: ${error.message}`)));
    });
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
            remoteAddr: (headers[STREAM_HEADERS.remoteAddr] as string | undefined) || null,
            replayOf: (headers[STREAM_HEADERS.replayOf] as string | undefined) ?? null,
          })
        : null;
    const localHeaders = h2HeadersToHttp1(headers);
    localHeaders.host = this.localHostHeader(authority);
    // The edge ends a stream with its HEADERS when the public request has no body. A body of unknown
    // length goes chunked: Node would send a GET's, DELETE's or OPTIONS' body unframed otherwise.
    const bodiless = stream.endAfterHeaders;
    if (!bodiless && localHeaders['content-length'] === undefined)
      localHeaders['transfer-encoding'] = 'chunked';
    /** Set once the exchange has ended, one way or another. */
    let settled = false;
    const fail = (reason: string) => {
      if (settled) return;
      settled = true;
      local.destroy();
      if (!stream.headersSent && !stream.closed && !stream.destroyed) {
        const body = Buffer.from(`Wharf tunnel: the local app did not answer (${reason}).\n`);
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
    const local = httpRequest(
      {
        host: this.options.localHost ?? '127.0.0.1',
        port: this.options.localPort,
        method,
        path,
        headers: localHeaders,
        agent: this.agent,
      },
      (res) => {
        if (settled) {
          res.destroy();
          return;
        }
        const status = res.statusCode ?? 502;
        try {
          stream.respond(responseHeadersToH2(status, res.headers));
        } catch (error) {
          // A status HTTP/2 cannot carry (a 101 without an upgrade, a 1xx or one past 599).
          res.destroy();
          fail(`its response cannot be relayed: ${(error as Error).message}`);
          return;
        }
        exchange?.response(status, headerList(res.rawHeaders));
        res.on('data', (chunk: Buffer) => {
          exchange?.responseBody.push(chunk);
          if (!stream.write(chunk)) {
            res.pause();
            stream.once('drain', () => res.resume());
          }
        });
        res.on('end', () => {
          if (settled) return;
          settled = true;
          stream.end();
          if (exchange) this.emit('exchange', exchange.finish());
        });
        res.on('close', () => {
          if (!res.complete) fail('the app closed the connection in the middle of its response');
        });
        res.on('error', () => undefined);
      },
    );
    local.on('error', (error: NodeJS.ErrnoException) => {
      fail(
        error.code === 'ECONNREFUSED'
          ? `nothing is listening on ${this.options.localHost ?? '127.0.0.1'}:${this.options.localPort}`
          : error.message,
      );
    });
    if (bodiless) {
      local.end();
      // Read the (empty) request side, or Node resets the stream once the response is sent.
      stream.resume();
    } else {
      stream.on('data', (chunk: Buffer) => {
        exchange?.requestBody.push(chunk);
        if (!local.write(chunk)) {
          stream.pause();
          local.once('drain', () => stream.resume());
        }
      });
      stream.on('end', () => local.end());
    }
    // The edge reset the stream (the public client went away): the app's request is aborted too.
    stream.on('close', () => {
      if (settled) return;
      settled = true;
      local.destroy();
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
            remoteAddr: (headers[STREAM_HEADERS.remoteAddr] as string | undefined) || null,
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

function infoOf(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): TunnelInfo {
  return {
    id: String(headers[TUNNEL_HEADERS.id] ?? ''),
    subdomain: String(headers[TUNNEL_HEADERS.subdomain] ?? ''),
    url: String(headers[TUNNEL_HEADERS.url] ?? ''),
  };
}

/** A non-101 answer to the connect request, as an error carrying the platform's problem. */
async function refusal(res: IncomingMessage): Promise<never> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString();
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
