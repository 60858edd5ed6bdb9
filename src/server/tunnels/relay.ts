// Public traffic for a tunnel host onto its client's connection: a connection whole on the byte path
// (tunnel-conduit.ts) when the client takes that, else each request as one stream (bodies streamed both
// ways, the exchange captured, an offline client answered with a page) and a WebSocket upgrade as a raw
// stream.
import type { IncomingMessage, ServerResponse } from 'node:http';
import http2, { type ClientHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  CLIENT_WENT_AWAY_STATUS,
  Exchange,
  headerList,
  headerListOf,
  peerAddress,
  ResponseHeadReader,
} from '../../core/capture/capture.js';
import { STREAM_HEADERS, requestHeadersToH2 } from '../../core/tunnel/protocol.js';
import type { HeaderList } from '../../shared/api/tunnels.js';
import { type PlatformConfig, edgeUrl } from '../config.js';
import { clientOf, isHopped } from '../cluster/hop.js';
import { forwardingHeaders, publicProto } from '../edge/forwarded.js';
import { sendPage } from '../edge/pages.js';
import { formatBytes } from '../limits.js';
import type { TunnelRegistry } from './registry.js';
import type { Tunnel } from './tunnel.js';
import { openTunnelConduit } from './tunnel-conduit.js';

/** What the hub's owner may change while it runs (TunnelHub's fields of the same names). */
export interface RelaySettings {
  /** Whether public exchanges are captured. */
  readonly capture: boolean;
  /** How long a public connection on the byte path is kept without a request. */
  readonly idleMs: number;
}

/** Where a connection handed back by the byte path goes next, with what was read past its last request. */
export type Reroute = (socket: Socket, rest: Buffer) => void;

export class TunnelRelay {
  /** The relay stream of each public request in flight, so that the edge can cancel one. */
  private readonly relays = new WeakMap<IncomingMessage, ClientHttp2Stream>();
  /** Public connections on the byte path: close() ends them. */
  private readonly piped = new Set<Socket>();

  constructor(
    private readonly config: PlatformConfig,
    private readonly tunnels: TunnelRegistry,
    private readonly settings: RelaySettings,
  ) {}

  /** Ends every public connection on the byte path. */
  close(): void {
    for (const socket of this.piped) socket.destroy();
  }

  /** Ends the relay of a public request (its body went over the edge's limit): the app sees it aborted. */
  cancelRelay(req: IncomingMessage, reason: string): void {
    const stream = this.relays.get(req);
    if (stream && !stream.closed && !stream.destroyed) stream.destroy(new Error(reason));
  }

  /**
   * Takes a public HTTP/1.1 connection whose first request (its bytes `first`) is for `host`, a host of
   * this tunnel domain, onto the byte path, when that tunnel's client is online and takes connections
   * whole; false leaves it to the edge's HTTP server (and so to relay()).
   */
  claim(socket: Socket, first: Buffer, host: string, reroute: Reroute): boolean {
    const subdomain = this.tunnels.subdomainOf(host);
    const tunnel = subdomain === null ? undefined : this.tunnels.get(subdomain);
    if (!tunnel?.online || !tunnel.pipes) return false;
    try {
      // The conduit lives as long as the connection and its stream: their events hold it.
      openTunnelConduit({
        tunnel,
        host,
        socket,
        first,
        capture: this.settings.capture,
        bodyLimit: this.config.limits.bodyBytes,
        bodyLimitText: formatBytes(this.config.limits.bodyBytes),
        idleMs: this.settings.idleMs,
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
    const exchange = this.settings.capture
      ? new Exchange({
          tunnelId: tunnel.id,
          method: req.method ?? 'GET',
          path,
          url: tunnel.url + path,
          httpVersion: `HTTP/${req.httpVersion}`,
          requestHeaders: headerList(req.rawHeaders),
          remoteAddr: peerAddress(peerOf(req)),
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
      tunnel && this.settings.capture
        ? new Exchange({
            tunnelId: tunnel.id,
            method: req.method ?? 'GET',
            path: req.url ?? '/',
            url: edgeUrl(this.config, `${subdomain}.${this.config.tunnelDomain}`) + (req.url ?? '/'),
            httpVersion: `HTTP/${req.httpVersion}`,
            requestHeaders: headerList(req.rawHeaders),
            remoteAddr: peerAddress(peerOf(req)),
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
            [STREAM_HEADERS.remoteAddr]: peerAddress(peerOf(req)),
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
            [STREAM_HEADERS.remoteAddr]: peerAddress(peerOf(req)),
          },
        ),
        // A request without a body ends with its HEADERS: the client then sends none to the app either.
        { endStream: !body },
      );
    } catch {
      return null;
    }
  }
}

/**
 * X-Forwarded-*, X-Real-IP and Forwarded for the app. The edge is where requests enter: what a public
 * client claims in these headers is replaced, not kept (as the app edge does).
 */
function forwarded(req: IncomingMessage): Record<string, string> {
  const client = clientOf(req, publicProto(req.socket));
  return forwardingHeaders(client.address, req.headers.host ?? '', client.proto);
}

/** The public client's end of the connection: another node's when the request came over a hop. */
function peerOf(req: IncomingMessage): { remoteAddress?: string; remotePort?: number } {
  if (!isHopped(req)) return req.socket;
  return { remoteAddress: clientOf(req, 'http').address, remotePort: 0 };
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

const page = sendPage;
