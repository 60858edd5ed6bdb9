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
import { z } from 'zod';
import type { CapturedRequest, CapturedRequestDetail } from '../../shared/api/tunnels.js';
import {
  BridgeError,
  toBridgeError,
  type Bridge,
  type LocalTunnel,
  type ReplayInput,
  type TrafficQuery,
} from '../../shared/bridge.js';
import { checkedBy } from '../../shared/bridge-inputs.js';
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

/** A query-string parameter: its last value, '' read as not given. */
const lastValue = (value: unknown) => {
  const text = Array.isArray(value) ? value.at(-1) : value;
  return text === '' ? undefined : text;
};

/** One text parameter. */
const text = z.preprocess(lastValue, z.string().optional());

/** A list parameter: repeated, or comma-separated, or both; blanks dropped; none reads as not given. */
const textList = z.preprocess((value) => {
  if (value === undefined) return undefined;
  const items = (Array.isArray(value) ? value : [value])
    .flatMap((item: string) => item.split(','))
    .map((item) => item.trim())
    .filter((item) => item !== '');
  return items.length ? items : undefined;
}, z.array(z.string()).optional());

/** A number parameter, digits with an optional fraction. */
const numberText = z.preprocess(
  lastValue,
  z
    .string()
    .regex(/^\d+(\.\d+)?$/, { error: 'must be a number' })
    .transform(Number)
    .optional(),
);

/** The traffic list's query string (ngrok's names), as a Bridge traffic query but for the tunnel. */
const trafficQueryString = z
  .object({
    tunnel_name: text,
    q: text,
    before: text,
    path: text,
    header: text,
    method: textList,
    status: textList,
    limit: numberText,
    min_duration: numberText,
    max_duration: numberText,
  })
  .transform(({ tunnel_name: tunnelName, method, status, limit, min_duration, max_duration, ...rest }) => ({
    tunnelName,
    query: {
      ...withoutUndefined(rest),
      ...(method === undefined ? {} : { methods: method }),
      ...(status === undefined ? {} : { statuses: status }),
      ...(limit === undefined ? {} : { limit: Math.max(1, Math.floor(limit)) }),
      ...(min_duration === undefined ? {} : { minDurationMs: min_duration }),
      ...(max_duration === undefined ? {} : { maxDurationMs: max_duration }),
    } satisfies Omit<TrafficQuery, 'tunnelId'>,
  }));

/** `POST /api/tunnels`'s body, ngrok's shape: `addr` a port (or localhost:port), `name` the subdomain. */
const startTunnelBody = z.preprocess(
  (value) => value ?? {},
  z.object({
    addr: z.preprocess(
      (addr) => (typeof addr === 'number' ? String(addr) : typeof addr === 'string' ? addr.trim() : addr),
      z
        .string({ error: 'must be a port such as 3000 (or localhost:3000)' })
        .regex(/^(?:(?:https?:\/\/)?(?:localhost|127\.0\.0\.1):)?(\d{1,5})$/, {
          error: 'must be a port such as 3000 (or localhost:3000)',
        })
        .transform((addr) => Number(/(\d{1,5})$/.exec(addr)![1])),
    ),
    subdomain: z.unknown().optional(),
    name: z.unknown().optional(),
    host_header: z.unknown().optional(),
  }),
);

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
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

  const trafficQuery = async (queryString: Query): Promise<TrafficQuery> => {
    const { tunnelName, query } = checkedBy(trafficQueryString, queryString);
    const tunnelId = await tunnelFilter(tunnelName);
    return { ...query, ...(tunnelId === undefined ? {} : { tunnelId }) };
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
          const body = checkedBy(startTunnelBody, request.body);
          const subdomain = body.subdomain ?? body.name;
          const tunnel = await bridge.invoke('tunnels.start', {
            port: body.addr,
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
        let ids = textList.parse(request.query.ids);
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
          // The Bridge checks the replay's fields (bridge-inputs.ts): its 422 names the one that is wrong.
          return withUri(await bridge.invoke('traffic.replay', request.body as ReplayInput));
        },
      );

      api.delete<{ Querystring: Query }>('/requests/http', async (request, reply) => {
        const tunnelId = await tunnelFilter(text.parse(request.query.tunnel_name));
        await bridge.invoke('traffic.clear', tunnelId === undefined ? {} : { tunnelId });
        return reply.code(204).send();
      });
    },
    { prefix: '/api' },
  );
}
