// The forwarding headers the edges (app and tunnel) give an app about the public hop. What a public
// client sends in them is never passed on: the edge is where requests enter.

/** RFC 7239 `Forwarded` for one hop: a v6 address bracketed and quoted, the host quoted. */
export function forwardedHeader(address: string, host: string, proto: 'http' | 'https' = 'http'): string {
  const node = address === '' ? 'unknown' : address.includes(':') ? `"[${address}]"` : address;
  return `for=${node};host=${JSON.stringify(host)};proto=${proto}`;
}

/**
 * The headers the tunnel edge gives an app about the public hop (the request path and the byte path
 * alike), replacing whatever the public client sent under these names.
 */
export function forwardingHeaders(
  address: string,
  host: string,
  proto: 'http' | 'https',
): Record<string, string> {
  return {
    'x-forwarded-for': address,
    'x-forwarded-proto': proto,
    'x-forwarded-host': host,
    'x-real-ip': address,
    forwarded: forwardedHeader(address, host, proto),
  };
}

/** The scheme the public client used: `https` when its connection to the edge (or the front) is TLS. */
export function publicProto(socket: object): 'http' | 'https' {
  return (socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http';
}
