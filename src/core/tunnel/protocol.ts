// The tunnel protocol, shared by the edge and the client. After `GET /api/v1/tunnels/connect` is
// upgraded (to the raw `wharf-tunnel` stream, or to a WebSocket), HTTP/2 runs over the connection with
// roles reversed: the edge is the HTTP/2 client and opens one stream per public request; the tunnel
// client is the HTTP/2 server and answers each stream from the local app.
//
// A stream's request carries the public request's method, path and headers (hop-by-hop ones dropped),
// plus the headers below. A public WebSocket (or any Upgrade) travels as a stream marked with
// `wharf-upgrade`: the client replays the request head to the local app over a fresh TCP connection,
// and from then on the stream carries raw bytes both ways, the app's `101` response included.
//
// A client that offers the `pipe` feature gets the byte path instead for public HTTP/1.1 connections:
// one stream per public connection (STREAM_HEADERS.pipe), its bytes passed through with only request
// heads rewritten (http1.ts); requests replayed from the capture still travel one stream each. One that
// also offers `relay` reads none of those bytes: the edge does the rewriting both ways, and sends it the
// exchanges on capture streams when it offers `captures` (STREAM_HEADERS.relay, .captures).
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Http2Session, Settings } from 'node:http2';
import { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';

export const STREAM_HEADERS = {
  /** The captured request's id, so both sides name the exchange alike. */
  requestId: 'wharf-request-id',
  /** The public client's address. */
  remoteAddr: 'wharf-remote-addr',
  /** Set on upgrade streams: the stream is a raw byte pipe after the request head. */
  upgrade: 'wharf-upgrade',
  /** Set by the edge on replays: the id of the exchange replayed. */
  replayOf: 'wharf-replay-of',
  /**
   * Set by the client on a response it made up because the local app failed (its 502): why, so the
   * edge captures the exchange with that error too. The edge removes it from the public response.
   */
  error: 'wharf-error',
  /** On upgrade streams: the public request's own `Connection` and `Upgrade` headers, as JSON. */
  upgradeHeaders: 'wharf-upgrade-headers',
  /**
   * Set on byte-path streams: the stream carries one public HTTP/1.1 connection's bytes both ways, to
   * a connection of the client's own to the local app. Each request head in it carries
   * `wharf-request-id` (when the edge captures), which the client takes out before the app sees it.
   */
  pipe: 'wharf-pipe',
  /**
   * Set on byte-path streams of a client that offered `relay`: the edge did the connection's HTTP work
   * (the Host the app is sent, the app's hop-by-hop response headers), so the client moves the bytes
   * and parses nothing; the exchanges come on capture streams.
   */
  relay: 'wharf-relay',
  /**
   * Set on the capture stream, which the edge opens for a client that offered `captures` with the first
   * exchange it has to send and keeps for the connection (ending it before the connection closes), and
   * on the client's answer to it: the records of the relay path's exchanges (capture-records.ts).
   */
  captures: 'wharf-captures',
} as const;

/** The features a tunnel client offers when it connects (TUNNEL_HEADERS.features), comma-separated. */
export const PIPE_FEATURE = 'pipe';
/** The byte path without HTTP at the client: the edge rewrites what the client would (see STREAM_HEADERS.relay). */
export const RELAY_FEATURE = 'relay';
/** The edge sends the relay path's captures on capture streams (see STREAM_HEADERS.captures). */
export const CAPTURES_FEATURE = 'captures';
/**
 * Byte-path streams on a multiplexer of our own (mux.ts) instead of HTTP/2 streams, HTTP/2 running on
 * its stream 0. The edge says it took it with TUNNEL_HEADERS.mux on its 101.
 */
export const MUX_FEATURE = 'mux';

/** Whether an HTTP/2 stream is one of a tunnel connection's capture streams (on either side). */
export function isCaptureStream(stream: { sentHeaders?: Record<string, unknown> }): boolean {
  return stream.sentHeaders?.[STREAM_HEADERS.captures] !== undefined;
}

/** Our stream headers: never taken from a public request or an app's response, never passed on. */
export const OURS: ReadonlySet<string> = new Set(Object.values(STREAM_HEADERS));

/**
 * The body of the 502 a public client gets when the local app does not answer a request (it cannot be
 * reached, or closed the connection first): the client writes it on the request path, the edge on the
 * byte path, and both capture it.
 */
export function noAnswerText(why: string): string {
  return `Wharf tunnel: the local app did not answer (${why}).\n`;
}

/**
 * Large windows: the defaults (64 KiB) throttle bulk transfers to a crawl on one connection. A stream's
 * is what a receiver may have to hold for it when its reader is slower: 4 MiB keeps 40 MiB/s per stream
 * at 100 ms of round trip, and the edge's peak RSS while 1 GiB streams ~10 MB lower than 16 MiB did
 * (bench/tunnel.mjs --bulk-only, as fast or faster on loopback).
 */
export const STREAM_WINDOW = 4 * 1024 * 1024;
export const SESSION_WINDOW = 64 * 1024 * 1024;

/** GOAWAY opaque data the edge sends to a client whose subdomain another connection took over. */
export const GOAWAY_REPLACED = 'wharf:replaced';

export const SESSION_SETTINGS: Settings = {
  initialWindowSize: STREAM_WINDOW,
  maxConcurrentStreams: 10_000,
  maxHeaderListSize: 256 * 1024,
  // Fewer, larger DATA frames: each frame costs a callback and a copy on both sides.
  maxFrameSize: 1024 * 1024 - 1,
  enablePush: false,
};

/**
 * What the HTTP/2 session runs over. A real socket is handed over as it is. Anything else (a TLS socket,
 * a WebSocket's stream) is wrapped in a stream of our own, which Node runs HTTP/2 over through its
 * JSStreamSocket, and two of Node's assertions end the process when that goes wrong:
 * - node:http2 given the TLS socket itself would write to the same native handle as TLS does (an
 *   assertion in Http2Session::OnStreamAfterWrite), so a TLS socket goes as its decrypted bytes;
 * - JSStreamSocket allows one write at a time, none while its end is under way, and asserts it: a
 *   stream whose connection dies (a WebSocket's) leaves a write or the end unanswered, or ends the
 *   socket as the peer's end arrives, and the session's last write (its GOAWAY, as it is destroyed)
 *   then ends the process: a tunnel client dropping its connection could stop the platform. Here every
 *   write and the end are answered, with an error once the connection is gone, and the peer's end
 *   closes the stream instead of half-closing it.
 */
export function sessionTransport(socket: Duplex): Duplex {
  // A plain socket (behind the front, a plain socket is marked `encrypted` for the edge's sake).
  if (socket instanceof Socket && !(socket instanceof TLSSocket)) return socket;
  /** The callbacks of the write and of the end under way, each answered once, by the socket or its close. */
  let pending: ((error?: Error | null) => void) | null = null;
  let ending: ((error?: Error | null) => void) | null = null;
  const answer = (error?: Error | null) => {
    const done = pending;
    pending = null;
    done?.(error);
  };
  const answerEnd = (error?: Error | null) => {
    const done = ending;
    ending = null;
    done?.(error);
  };
  const stream = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _encoding, done) {
      if (socket.destroyed || socket.writableEnded) {
        done(new Error('the connection closed'));
        return;
      }
      pending = done;
      socket.write(chunk, (error) => answer(error));
    },
    final(done) {
      if (socket.destroyed) {
        done();
        return;
      }
      ending = done;
      socket.end(() => answerEnd());
    },
    destroy(error, done) {
      answer(error ?? new Error('the connection closed'));
      answerEnd();
      socket.destroy(error ?? undefined);
      done(error);
    },
  });
  socket.on('data', (chunk: Buffer) => {
    if (!stream.push(chunk)) socket.pause();
  });
  // The far end ending its side ends the session: passed on as an end of ours, Node's socket wrapper would
  // end its own side (no half-open sockets) and the session's last write would then find it ending.
  socket.once('end', () => stream.destroy());
  socket.once('error', (error) => {
    answer(error);
    answerEnd();
    stream.destroy(error);
  });
  socket.once('close', () => {
    answer(new Error('the connection closed'));
    answerEnd();
    stream.destroy();
  });
  return stream;
}

