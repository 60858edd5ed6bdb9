// The inspector's traffic API under /api, shaped like ngrok's agent API (`/api/tunnels`,
// `/api/requests/http`) so its users find their way, answered from the Bridge (the Engine's tunnels and
// the Mirror's traffic history). Errors are RFC 9457 problem+json like the platform's.
//
// Access: every request here, reads included, needs the per-launch token, checked by the server's
// `guard` before any body is read (server.ts explains the model):
// - as the X-Wharf-Token header: what local tools send. They find the token in the URL `wharf http` or
//   `wharf app` printed (after #token=) or in <WHARF_HOME>/inspector.json (mode 0600, same user only);
// - or as the inspector page's HttpOnly, SameSite=Strict cookie, so the page's plain links (HAR and
//   body downloads) work.
// Without it: 401 problem+json `unauthorized`. Captured traffic holds other people's cookies and
// passwords, and any local process, of any user, can reach 127.0.0.1. An Origin header naming this
// server authorizes nothing (a local process forges it); a foreign Origin or Host is refused with 403.
import type {
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestAsyncHookHandler,
} from 'fastify';
import type { CapturedRequest, CapturedRequestDetail } from '../../shared/api/tunnels.js';
import {
  BridgeError,
  toBridgeError,
  type Bridge,
  type LocalTunnel,
  type ReplayInput,
  type TrafficQuery,
} from '../../shared/bridge.js';
import {
  ERROR_STATUS,
  problemBody,
  type ErrorCode,
  type FieldError,
  type ProblemBody,
} from '../../shared/errors.js';

export interface InspectorApiOptions {
  bridge: Bridge;
  /** Runs first on every /api request: answers the refusal itself, or lets the request through. */
  guard: onRequestAsyncHookHandler;
  /** The largest JSON body of a replay (an edited body travels base64-encoded). */
  bodyLimit: number;
}

const OWN_TITLES: Record<string, string> = {
  offline: 'Offline',
  not_configured: 'Not configured',
  unknown_operation: 'Unknown operation',
  token_refused: 'Token refused',
};

export function problemOf(code: string, status: number, detail: string, errors?: FieldError[]): ProblemBody {
  return problemBody(code, detail, { status, errors, title: OWN_TITLES[code] });
}

export function sendProblem(
  reply: FastifyReply,
  code: string,
  status: number,
  detail: string,
  errors?: FieldError[],
): FastifyReply {
  return reply
    .code(status)
    .type('application/problem+json; charset=utf-8')
    .send(JSON.stringify(problemOf(code, status, detail, errors)));
}

/** A Bridge error as problem+json; `offline` (status 0) is a 503. */
function sendError(reply: FastifyReply, error: unknown): FastifyReply {
  const bridgeError = toBridgeError(error);
  const status = bridgeError.status >= 400 ? bridgeError.status : 503;
  return sendProblem(reply, bridgeError.code, status, bridgeError.detail, bridgeError.errors);
}

/** Fastify's own errors (bad JSON, wrong media type, too large) as problem+json. */
function fromFastify(error: FastifyError): { code: ErrorCode; detail: string } {
  const status = error.statusCode ?? 500;
  if (error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY')
    return { code: 'invalid_json', detail: 'the body is not valid JSON' };
  if (status === 413) return { code: 'payload_too_large', detail: 'the request body is too large' };
  if (status === 415) return { code: 'unsupported_media_type', detail: 'send the body as application/json' };
  if (status >= 400 && status < 500) return { code: 'bad_request', detail: error.message };
  return { code: 'internal', detail: error.message || 'an unexpected error occurred' };
}

type ApiRequest = CapturedRequest & { uri: string; tunnel_name: string | null };

/** A captured request as this API lists it: with its `uri` and the tunnel's name, as ngrok's. */
function withUri<T extends CapturedRequest>(request: T): T & ApiRequest {
  return {
    ...request,
    uri: `/api/requests/http/${encodeURIComponent(request.id)}`,
    tunnel_name: tunnelNameOf(request.url),
  };
}

/** The tunnel's name is its subdomain: the first label of the public host. */
function tunnelNameOf(url: string): string | null {
  try {
    return new URL(url).hostname.split('.')[0] || null;
  } catch {
    return null;
  }
}

/** A tunnel in ngrok's shape (name, public_url, proto, config.addr), with Wharf's state beside it. */
function tunnelView(tunnel: LocalTunnel) {
  const name = tunnel.subdomain ?? tunnel.id;
  return {
    name,
    id: tunnel.id,
    uri: `/api/tunnels/${encodeURIComponent(name)}`,
    public_url: tunnel.url,
    proto: 'http' as const,
    config: { addr: `http://localhost:${tunnel.localPort}`, inspect: true },
    host_header: tunnel.hostHeader,
    state: tunnel.state,
    detail: tunnel.detail,
    started_at: tunnel.startedAt,
  };
}

type Query = Record<string, string | string[] | undefined>;

function one(query: Query, name: string): string | undefined {
  const value = query[name];
  const text = Array.isArray(value) ? value.at(-1) : value;
  return text === undefined || text === '' ? undefined : text;
}

function list(query: Query, name: string): string[] | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  const items = (Array.isArray(value) ? value : [value])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  return items.length ? items : undefined;
}

