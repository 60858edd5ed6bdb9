// Which addresses an SMTP probe may connect to: one case per special-purpose range, each at its edges,
// and the IPv6 forms that carry an IPv4 address inside them.
import { describe, expect, it } from 'vitest';
import { isPrivateAddress } from '../../../../src/server/email/private-address.js';

describe('isPrivateAddress', () => {
  it.each([
    ['this network 0/8', '0.0.0.0', '0.255.255.255'],
    ['RFC 1918 10/8', '10.0.0.0', '10.255.255.255'],
    ['CGNAT 100.64/10', '100.64.0.0', '100.127.255.255'],
    ['loopback 127/8', '127.0.0.1', '127.255.255.254'],
    ['link-local 169.254/16', '169.254.0.1', '169.254.169.254'],
    ['RFC 1918 172.16/12', '172.16.0.1', '172.31.255.255'],
    ['IETF protocol assignments 192.0.0/24', '192.0.0.1', '192.0.0.255'],
    ['documentation 192.0.2/24', '192.0.2.1', '192.0.2.255'],
    ['RFC 1918 192.168/16', '192.168.0.1', '192.168.255.255'],
    ['benchmarking 198.18/15', '198.18.0.1', '198.19.255.255'],
    ['documentation 198.51.100/24', '198.51.100.1', '198.51.100.255'],
    ['documentation 203.0.113/24', '203.0.113.1', '203.0.113.255'],
    ['multicast 224/4', '224.0.0.1', '239.255.255.255'],
    ['reserved 240/4', '240.0.0.1', '255.255.255.254'],
    ['broadcast', '255.255.255.255', '255.255.255.255'],
    ['IPv6 unspecified and loopback', '::', '::1'],
    ['IPv4-mapped IPv6 of private addresses', '::ffff:127.0.0.1', '::ffff:a00:1'],
    ['IPv4-mapped IPv6 of CGNAT and link-local', '::ffff:100.64.0.1', '::ffff:169.254.169.254'],
    ['IPv4-translated IPv6 (RFC 6145)', '::ffff:0:7f00:1', '::ffff:0:808:808'],
    ['IPv4-compatible IPv6 (deprecated)', '::127.0.0.1', '::8.8.8.8'],
    ['NAT64 64:ff9b::/96', '64:ff9b::7f00:1', '64:ff9b::808:808'],
    ['local-use NAT64 64:ff9b:1::/48', '64:ff9b:1::a00:1', '64:ff9b:1:ffff::1'],
    ['6to4 2002::/16 of a private address', '2002:7f00:1::1', '2002:a00:1::'],
    ['6to4 2002::/16 of CGNAT and link-local', '2002:6440:1::1', '2002:a9fe:a9fe::1'],
    ['Teredo 2001::/32', '2001::1', '2001:0:ffff::1'],
    ['documentation 2001:db8::/32', '2001:db8::1', '2001:db8:ffff::1'],
    ['unique local fc00::/7', 'fc00::1', 'fdff:ffff::1'],
    ['link-local fe80::/10', 'fe80::1', 'febf:ffff::1'],
    ['link-local with a zone', 'fe80::1%eth0', 'fe80::1%1'],
    ['multicast ff00::/8', 'ff02::1', 'ff0e::1'],
    ['discard-only 100::/64', '100::1', '100::ffff'],
    ['not an IP address', 'mx.example.com', '127.1'],
  ])('refuses %s (%s, %s)', (_range, low, high) => {
    expect(isPrivateAddress(low), low).toBe(true);
    expect(isPrivateAddress(high), high).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '142.250.1.27',
    '100.63.255.255',
    '100.128.0.0',
    '172.15.255.255',
    '172.32.0.1',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '2a00:1450:4001:80b::201a',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '2002:808:808::1',
    '64:ff9a::1',
  ])('allows the public address %s', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });
});
