// API.md §7: tunnels and the requests captured through them.
import { z } from 'zod';
import { Timestamp, idOf } from './common.js';

export const TUNNEL_HEADERS = {
  id: 'wharf-tunnel-id',
  subdomain: 'wharf-tunnel-subdomain',
  url: 'wharf-tunnel-url',
} as const;

export const TUNNEL_UPGRADE_PROTOCOL = 'wharf-tunnel';

export const CAPTURE_LIMITS = { bodyBytes: 1024 * 1024, perTunnel: 1000 } as const;

export const Tunnel = z
  .object({
    id: idOf('tun'),
    subdomain: z.string(),
    url: z.string(),
    connected_at: Timestamp,
    requests_captured: z.number().int().nonnegative(),
  })
  .meta({ id: 'Tunnel' });
export type Tunnel = z.infer<typeof Tunnel>;

/** Headers in their original order and case, as HAR keeps them. */
export const HeaderList = z.array(z.object({ name: z.string(), value: z.string() }));
export type HeaderList = z.infer<typeof HeaderList>;

export const CapturedRequest = z
  .object({
    id: idOf('req'),
    tunnel_id: idOf('tun'),
    method: z.string(),
    path: z.string().meta({ description: 'Path and query as received' }),
    url: z.string(),
    http_version: z.string(),
    status_code: z.number().int().nullable(),
    duration_ms: z.number().nullable(),
    request_headers: HeaderList,
    response_headers: HeaderList,
    request_size: z.number().int().nonnegative(),
    response_size: z.number().int().nonnegative(),
    remote_addr: z.string().nullable(),
    started_at: Timestamp,
    error: z.string().nullable().meta({ description: 'Why no response came, e.g. "tunnel offline"' }),
    replay_of: idOf('req').nullable(),
  })
  .meta({ id: 'CapturedRequest' });
export type CapturedRequest = z.infer<typeof CapturedRequest>;

export const CapturedRequestDetail = CapturedRequest.extend({
  request_body: z.string().nullable().meta({ description: 'base64' }),
  response_body: z.string().nullable().meta({ description: 'base64' }),
  request_body_truncated: z.boolean(),
  response_body_truncated: z.boolean(),
}).meta({ id: 'CapturedRequestDetail' });
export type CapturedRequestDetail = z.infer<typeof CapturedRequestDetail>;

export const TunnelConnectQuery = z.object({
  subdomain: z
    .string()
    .max(63)
    .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'must be a lowercase DNS label')
    .optional(),
});
