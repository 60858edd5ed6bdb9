// The tunnel's request-per-stream path at the client: a stream the edge opened for one public request
// is sent to the local app with undici and its response streamed back; a public Upgrade gets a TCP
// connection of its own (the handshake captured, the frames not). pipe.ts is the byte path.
import http2, { type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import {
  CLIENT_WENT_AWAY_STATUS,
  Exchange,
  ResponseHeadReader,
  headerList,
  headerListOf,
} from '../capture/capture.js';
import type { HeaderList } from '../../shared/api/tunnels.js';
import type { PipeOptions } from './pipe.js';
import { STREAM_HEADERS, h2HeadersToHttp1, noAnswerText, responseHeadersToH2 } from './protocol.js';

export interface AnswerOptions extends Omit<PipeOptions, 'localHost'> {
  /** Where the local app's requests go (its connections are kept alive). */
  pool: Dispatcher;
  /** The local app's host as the client was given it (unset: 127.0.0.1). */
  localHost: string | undefined;
}

/** One public request: forwarded to the local app, its response streamed back, the exchange captured. */
export function answerRequest(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  options: AnswerOptions,
): void {
  const method = String(headers[':method'] ?? 'GET');
  const path = String(headers[':path'] ?? '/');
  const authority = headers[':authority'] as string | undefined;
  const replayOf = (headers[STREAM_HEADERS.replayOf] as string | undefined) ?? null;
  const exchange = capturedExchange(options, headers, method, path, authority, [], replayOf);
  const localHost = options.hostFor(authority);
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
    if (exchange) options.emit(exchange.finish(reason));
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
      if (method !== 'HEAD' && typeof length === 'string' && /^\d+$/.test(length)) remaining = Number(length);
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
      if (exchange) options.emit(exchange.finish());
    },
    onResponseError: (_c, error: NodeJS.ErrnoException) => {
      fail(
        error.code === 'ECONNREFUSED'
          ? `nothing is listening on ${options.localHost ?? '127.0.0.1'}:${options.localPort}`
          : error.code === 'UND_ERR_SOCKET' || error.code === 'ECONNRESET'
            ? 'the app closed the connection in the middle of its response'
            : error.message,
      );
    },
  };
  try {
    options.pool.dispatch(
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
      if (exchange) options.emit(exchange.finish());
      return;
    }
    controller?.abort(new Error('the public client went away'));
    exchange?.noResponse(CLIENT_WENT_AWAY_STATUS);
    if (exchange) options.emit(exchange.finish('the public client went away'));
  });
}

/** A public Upgrade: the request head goes to the app over a new connection, then bytes flow raw. */
export function answerUpgrade(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  options: AnswerOptions,
): void {
  const socket = netConnect(options.localPort, options.localHost ?? '127.0.0.1');
  socket.setNoDelay(true);
  let hop: Record<string, string | undefined> = {};
  try {
    hop = JSON.parse(String(headers[STREAM_HEADERS.upgradeHeaders] ?? '{}')) as typeof hop;
  } catch {
    // defaults below
  }
  const lines = [`GET ${String(headers[':path'] ?? '/')} HTTP/1.1`];
  lines.push(`host: ${options.hostFor(headers[':authority'] as string | undefined)}`);
  for (const [name, value] of Object.entries(h2HeadersToHttp1(headers))) {
    for (const one of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${one}`);
  }
  lines.push(`connection: ${hop.connection ?? 'Upgrade'}`, `upgrade: ${hop.upgrade ?? 'websocket'}`);
  // The handshake is captured like any exchange; the frames that follow are not.
  const path = String(headers[':path'] ?? '/');
  const authority = headers[':authority'] as string | undefined;
  const exchange = capturedExchange(options, headers, 'GET', path, authority, [
    { name: 'connection', value: hop.connection ?? 'Upgrade' },
    { name: 'upgrade', value: hop.upgrade ?? 'websocket' },
  ]);
  let recorded = false;
  const record = (error: string | null) => {
    if (recorded || !exchange) return;
    recorded = true;
    options.emit(exchange.finish(error));
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
        ? `nothing is listening on ${options.localHost ?? 'localhost'}:${options.localPort}`
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

/**
 * The capture of a public request, null when the client does not capture. Host travels as HTTP/2's
 * :authority; the capture shows it as the public client sent it, then its headers but ours, then `more`.
 */
function capturedExchange(
  options: AnswerOptions,
  headers: IncomingHttpHeaders,
  method: string,
  path: string,
  authority: string | undefined,
  more: HeaderList,
  replayOf: string | null = null,
): Exchange | null {
  const { capture } = options;
  if (!capture) return null;
  return new Exchange({
    id: headers[STREAM_HEADERS.requestId] as string | undefined,
    tunnelId: capture.tunnelId,
    method,
    path,
    url: `${capture.url}${path}`,
    httpVersion: 'HTTP/1.1',
    requestHeaders: [
      ...(authority ? [{ name: 'host', value: authority }] : []),
      ...headerListOf(headers).filter((h) => !h.name.startsWith('wharf-')),
      ...more,
    ],
    remoteAddr: capture.remoteAddr,
    replayOf,
  });
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
