// Address syntax: RFC 5321 lengths, IDN domains, no IP literals, dot-atom local parts, and no DNS query
// for an address that fails.
import { createSocket } from 'node:dgram';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../../../src/server/config.js';
import { EmailVerifier } from '../../../../src/server/email/index.js';
import { parseAddress, toAsciiDomain } from '../../../../src/server/email/syntax.js';
import { quietFor } from '../../../helpers/poll.js';

describe('parseAddress', () => {
  it('trims, lowercases the domain and keeps the local part as typed', () => {
    expect(parseAddress('  Jane.Doe+News@Example.COM \n')).toEqual({
      local: 'Jane.Doe+News',
      domain: 'example.com',
      normalized: 'Jane.Doe+News@example.com',
    });
  });

  it('turns an internationalized domain into punycode', () => {
    expect(parseAddress('kunde@Bücher.de')?.normalized).toBe('kunde@xn--bcher-kva.de');
    expect(parseAddress('user@例え.jp')?.domain).toBe('xn--r8jz45g.jp');
  });

  it('accepts the atext specials of a dot-atom local part', () => {
    expect(parseAddress("o'brien!#$%&*/=?^_`{|}~-x@example.com")).not.toBeNull();
  });

  it.each([
    ['an IPv4 literal', 'user@[1.2.3.4]'],
    ['an IPv6 literal', 'user@[IPv6:::1]'],
    ['a dotted IP address', 'user@1.2.3.4'],
    ['a quoted local part', '"john doe"@example.com'],
    ['a space', 'john doe@example.com'],
    ['no @', 'example.com'],
    ['an empty local part', '@example.com'],
    ['an empty domain', 'user@'],
    ['a leading dot', '.user@example.com'],
    ['two dots in a row', 'us..er@example.com'],
    ['a trailing dot in the local part', 'user.@example.com'],
    ['a bare host name', 'user@localhost'],
    ['an empty label', 'user@example..com'],
    ['a trailing dot in the domain', 'user@example.com.'],
    ['a label starting with a hyphen', 'user@-example.com'],
    ['an underscore in the domain', 'user@exa_mple.com'],
    ['a non-ASCII local part', 'jörg@example.com'],
    ['an empty string', ''],
  ])('refuses %s', (_name, address) => {
    expect(parseAddress(address)).toBeNull();
  });

  it('refuses what is not a string', () => {
    expect(parseAddress(42)).toBeNull();
    expect(parseAddress(null)).toBeNull();
  });

  it('allows a 64-octet local part and refuses 65', () => {
    expect(parseAddress(`${'a'.repeat(64)}@example.com`)).not.toBeNull();
    expect(parseAddress(`${'a'.repeat(65)}@example.com`)).toBeNull();
  });

  it('allows a 63-octet label and refuses 64', () => {
    expect(parseAddress(`a@${'b'.repeat(63)}.com`)).not.toBeNull();
    expect(parseAddress(`a@${'b'.repeat(64)}.com`)).toBeNull();
  });

  it('allows a 253-octet domain and refuses 254', () => {
    const label = 'c'.repeat(62);
    const domain253 = `${[label, label, label].join('.')}.${'d'.repeat(63)}`;
    expect(domain253.length).toBe(252);
    expect(toAsciiDomain(`e${domain253}`)).toBe(`e${domain253}`);
    expect(toAsciiDomain(`e.${domain253}`)).toBeNull();
  });

  it('allows a 254-octet address and refuses 255', () => {
    const domain = `${'d'.repeat(63)}.${'e'.repeat(63)}.${'f'.repeat(63)}.com`; // 195
    const local254 = 'l'.repeat(254 - 1 - domain.length);
    expect(parseAddress(`${local254}@${domain}`)?.normalized.length).toBe(254);
    expect(parseAddress(`${local254}x@${domain}`)).toBeNull();
  });
});

describe('bad syntax and DNS', () => {
  it('asks the DNS server nothing for invalid addresses, and something for a valid one', async () => {
    const server = createSocket('udp4');
    let packets = 0;
    server.on('message', () => (packets += 1));
    await new Promise<void>((resolve) => server.bind(0, '127.0.0.1', resolve));
    const verifier = new EmailVerifier({
      dnsServers: [`127.0.0.1:${server.address().port}`],
      dnsTimeoutMs: 100,
      email: resolveConfig().email,
    });
    try {
      const results = await verifier.verifyMany(['nope', 'user@[10.0.0.1]', 'a..b@example.com'], {
        smtp: true,
      });
      expect(results.map((result) => result.reason)).toEqual([
        'invalid_syntax',
        'invalid_syntax',
        'invalid_syntax',
      ]);
      await quietFor(50);
      expect(packets).toBe(0);
      const valid = await verifier.verify('user@example.com', { smtp: false });
      expect(valid.reason).toBe('smtp_inconclusive');
      expect(packets).toBeGreaterThan(0);
    } finally {
      verifier.close();
      server.close();
    }
  });
});
