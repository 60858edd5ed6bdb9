// The edge's byte path: one public HTTP/1.1 connection carried whole to one upstream, a stream of a
// tunnel connection (tunnels/tunnel-conduit.ts) or a TCP connection to a deployed app (app-conduit.ts).
// The bytes pass untouched but for each request head, where the edge puts its X-Forwarded-* (and, for
// a tunnel, the capture's request id) in place of what the public client claimed; a parser on each
// direction (http1.ts) finds the messages for the capture, the body limit and the order of responses.
// A request the upstream should not take (another host, an app that was redeployed elsewhere) ends
// the conduit once the responses before it are out, and the connection goes back to the edge to be
// routed afresh.
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { CLIENT_WENT_AWAY_STATUS, type Exchange, RawHead } from '../../core/capture/capture.js';
import {
  FramingError,
  Http1Framer,
  type MessageHead,
  connectionListed,
  editHead,
  hasAnyHeader,
  headerValue,
  rewriteHead,
} from '../../core/tunnel/http1.js';
import { gatheredWriter, writeParts } from '../../core/tunnel/gather.js';
import { OURS } from '../../core/tunnel/protocol.js';
import type { HeaderList } from '../../shared/api/tunnels.js';
import { type EdgePage, pageResponse } from './pages.js';

/** Requests a public client may send ahead of their responses before the edge stops reading. */
const PIPELINE_DEPTH = 32;

/** How long the upstream may take to close after the conduit ended its side, before it is cut. */
const UPSTREAM_CLOSE_MS = 5_000;

/** What a public request says of the hop that the edge says afresh (and a tunnel's stream headers). */
const REPLACED = new Set([
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-real-ip',
  'forwarded',
  ...OURS,
  // Hop-by-hop headers of the public client's hop (its Connection header's list is added per request).
  'keep-alive',
  'te',
  'proxy-connection',
]);

/** A request the upstream takes. */
export interface Admitted {
  /** `name: value` lines the edge adds to the request head. */
  add: readonly string[];
  /** `add` as the head's edit appends it (appendedLines in http1.ts), when made once for the connection. */
  addBytes?: Buffer;
  /** Its capture, when the upstream captures. */
  exchange: Exchange | null;
  /** Runs once the request leaves the connection, answered or not. */
  done?: () => void;
  /** The Host the upstream is sent instead of the public one (a tunnel client's rule); unset: kept. */
  host?: string;
}

/** A 502 the edge writes itself for a request the upstream will not answer. */
export interface NoAnswer {
  headers: HeaderList;
  body: Buffer;
}

export interface ConduitOptions {
  /** The host the connection's requests are for (lowercase, no port). */
  host: string;
  socket: Socket;
  /** The connection's first bytes, read while routing it. */
  first: Buffer;
  /** Where the bytes go: its data is the upstream's responses. */
  upstream: Duplex;
  /** Ends the upstream so that its far end sees a request under way aborted. */
  abort(): void;
  /** A request head for `host`: what to add to it, or null when it must be routed afresh. */
  admit(head: MessageHead): Admitted | null;
  /** The answer to a request the upstream will not answer, for the reason given. */
  noAnswer(why: string): NoAnswer;
  /**
   * A captured exchange is over (with why it ended early, if it did); `head`: its request head as the
   * upstream was sent it, but with the public Host (null when the edge answered it without sending it).
   */
  record?(exchange: Exchange, error: string | null, head: Buffer | null): void;
  /**
   * The upstream's responses lose their hop-by-hop headers (those their Connection header lists, and
   * ours) on the way out: it passes on what an app sent, unread (a relay tunnel client).
   */
  responseHop?: boolean;
  bodyLimit: number;
  /** How the limit reads in the 413 page. */
  bodyLimitText: string;
  /** How long a connection without a request in flight is kept. */
  idleMs: number;
  /** The connection (its next bytes `rest`) is routed afresh. */
  reroute(socket: Socket, rest: Buffer): void;
}

