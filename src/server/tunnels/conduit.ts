// The tunnel's byte path at the edge: one public HTTP/1.1 connection carried whole over one stream of
// the tunnel connection, to a connection the client makes to the local app. The bytes pass untouched
// but for each request head, where the edge puts its X-Forwarded-* and the capture's request id in
// place of what the public client claimed; a parser on each direction (http1.ts) finds the messages
// for the capture, the body limit and the order of responses. A request on the same connection for
// another host ends the conduit once the responses before it are out, and the connection goes back
// to the edge to be routed afresh.
import http2, { type ClientHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import { CLIENT_WENT_AWAY_STATUS, Exchange, peerAddress } from '../../core/capture/capture.js';
import {
  FramingError,
  Http1Framer,
  connectionListed,
  editHead,
  headerValue,
} from '../../core/tunnel/http1.js';
import { OURS, STREAM_HEADERS, noAnswerText } from '../../core/tunnel/protocol.js';
import { forwardingHeaders, publicProto } from '../edge/forwarded.js';
import { type EdgePage, pageResponse } from '../edge/pages.js';
import type { Tunnel } from './hub.js';

/** Requests a public client may send ahead of their responses before the edge stops reading. */
const PIPELINE_DEPTH = 32;

/** What a public request says of the hop that the edge says afresh (and our own stream headers). */
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

export interface ConduitOptions {
  tunnel: Tunnel;
  /** The host the connection's requests are for (lowercase, no port). */
  host: string;
  socket: Socket;
  /** The connection's first bytes, read while routing it. */
  first: Buffer;
  capture: boolean;
  bodyLimit: number;
  /** How the limit reads in the 413 page. */
  bodyLimitText: string;
  /** How long a connection without a request in flight is kept. */
  idleMs: number;
  /** A request for another host came: the connection (its next bytes `rest`) is routed afresh. */
  reroute(socket: Socket, rest: Buffer): void;
}

interface InFlight {
  exchange: Exchange | null;
  method: string;
  upgrade: boolean;
  /** The final (non-1xx) response's head went out. */
  answered: boolean;
}

/** The request body went over the edge's limit. */
class OverLimit extends Error {}

export class Conduit {
  private readonly socket: Socket;
  private readonly stream: ClientHttp2Stream;
  private readonly requests: Http1Framer;
  private readonly responses: Http1Framer;
  private readonly inFlight: InFlight[] = [];
  /** Bytes of the public connection not yet parsed: after an Upgrade request, or a request for another host. */
  private held: Buffer | null = null;
  private rerouteWith: Buffer | null = null;
  private bodySeen = 0;
  private streamFull = false;
  private done = false;

  constructor(private readonly options: ConduitOptions) {
    const { tunnel, socket, host } = options;
    this.socket = socket;
    const address = socket.remoteAddress ?? '';
    const proto = publicProto(socket);
    this.stream = tunnel.session!.request(
      {
        ':method': 'POST',
        ':path': '/',
        ':authority': host,
        ':scheme': 'http',
        [STREAM_HEADERS.pipe]: '1',
        [STREAM_HEADERS.remoteAddr]: peerAddress(socket),
      },
      { endStream: false },
    );
    this.requests = new Http1Framer('request', {
      head: (head) => {
        const named = normalizeHost(headerValue(head.headers, 'host'));
        if (named !== host) return { stop: true };
        this.bodySeen = 0;
        const exchange = options.capture
          ? new Exchange({
              tunnelId: tunnel.id,
              method: head.method,
              path: head.url,
              url: tunnel.url + head.url,
              httpVersion: `HTTP/${head.version}`,
              requestHeaders: head.headers,
              remoteAddr: peerAddress(socket),
            })
          : null;
        this.inFlight.push({ exchange, method: head.method, upgrade: head.upgrade, answered: false });
        this.socket.setTimeout(0);
        // Refused before any of it reaches the app.
        const length = headerValue(head.headers, 'content-length');
        if (length !== undefined && Number(length) > options.bodyLimit) throw new OverLimit();
        const forwarding = forwardingHeaders(address, headerValue(head.headers, 'host') ?? host, proto);
        const add = Object.entries(forwarding).map(([name, value]) => `${name}: ${value}`);
        if (exchange) add.push(`${STREAM_HEADERS.requestId}: ${exchange.id}`);
        const listed = connectionListed(head.headers);
        return { replace: editHead(head, listed ? new Set([...REPLACED, ...listed]) : REPLACED, add) };
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
        request.exchange?.response(head.status, head.headers);
        if (request.upgrade) this.releaseHeld(head.status === 101);
        if (head.status === 101) return { raw: true };
        const connect = request.method === 'CONNECT' && head.status < 300;
        return { noBody: request.method === 'HEAD' || connect };
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

    this.stream.on('response', (headers) => {
      if (headers[':status'] === 200) return;
      const why = String(headers[STREAM_HEADERS.error] ?? 'the tunnel client could not reach the local app');
      this.appUnreachable(why);
    });
    this.stream.on('data', (chunk: Buffer) => this.fromApp(chunk));
    this.stream.on('end', () => this.appEnded());
    this.stream.on('error', () => undefined);
    this.stream.on('close', () => this.streamClosed());
    this.stream.on('drain', () => {
      this.streamFull = false;
      this.readMore();
    });
    socket.on('data', (chunk: Buffer) => this.fromPublic(chunk));
    // A public client that ends its side is gone, as Node's HTTP server has it (its requests are
    // aborted); an upgraded connection's end is passed on (the app may still have bytes to send).
    socket.on('end', () => {
      if (this.done) return;
      if (this.requests.raw && !this.stream.writableEnded) this.stream.end();
      else if (!this.requests.raw) this.publicClosed();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.publicClosed());
    socket.on('timeout', () => {
      if (this.inFlight.length === 0) this.finish(null, { destroy: true });
    });
    socket.on('drain', () => this.stream.resume());
    this.fromPublic(options.first);
    socket.resume();
  }

  private fromPublic(chunk: Buffer): void {
    if (this.done) return;
    if (this.held !== null || this.rerouteWith !== null) {
      // Not parsed until the app's answer (an Upgrade) or the responses before a reroute are out.
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
    this.toApp(framed.out);
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

  private toApp(parts: Buffer[]): void {
    if (parts.length === 0 || this.stream.destroyed) return;
    const data = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    if (!this.stream.write(data)) this.streamFull = true;
  }

  /** Reads on from the public client while nothing holds it back. */
  private readMore(): void {
    // Once done, the socket is no longer this conduit's to pause (it may be rerouted already).
    if (this.done) return;
    const blocked =
      this.streamFull ||
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
    this.toApp(framed.out);
    if (this.requests.stopped) this.rerouteWith = framed.rest ?? Buffer.alloc(0);
    this.readMore();
  }

  private fromApp(chunk: Buffer): void {
    if (this.done) return;
    try {
      this.responses.write(chunk);
    } catch {
      // The app's response is not HTTP the parser reads: pass it on all the same, captured no further.
      this.responses.raw = true;
    }
    if (!this.socket.write(chunk)) this.stream.pause();
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

  /** The client could not connect to the local app: the public client gets the 502 it used to send. */
  private appUnreachable(why: string): void {
    if (this.done) return;
    this.noAnswer(why);
    this.finish(why, { end: true });
  }

  /**
   * The app will not answer the first request in flight (it cannot be reached, or closed the
   * connection first): the public client gets a 502 saying so, as the client used to send it, and the
   * capture has both. Nothing is written if a response to it has begun.
   */
  private noAnswer(why: string): void {
    const request = this.inFlight[0];
    if (!request || request.answered) return;
    this.inFlight.shift();
    const body = Buffer.from(noAnswerText(why));
    if (request.exchange) {
      request.exchange.response(502, [{ name: 'content-type', value: 'text/plain; charset=utf-8' }]);
      request.exchange.responseBody.push(body);
    }
    this.record(request, why);
    this.socket.write(
      `HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`,
    );
    this.socket.write(body);
  }

  /** The app closed its connection (the client ended the stream): a body read to the close is whole. */
  private appEnded(): void {
    if (this.done) return;
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

  private streamClosed(): void {
    if (this.done) return;
    const request = this.inFlight[0];
    if (request && !request.answered) {
      this.socket.write(
        pageResponse(
          { status: 502, title: 'No response', message: 'The tunnel client did not answer.' },
          { close: true },
        ),
      );
      this.finish('the tunnel client closed the stream without a response', { end: true });
      return;
    }
    this.finish('the response was cut off', { destroy: true });
  }

  private publicClosed(): void {
    if (this.done) return;
    // A request under way is aborted at the app; an idle connection, or an upgraded one (whose last
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
      if (request) this.record(request, reason);
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
   * Ends the conduit: what is still in flight is recorded with `error`; the stream is ended (or reset,
   * so that the app sees its request aborted), and the public connection ended, destroyed, or rerouted.
   */
  private finish(
    error: string | null,
    how: { end?: boolean; destroy?: boolean; reset?: boolean; reroute?: Buffer; keepSocket?: boolean },
  ): void {
    if (this.done) return;
    this.done = true;
    for (const request of this.inFlight.splice(0)) this.record(request, error ?? 'the connection closed');
    const stream = this.stream;
    if (!stream.closed && !stream.destroyed) {
      if (how.reset) stream.close(http2.constants.NGHTTP2_CANCEL);
      else if (!stream.writableEnded) stream.end();
      // The client ends its side once the app's connection is closed; it may not, so it goes anyway.
      setTimeout(() => {
        if (!stream.closed && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
      }, 5_000).unref();
    }
    stream.removeAllListeners('data');
    stream.on('data', () => undefined);
    const socket = this.socket;
    socket.setTimeout(0);
    if (how.reroute) {
      for (const event of ['data', 'end', 'close', 'timeout', 'drain', 'error'] as const)
        socket.removeAllListeners(event);
      this.options.reroute(socket, how.reroute);
      return;
    }
    if (how.keepSocket) return;
    if (how.destroy) socket.destroy();
    else if (how.end) socket.end();
  }

  private record(request: InFlight, error: string | null): void {
    if (request.exchange) this.options.tunnel.record(request.exchange, error);
  }
}

/** A Host header's name: lowercase, without its port or a final dot. */
export function normalizeHost(value: string | undefined): string {
  return (value ?? '').trim().toLowerCase().replace(/:\d+$/, '').replace(/\.$/, '');
}
