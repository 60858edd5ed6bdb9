// The inspector server: the Wharf UI and the Bridge over HTTP + WebSocket, for a browser, at
// http://127.0.0.1:4040 by default (the next free port when that one is taken).
//
// Security model. Any web page the user visits can send requests to 127.0.0.1, so this server treats
// the web as hostile:
// - It listens on 127.0.0.1 only, never on a public interface.
// - Every request must carry a Host header naming this server (127.0.0.1, localhost or [::1] with our
//   port): anything else is refused, which defeats DNS rebinding (evil.com resolving to 127.0.0.1).
// - State-changing requests and WebSocket upgrades with an Origin other than our own are refused, so a
//   page elsewhere cannot drive the Engine even through a form post or a socket.
// - Every Bridge call needs the per-launch token, which only the printed page URL carries (in the
//   fragment, so it never reaches a server log or a Referer). HTTP calls send it as X-Wharf-Token; the
//   WebSocket sends it as its first message and is closed with 4401 otherwise.
// - Static files (the UI's code) are served without the token: they hold no data.
//
// The traffic API under /api (api.ts, shaped like ngrok's agent API) follows the same rules: read-only
// GETs need only a local Host; its POSTs and DELETEs also need the token or a same-origin request.
//
// Each authenticated event socket is a session (its id comes in the `ready` message). A page sends that
// id with its calls as X-Wharf-Session, so the logs it follows (`logs.follow`) are unfollowed for it when
// its socket closes: a tab that is closed or reloaded leaves no log stream open behind it.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import fastifyStatic from '@fastify/static';
import fastifyWebsocket from '@fastify/websocket';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import {
  BRIDGE_EVENTS,
  BridgeError,
  bridgeFailure,
  isBridgeOperation,
  type Bridge,
  type BridgeResult,
  type LogFollow,
} from '../../shared/bridge.js';
import { LIMITS } from '../../shared/api/projects.js';
import { registerInspectorApi, sendProblem } from './api.js';

export const DEFAULT_INSPECTOR_PORT = 4040;
const PORT_ATTEMPTS = 10;
const AUTH_TIMEOUT_MS = 5_000;
/** JSON bodies of Bridge and API calls: a replay may carry an edited 1 MiB body, base64-encoded. */
const CALL_BODY_LIMIT = Math.max(LIMITS.jsonBodyBytes, 4 * 1024 * 1024);

export interface InspectorOptions {
  bridge: Bridge;
  /** Port to try first; 0 picks any free one. */
  port?: number;
  /** The built renderer (out/renderer); null serves the Bridge only. */
  staticDir: string | null;
  /** Fixed token (tests); a random one per launch otherwise. */
  token?: string;
}

