// HTTP/2 at the Node edge: a client that offers `h2` over ALPN (every browser) gets it, one that does
// not (curl --http1.1, the tunnel client, WebSocket handshakes) gets HTTP/1.1 on the same port. The
// edge's routing, the proxy to apps, the tunnel relay and the API read requests as HTTP/1.1 messages,
// so an HTTP/2 request is given that shape once, where it enters: its Host from `:authority`, and no
// pseudo-headers among its headers (whoever copies headers on would send names that are not names).
// Apps keep speaking HTTP/1.1 behind the edge, as they do behind HAProxy or nginx.
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type Http2SecureServer,
  type Http2Session,
  type SecureServerOptions,
  type ServerHttp2Session,
  type ServerHttp2Stream,
  constants,
  createSecureServer,
} from 'node:http2';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { connectionTokens, isHopByHop } from '../../core/tunnel/protocol.js';

/** Streams one HTTP/2 connection may have open at once (browsers open up to 100; nginx allows 128). */
const MAX_CONCURRENT_STREAMS = 128;

export interface EdgeTlsServer {
  server: Http2SecureServer;
  /** Ends every connection now: HTTP/1.1 sockets (WebSockets too) and HTTP/2 sessions. */
  closeAll(): void;
}

/**
 * A TLS server that speaks HTTP/2 and HTTP/1.1 (by ALPN) and hands both to `onRequest` as HTTP/1.1
 * messages; upgrades (HTTP/1.1 only) go to `onUpgrade`. An HTTP/2 connection with no stream open is
 * closed after `idleMs`, as an HTTP/1.1 one is after its keep-alive timeout.
 */
export function createEdgeTlsServer(
  options: Pick<SecureServerOptions, 'SNICallback' | 'minVersion'>,
  handlers: {
    onRequest: (req: IncomingMessage, res: ServerResponse) => void;
    onUpgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  },
  idleMs: number,
): EdgeTlsServer {
  const server = createSecureServer(
    { ...options, allowHTTP1: true, settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS } },
    (req, res) => {
      const message = req as unknown as IncomingMessage;
      if (message.httpVersionMajor === 2) asHttp1Message(message);
      handlers.onRequest(message, res as unknown as ServerResponse);
    },
  );
  server.on('upgrade', handlers.onUpgrade);
  // A handshake that fails (no certificate, a scanner) ends that connection only.
  server.on('tlsClientError', (_error, socket) => socket.destroy());
  // HTTP/1.1 connections on this server keep the edge's keep-alive timeout.
  (server as unknown as { keepAliveTimeout: number }).keepAliveTimeout = idleMs;

  const sockets = new Set<TLSSocket>();
  server.on('secureConnection', (socket: TLSSocket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const open = new WeakMap<Http2Session, number>();
  server.on('stream', (stream: ServerHttp2Stream) => {
    const session = stream.session;
    if (!session) return;
    open.set(session, (open.get(session) ?? 0) + 1);
    stream.once('close', () => open.set(session, (open.get(session) ?? 1) - 1));
  });
  server.on('session', (session: ServerHttp2Session) => {
    session.on('error', () => session.destroy());
    session.setTimeout(idleMs, () => {
      if ((open.get(session) ?? 0) === 0) session.close();
    });
  });
  return {
    server,
    closeAll: () => {
      for (const socket of sockets) socket.destroy();
    },
  };
}

/**
 * Gives an HTTP/2 request the headers an HTTP/1.1 one would have had: `host` from `:authority` (RFC 9113
 * §8.3.1), the pseudo-headers gone from `headers` and `rawHeaders`, and a body of unknown length (HTTP/2
 * frames it, with no Content-Length) marked `transfer-encoding: chunked` in `headers`, as HTTP/1.1
 * marks one, so that the edge counts it against its limit and whoever relays it sends it on. Its method
 * and URL, which Node reads from the pseudo-headers, are kept as the request's own.
 */
export function asHttp1Message(req: IncomingMessage): void {
  const { method, url } = req;
  const stream = (req as unknown as { stream?: ServerHttp2Stream }).stream;
  const authority = req.headers[':authority'];
  Object.defineProperties(req, {
    method: { value: method, writable: true, configurable: true, enumerable: true },
    url: { value: url, writable: true, configurable: true, enumerable: true },
  });
  for (const name of Object.keys(req.headers)) if (name.startsWith(':')) delete req.headers[name];
  const raw = req.rawHeaders;
  let kept = 0;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.startsWith(':')) continue;
    raw[kept++] = raw[i]!;
    raw[kept++] = raw[i + 1]!;
  }
  raw.length = kept;
  if (req.headers.host === undefined && typeof authority === 'string') {
    req.headers.host = authority;
    raw.unshift('host', authority);
  }
  // HTTP/2 has no Transfer-Encoding (RFC 9113 §8.2.2): any a client sent was refused before this.
  if (stream && !stream.endAfterHeaders && req.headers['content-length'] === undefined) {
    req.headers['transfer-encoding'] = 'chunked';
  }
}

/**
 * Drops what HTTP/2 has no place for from an app's HTTP/1.1 response before it is copied to an HTTP/2
 * client: connection-specific headers (RFC 9113 §8.2.2; Node would drop them with a warning) and the
 * reason phrase.
 */
export function forHttp2Client(response: IncomingMessage): void {
  const listed = connectionTokens(response.headers.connection);
  for (const name of Object.keys(response.headers)) {
    if (isHopByHop(name) || listed?.has(name)) delete response.headers[name];
  }
  response.statusMessage = '';
}

/** Cancels one HTTP/2 request's stream (RST_STREAM CANCEL), leaving its connection's other streams. */
export function cancelStream(req: IncomingMessage): void {
  const stream = (req as unknown as { stream?: ServerHttp2Stream }).stream;
  stream?.close(constants.NGHTTP2_CANCEL);
}
