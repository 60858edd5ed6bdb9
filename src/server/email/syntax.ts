// Address syntax (API.md §6): what an address must look like before anything asks DNS about it.
// RFC 5321 lengths (local part ≤ 64, domain ≤ 253, labels ≤ 63, the whole address ≤ 254 octets),
// internationalized domains through their ASCII (punycode) form, no IP literals.
import { domainToASCII } from 'node:url';

export interface ParsedAddress {
  /** The local part as typed (only the surrounding white space trimmed). */
  local: string;
  /** The domain in lowercase ASCII (IDN labels as punycode). */
  domain: string;
  /** `local@domain`: the address every later step works with. */
  normalized: string;
}

export const MAX_LOCAL_LENGTH = 64;
export const MAX_DOMAIN_LENGTH = 253;
export const MAX_LABEL_LENGTH = 63;
export const MAX_ADDRESS_LENGTH = 254;

// RFC 5322 dot-atom: atext runs separated by single dots. Quoted local parts ("john doe"@example.com)
// are legal but practically never real mailboxes, and quoting would let spaces and specials into the
// RCPT TO line; we refuse them as invalid_syntax. Non-ASCII local parts (RFC 6531) are refused too:
// the probe does not negotiate SMTPUTF8.
const DOT_ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const LDH_LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

/** The parts of `input` when it is a deliverable-looking address, else null. Never throws. */
export function parseAddress(input: unknown): ParsedAddress | null {
  if (typeof input !== 'string') return null;
  const trimmed = input.trim();
  if (trimmed.length > 1024) return null;
  const at = trimmed.lastIndexOf('@');
  if (at <= 0 || at === trimmed.length - 1) return null;
  const local = trimmed.slice(0, at);
  const rawDomain = trimmed.slice(at + 1);

  if (Buffer.byteLength(local) > MAX_LOCAL_LENGTH || !DOT_ATOM.test(local)) return null;
  // `[1.2.3.4]` and `[IPv6:…]` literals name a host, not a mail domain.
  if (rawDomain.includes('[') || rawDomain.includes(']')) return null;

  const domain = toAsciiDomain(rawDomain);
  if (domain === null) return null;
  const normalized = `${local}@${domain}`;
  if (normalized.length > MAX_ADDRESS_LENGTH) return null;
  return { local, domain, normalized };
}

/** The lowercase ASCII form of a mail domain, or null when it is not a valid host name. */
export function toAsciiDomain(raw: string): string | null {
  if (raw.length === 0 || raw.length > 1024) return null;
  const domain = domainToASCII(raw).toLowerCase();
  if (domain === '' || domain.length > MAX_DOMAIN_LENGTH) return null;
  const labels = domain.split('.');
  // A bare name (`user@localhost`) is not a public mail domain.
  if (labels.length < 2) return null;
  for (const label of labels) {
    if (label.length === 0 || label.length > MAX_LABEL_LENGTH || !LDH_LABEL.test(label)) return null;
  }
  // An all-digit top-level label means a dotted IP address (`user@1.2.3.4`), not a domain.
  if (/^\d+$/.test(labels[labels.length - 1]!)) return null;
  return domain;
}
