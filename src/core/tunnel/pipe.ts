// The tunnel's byte path at the client: a stream the edge opened for one public HTTP/1.1 connection
// (STREAM_HEADERS.pipe) is joined to a TCP connection of its own to the local app, bytes passed both
// ways. A parser on each direction (http1.ts) finds the messages: each request head gets the Host the
// client was told to send and loses the edge's request id, and every exchange is captured under the
// id the edge gave it, so both sides name it alike.
import http2, { type ServerHttp2Stream } from 'node:http2';
import { connect } from 'node:net';
import { CLIENT_WENT_AWAY_STATUS, type CapturedExchange, Exchange, RawHead } from '../capture/capture.js';
import {
  Http1Framer,
  connectionListed,
  hasAnyHeader,
  headerValue,
  rewriteHead,
  withoutLastLine,
} from './http1.js';
import { gatheredWriter, writeParts } from './gather.js';
import type { MuxStream } from './mux.js';
import { OURS, STREAM_HEADERS, noAnswerText } from './protocol.js';

export interface PipeOptions {
  localHost: string;
  localPort: number;
  /** The Host the app is sent for a request whose public Host is this. */
  hostFor(publicHost: string | undefined): string;
  /** Null: not captured. */
  capture: { tunnelId: string; url: string; remoteAddr: string } | null;
  emit(exchange: CapturedExchange): void;
}

/** A byte-path stream: an HTTP/2 stream, or the multiplexer's (mux.ts), which answers to the same calls. */
export type PipeStream = ServerHttp2Stream | MuxStream;

interface InFlight {
  exchange: Exchange | null;
  method: string;
  upgrade: boolean;
  answered: boolean;
}

/** Response headers that end at the tunnel (besides those the app's Connection header lists). */
const RESPONSE_HOP: ReadonlySet<string> = new Set(['proxy-connection', ...OURS]);

/** The headers a request head loses on its way to the app: ours, and Host (set afresh). */
const DROPPED = new Set(['host', ...OURS]);