function number(query: Query, name: string): number | undefined {
  const text = one(query, name);
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !Number.isFinite(value)) {
    throw new BridgeError('validation_failed', 422, `${name} must be a number`, [
      { path: name, message: 'must be a number' },
    ]);
  }
  return value;
}

export async function registerInspectorApi(
  app: FastifyInstance,
  options: InspectorApiOptions,
): Promise<void> {
  const { bridge } = options;

  /** The tunnel filter for `tunnel_name`: a running tunnel's id, else the name itself (a subdomain). */
  const tunnelFilter = async (name: string | undefined): Promise<string | undefined> => {
    if (name === undefined) return undefined;
    const tunnels = await bridge.invoke('tunnels.list', undefined);
    const found = tunnels.find((t) => t.subdomain === name || t.id === name);
    return found?.id ?? name;
  };

  const trafficQuery = async (query: Query): Promise<TrafficQuery> => {
    const tunnelId = await tunnelFilter(one(query, 'tunnel_name'));
    const q = one(query, 'q');
    const before = one(query, 'before');
    const path = one(query, 'path');
    const header = one(query, 'header');
    const methods = list(query, 'method');
    const statuses = list(query, 'status');
    const limit = number(query, 'limit');
    const minDurationMs = number(query, 'min_duration');
    const maxDurationMs = number(query, 'max_duration');
    return {
      ...(tunnelId === undefined ? {} : { tunnelId }),
      ...(q === undefined ? {} : { q }),
      ...(before === undefined ? {} : { before }),
      ...(path === undefined ? {} : { path }),
      ...(header === undefined ? {} : { header }),
      ...(methods === undefined ? {} : { methods }),
      ...(statuses === undefined ? {} : { statuses }),
      ...(limit === undefined ? {} : { limit: Math.max(1, Math.floor(limit)) }),
      ...(minDurationMs === undefined ? {} : { minDurationMs }),
      ...(maxDurationMs === undefined ? {} : { maxDurationMs }),
    };
  };

  const sendHar = (reply: FastifyReply, har: string, fileName: string) =>
    reply
      .type('application/json; charset=utf-8')
      .header('content-disposition', `attachment; filename="${fileName}"`)
      .send(har);

  await app.register(
    async (api) => {
      api.setErrorHandler((error: FastifyError, _request, reply) => {
        if (error instanceof BridgeError) return sendError(reply, error);
        const { code, detail } = fromFastify(error);
        return sendProblem(reply, code, ERROR_STATUS[code], detail);
      });
      // Anything else under /api: a problem, not the UI's index page or the static files' 404.
      const notFound = (request: FastifyRequest, reply: FastifyReply) =>
        sendProblem(reply, 'not_found', 404, `no ${request.method} ${request.url.split('?')[0]} in this API`);
      api.setNotFoundHandler(notFound);
      api.all('/*', notFound);

      api.addHook('onRequest', options.guard);

      api.get('/tunnels', async () => {
        const tunnels = await bridge.invoke('tunnels.list', undefined);
        return { tunnels: tunnels.map(tunnelView), uri: '/api/tunnels' };
      });

      api.get<{ Params: { name: string } }>('/tunnels/:name', async (request, reply) => {
        const tunnels = await bridge.invoke('tunnels.list', undefined);
        const tunnel = tunnels.find(
          (t) => t.subdomain === request.params.name || t.id === request.params.name,
        );
        if (!tunnel)
          return sendProblem(reply, 'not_found', 404, `no tunnel ${request.params.name} runs here`);
        return tunnelView(tunnel);
      });

      api.post<{ Body: { addr?: unknown; subdomain?: unknown; name?: unknown; host_header?: unknown } }>(
        '/tunnels',
        async (request, reply) => {
          const body = request.body ?? {};
          const addr = typeof body.addr === 'number' ? String(body.addr) : body.addr;
          const port =
            typeof addr === 'string'
              ? /^(?:(?:https?:\/\/)?(?:localhost|127\.0\.0\.1):)?(\d{1,5})$/.exec(addr.trim())
              : null;
          if (!port) {
            return sendProblem(reply, 'validation_failed', 422, 'addr must be a local port such as 3000', [
              { path: 'addr', message: 'must be a port such as 3000 (or localhost:3000)' },
            ]);
          }
          const subdomain = body.subdomain ?? body.name;
          const tunnel = await bridge.invoke('tunnels.start', {
            port: Number(port[1]),
            ...(typeof subdomain === 'string' && subdomain !== '' ? { subdomain } : {}),
            ...(typeof body.host_header === 'string' ? { hostHeader: body.host_header } : {}),
          });
          return reply.code(201).send(tunnelView(tunnel));
        },
      );

      api.delete<{ Params: { name: string } }>('/tunnels/:name', async (request, reply) => {
        const tunnels = await bridge.invoke('tunnels.list', undefined);
        const tunnel = tunnels.find(
          (t) => t.subdomain === request.params.name || t.id === request.params.name,
        );
        if (!tunnel)
          return sendProblem(reply, 'not_found', 404, `no tunnel ${request.params.name} runs here`);
        await bridge.invoke('tunnels.stop', { id: tunnel.id });
        return reply.code(204).send();
      });

      api.get<{ Querystring: Query }>('/requests/http', async (request) => {
        const page = await bridge.invoke('traffic.list', await trafficQuery(request.query));
        return { uri: '/api/requests/http', requests: page.requests.map(withUri), total: page.total };
      });

      // A selection as one HAR: ?ids=a,b, or else what the list's filters give (limit: 200, up to 1,000).
      api.get<{ Querystring: Query }>('/requests/http.har', async (request, reply) => {
        let ids = list(request.query, 'ids');
        if (ids === undefined) {
          const query = await trafficQuery(request.query);
          const page = await bridge.invoke('traffic.list', query);
          ids = page.requests.map((r) => r.id);
          if (ids.length === 0)
            return sendProblem(reply, 'not_found', 404, 'no requests match: nothing to export');
        }
        return sendHar(reply, await bridge.invoke('traffic.har', { ids }), 'wharf-traffic.har');
      });

      api.get<{ Params: { id: string } }>('/requests/http/:id', async (request, reply) => {
        const { id } = request.params;
        if (id.endsWith('.har')) {
          const bare = id.slice(0, -'.har'.length);
          return sendHar(reply, await bridge.invoke('traffic.har', { ids: [bare] }), `${bare}.har`);
        }
        const detail: CapturedRequestDetail = await bridge.invoke('traffic.get', { id });
        return withUri(detail);
      });

      api.get<{ Params: { id: string } }>('/requests/http/:id/curl', async (request, reply) => {
        const curl = await bridge.invoke('traffic.curl', { id: request.params.id });
        return reply.type('text/plain; charset=utf-8').send(`${curl}\n`);
      });

      // The captured bodies as downloads. Never shown inline: an HTML body served from this origin
      // could otherwise run script here.
      for (const part of ['request', 'response'] as const) {
        api.get<{ Params: { id: string } }>(`/requests/http/:id/${part}-body`, async (request, reply) => {
          const detail = await bridge.invoke('traffic.get', { id: request.params.id });
          const body = detail[`${part}_body`];
          return reply
            .type('application/octet-stream')
            .header('content-disposition', `attachment; filename="${detail.id}-${part}.bin"`)
            .header('content-security-policy', "sandbox; default-src 'none'")
            .header('x-content-type-options', 'nosniff')
            .header('x-wharf-truncated', String(detail[`${part}_body_truncated`]))
            .send(body ? Buffer.from(body, 'base64') : Buffer.alloc(0));
        });
      }

      // Replay (ngrok's POST /api/requests/http): 200 with the new exchange, bodies included.
      api.post<{ Body: Partial<ReplayInput> & { id?: unknown } }>(
        '/requests/http',
        { bodyLimit: options.bodyLimit },
        async (request) => {
          const body = request.body;
          if (typeof body !== 'object' || body === null || typeof body.id !== 'string' || body.id === '') {
            throw new BridgeError('validation_failed', 422, 'id must be the id of a captured request', [
              { path: 'id', message: 'is required' },
            ]);
          }
          const input: ReplayInput = { id: body.id };
          if (body.method !== undefined) input.method = body.method;
          if (body.path !== undefined) input.path = body.path;
          if (body.headers !== undefined) input.headers = body.headers;
          if (body.body !== undefined) input.body = body.body;
          return withUri(await bridge.invoke('traffic.replay', input));
        },
      );

      api.delete<{ Querystring: Query }>('/requests/http', async (request, reply) => {
        const tunnelId = await tunnelFilter(one(request.query, 'tunnel_name'));
        await bridge.invoke('traffic.clear', tunnelId === undefined ? {} : { tunnelId });
        return reply.code(204).send();
      });
    },
    { prefix: '/api' },
  );
}
