// The little local HTTP apps the tunnel and replay suites put behind a tunnel: started on 127.0.0.1 (port
// 0 unless given), recording what they read if asked, closed with their open connections by `close()`
// in the test's cleanup, and able to listen again on the same port (an app that goes away and comes back).
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LocalApp {
  server: Server;
  /** The port it listens on (kept after `close()`, for `listen()` again). */
  port: number;
  /** Listens again on `port` after `close()`. */
  listen(): Promise<void>;
  /** Drops its open connections and stops listening; resolves once closed (also if it was not listening). */
  close(): Promise<void>;
}

/** One request as a recording app read it to its end. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The body as UTF-8 text. */
  body: string;
  /** Which of the app's connections it came on (1, 2, …). */
  connection: number;
}

export interface RecordingApp extends LocalApp {
  /** What the app read, in order (clear it with `received.length = 0`). */
  received: ReceivedRequest[];
}

function listenOn(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Starts `handler` (by default: every request answered with an empty 200) as an app on 127.0.0.1. */
export async function startLocalApp(
  handler: RequestListener = (_req, res) => res.end(),
  port = 0,
): Promise<LocalApp> {
  const server = createServer(handler);
  await listenOn(server, port);
  const app: LocalApp = {
    server,
    port: (server.address() as AddressInfo).port,
    listen: () => listenOn(server, app.port),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return app;
}

/** An app answering every request with `text(req)`, status 200, without waiting for its body. */
export function startTextApp(text: (req: IncomingMessage) => string): Promise<LocalApp> {
  return startLocalApp((req, res) => res.end(text(req)));
}

/**
 * An app that reads each request to its end, records it in `received`, then lets `answer` respond (the
 * request is given as read; `res` is still open). `before` sees each request first and may take it over
 * (e.g. destroy its socket) by returning true: such a request is neither read nor recorded.
 */
export async function startRecordingApp(
  answer: (req: ReceivedRequest, res: ServerResponse) => void,
  before?: (req: IncomingMessage, res: ServerResponse) => boolean,
): Promise<RecordingApp> {
  const received: ReceivedRequest[] = [];
  const connections = new WeakMap<object, number>();
  let count = 0;
  const app = await startLocalApp((req, res) => {
    if (before?.(req, res)) return;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        connection: connections.get(req.socket) ?? 0,
      };
      received.push(seen);
      answer(seen, res);
    });
  });
  app.server.on('connection', (socket) => connections.set(socket, ++count));
  return Object.assign(app, { received });
}

/** A port nothing listens on: the kernel gave it to a listener that is closed again. */
export async function closedPort(): Promise<number> {
  const app = await startLocalApp();
  await app.close();
  return app.port;
}

/** An app whose handler is async: one that fails answers 500 (if it had not answered yet) with the error's message. */
export function startAsyncApp(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): Promise<LocalApp> {
  return startLocalApp((req, res) => {
    handle(req, res).catch((error: Error) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(error.message);
    });
  });
}