/** The public side of a conduit: what the edge routed, as the openers of a conduit take it. */
export type CarriedConnection = Pick<
  ConduitOptions,
  'host' | 'socket' | 'first' | 'bodyLimit' | 'bodyLimitText' | 'idleMs' | 'reroute'
>;

interface InFlight {
  exchange: Exchange | null;
  /** The head sent upstream, for the capture (see ConduitOptions.record). */
  head: Buffer | null;
  done: (() => void) | undefined;
  method: string;
  upgrade: boolean;
  /** The final (non-1xx) response's head went out. */
  answered: boolean;
}

/** Response headers that end at the edge when it reads an app's responses for a relay client. */
const RESPONSE_HOP: ReadonlySet<string> = new Set(['proxy-connection', ...OURS]);

/** The request body went over the edge's limit. */
class OverLimit extends Error {}

export class Conduit {
  private readonly socket: Socket;
  private readonly upstream: Duplex;
  private readonly requests: Http1Framer;
  private readonly responses: Http1Framer;
  private readonly inFlight: InFlight[] = [];
  /** Bytes of the public connection not yet parsed: after an Upgrade request, or a request routed afresh. */
  private held: Buffer | null = null;
  private rerouteWith: Buffer | null = null;
  private bodySeen = 0;
  private upstreamFull = false;
  private done = false;
  /** Writes to the public client: an HTTP/2 upstream's DATA frames go out gathered. */
  private readonly toPublic: (chunk: Buffer) => boolean;

