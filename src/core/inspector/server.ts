// The inspector server: the Wharf UI and the Bridge over HTTP + WebSocket, for a browser, at
// http://127.0.0.1:4040 by default (the next free port when that one is taken), and the ngrok-shaped
// traffic API under /api (api.ts) for local tools.
//
// Security model. Any web page the user visits can send requests to 127.0.0.1, and any local process of
// any user can connect to it and forge every header (Host, Origin, Cookie), so this server trusts only
// the per-launch token:
// - It listens on 127.0.0.1 only, never on a public interface.
// - Every request must carry a Host header naming this server (127.0.0.1, localhost or [::1] with our
//   port): anything else is refused, which defeats DNS rebinding (evil.com resolving to 127.0.0.1).
// - A request with an Origin other than our own is refused when it changes state, upgrades to a
//   WebSocket, or reaches /api or /bridge: a page elsewhere cannot drive the Engine or read through it,
//   even by a form post, a socket, or a page of another local port (same site, so it has our cookie).
// - Every /api and /bridge request needs the per-launch token: as the X-Wharf-Token header, or as the
//   HttpOnly, SameSite=Strict cookie this server sets only in answer to `POST /bridge/session` made with
//   the header (the page does that at boot, so its plain links — HAR and body downloads — work). The
//   token is compared in constant time; an Origin naming this server never stands in for it (a local
//   process forges one at will).
// - The token reaches the user in the printed page URL (in the fragment, so it never reaches a server
//   log or a Referer) and, for local scripts of the same user, in <WHARF_HOME>/inspector.json (mode
//   0600, removed on close).
// - The event WebSocket carries nothing until it is authenticated: by the cookie or header on the
//   upgrade (it is then `ready` at once), else by a first message `{ type: 'auth', token }` within 5 s;
//   a wrong or missing one closes it with 4401.
// - Static files (the UI's code) are served without the token: they hold no data.
//
// Each authenticated event socket is a session (its id comes in the `ready` message). A page sends that
// id with its calls as X-Wharf-Session, so the logs it follows (`logs.follow`) are unfollowed for it when
// its socket closes: a tab that is closed or reloaded leaves no log stream open behind it.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import fastifyStatic from '@fastify/static';
import fastifyWebsocket from '@fastify/websocket';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import {
  BRIDGE_EVENTS,
  BridgeError,
  bridgeFailure,
  type Bridge,
  type BridgeResult,
} from '../../shared/bridge.js';
import { isBridgeOperation } from '../../shared/bridge-inputs.js';
import { LIMITS } from '../../shared/api/projects.js';
import { BridgeSession } from '../bridge-session.js';
import { writeFileAtomic } from '../private-file.js';
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
  /**
   * Where to write `{ url, port, token, pid }` (mode 0600) while listening, for local scripts of the
   * same user (`<WHARF_HOME>/inspector.json`); removed on close.
   */
  infoFile?: string;
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
    const { infoFile } = options;
    if (infoFile) {
      try {
        writeInfoFile(infoFile, { url: origin, port: actual, token, pid: process.pid });
      } catch (error) {
        await app.close();
        throw error;
      }
    }
    return {
      port: actual,
      origin,
      pageUrl: `${origin}/#token=${token}`,
      token,
      movedFromPort: requested !== 0 && actual !== requested ? requested : null,
      close: async () => {
        if (infoFile) removeInfoFile(infoFile, token);
        await app.close();
      },
    };
  }
  throw new Error(
    `ports ${requested}–${requested + attempts - 1} on 127.0.0.1 are all in use (${(lastError as Error).message}); choose another with --port`,
  );
}

interface InspectorInfo {
  url: string;
  port: number;
  token: string;
  pid: number;
}

function writeInfoFile(file: string, info: InspectorInfo): void {
  writeFileAtomic(file, `${JSON.stringify(info, null, 2)}\n`, 0o600);
}

/** Removes the file unless another inspector (a second `wharf app`, say) has written its own since. */
function removeInfoFile(file: string, token: string): void {
  try {
    const info = JSON.parse(readFileSync(file, 'utf8')) as Partial<InspectorInfo>;
    if (info.token === token) rmSync(file, { force: true });
  } catch {
    // Gone already, or not ours to remove.
  }
}