/** How often each end of a tunnel connection PINGs the other, unless told otherwise. */
export const HEARTBEAT_MS = 15_000;

/**
 * PINGs the peer every `everyMs` (0: never); a PING still unanswered when the next is due ends
 * `transport`, and so the session. A peer that vanished without a FIN or a reset (a laptop closed, a
 * NAT that forgot the flow), or a session HTTP/2 stopped reading on its own, is noticed within two
 * periods instead of when the kernel gives up on the connection.
 */
export function heartbeat(session: Http2Session, transport: Duplex, everyMs: number): void {
  if (everyMs <= 0) return;
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
  }, everyMs);
  timer.unref();
  session.once('close', () => clearInterval(timer));
}

/** Headers that describe one HTTP/1.1 connection, not the message: HTTP/2 forbids them. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'host',
  'te',
  'http2-settings',
]);

export function isHopByHop(name: string): boolean {
  return HOP_BY_HOP.has(name.toLowerCase());
}

/** The header names a `Connection` header lists: hop-by-hop for this message too (RFC 9110 §7.6.1). */
export function connectionTokens(value: string | string[] | number | undefined): Set<string> | null {
  if (value === undefined) return null;
  const tokens = new Set<string>();
  for (const one of Array.isArray(value) ? value : [String(value)]) {
    for (const token of one.split(',')) {
      const name = token.trim().toLowerCase();
      if (name !== '' && name !== 'close' && name !== 'keep-alive' && name !== 'upgrade') tokens.add(name);
    }
  }
  return tokens.size > 0 ? tokens : null;
}

/** HTTP/1.1 request headers (Node's raw list) as HTTP/2 request headers. */
export function requestHeadersToH2(
  raw: readonly string[],
  pseudo: { method: string; path: string; authority: string; scheme: string },
  extra: OutgoingHttpHeaders = {},
): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {
    ':method': pseudo.method,
    ':path': pseudo.path,
    ':authority': pseudo.authority,
    ':scheme': pseudo.scheme,
  };
  const connection: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.length === 10 && raw[i]!.toLowerCase() === 'connection') connection.push(raw[i + 1]!);
  }
  const listed = connectionTokens(connection.length > 0 ? connection : undefined);
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (isHopByHop(name) || name.startsWith(':') || OURS.has(name) || listed?.has(name)) continue;
    const value = raw[i + 1]!;
    const existing = headers[name];
    if (existing === undefined) headers[name] = value;
    else if (name === 'cookie') headers[name] = `${String(existing)}; ${value}`;
    else headers[name] = Array.isArray(existing) ? [...existing, value] : [String(existing), value];
  }
  return Object.assign(headers, extra);
}

/** HTTP/1.1 response headers (Node's object) as HTTP/2 response headers. */
export function responseHeadersToH2(status: number, headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = { ':status': status };
  const listed = connectionTokens(headers.connection);
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || isHopByHop(name) || OURS.has(name) || listed?.has(name)) continue;
    out[name] = value;
  }
  return out;
}

/** HTTP/2 headers without pseudo-headers and our own stream headers, for an HTTP/1.1 message. */
export function h2HeadersToHttp1(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name.startsWith(':') || OURS.has(name)) continue;
    out[name] = value;
  }
  return out;
}
