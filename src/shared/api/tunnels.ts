// API.md §7: tunnels and the requests captured through them.
import { z } from 'zod';
import { DNS_LABEL_MAX, DNS_LABEL_PATTERN } from '../dns-label.js';
import { Timestamp, idOf } from './common.js';

export const TUNNEL_HEADERS = {
  id: 'wharf-tunnel-id',
  subdomain: 'wharf-tunnel-subdomain',
  url: 'wharf-tunnel-url',
  /** Sent by the client on connect: the protocol features it speaks, comma-separated (`pipe`). */
  features: 'wharf-tunnel-features',
  /**
   * Sent by a client that offers `relay` and does not keep the public Host: the Host its app is sent
   * (`localhost:<port>`, or the host it was given), which the edge then puts in each request head.
   */
  appHost: 'wharf-tunnel-app-host',
  /**
   * Sent by the edge on its 101 when it took the client's `mux` feature: from the first byte after the
   * upgrade the connection carries the multiplexer's frames (core/tunnel/mux.ts), not HTTP/2 alone.
   */
  mux: 'wharf-tunnel-mux',
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

/** How `request_headers` and `response_headers` are built from the raw lists (README, API.md §7). */
export const HEADER_OBJECT_RULE =
  'Header names in lower case; a header sent more than once has its values joined with ", " in the order sent, except set-cookie, whose values are joined with a newline ("\\n", U+000A) (a cookie may itself hold ", ", so HTTP never folds set-cookie). The raw lists, in order and original case, are request_header_list and response_header_list.';

export const HeaderObject = z.record(z.string(), z.string()).meta({ description: HEADER_OBJECT_RULE });
export type HeaderObject = z.infer<typeof HeaderObject>;

/** The separator of repeated `set-cookie` values in a header object (HTTP never folds them with ", "). */
export const SET_COOKIE_SEPARATOR = '\n';

/** A header list as SPEC.md §2.4's object: lower-case names, repeated values joined (see HEADER_OBJECT_RULE). */
export function headerObject(list: HeaderList): HeaderObject {
  // A Map, then fromEntries: a header named `__proto__` becomes a field like any other.
  const joined = new Map<string, string>();
  for (const { name, value } of list) {
    const key = name.toLowerCase();
    const existing = joined.get(key);
    joined.set(
      key,
      existing === undefined
        ? value
        : `${existing}${key === 'set-cookie' ? SET_COOKIE_SEPARATOR : ', '}${value}`,
    );
  }
  return Object.fromEntries(joined);
}

/** `<host>:<port>` (SPEC.md §2.4), an IPv6 host in brackets as in URLs: `[::1]:53211`. */
export const RemoteAddr = z
  .string()
  .regex(/^(?:\[[0-9A-Fa-f:.]+\]|[^\s:[\]]+):\d{1,5}$/, 'must be <host>:<port>')
  .meta({ description: 'The public client as <host>:<port> (an IPv6 host in brackets)' });

export const CapturedRequest = z
  .object({
    id: idOf('req'),
    method: z.string(),
    path: z.string().meta({ description: 'Path and query as received' }),
    status_code: z.number().int().meta({
      description:
        "The status the public client got: the app's, or, when no response came from the app (tunnel offline, local app down, time-out), the one the edge or tunnel client answered (502, 504), with error saying why; 499 when the public client went away before any response",
    }),
    duration_ms: z.number().int().nonnegative().meta({ description: 'Whole milliseconds, rounded' }),
    request_headers: HeaderObject,
    response_headers: HeaderObject,
    request_size: z.number().int().nonnegative(),
    response_size: z.number().int().nonnegative(),
    remote_addr: RemoteAddr,
    timestamp: Timestamp,
    tunnel_id: idOf('tun'),
    url: z.string(),
    http_version: z.string(),
    request_header_list: HeaderList.meta({ description: 'Request headers in order and original case' }),
    response_header_list: HeaderList.meta({ description: 'Response headers in order and original case' }),
    error: z.string().nullable().meta({ description: 'Why no whole response came, e.g. "tunnel offline"' }),
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
    .max(DNS_LABEL_MAX)
    .regex(DNS_LABEL_PATTERN, 'must be a lowercase DNS label')
    .optional(),
});
