// Whether a custom domain is the account's and points at the platform (API.md §5): the TXT record
// `_wharf-challenge.<domain>` holds the account's token for it, and a CNAME goes to the configured target
// (an apex, which cannot hold a CNAME: its A/AAAA records are all among the target's). Lookups go
// through node:dns/promises with the configured servers, one try each, so a dead DNS server costs at
// most a few time-outs and is reported as such, never as a failure of ours.
import { Resolver } from 'node:dns/promises';
import type { PlatformConfig } from '../config.js';

/** The lookups a check needs (node's Resolver has them; tests may pass their own). */
export interface DnsLookup {
  /** Each record as its character-strings, which together make its value. */
  resolveTxt(name: string): Promise<string[][]>;
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

/** What one of the two records came to, in a few words (the `detail` says what to do about it). */
export interface RecordCheck {
  ok: boolean;
  /** `found`, `not found`, `holds another value`, `points to x.example instead`, `lookup failed: …`. */
  seen: string;
}

export interface DomainCheck {
  verified: boolean;
  /** Each record on its own: the TXT proof and the CNAME (or, at an apex, the A/AAAA records). */
  records?: { txt: RecordCheck; cname: RecordCheck };
  /** What the check saw, each as `TYPE value`: the challenge's TXT values, then CNAME targets, else A/AAAA. */
  found: string[];
  detail: string;
  /**
   * The answer is what DNS says (records found or known absent), as opposed to a lookup that failed
   * (time-out, SERVFAIL, unreachable server): only a definitive answer may take a verification back.
   */
  definitive: boolean;
}

/** One half of a check (the ownership TXT, or where the name points). */
interface Part {
  ok: boolean;
  found: string[];
  detail: string;
  seen: string;
  /** False: a lookup failed, so `ok: false` says nothing about DNS. */
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

async function lookupOrAbsent<T>(lookup: (name: string) => Promise<T[]>, name: string): Promise<T[]> {
  try {
    return await lookup(name);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
    if (ABSENT.has(code)) return [];
    throw new LookupFailed(name, code);
  }
}

/** The records of one type, [] when there are none; other failures throw LookupFailed. */
async function records(lookup: (name: string) => Promise<string[]>, name: string): Promise<string[]> {
  return (await lookupOrAbsent(lookup, name)).map(normalizeName);
}

export function normalizeName(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, '');
}

/** The name whose TXT record proves who owns `domain`. */
export function challengeName(domain: string): string {
  return `_wharf-challenge.${domain}`;
}

/**
 * Whether `domain` is proven to be the account's and points at the platform: its challenge name holds
 * the account's `token` in a TXT record, AND it has a CNAME to `target` (an apex, which cannot hold a
 * CNAME: A/AAAA records all among the target's). Either alone proves nothing.
 */
export async function checkDomain(
  lookup: DnsLookup,
  domain: string,
  target: string,
  token: string,
): Promise<DomainCheck> {
  const [ownership, pointer] = await Promise.all([
    checkOwnership(lookup, domain, token),
    checkPointer(lookup, domain, normalizeName(target)),
  ]);
  const verified = ownership.ok && pointer.ok;
  const definitive =
    verified || (!ownership.ok && ownership.definitive) || (!pointer.ok && pointer.definitive);
  const settled = ownership.definitive && pointer.definitive;
  return {
    verified,
    records: {
      txt: { ok: ownership.ok, seen: ownership.seen },
      cname: { ok: pointer.ok, seen: pointer.seen },
    },
    found: [...ownership.found, ...pointer.found],
    detail: verified
      ? `${ownership.detail}, and ${pointer.detail}`
      : `${ownership.detail}; ${pointer.detail}${settled ? '' : '; nothing was changed, try again later'}`,
    definitive,
  };
}

async function checkOwnership(lookup: DnsLookup, domain: string, token: string): Promise<Part> {
  const name = challengeName(domain);
  try {
    const values = (await lookupOrAbsent((n) => lookup.resolveTxt(n), name)).map((chunks) => chunks.join(''));
    const found = values.map((value) => `TXT ${value}`);
    if (values.some((value) => value.trim() === token)) {
      return {
        ok: true,
        found,
        detail: `the TXT record ${name} holds this account's token`,
        seen: 'found',
        definitive: true,
      };
    }
    return {
      ok: false,
      found,
      detail:
        values.length === 0
          ? `no TXT record ${name}: add one with the value ${token}`
          : `the TXT record ${name} does not hold this account's token: add one with the value ${token}`,
      seen: values.length === 0 ? 'not found' : `holds another value (${values.join(', ')})`,
      definitive: true,
    };
  } catch (error) {
    return failed(error);
  }
}

async function checkPointer(lookup: DnsLookup, domain: string, want: string): Promise<Part> {
  try {
    const cnames = await records((n) => lookup.resolveCname(n), domain);
    if (cnames.length > 0) {
      const ok = cnames.includes(want);
      return {
        ok,
        found: cnames.map((name) => `CNAME ${name}`),
        detail: ok
          ? `the CNAME points to ${want}`
          : `the CNAME points to ${cnames.join(', ')}, not ${want}: change the CNAME record of ${domain} to ${want}`,
        seen: ok ? 'found' : `points to ${cnames.join(', ')} instead`,
        definitive: true,
      };
    }
    const addresses = await addressesOf(lookup, domain);
    const found = addresses.map(({ type, address }) => `${type} ${address}`);
    const listed = addresses.map((a) => a.address).join(', ');
    if (addresses.length === 0) {
      return {
        ok: false,
        found,
        detail: `no CNAME, A or AAAA records for ${domain}: add a CNAME record pointing to ${want}`,
        seen: 'not found',
        definitive: true,
      };
    }
    const expected = (await addressesOf(lookup, want)).map((a) => a.address);
    if (expected.length === 0) {
      return {
        ok: false,
        found,
        detail: `no CNAME for ${domain}, and its A/AAAA records (${listed}) cannot be compared: ${want} has no A or AAAA records`,
        seen: `no CNAME; addresses ${listed} cannot be compared (${want} has none)`,
        definitive: false,
      };
    }
    if (addresses.every((a) => expected.includes(a.address))) {
      return {
        ok: true,
        found,
        detail: `there is no CNAME, but the A/AAAA records (${listed}) match those of ${want}`,
        seen: `no CNAME, but its addresses (${listed}) are ${want}'s`,
        definitive: true,
      };
    }
    return {
      ok: false,
      found,
      detail: `no CNAME, and the A/AAAA records (${listed}) do not match those of ${want} (${expected.join(', ')}): add a CNAME record pointing to ${want}, or at the apex A/AAAA records equal to its`,
      seen: `no CNAME; its addresses (${listed}) are not ${want}'s`,
      definitive: true,
    };
  } catch (error) {
    return failed(error);
  }
}

function failed(error: unknown): Part {
  if (!(error instanceof LookupFailed)) throw error;
  return {
    ok: false,
    found: [],
    detail: `could not look up ${error.host}: ${describeDnsError(error.code)} (${error.code})`,
    seen: `lookup failed: ${describeDnsError(error.code)}`,
    definitive: false,
  };
}

async function addressesOf(
  lookup: DnsLookup,
  name: string,
): Promise<Array<{ type: 'A' | 'AAAA'; address: string }>> {
  const [v4, v6] = await Promise.all([
    records((n) => lookup.resolve4(n), name),
    records((n) => lookup.resolve6(n), name),
  ]);
  return [
    ...v4.map((address) => ({ type: 'A' as const, address })),
    ...v6.map((address) => ({ type: 'AAAA' as const, address })),
  ];
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
