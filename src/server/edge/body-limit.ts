// The app edge's hold on request bodies (config.limits.bodyBytes), whoever they are for: a larger
// Content-Length answered 413 unread, a chunked body counted as it streams by and cut where it goes over,
// the app request (or tunnel relay) it fed aborted with it.
import type { ClientRequest, IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { formatBytes } from '../limits.js';
import { cancelStream } from './http2.js';
import { sendPage } from './pages.js';

/** How long a connection closed after a 413 keeps reading what is still sent (nginx: lingering_time). */
const LINGER_MS = 2_000;

export class BodyLimit {
  /** The app request each proxied request became, so that a body over the limit can be cut there too. */
  private readonly upstream = new WeakMap<IncomingMessage, ClientRequest>();
  /** Responses answered 413 while their app request was being cut: its error must not end them. */
  private readonly tooLarge = new WeakSet<ServerResponse>();

  constructor(
    private readonly max: number,
    /** Ends the tunnel relay of `req`, if it has one. */
    private readonly cancelRelay: (req: IncomingMessage, reason: string) => void,
  ) {}

  /** `req` is being proxied as `proxyReq`: a body over the limit cuts that too. */
  proxied(req: IncomingMessage, proxyReq: ClientRequest): void {
    this.upstream.set(req, proxyReq);
  }

  /** Whether `res` was answered 413 (the error of its app request, cut, must not end it). */
  answered(res: ServerResponse): boolean {
    return this.tooLarge.has(res);
  }

  /**
   * Holds a request body to the limit: a larger Content-Length is answered 413 at once, unread; a body
   * without one (chunked) is counted as it streams by and cut where it goes over (413 if nothing was
   * answered yet, else the connection is closed). False when refused at once.
   */
  admit(req: IncomingMessage, res: ServerResponse): boolean {
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > this.max) {
      this.refuse(req, res);
      return false;
    }
    if (req.headers['transfer-encoding'] === undefined) return true;
    let seen = 0;
    const count = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen <= this.max) return;
      req.off('data', count);
      this.refuse(req, res);
    };
    req.on('data', count);
    // Counting must not set the body flowing before whoever relays it (proxy, tunnel) is listening.
    req.pause();
    // A body nobody read (a page, a static file) is read to its end once answered, still counted, so
    // that the connection can carry the next request.
    res.once('finish', () => {
      if (!req.complete) req.resume();
    });
    return true;
  }

  private refuse(req: IncomingMessage, res: ServerResponse): void {
    const limit = formatBytes(this.max);
    // The app (or tunnel client) must see its request aborted, not a shorter body as if it were whole.
    req.unpipe();
    this.upstream.get(req)?.destroy();
    this.cancelRelay(req, `the request body is over the edge's limit of ${limit}`);
    const http2 = req.httpVersionMajor === 2;
    if (res.headersSent) {
      // Over HTTP/2 only this request's stream goes: the connection carries others.
      if (http2) cancelStream(req);
      else req.socket.destroy();
      return;
    }
    this.tooLarge.add(res);
    if (!http2) {
      res.shouldKeepAlive = false;
      // The rest of the body is read and dropped until the connection closes after the answer, and a
      // moment more: closed under a body still arriving, the connection would be reset, and a client
      // (or the HAProxy front) still sending could lose the answer with it.
      lingerOnClose(req.socket);
    }
    req.resume();
    sendPage(res, {
      status: 413,
      title: 'Request body too large',
      message: `This address takes request bodies of up to ${limit}.`,
      hint: 'Send a smaller body, or split it over several requests.',
    });
  }
}

/** When Node's HTTP server closes `socket` after the answer, it ends it and reads on until LINGER_MS. */
function lingerOnClose(socket: Duplex): void {
  const closing = socket as Duplex & { destroySoon?: () => void };
  if (typeof closing.destroySoon !== 'function') return;
  closing.destroySoon = () => {
    closing.end();
    const timer = setTimeout(() => closing.destroy(), LINGER_MS);
    timer.unref();
    closing.once('close', () => clearTimeout(timer));
  };
}