  constructor(private readonly options: ConduitOptions) {
    const { socket, upstream, host } = options;
    this.socket = socket;
    this.upstream = upstream;
    // A gather flushed after the conduit ended (rerouted, or closed) must not pause the upstream that
    // finish() left reading to its end.
    this.toPublic = gatheredWriter(socket, () => {
      if (!this.done) upstream.pause();
    });
    this.requests = new Http1Framer('request', {
      head: (head) => {
        if (normalizeHost(headerValue(head.headers, 'host')) !== host) return { stop: true };
        const admitted = options.admit(head);
        if (admitted === null) return { stop: true };
        this.bodySeen = 0;
        const listed = connectionListed(head.headers);
        const drop = listed ? new Set([...REPLACED, ...listed]) : REPLACED;
        // The head as sent but for the Host: what goes upstream without a Host rule, and the capture's.
        const forwarded =
          admitted.host === undefined || admitted.exchange
            ? editHead(head, drop, admitted.add, admitted.addBytes)
            : null;
        this.inFlight.push({
          exchange: admitted.exchange,
          head: admitted.exchange ? forwarded : null,
          done: admitted.done,
          method: head.method,
          upgrade: head.upgrade,
          answered: false,
        });
        this.socket.setTimeout(0);
        // Refused before any of it reaches the upstream.
        const length = headerValue(head.headers, 'content-length');
        if (length !== undefined && Number(length) > options.bodyLimit) throw new OverLimit();
        if (admitted.host === undefined) return { replace: forwarded! };
        return {
          replace: rewriteHead(head.raw, new Set([...drop, 'host']), [
            ...admitted.add,
            `host: ${admitted.host}`,
          ]),
        };
      },
      body: (data) => {
        this.bodySeen += data.length;
        if (this.bodySeen > options.bodyLimit) throw new OverLimit();
        this.inFlight.at(-1)?.exchange?.requestBody.push(data);
      },
    });
    this.responses = new Http1Framer('response', {
      head: (head) => {
        const request = this.inFlight[0];
        if (!request || (head.status < 200 && head.status !== 101)) return undefined;
        request.answered = true;
        request.exchange?.response(head.status, RawHead.of(head.raw));
        if (request.upgrade) this.releaseHeld(head.status === 101);
        const replace = options.responseHop ? withoutHopHeaders(head) : undefined;
        if (head.status === 101) return { raw: true, replace };
        const connect = request.method === 'CONNECT' && head.status < 300;
        return { noBody: request.method === 'HEAD' || connect, replace };
      },
      body: (data) => this.inFlight[0]?.exchange?.responseBody.push(data),
      end: () => {
        const request = this.inFlight[0];
        if (!request?.answered) return;
        this.inFlight.shift();
        this.record(request, null);
        this.afterResponse();
      },
    });

    upstream.on('data', (chunk: Buffer) => this.fromUpstream(chunk));
    upstream.on('end', () => this.upstreamEnded());
    upstream.on('error', () => undefined);
    upstream.on('close', () => this.upstreamClosed());
    upstream.on('drain', () => {
      this.upstreamFull = false;
      this.readMore();
    });
    socket.on('data', (chunk: Buffer) => this.fromPublic(chunk));
    // A public client that ends its side is gone, as Node's HTTP server has it (its requests are
    // aborted); an upgraded connection's end is passed on (the app may still have bytes to send).
    socket.on('end', () => {
      if (this.done) return;
      if (this.requests.raw && !upstream.writableEnded) upstream.end();
      else if (!this.requests.raw) this.publicClosed();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.publicClosed());
    socket.on('timeout', () => {
      if (this.inFlight.length === 0) this.finish(null, { destroy: true });
    });
    socket.on('drain', () => upstream.resume());
    this.fromPublic(options.first);
    this.readMore();
  }

  /** The upstream could not be reached: the request in flight gets the 502 that says why. */
  unreachable(why: string): void {
    if (this.done) return;
    this.noAnswer(why);
    this.finish(why, { end: true });
  }

  private fromPublic(chunk: Buffer): void {
    if (this.done) return;
    if (this.held !== null || this.rerouteWith !== null) {
      // Not parsed until the upstream's answer (an Upgrade) or the responses before a reroute are out.
      if (this.rerouteWith !== null) this.rerouteWith = Buffer.concat([this.rerouteWith, chunk]);
      else this.held = Buffer.concat([this.held!, chunk]);
      this.socket.pause();
      return;
    }
    let framed;
    try {
      framed = this.requests.write(chunk);
    } catch (error) {
      this.refuse(error);
      return;
    }
    this.toUpstream(framed.out);
    if (this.requests.holding) {
      this.held = framed.rest ?? Buffer.alloc(0);
      this.socket.pause();
    } else if (this.requests.stopped) {
      this.rerouteWith = framed.rest ?? Buffer.alloc(0);
      this.socket.pause();
      this.afterResponse();
    }
    this.readMore();
  }

  private toUpstream(parts: Buffer[]): void {
    if (parts.length === 0 || this.upstream.destroyed) return;
    const upstream = this.upstream;
    if (!writeParts(upstream, (part) => upstream.write(part), parts)) this.upstreamFull = true;
  }

  /** No request is in flight or under way, and the connection is still HTTP. */
  private idle(): boolean {
    return (
      this.inFlight.length === 0 &&
      !this.requests.midMessage &&
      !this.requests.raw &&
      this.held === null &&
      this.rerouteWith === null
    );
  }

  /** Reads on from the public client while nothing holds it back. */
  private readMore(): void {
    // Once done, the socket is no longer this conduit's to pause (it may be rerouted already).
    if (this.done) return;
    const blocked =
      this.upstreamFull ||
      this.held !== null ||
      this.rerouteWith !== null ||
      this.inFlight.length >= PIPELINE_DEPTH;
    if (blocked) this.socket.pause();
    else this.socket.resume();
  }

  private releaseHeld(upgraded: boolean): void {
    const held = this.held;
    if (held === null) return;
    this.held = null;
    let framed;
    try {
      framed = this.requests.release(held, upgraded);
    } catch (error) {
      this.refuse(error);
      return;
    }
    this.toUpstream(framed.out);
    if (this.requests.stopped) this.rerouteWith = framed.rest ?? Buffer.alloc(0);
    this.readMore();
  }

  private fromUpstream(chunk: Buffer): void {
    if (this.done) return;
    let out: Buffer[] | null = null;
    try {
      out = this.responses.write(chunk).out;
    } catch {
      // The upstream's response is not HTTP the parser reads: it is passed on all the same, unparsed.
      this.responses.raw = true;
    }
    // What the framer passes on, when heads may be rewritten (a head cut over two chunks comes out
    // whole with the second); else the chunk as it came.
    const parts = this.options.responseHop && out !== null ? out : [chunk];
    if (parts.length > 0 && !writeParts(this.socket, this.toPublic, parts)) this.upstream.pause();
  }

  /** A response went out whole: reroute once none is left, else read on (or wait, idle). */
  private afterResponse(): void {
    if (this.done) return;
    if (this.rerouteWith !== null && this.inFlight.length === 0) {
      const rest = this.rerouteWith;
      this.finish(null, { reroute: rest });
      return;
    }
    if (this.inFlight.length === 0 && !this.requests.midMessage && !this.requests.raw)
      this.socket.setTimeout(this.options.idleMs);
    this.readMore();
  }

  /**
   * The upstream will not answer the first request in flight: the public client gets a 502 saying so,
   * and the capture has it. Nothing is written if a response to it has begun.
   */
  private noAnswer(why: string): void {
    const request = this.inFlight[0];
    if (!request || request.answered) return;
    this.inFlight.shift();
    const { headers, body } = this.options.noAnswer(why);
    request.exchange?.response(502, headers);
    request.exchange?.responseBody.push(body);
    this.record(request, why);
    const lines = headers.map(({ name, value }) => `${name}: ${value}\r\n`).join('');
    this.socket.write(
      `HTTP/1.1 502 Bad Gateway\r\n${lines}content-length: ${body.length}\r\nconnection: close\r\n\r\n`,
    );
    this.socket.write(body);
  }

  /** The upstream closed its side: a body read to the close is whole. */
  private upstreamEnded(): void {
    if (this.done) return;
    if (this.idle()) {
      // An idle connection the app closed (its keep-alive ran out, it restarted): the public client's
      // stays, and its next request is routed afresh.
      this.finish(null, { reroute: Buffer.alloc(0) });
      return;
    }
    try {
      this.responses.finish();
    } catch {
      // an incomplete response: recorded below as cut off
    }
    if (this.inFlight[0]?.answered) {
      this.finish('the app closed the connection in the middle of its response', { end: true });
      return;
    }
    this.noAnswer('the app closed the connection before answering');
    this.finish('the app closed the connection before answering', { end: true });
  }

  /** The upstream went without ending its side (reset, or a tunnel stream cancelled). */
  private upstreamClosed(): void {
    if (this.done) return;
    if (this.idle()) {
      this.finish(null, { reroute: Buffer.alloc(0) });
      return;
    }
    if (this.inFlight[0] && !this.inFlight[0].answered) {
      const why = 'the connection to the app closed without a response';
      this.noAnswer(why);
      this.finish(why, { end: true });
      return;
    }
    this.finish('the response was cut off', { destroy: true });
  }

  private publicClosed(): void {
    if (this.done) return;
    // A request under way is aborted upstream; an idle connection, or an upgraded one (whose last
    // bytes, a WebSocket close frame, must still arrive), is ended.
    const busy = this.inFlight.length > 0 || (this.requests.midMessage && !this.requests.raw);
    for (const request of this.inFlight) request.exchange?.noResponse(CLIENT_WENT_AWAY_STATUS);
    this.finish('the public client went away', { reset: busy, destroy: true });
  }

  /** A request the edge will not pass on: its body over the limit, or framed wrongly. */
  private refuse(error: unknown): void {
    const overLimit = error instanceof OverLimit;
    const page: EdgePage = overLimit
      ? {
          status: 413,
          title: 'Request body too large',
          message: `This address takes request bodies of up to ${this.options.bodyLimitText}.`,
          hint: 'Send a smaller body, or split it over several requests.',
        }
      : {
          status: 400,
          title: 'Bad request',
          message: `The request could not be read: ${error instanceof FramingError ? error.message : 'a malformed message'}.`,
        };
    const reason = overLimit
      ? `the request body is over the edge's limit of ${this.options.bodyLimitText}`
      : `a bad request: ${(error as Error).message}`;
    // The answer can be this page only when no earlier request waits for its response. The refused
    // request is the last in flight when its body was under way (over the limit, or framed wrongly
    // there); a head framed wrongly never was in flight.
    const earlier = this.inFlight.length - (overLimit || this.requests.midMessage ? 1 : 0);
    const answered = earlier > 0 || this.inFlight.some((r) => r.answered);
    if (!answered) {
      const request = this.inFlight.shift();
      if (request?.exchange) request.exchange.noResponse(page.status);
      if (request) this.record(request, reason, false);
      this.socket.end(pageResponse(page, { close: true }));
      // Read on (and drop) what is still being sent, a moment, so that the client gets the answer.
      this.socket.resume();
      this.socket.removeAllListeners('data');
      this.socket.on('data', () => undefined);
      setTimeout(() => this.socket.destroy(), 2_000).unref();
    } else this.socket.destroy();
    this.finish(reason, { reset: true, keepSocket: !answered });
  }

  /**
   * Ends the conduit: what is still in flight is recorded with `error`; the upstream is ended (or
   * aborted, so that the app sees its request aborted), and the public connection ended, destroyed, or
   * rerouted.
   */
  private finish(
    error: string | null,
    how: { end?: boolean; destroy?: boolean; reset?: boolean; reroute?: Buffer; keepSocket?: boolean },
  ): void {
    if (this.done) return;
    this.done = true;
    for (const request of this.inFlight.splice(0)) this.record(request, error ?? 'the connection closed');
    const { upstream } = this;
    if (!upstream.closed && !upstream.destroyed) {
      if (how.reset) this.options.abort();
      else if (!upstream.writableEnded) upstream.end();
      // The far end closes once it has its end; it may not, so it goes anyway.
      setTimeout(() => {
        if (!upstream.closed && !upstream.destroyed) this.options.abort();
      }, UPSTREAM_CLOSE_MS).unref();
    }
    upstream.removeAllListeners('data');
    upstream.on('data', () => undefined);
    upstream.resume();
    const socket = this.socket;
    socket.setTimeout(0);
    if (how.reroute) {
      for (const event of ['data', 'end', 'close', 'timeout', 'drain', 'error'] as const)
        socket.removeAllListeners(event);
      // Paused, so that the bytes put back before it are read first once it flows again (a flowing
      // stream with no reader would keep them buffered, unread).
      socket.pause();
      this.options.reroute(socket, how.reroute);
      return;
    }
    if (how.keepSocket) return;
    if (how.destroy) socket.destroy();
    else if (how.end) socket.end();
  }

  /** `sent`: whether the request went upstream (its head is in the capture as it went). */
  private record(request: InFlight, error: string | null, sent = true): void {
    request.done?.();
    if (request.exchange) this.options.record?.(request.exchange, error, sent ? request.head : null);
  }
}

/** A response head without its hop-by-hop headers (undefined when it has none). */
function withoutHopHeaders(head: MessageHead): Buffer | undefined {
  const listed = connectionListed(head.headers);
  if (listed === null && !hasAnyHeader(head.headers, RESPONSE_HOP)) return undefined;
  return rewriteHead(head.raw, listed ? new Set([...RESPONSE_HOP, ...listed]) : RESPONSE_HOP, []);
}

/** A Host header's name: lowercase, without its port or a final dot. */
export function normalizeHost(value: string | undefined): string {
  return (value ?? '').trim().toLowerCase().replace(/:\d+$/, '').replace(/\.$/, '');
}
