// Which addresses an outbound connection of the platform may be aimed at (SMTP probes today): only
// public unicast ones. The ranges are ipaddr.js's (IANA's special-purpose registries); an address that
// carries an IPv4 address inside it (IPv4-mapped, 6to4) is judged by that address, and the forms a
// public host has no reason to use (IPv4-compatible, NAT64, Teredo) count as private whatever they carry.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * True unless `address` is a public unicast IPv4 or IPv6 address: loopback, RFC 1918, CGNAT
 * (100.64/10), link-local, multicast, 0/8, 192.0.0/24, benchmarking (198.18/15), 240/4 and broadcast,
 * documentation, unique-local (fc00::/7), NAT64 (64:ff9b::/96, 64:ff9b:1::/48), and IPv6 forms that
 * embed such an IPv4 address. Anything that is not an IP address at all is private too.
 */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return true;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // In hex first: ipaddr.js reads `::a.b.c.d` as IPv4-mapped, where a socket reads IPv4-compatible.
    parsed = ipaddr.parse(family === 6 ? new URL(`http://[${bare}]/`).hostname.slice(1, -1) : bare);
  } catch {
    return true;
  }
  return !isPublic(parsed);
}

function isPublic(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (address.kind() === 'ipv4') return address.range() === 'unicast';
  const v6 = address as ipaddr.IPv6;
  const parts = v6.parts;
  switch (v6.range()) {
    case 'ipv4Mapped':
      return isPublic(embeddedV4(parts[6]!, parts[7]!));
    case '6to4':
      return isPublic(embeddedV4(parts[1]!, parts[2]!));
    case 'unicast':
      // ::a.b.c.d (IPv4-compatible, deprecated): no public host is reached that way.
      return !parts.slice(0, 6).every((part) => part === 0);
    default:
      return false;
  }
}

function embeddedV4(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}
