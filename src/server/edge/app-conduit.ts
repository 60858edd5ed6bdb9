// The byte path to a deployed app: a public HTTP/1.1 connection carried whole to one connection to the
// app's port, for as long as both last. The conduit (conduit.ts) moves the bytes; this asks the runtime
// on every request where the app runs now, so that a redeploy's new version takes the requests that
// come after its switch (the connection goes back to the edge and is routed afresh), and the old one
// is drained of the requests it was given (each request counts until its response is out).
import { connect } from 'node:net';
import { headerValue } from '../../core/tunnel/http1.js';
import type { EdgeTarget } from '../runtime/runtime.js';
import { type CarriedConnection, Conduit } from './conduit.js';
import { ConnectionForwarding, publicProto } from './forwarded.js';
import { notRunningPage, pageParts } from './pages.js';

export interface AppConduitOptions extends CarriedConnection {
  /** Where the app answered when the connection was routed: an address (loopback, a Swarm node's), a port. */
  appAddress: string;
  port: number;
  /**
   * Where the app runs now, asked on every request (which then counts toward the app's drain until
   * its `done`); null when the host no longer routes to this app.
   */
  target(): EdgeTarget | null;
}

/** Connects to the app's port and carries `socket` there. */
export function openAppConduit(options: AppConduitOptions): Conduit {
  const { socket, host, port } = options;
  const upstreamHost = options.appAddress;
  const forwarding = new ConnectionForwarding(socket.remoteAddress ?? '', publicProto(socket));
  const upstream = connect({ host: upstreamHost, port });
  upstream.setNoDelay(true);
  let connected = false;
  upstream.once('connect', () => (connected = true));
  const conduit = new Conduit({
    ...options,
    upstream,
    abort: () => upstream.destroy(),
    admit: (head) => {
      const target = options.target();
      if (target?.kind !== 'proxy') return null;
      if (target.port !== port || target.host !== upstreamHost) {
        target.done();
        return null;
      }
      const named = headerValue(head.headers, 'host') ?? host;
      const { lines, bytes } = forwarding.for(named, head.upgrade);
      return { add: lines, addBytes: bytes, exchange: null, done: target.done };
    },
    // Why an app does not answer is for its owner (in Wharf), as on the edge's other pages.
    noAnswer: () => pageParts(notRunningPage(502)),
  });
  upstream.on('error', (error: NodeJS.ErrnoException) => {
    if (!connected)
      conduit.unreachable(`the app's port could not be reached (${error.code ?? error.message})`);
  });
  return conduit;
}
