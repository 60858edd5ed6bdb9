// The forwarding headers the edges (app and tunnel) give an app about the public hop. What a public
// client sends in them is never passed on: the edge is where requests enter.
import { appendedLines } from '../../core/tunnel/http1.js';

/** RFC 7239 `Forwarded` for one hop: a v6 address bracketed and quoted, the host quoted. */
export function forwardedHeader(address: string, host: string, proto: 'http' | 'https' = 'http'): string {
  const node = address === '' ? 'unknown' : address.includes(':') ? `"[${address}]"` : address;
  return `for=${node};host=${JSON.stringify(host)};proto=${proto}`;
}

/**
 * The headers an edge gives an app about the public hop, replacing whatever the public client sent
 * under these names. `upgrade`: the request asks for a WebSocket (its proto is then `ws` or `wss`).
 */
export function forwardingHeaders(
  address: string,
  host: string,
  proto: 'http' | 'https',
  upgrade = false,
): Record<string, string> {
  return {
    'x-forwarded-for': address,
    'x-forwarded-proto': upgrade ? (proto === 'https' ? 'wss' : 'ws') : proto,
    'x-forwarded-host': host,
    'x-forwarded-port': /:(\d+)$/.exec(host)?.[1] ?? (proto === 'https' ? '443' : '80'),
    'x-real-ip': address,
    forwarded: forwardedHeader(address, host, proto),
  };
}

/** forwardingHeaders as `name: value` lines, for a request head the byte path writes. */
export function forwardingLines(
  address: string,
  host: string,
  proto: 'http' | 'https',
  upgrade = false,
): string[] {
  return Object.entries(forwardingHeaders(address, host, proto, upgrade)).map(
    ([name, value]) => `${name}: ${value}`,
  );
}

/** The scheme the public client used: `https` when its connection to the edge (or the front) is TLS. */
export function publicProto(socket: object): 'http' | 'https' {
  return (socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http';
}

/** A connection's forwarding lines, and their bytes as a head's edit appends them (editHead). */
export interface ForwardingLines {
  lines: readonly string[];
  bytes: Buffer;
}

/**
 * The forwarding lines of one public connection, made again only when a request names another Host
 * (or asks for an upgrade) than the one before it: a connection's requests nearly always name the same,
 * and the lines cost more to make than the rest of the head's edit.
 */
export class ConnectionForwarding {
  private host = '';
  private upgrade = false;
  private made: ForwardingLines | null = null;

  constructor(
    private readonly address: string,
    private readonly proto: 'http' | 'https',
  ) {}

  /** The lines for a request naming `host`. */
  for(host: string, upgrade = false): ForwardingLines {
    if (this.made === null || host !== this.host || upgrade !== this.upgrade) {
      const lines = forwardingLines(this.address, host, this.proto, upgrade);
      this.made = { lines, bytes: appendedLines(lines) };
      this.host = host;
      this.upgrade = upgrade;
    }
    return this.made;
  }
}