export interface RunningInspector {
  port: number;
  origin: string;
  /** The page URL with the token, to print or open. */
  pageUrl: string;
  token: string;
  /** Whether the requested port was taken and another was used. */
  movedFromPort: number | null;
  close(): Promise<void>;
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

export async function startInspector(options: InspectorOptions): Promise<RunningInspector> {
  const token = options.token ?? randomBytes(24).toString('base64url');
  const requested = options.port ?? DEFAULT_INSPECTOR_PORT;
  const attempts = requested === 0 ? 1 : PORT_ATTEMPTS;
  let lastError: unknown;
  for (let i = 0; i < attempts; i++) {
    const port = requested === 0 ? 0 : requested + i;
    const bound = { port: 0 };
    const app = await buildInspector(options, token, bound);
    try {
      await app.listen({ host: '127.0.0.1', port });
    } catch (error) {
      await app.close();
      lastError = error;
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') continue;
      throw error;
    }
    const actual = (app.server.address() as AddressInfo).port;
    bound.port = actual;
    const origin = `http://127.0.0.1:${actual}`;
    return {
      port: actual,
      origin,
      pageUrl: `${origin}/#token=${token}`,
      token,
      movedFromPort: requested !== 0 && actual !== requested ? requested : null,
      close: () => app.close(),
    };
  }
  throw new Error(
    `ports ${requested}–${requested + attempts - 1} on 127.0.0.1 are all in use (${(lastError as Error).message}); choose another with --port`,
  );
}

function send(reply: FastifyReply, result: BridgeResult): FastifyReply {
  const status = result.ok ? 200 : result.error.status >= 400 ? result.error.status : 503;
  return reply.code(status).type('application/json; charset=utf-8').send(JSON.stringify(result));
}

function sameToken(given: unknown, token: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `bound.port` is set once listening: the Host and Origin checks compare against it. */
async function buildInspector(
  options: InspectorOptions,
  token: string,
  bound: { port: number },
): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, bodyLimit: LIMITS.jsonBodyBytes, forceCloseConnections: true });
  const allowedHosts = () => LOOPBACK_NAMES.map((name) => `${name}:${bound.port}`);
  const allowedOrigins = () => LOOPBACK_NAMES.map((name) => `http://${name}:${bound.port}`);

  app.addHook('onRequest', async (request, reply) => {
    const isUpgrade = request.headers.upgrade?.toLowerCase() === 'websocket';
    const refuse = (message: string) => {
      // A refused upgrade's socket belongs to no HTTP connection any more: end it with the answer.
      if (isUpgrade) reply.raw.once('finish', () => request.raw.socket.destroy());
      reply.header('connection', 'close');
      if (request.url.startsWith('/api/')) return sendProblem(reply, 'forbidden', 403, message);
      return reply.code(403).type('text/plain; charset=utf-8').send(message);
    };
    const host = request.headers.host?.toLowerCase();
    if (!host || !allowedHosts().includes(host)) {
      return refuse(`refused: this server only answers as 127.0.0.1:${bound.port}`);
    }
    const origin = request.headers.origin;
    const changesState = request.method !== 'GET' && request.method !== 'HEAD';
    if (
      (changesState || isUpgrade) &&
      origin !== undefined &&
      !allowedOrigins().includes(origin.toLowerCase())
    ) {
      return refuse(`refused: requests from ${origin} may not use this server`);
    }
    return undefined;
  });

  /** Per event socket: how many times it follows each project. */
  const sessions = new Map<string, Map<string, number>>();
  const followsOf = (request: FastifyRequest): Map<string, number> | null => {
    const session = request.headers['x-wharf-session'];
    return typeof session === 'string' ? (sessions.get(session) ?? null) : null;
  };
  const releaseSession = async (session: string) => {
    const follows = sessions.get(session);
    sessions.delete(session);
    for (const [id, count] of follows ?? []) {
      for (let i = 0; i < count; i++)
        await options.bridge.invoke('logs.unfollow', { id }).catch(() => undefined);
    }
  };
  app.addHook('preClose', async () => {
    await Promise.all([...sessions.keys()].map(releaseSession));
  });

  const requireToken = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!sameToken(request.headers['x-wharf-token'], token)) {
      return send(reply, {
        ok: false,
        error: {
          code: 'token_refused',
          status: 401,
          detail: 'missing or wrong X-Wharf-Token: open the page from the URL `wharf app` printed',
        },
      });
    }
    return undefined;
  };

  // Archives for projects.upload arrive raw; everything else is JSON.
  app.addContentTypeParser(
    'application/octet-stream',
    { parseAs: 'buffer', bodyLimit: LIMITS.uploadBytes },
    (_request, body, done) => done(null, body),
  );

  app.post<{ Params: { operation: string } }>(
    '/bridge/invoke/:operation',
    { preHandler: requireToken, bodyLimit: CALL_BODY_LIMIT },
    async (request, reply) => {
      const { operation } = request.params;
      if (!isBridgeOperation(operation) || operation === 'projects.upload') {
        return send(
          reply,
          bridgeFailure(new BridgeError('unknown_operation', 404, `unknown operation ${operation}`)),
        );
      }
      try {
        const value = await options.bridge.invoke(operation, (request.body ?? undefined) as never);
        const follows = followsOf(request);
        if (follows && operation === 'logs.follow') {
          const id = (value as LogFollow).projectId;
          follows.set(id, (follows.get(id) ?? 0) + 1);
        } else if (follows && operation === 'logs.unfollow') {
          const id = (request.body as { id: string }).id;
          const count = follows.get(id) ?? 0;
          if (count > 1) follows.set(id, count - 1);
          else follows.delete(id);
        }
        return send(reply, { ok: true, value });
      } catch (error) {
        return send(reply, bridgeFailure(error));
      }
    },
  );

  app.post<{ Params: { id: string }; Querystring: { fileName?: string } }>(
    '/bridge/upload/:id',
    { preHandler: requireToken, bodyLimit: LIMITS.uploadBytes },
    async (request, reply) => {
      if (!Buffer.isBuffer(request.body)) {
        return send(
          reply,
          bridgeFailure(
            new BridgeError('unsupported_media_type', 415, 'send the archive as application/octet-stream'),
          ),
        );
      }
      try {
        const data = new Uint8Array(request.body.buffer, request.body.byteOffset, request.body.byteLength);
        const value = await options.bridge.invoke('projects.upload', {
          id: request.params.id,
          fileName: request.query.fileName ?? 'upload.tar.gz',
          data,
        });
        return send(reply, { ok: true, value });
      } catch (error) {
        return send(reply, bridgeFailure(error));
      }
    },
  );

  await registerInspectorApi(app, {
    bridge: options.bridge,
    hasToken: (request) => sameToken(request.headers['x-wharf-token'], token),
    origins: allowedOrigins,
    bodyLimit: CALL_BODY_LIMIT,
  });

  await app.register(fastifyWebsocket, { options: { maxPayload: 64 * 1024 } });
  app.get('/bridge/events', { websocket: true }, (socket: WebSocket) => {
    let unsubscribe: Array<() => void> = [];
    let session: string | null = null;
    const timer = setTimeout(() => socket.close(4401, 'authenticate first'), AUTH_TIMEOUT_MS);
    socket.once('message', (data) => {
      clearTimeout(timer);
      let message: { type?: unknown; token?: unknown } = {};
      try {
        message = JSON.parse(String(data)) as typeof message;
      } catch {
        // treated as a failed authentication below
      }
      if (message.type !== 'auth' || !sameToken(message.token, token)) {
        socket.close(4401, 'wrong token');
        return;
      }
      unsubscribe = BRIDGE_EVENTS.map((event) =>
        options.bridge.on(event, (payload) => {
          if (socket.readyState === socket.OPEN)
            socket.send(JSON.stringify({ type: 'event', event, payload }));
        }),
      );
      session = randomBytes(16).toString('base64url');
      sessions.set(session, new Map());
      socket.send(JSON.stringify({ type: 'ready', session }));
    });
    socket.on('close', () => {
      clearTimeout(timer);
      if (session) void releaseSession(session);
      session = null;
      for (const off of unsubscribe) off();
      unsubscribe = [];
    });
  });

  if (options.staticDir && existsSync(options.staticDir)) {
    await app.register(fastifyStatic, { root: options.staticDir, index: 'index.html', cacheControl: false });
    app.addHook('onSend', async (_request, reply, payload) => {
      reply.header('x-content-type-options', 'nosniff');
      reply.header('x-frame-options', 'DENY');
      reply.header('referrer-policy', 'no-referrer');
      return payload;
    });
  } else {
    app.get('/', async (_request, reply) =>
      reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send(
          'The Wharf UI is not built: run `npm run build` in the wharf checkout. The Bridge API is available.',
        ),
    );
  }

  return app;
}