/** The values of every cookie called `name` in a Cookie header. */
function cookieValues(header: string | undefined, name: string): string[] {
  if (!header) return [];
  const values: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) values.push(part.slice(eq + 1).trim());
  }
  return values;
}

function send(reply: FastifyReply, result: BridgeResult): FastifyReply {
  const status = result.ok ? 200 : result.error.status >= 400 ? result.error.status : 503;
  return reply.code(status).type('application/json; charset=utf-8').send(JSON.stringify(result));
}

/** Compared as digests, so neither the content nor the length of the secret leaks through timing. */
function sameToken(given: unknown, token: string): boolean {
  if (typeof given !== 'string' || given === '') return false;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(token));
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
  const foreignOrigin = (request: FastifyRequest): string | null => {
    const origin = request.headers.origin;
    return origin !== undefined && !allowedOrigins().includes(origin.toLowerCase()) ? origin : null;
  };
  const isUpgrade = (request: FastifyRequest) => request.headers.upgrade?.toLowerCase() === 'websocket';
  /** By the URL as sent, or by the route it reached (a path may be spelt `/%61pi/…`). */
  const isApi = (request: FastifyRequest) =>
    request.url === '/api' ||
    request.url.startsWith('/api/') ||
    request.routeOptions.url?.startsWith('/api/') === true;

  const refuse = (request: FastifyRequest, reply: FastifyReply, message: string) => {
    // A refused upgrade's socket belongs to no HTTP connection any more: end it with the answer.
    if (isUpgrade(request)) reply.raw.once('finish', () => request.raw.socket.destroy());
    reply.header('connection', 'close');
    if (isApi(request)) return sendProblem(reply, 'forbidden', 403, message);
    return reply.code(403).type('text/plain; charset=utf-8').send(message);
  };
  const refuseOrigin = (request: FastifyRequest, reply: FastifyReply, origin: string) =>
    refuse(request, reply, `refused: requests from ${origin} may not use this server`);

  app.addHook('onRequest', async (request, reply) => {
    const host = request.headers.host?.toLowerCase();
    if (!host || !allowedHosts().includes(host)) {
      return refuse(request, reply, `refused: this server only answers as 127.0.0.1:${bound.port}`);
    }
    const origin = foreignOrigin(request);
    const changesState = request.method !== 'GET' && request.method !== 'HEAD';
    if ((changesState || isUpgrade(request) || isApi(request)) && origin !== null) {
      return refuseOrigin(request, reply, origin);
    }
    return undefined;
  });

  // The page's cookie: its own secret (never the token itself), one name per port, since cookies are
  // shared by every port of a host and two inspectors may run side by side.
  const cookieSecret = randomBytes(24).toString('base64url');
  const cookieName = () => `wharf_inspector_${bound.port}`;
  const headerProves = (request: FastifyRequest) => sameToken(request.headers['x-wharf-token'], token);
  const authorized = (request: FastifyRequest) =>
    headerProves(request) ||
    cookieValues(request.headers.cookie, cookieName()).some((value) => sameToken(value, cookieSecret));
  const whereTheTokenIs = `it is in the URL \`wharf app\` or \`wharf http\` printed, after #token=${
    options.infoFile ? `, and in ${options.infoFile}` : ''
  }`;

  /** onRequest of every /bridge route: before any body is read, so a refused caller uploads nothing. */
  const bridgeGuard =
    (proves: (request: FastifyRequest) => boolean) =>
    async (request: FastifyRequest, reply: FastifyReply) => {
      // The global hook already refused this by raw URL; this catches any other spelling of the path.
      const origin = foreignOrigin(request);
      if (origin !== null) return refuseOrigin(request, reply, origin);
      if (proves(request)) return undefined;
      return send(reply, {
        ok: false,
        error: {
          code: 'token_refused',
          status: 401,
          detail: `missing or wrong inspector token: send it as X-Wharf-Token; ${whereTheTokenIs}`,
        },
      });
    };
  const requireToken = bridgeGuard(authorized);

  /** One Bridge session per event socket, by the id it sends its calls with (X-Wharf-Session). */
  const sessions = new Map<string, BridgeSession>();
  const sessionOf = (request: FastifyRequest): BridgeSession | null => {
    const session = request.headers['x-wharf-session'];
    return typeof session === 'string' ? (sessions.get(session) ?? null) : null;
  };
  const releaseSession = async (session: string) => {
    const bridgeSession = sessions.get(session);
    sessions.delete(session);
    await bridgeSession?.release();
  };
  app.addHook('preClose', async () => {
    await Promise.all([...sessions.keys()].map(releaseSession));
  });

  // Archives for projects.upload arrive raw; everything else is JSON.
  app.addContentTypeParser(
    'application/octet-stream',
    { parseAs: 'buffer', bodyLimit: LIMITS.uploadBytes },
    (_request, body, done) => done(null, body),
  );

  app.post<{ Params: { operation: string } }>(
    '/bridge/invoke/:operation',
    { onRequest: requireToken, bodyLimit: CALL_BODY_LIMIT },
    async (request, reply) => {
      const { operation } = request.params;
      if (!isBridgeOperation(operation) || operation === 'projects.upload') {
        return send(
          reply,
          bridgeFailure(new BridgeError('unknown_operation', 404, `unknown operation ${operation}`)),
        );
      }
      try {
        const input = (request.body ?? undefined) as never;
        const value = await (sessionOf(request) ?? options.bridge).invoke(operation, input);
        return send(reply, { ok: true, value });
      } catch (error) {
        return send(reply, bridgeFailure(error));
      }
    },
  );

  app.post<{ Params: { id: string }; Querystring: { fileName?: string } }>(
    '/bridge/upload/:id',
    { onRequest: requireToken, bodyLimit: LIMITS.uploadBytes },
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

  // The page trades the token (header) for the cookie at boot; a cookie alone cannot renew itself.
  app.post('/bridge/session', { onRequest: bridgeGuard(headerProves) }, async (_request, reply) =>
    reply
      .header('set-cookie', `${cookieName()}=${cookieSecret}; Path=/; HttpOnly; SameSite=Strict`)
      .header('cache-control', 'no-store')
      .code(204)
      .send(),
  );

  await registerInspectorApi(app, {
    bridge: options.bridge,
    guard: async (request, reply) => {
      const origin = foreignOrigin(request);
      if (origin !== null) return refuseOrigin(request, reply, origin);
      if (authorized(request)) return undefined;
      return sendProblem(
        reply,
        'unauthorized',
        401,
        `missing or wrong inspector token: send it as the X-Wharf-Token header; ${whereTheTokenIs}`,
      );
    },
    bodyLimit: CALL_BODY_LIMIT,
  });

  await app.register(fastifyWebsocket, { options: { maxPayload: 64 * 1024 } });
  app.get('/bridge/events', { websocket: true }, (socket: WebSocket, request: FastifyRequest) => {
    let unsubscribe: Array<() => void> = [];
    let session: string | null = null;
    let closed = false;
    // Nothing is subscribed, and so nothing sent, before this runs.
    const admit = () => {
      if (closed) return;
      unsubscribe = BRIDGE_EVENTS.map((event) =>
        options.bridge.on(event, (payload) => {
          if (socket.readyState === socket.OPEN)
            socket.send(JSON.stringify({ type: 'event', event, payload }));
        }),
      );
      session = randomBytes(16).toString('base64url');
      sessions.set(session, new BridgeSession(options.bridge));
      socket.send(JSON.stringify({ type: 'ready', session }));
    };
    // The page sends its auth message anyway; once admitted by the upgrade, it is not read.
    const preAuthorized = authorized(request);
    const timer = preAuthorized
      ? null
      : setTimeout(() => socket.close(4401, 'authenticate first'), AUTH_TIMEOUT_MS);
    if (preAuthorized) admit();
    else {
      socket.once('message', (data) => {
        if (timer) clearTimeout(timer);
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
        admit();
      });
    }
    socket.on('close', () => {
      closed = true;
      if (timer) clearTimeout(timer);
      if (session) void releaseSession(session);
      session = null;
      for (const off of unsubscribe) off();
      unsubscribe = [];
    });
  });

  // On every answer, the API's included: a page of another local port (same site, so it has our
  // cookie) that loads /api as a script or a frame gets nothing to run or to show.
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header('x-frame-options', 'DENY');
    reply.header('referrer-policy', 'no-referrer');
    return payload;
  });

  if (options.staticDir && existsSync(options.staticDir)) {
    await app.register(fastifyStatic, { root: options.staticDir, index: 'index.html', cacheControl: false });
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
