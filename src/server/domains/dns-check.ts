// Whether a custom domain points at the platform: a CNAME to the configured target verifies it; an apex
// (which cannot hold a CNAME) verifies when its A/AAAA records are all among the target's. Lookups go
// through node:dns/promises with the configured servers, one try each, so a dead DNS server costs at
// most a few time-outs and is reported as such, never as a failure of ours.
import { Resolver } from 'node:dns/promises';
import type { PlatformConfig } from '../config.js';

/** The three lookups a check needs (node's Resolver has them; tests may pass their own). */
export interface DnsLookup {
  resolveCname(name: string): Promise<string[]>;
  resolve4(name: string): Promise<string[]>;
  resolve6(name: string): Promise<string[]>;
  /** Ends lookups still under way (they fail with ECANCELLED). */
  cancel?(): void;
}

export function dnsLookup(config: Pick<PlatformConfig, 'dnsServers' | 'dnsTimeoutMs'>): DnsLookup {
  const resolver = new Resolver({ timeout: config.dnsTimeoutMs, tries: 1 });
  if (config.dnsServers && config.dnsServers.length > 0) resolver.setServers(config.dnsServers);
  return resolver;
}

export interface DomainCheck {
  verified: boolean;
  /** CNAME targets found, else the domain's A/AAAA addresses. */
  found: string[];
  detail: string;
  /**
   * The answer is what DNS says (records found or known absent), as opposed to a lookup that failed
   * (time-out, SERVFAIL, unreachable server): only a definitive answer may take a verification back.
   */
  definitive: boolean;
}

/** Absent records: a name that does not exist, or has no records of the type asked. */
const ABSENT = new Set(['ENODATA', 'ENOTFOUND']);

class LookupFailed extends Error {
  constructor(
    readonly host: string,
    readonly code: string,
  ) {
    super(`${host}: ${code}`);
  }
}

/** The records of one type, [] when there are none; other failures throw LookupFailed. */
async function records(lookup: (name: string) => Promise<string[]>, name: string): Promise<string[]> {
  try {
    return (await lookup(name)).map(normalizeName);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
    if (ABSENT.has(code)) return [];
    throw new LookupFailed(name, code);
  }
}

export function normalizeName(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, '');
}

export async function checkDomain(lookup: DnsLookup, domain: string, target: string): Promise<DomainCheck> {
  const want = normalizeName(target);
  try {
    const cnames = await records((n) => lookup.resolveCname(n), domain);
    if (cnames.length > 0) {
      const verified = cnames.includes(want);
      return {
        verified,
        found: cnames,
        detail: verified
          ? `CNAME points to ${want}`
          : `CNAME points to ${cnames.join(', ')}, not ${want}: change the CNAME record of ${domain} to ${want}`,
        definitive: true,
      };
    }
    const addresses = await addressesOf(lookup, domain);
    if (addresses.length === 0) {
      return {
        verified: false,
        found: [],
        detail: `no CNAME, A or AAAA records for ${domain}: add a CNAME record pointing to ${want}`,
        definitive: true,
      };
    }
    const expected = await addressesOf(lookup, want);
    if (expected.length === 0) {
      return {
        verified: false,
        found: addresses,
        detail: `no CNAME for ${domain}, and its A/AAAA records (${addresses.join(', ')}) cannot be compared: ${want} has no A or AAAA records`,
        definitive: false,
      };
    }
    const stray = addresses.filter((a) => !expected.includes(a));
    if (stray.length === 0) {
      return {
        verified: true,
        found: addresses,
        detail: `no CNAME, but the A/AAAA records (${addresses.join(', ')}) match those of ${want}`,
        definitive: true,
      };
    }
    return {
      verified: false,
      found: addresses,
      detail: `no CNAME, and the A/AAAA records (${addresses.join(', ')}) do not match those of ${want} (${expected.join(', ')}): add a CNAME record pointing to ${want}, or at the apex A/AAAA records equal to its`,
      definitive: true,
    };
  } catch (error) {
    if (!(error instanceof LookupFailed)) throw error;
    return {
      verified: false,
      found: [],
      detail: `could not look up ${error.host}: ${describeDnsError(error.code)} (${error.code}); nothing was changed, try again later`,
      definitive: false,
    };
  }
}

async function addressesOf(lookup: DnsLookup, name: string): Promise<string[]> {
  const [v4, v6] = await Promise.all([
    records((n) => lookup.resolve4(n), name),
    records((n) => lookup.resolve6(n), name),
  ]);
  return [...v4, ...v6];
}

function describeDnsError(code: string): string {
  switch (code) {
    case 'ETIMEOUT':
      return 'the DNS server did not answer in time';
    case 'ECONNREFUSED':
      return 'the DNS server could not be reached';
    case 'ESERVFAIL':
      return 'the DNS server failed to answer (SERVFAIL)';
    case 'EREFUSED':
      return 'the DNS server refused the query';
    case 'ECANCELLED':
      return 'the lookup was cancelled';
    case 'EBADRESP':
    case 'EFORMERR':
      return 'the DNS answer was malformed';
    default:
      return 'the DNS lookup failed';
  }
}
