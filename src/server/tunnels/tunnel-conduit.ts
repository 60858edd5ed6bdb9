// The tunnel's byte path at the edge: a public connection for a tunnel host carried whole over one
// stream of the tunnel connection, to a connection the client makes to the local app (core/tunnel/
// pipe.ts). The conduit (edge/conduit.ts) moves the bytes; this names the stream, captures each
// exchange with the request id both sides share, and answers as the client would when the local app
// cannot be reached.
import http2 from 'node:http2';
import { Exchange, RawHead, peerAddress } from '../../core/capture/capture.js';
import { headerValue } from '../../core/tunnel/http1.js';
import { STREAM_HEADERS, noAnswerText } from '../../core/tunnel/protocol.js';
import { type CarriedConnection, Conduit } from '../edge/conduit.js';
import { forwardingLines, publicProto } from '../edge/forwarded.js';
import type { Tunnel } from './tunnel.js';

export interface TunnelConduitOptions extends CarriedConnection {
  tunnel: Tunnel;
  capture: boolean;
}

/** Opens a stream of the tunnel's connection for `socket` and carries the connection over it. */
export function openTunnelConduit(options: TunnelConduitOptions): Conduit {
  const { tunnel, socket, host } = options;
  const address = socket.remoteAddress ?? '';
  const proto = publicProto(socket);
  const stream = tunnel.session!.request(
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
  const conduit = new Conduit({
    ...options,
    upstream: stream,
    abort: () => stream.close(http2.constants.NGHTTP2_CANCEL),
    admit: (head) => {
      const exchange = options.capture
        ? new Exchange({
            tunnelId: tunnel.id,
            method: head.method,
            path: head.url,
            url: tunnel.url + head.url,
            httpVersion: `HTTP/${head.version}`,
            requestHeaders: RawHead.of(head.raw),
            remoteAddr: peerAddress(socket),
          })
        : null;
      const add = forwardingLines(address, headerValue(head.headers, 'host') ?? host, proto);
      if (exchange) add.push(`${STREAM_HEADERS.requestId}: ${exchange.id}`);
      return { add, exchange };
    },
    noAnswer: (why) => ({
      headers: [{ name: 'content-type', value: 'text/plain; charset=utf-8' }],
      body: Buffer.from(noAnswerText(why)),
    }),
    record: (exchange, error) => tunnel.record(exchange, error),
  });
  stream.on('response', (headers) => {
    if (headers[':status'] === 200) return;
    conduit.unreachable(
      String(headers[STREAM_HEADERS.error] ?? 'the tunnel client could not reach the local app'),
    );
  });
  return conduit;
}