/** Joins a byte-path stream to a new connection to the local app; returns once both are wired. */
export function answerPipe(stream: PipeStream, options: PipeOptions): void {
  const socket = connect(options.localPort, options.localHost);
  socket.setNoDelay(true);
  const inFlight: InFlight[] = [];
  /** Why the app cannot be reached: requests that arrive anyway are captured with it. */
  let unreachable: string | null = null;
  let held: Buffer | null = null;
  let done = false;

  const record = (request: InFlight, error: string | null) => {
    if (request.exchange) options.emit(request.exchange.finish(error));
  };
  const refusedAnswer = (request: InFlight, why: string) => {
    const body = Buffer.from(noAnswerText(why));
    request.exchange?.response(502, [{ name: 'content-type', value: 'text/plain; charset=utf-8' }]);
    request.exchange?.responseBody.push(body);
    record(request, why);
  };

  const requests = new Http1Framer('request', {
    head: (head) => {
      const publicHost = headerValue(head.headers, 'host');
      const exchange = options.capture
        ? new Exchange({
            id: headerValue(head.headers, STREAM_HEADERS.requestId),
            tunnelId: options.capture.tunnelId,
            method: head.method,
            path: head.url,
            url: options.capture.url + head.url,
            httpVersion: `HTTP/${head.version}`,
            requestHeaders: withoutOurs(head.headers),
            remoteAddr: options.capture.remoteAddr,
          })
        : null;
      const request: InFlight = { exchange, method: head.method, upgrade: head.upgrade, answered: false };
      if (unreachable !== null) {
        refusedAnswer(request, unreachable);
        return { replace: Buffer.alloc(0) };
      }
      inFlight.push(request);
      const host = options.hostFor(publicHost);
      if (host === publicHost) {
        // The Host kept: at most the edge's request id, its last line, comes out.
        const id = headerValue(head.headers, STREAM_HEADERS.requestId);
        if (id === undefined && !hasAnyHeader(head.headers, OURS)) return undefined;
        const trimmed = withoutLastLine(head.raw, `${STREAM_HEADERS.requestId}: ${id}`);
        if (trimmed && !hasAnyHeader(head.headers.slice(0, -2), OURS)) return { replace: trimmed };
      }
      return { replace: rewriteHead(head.raw, DROPPED, [`host: ${host}`]) };
    },
    body: (data) => inFlight.at(-1)?.exchange?.requestBody.push(data),
  });
  const responses = new Http1Framer('response', {
    head: (head) => {
      const request = inFlight[0];
      if (!request || (head.status < 200 && head.status !== 101)) return undefined;
      request.answered = true;
      request.exchange?.response(head.status, RawHead.of(head.raw));
      if (request.upgrade) release(head.status === 101);
      if (head.status === 101) return { raw: true };
      const noBody = request.method === 'HEAD' || (request.method === 'CONNECT' && head.status < 300);
      // The app's hop-by-hop headers end here (its Keep-Alive stays: its connection is the public one's).
      const listed = connectionListed(head.headers);
      if (listed === null && !hasAnyHeader(head.headers, RESPONSE_HOP)) return { noBody };
      return {
        noBody,
        replace: rewriteHead(head.raw, listed ? new Set([...RESPONSE_HOP, ...listed]) : RESPONSE_HOP, []),
      };
    },
    body: (data) => inFlight[0]?.exchange?.responseBody.push(data),
    end: () => {
      const request = inFlight[0];
      if (!request?.answered) return;
      inFlight.shift();
      record(request, null);
    },
  });

  const write = gatheredWriter(socket, () => stream.pause());
  const toApp = (parts: Buffer[]) => {
    if (parts.length > 0 && !writeParts(socket, write, parts)) stream.pause();
  };
  const release = (upgraded: boolean) => {
    if (held === null) return;
    const bytes = held;
    held = null;
    try {
      toApp(requests.release(bytes, upgraded).out);
    } catch {
      end('the request could not be read', true);
      return;
    }
    if (!socket.writableNeedDrain) stream.resume();
  };
  /**
   * Ends both sides; what is in flight is recorded with `error`, a request the app never began to
   * answer with the 502 the edge answers it with.
   */
  const end = (error: string, reset: boolean) => {
    if (done) return;
    done = true;
    for (const request of inFlight.splice(0)) {
      if (!request.answered && !reset) refusedAnswer(request, error);
      else record(request, error);
    }
    if (reset) {
      socket.destroy();
      if (!stream.closed && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
      return;
    }
    socket.end();
    if (!stream.closed && !stream.destroyed && !stream.writableEnded) stream.end();
    setTimeout(() => socket.destroy(), 5_000).unref();
  };

  stream.on('data', (chunk: Buffer) => {
    if (done && unreachable === null) return;
    if (held !== null) {
      held = Buffer.concat([held, chunk]);
      return;
    }
    let framed;
    try {
      framed = requests.write(chunk);
    } catch {
      // The edge passes on only requests its own parser read: this one is not HTTP after all.
      end('the request could not be read', true);
      return;
    }
    if (unreachable !== null) return;
    toApp(framed.out);
    if (requests.holding) {
      // Nothing more is read until the app says whether it upgraded (release resumes).
      held = framed.rest ?? Buffer.alloc(0);
      stream.pause();
    }
  });
  stream.on('end', () => {
    if (!done) socket.end();
  });
  stream.on('close', () => {
    if (done) return;
    // Reset by the edge: the public client went away, or the request went over the edge's limits.
    for (const request of inFlight) request.exchange?.noResponse(CLIENT_WENT_AWAY_STATUS);
    end('the public client went away', true);
  });
  socket.on('drain', () => stream.resume());
  stream.on('drain', () => socket.resume());

  socket.once('connect', () => {
    if (!stream.closed && !stream.destroyed) stream.respond({ ':status': 200 });
  });
  socket.on('data', (chunk: Buffer) => {
    let out: Buffer[];
    try {
      out = responses.write(chunk).out;
    } catch {
      // Not HTTP the parser reads: passed on all the same, captured no further.
      responses.raw = true;
      out = [chunk];
    }
    if (out.length > 0 && !writeParts(stream, (part) => stream.write(part), out)) socket.pause();
  });
  socket.on('end', () => {
    try {
      responses.finish();
    } catch {
      // an incomplete response: recorded below
    }
    end(
      inFlight[0]?.answered
        ? 'the app closed the connection in the middle of its response'
        : 'the app closed the connection before answering',
      false,
    );
  });
  socket.on('error', (error: NodeJS.ErrnoException) => {
    if (!socket.connecting && stream.headersSent) {
      end(
        error.code === 'ECONNRESET'
          ? 'the app closed the connection in the middle of its response'
          : error.message,
        true,
      );
      return;
    }
    const why =
      error.code === 'ECONNREFUSED'
        ? `nothing is listening on ${options.localHost}:${options.localPort}`
        : error.message;
    unreachable = why;
    for (const request of inFlight.splice(0)) refusedAnswer(request, why);
    if (!stream.headersSent && !stream.closed && !stream.destroyed) {
      stream.respond(
        { ':status': 502, [STREAM_HEADERS.error]: why.replace(/[^\x20-\x7e]/g, ' ') },
        { endStream: true },
      );
    }
    // The stream is read on (requests already sent are captured with the error) until the edge ends it.
    done = true;
    stream.resume();
  });
}

/**
 * A head's headers (names and values alternating) without the tunnel's own: the edge's request id is
 * its last one, so the list is usually cut, not copied header by header.
 */
function withoutOurs(headers: readonly string[]): readonly string[] {
  const last = headers.length - 2;
  const cut =
    last >= 0 && headers[last]!.toLowerCase() === STREAM_HEADERS.requestId ? headers.slice(0, last) : headers;
  if (!hasAnyHeader(cut, OURS)) return cut;
  const kept: string[] = [];
  for (let i = 0; i + 1 < cut.length; i += 2)
    if (!OURS.has(cut[i]!.toLowerCase())) kept.push(cut[i]!, cut[i + 1]!);
  return kept;
}

/**
 * A relay stream (STREAM_HEADERS.relay): the edge did the connection's HTTP work, so its bytes and the
 * app's pass both ways as they are, and the exchanges come on capture streams.
 */
export function relayPipe(stream: PipeStream, options: Pick<PipeOptions, 'localHost' | 'localPort'>): void {
  const socket = connect(options.localPort, options.localHost);
  socket.setNoDelay(true);
  let connected = false;
  socket.once('connect', () => {
    connected = true;
    if (!stream.closed && !stream.destroyed) stream.respond({ ':status': 200 });
  });
  const write = gatheredWriter(socket, () => stream.pause());
  stream.on('data', (chunk: Buffer) => {
    if (!socket.destroyed && !write(chunk)) stream.pause();
  });
  socket.on('drain', () => stream.resume());
  socket.on('data', (chunk: Buffer) => {
    if (!stream.write(chunk)) socket.pause();
  });
  stream.on('drain', () => socket.resume());
  // Each side's end is passed on: the edge reads an app that closed its side as the end of a body, or
  // of an idle connection; the app reads the public client's end after an Upgrade.
  stream.on('end', () => socket.end());
  socket.on('end', () => {
    if (!stream.closed && !stream.destroyed && !stream.writableEnded) stream.end();
  });
  // Reset or ended by the edge: the public client went away, or the connection is over.
  stream.on('close', () => {
    if (stream.rstCode) {
      socket.destroy();
      return;
    }
    socket.end();
    setTimeout(() => socket.destroy(), 5_000).unref();
  });
  socket.on('error', (error: NodeJS.ErrnoException) => {
    if (stream.closed || stream.destroyed || (!connected && stream.headersSent)) return;
    if (connected) {
      // Cut off mid-conversation: the edge records what was under way as cut off.
      stream.close(http2.constants.NGHTTP2_CANCEL);
      return;
    }
    const why =
      error.code === 'ECONNREFUSED'
        ? `nothing is listening on ${options.localHost}:${options.localPort}`
        : error.message;
    stream.respond(
      { ':status': 502, [STREAM_HEADERS.error]: why.replace(/[^\x20-\x7e]/g, ' ') },
      { endStream: true },
    );
    // What the edge sent already is read and dropped until it ends the stream.
    stream.resume();
  });
}
