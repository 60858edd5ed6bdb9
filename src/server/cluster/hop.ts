// The internal hop between platform nodes: a node that receives a public request for a tunnel another
// node holds sends it on to that node with `Wharf-Node-Hop`, which says who the public client was
// (address and scheme) and is signed with the cluster's shared secret. The receiving node believes that
// client address only under a valid signature, never forwards a signed request again (no loops), and
// strips the header before the request goes on to the tunnel.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const HOP_HEADER = 'wharf-node-hop';
/** How old a signed hop may be (clocks of the nodes may differ a little). */
const HOP_MAX_AGE_MS = 60_000;

export interface HopClient {
  /** The public client's address, as the first node saw it. */
  address: string;
  proto: 'http' | 'https';
}

/** Requests that came over a verified hop, and the client they came from. */
const hopped = new WeakMap<IncomingMessage, HopClient & { node: string }>();

/** Signs hops with a key of its own, derived from the cluster's shared secret. */
export class HopSigner {
  private readonly key: Buffer;

  constructor(
    secret: Uint8Array,
    private readonly nodeId: string,
  ) {
    this.key = createHmac('sha256', secret).update('wharf node hop v1').digest();
  }

  /** The header value for a request of `client` for `host`, forwarded by this node now. */
  sign(client: HopClient, host: string): string {
    const at = Date.now().toString(36);
    const fields = [this.nodeId, at, client.address || '-', client.proto];
    return [...fields, this.mac(fields, host)].join(' ');
  }

  /**
   * Whether `req` came over a valid hop. If so, it is remembered with its client (clientOf) and the
   * header goes from the request; a request with a header that does not verify is refused (false and
   * `forged`), since only a node can sign one.
   */
  verify(req: IncomingMessage, host: string): { hopped: boolean; forged: boolean } {
    const value = req.headers[HOP_HEADER];
    if (value === undefined) return { hopped: false, forged: false };
    strip(req);
    if (typeof value !== 'string') return { hopped: false, forged: true };
    const fields = value.split(' ');
    if (fields.length !== 5) return { hopped: false, forged: true };
    const [node, at, address, proto, mac] = fields as [string, string, string, string, string];
    const age = Date.now() - parseInt(at, 36);
    if (!(Math.abs(age) <= HOP_MAX_AGE_MS) || (proto !== 'http' && proto !== 'https'))
      return { hopped: false, forged: true };
    const expected = Buffer.from(this.mac([node, at, address, proto], host));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given))
      return { hopped: false, forged: true };
    hopped.set(req, { node, address: address === '-' ? '' : address, proto });
    return { hopped: true, forged: false };
  }

  private mac(fields: string[], host: string): string {
    return createHmac('sha256', this.key)
      .update([...fields, host].join('\n'))
      .digest('base64url');
  }
}

/** The public client of a request: the hop's when it came from another node, else its own socket's. */
export function clientOf(req: IncomingMessage, proto: 'http' | 'https'): HopClient {
  const hop = hopped.get(req);
  return hop
    ? { address: hop.address, proto: hop.proto }
    : { address: req.socket.remoteAddress ?? '', proto };
}

/** Whether `req` already came over a hop from another node (it is then never forwarded again). */
export function isHopped(req: IncomingMessage): boolean {
  return hopped.has(req);
}

/** Removes the hop header from the request, in both of Node's views of its headers. */
function strip(req: IncomingMessage): void {
  delete req.headers[HOP_HEADER];
  const raw = req.rawHeaders;
  for (let i = raw.length - 2; i >= 0; i -= 2) {
    if (raw[i]!.toLowerCase() === HOP_HEADER) raw.splice(i, 2);
  }
}
