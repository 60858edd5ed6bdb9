// The tunnel's byte path at the edge: a public connection for a tunnel host carried whole over one
// stream of the tunnel connection, to a connection the client makes to the local app (core/tunnel/
// pipe.ts). The conduit (edge/conduit.ts) moves the bytes; this names the stream, captures each
// exchange, and answers as the client would when the local app cannot be reached. A client that parses
// the bytes itself is given each exchange's id in its request head; a relay client (the `relay`
// feature) parses nothing: the edge sends its app the Host it asked for, takes the app's hop-by-hop
// response headers out, and sends it the captures (capture-sender.ts).
import http2 from 'node:http2';
import { Exchange, RawHead, peerAddress } from '../../core/capture/capture.js';
import { headerValue } from '../../core/tunnel/http1.js';
import { STREAM_HEADERS, noAnswerText } from '../../core/tunnel/protocol.js';
import { type CarriedConnection, Conduit } from '../edge/conduit.js';
import { ConnectionForwarding, publicProto } from '../edge/forwarded.js';
import type { Tunnel } from './tunnel.js';

export interface TunnelConduitOptions extends CarriedConnection {
  tunnel: Tunnel;
  capture: boolean;
}

/** Opens a stream of the tunnel's connection for `socket` and carries the connection over it. */
export function openTunnelConduit(options: TunnelConduitOptions): Conduit {
  const { tunnel, socket, host } = options;
  const forwarding = new ConnectionForwarding(socket.remoteAddress ?? '', publicProto(socket));
  // What the client of this connection takes: it may change with the next connection, not this one's.
  const { captures } = tunnel;
  const relays = tunnel.relayNow;
  const appHost = tunnel.appHost ?? undefined;
  const remoteAddr = peerAddress(socket);
  const described = {
    ':authority': host,
    [STREAM_HEADERS.pipe]: '1',
    ...(relays ? { [STREAM_HEADERS.relay]: '1' } : {}),
    [STREAM_HEADERS.remoteAddr]: remoteAddr,
  };
  const stream = tunnel.mux
    ? tunnel.mux.open(described)
    : tunnel.session!.request(
        { ':method': 'POST', ':path': '/', ':scheme': 'http', ...described },
        { endStream: false },
      );
  const capturing = options.capture || captures !== null;
  const conduit = new Conduit({
    ...options,
    upstream: stream,
    abort: () => stream.close(http2.constants.NGHTTP2_CANCEL),
    responseHop: relays,
    admit: (head) => {
      // The tunnel's bodies grew (or shrank) past what suits this stream: the connection is routed
      // afresh, onto a stream of the other kind, once its responses so far are out.
      if (relays !== tunnel.relayNow) return null;
      const exchange = capturing
        ? new Exchange({
            tunnelId: tunnel.id,
            method: head.method,
            path: head.url,
            url: tunnel.url + head.url,
            httpVersion: `HTTP/${head.version}`,
            requestHeaders: RawHead.of(head.raw),
            remoteAddr,
          })
        : null;
      const { lines, bytes } = forwarding.for(headerValue(head.headers, 'host') ?? host);
      // A client that parses the bytes takes the exchange's id out of the head; a relay client gets it
      // with the exchange's record.
      if (relays) return { add: lines, addBytes: bytes, exchange, host: appHost };
      if (exchange) return { add: [...lines, `${STREAM_HEADERS.requestId}: ${exchange.id}`], exchange };
      return { add: lines, addBytes: bytes, exchange };
    },
    noAnswer: (why) => ({
      headers: [{ name: 'content-type', value: 'text/plain; charset=utf-8' }],
      body: Buffer.from(noAnswerText(why)),
    }),
    record: (exchange, error, head) => {
      tunnel.noteBodies(exchange.requestBody.keptBytes + exchange.responseBody.keptBytes);
      // A client that reads the bytes captures the exchange itself.
      tunnel.recordLater(exchange, error, head, relays ? captures : null, options.capture);
    },
  });
  stream.on('response', (headers: { ':status'?: number; [STREAM_HEADERS.error]?: string | string[] }) => {
    if (headers[':status'] === 200) return;
    conduit.unreachable(
      String(headers[STREAM_HEADERS.error] ?? 'the tunnel client could not reach the local app'),
    );
  });
  return conduit;
}
