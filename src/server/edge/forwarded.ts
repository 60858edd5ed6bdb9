// The forwarding headers the edges (app and tunnel) give an app about the public hop. What a public
// client sends in them is never passed on: the edge is where requests enter.

/** RFC 7239 `Forwarded` for one hop: a v6 address bracketed and quoted, the host quoted. */
export function forwardedHeader(address: string, host: string): string {
  const node = address === '' ? 'unknown' : address.includes(':') ? `"[${address}]"` : address;
  return `for=${node};host=${JSON.stringify(host)};proto=http`;
}
