// Routes of API.md §7 served over plain HTTP: the tunnel list, captured requests and replay. The
// tunnel connection itself and the live traffic feed are upgrades, handled by TunnelHub.upgrade.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { toDetail } from '../../core/capture/capture.js';
import {
  CapturedRequest,
  CapturedRequestDetail,
  TUNNEL_UPGRADE_PROTOCOL,
  Tunnel,
} from '../../shared/api/tunnels.js';
import { ApiError, notFound } from '../errors.js';
import type { FastifyReply } from 'fastify';
import type { ApiAnswer } from '../cluster/forward.js';
import type { TunnelHub } from './hub.js';
import { Tunnel as TunnelOfEdge } from './tunnel.js';

const TunnelParams = z.object({ tunnelUrl: z.string().min(1).max(300) });
const RequestParams = TunnelParams.extend({ requestId: z.string().min(1).max(100) });

export const tunnelRoutes: FastifyPluginAsyncZod<{ hub: TunnelHub }> = async (app, { hub }) => {
  const tags = ['tunnels'];

  app.get('/tunnels/connect', {
    config: { scope: 'deploy' },
    schema: {
      summary: `Connect a tunnel client: upgrade to "${TUNNEL_UPGRADE_PROTOCOL}" (or "websocket")`,
      description:
        'Without an Upgrade header this answers 426. With one, the 101 carries Wharf-Tunnel-Id, ' +
        'Wharf-Tunnel-Subdomain and Wharf-Tunnel-Url, and HTTP/2 runs over the connection with the edge as client.',
      tags,
      querystring: z.object({ subdomain: z.string().optional() }),
    },
    handler: async () => {
      throw new ApiError(
        'upgrade_required',
        `this endpoint is a connection upgrade: send "Connection: Upgrade" and "Upgrade: ${TUNNEL_UPGRADE_PROTOCOL}" (or websocket)`,
        undefined,
        { upgrade: TUNNEL_UPGRADE_PROTOCOL },
      );
    },
  });

  app.get('/tunnels', {
    config: { scope: 'deploy' },
    schema: { summary: 'Connected tunnels', tags, response: { 200: z.array(Tunnel) } },
    handler: async (request) => [
      ...hub.list(request.caller.accountId),
      // Those whose clients are connected to other nodes, as those nodes list them.
      ...(await hub.listElsewhere(request.caller.accountId, request, request.raw)),
    ],
  });

  app.get('/tunnels/:tunnelUrl/requests', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Captured requests of a tunnel, newest first (the last 1,000, in memory)',
      tags,
      params: TunnelParams,
      response: { 200: z.array(CapturedRequest) },
    },
    handler: async (request, reply) => {
      const tunnel = await hub.locate(request.raw, request.caller.accountId, request.params.tunnelUrl);
      if (!(tunnel instanceof TunnelOfEdge))
        return sendOn(reply, await hub.forwardApi(tunnel, request, request.raw));
      return tunnel.ring.list();
    },
  });

  app.get('/tunnels/:tunnelUrl/requests/:requestId', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'One captured request with its bodies (base64, up to 1 MiB each)',
      tags,
      params: RequestParams,
      response: { 200: CapturedRequestDetail },
    },
    handler: async (request, reply) => {
      const tunnel = await hub.locate(request.raw, request.caller.accountId, request.params.tunnelUrl);
      if (!(tunnel instanceof TunnelOfEdge))
        return sendOn(reply, await hub.forwardApi(tunnel, request, request.raw));
      const exchange = tunnel.ring.get(request.params.requestId);
      if (!exchange) throw notFound(`request ${request.params.requestId}`);
      return toDetail(exchange);
    },
  });

  app.post('/tunnels/:tunnelUrl/replay/:requestId', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Send a captured request again through the tunnel',
      tags,
      params: RequestParams,
      response: { 200: CapturedRequest },
    },
    handler: async (request, reply) => {
      const tunnel = await hub.locate(request.raw, request.caller.accountId, request.params.tunnelUrl);
      if (!(tunnel instanceof TunnelOfEdge))
        return sendOn(reply, await hub.forwardApi(tunnel, request, request.raw));
      return hub.replay(request.caller.accountId, request.params.tunnelUrl, request.params.requestId);
    },
  });
};

/** The answer of the node that holds the tunnel, as it came. */
function sendOn(reply: FastifyReply, answer: ApiAnswer): FastifyReply {
  reply.code(answer.status);
  if (answer.contentType) reply.header('content-type', answer.contentType);
  return reply.send(answer.body);
}
