// DNS name rules, the one home for them: project subdomains, service names and tunnel subdomains are
// single lowercase DNS labels; custom domains are names of two labels or more ending in a letter; a Host
// header a tunnel sends may be any host name with a port; the front gives HAProxy only plain names.

export const DNS_LABEL_PATTERN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const DNS_LABEL_MAX = 63;
/** The longest name DNS carries (RFC 1035: 255 octets on the wire, 253 characters as text). */
export const DNS_NAME_MAX = 253;

/** A custom domain (lowercase): two labels or more, the last starting with a letter (no bare IPs). */
export const DOMAIN_NAME_PATTERN =
  /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** A host name of one label or more, any case, with an optional port: what a Host header may name. */
const HOST_WITH_PORT_PATTERN =
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*(?::\d{1,5})?$/i;

/** Subdomains no project or tunnel may take: they name the platform's own hosts or invite phishing. */
export const RESERVED_SUBDOMAINS: ReadonlySet<string> = new Set([
  'admin',
  'api',
  'app',
  'assets',
  'auth',
  'billing',
  'cdn',
  'dashboard',
  'docs',
  'edge',
  'ftp',
  'help',
  'imap',
  'internal',
  'localhost',
  'login',
  'mail',
  'ns1',
  'ns2',
  'pop',
  'root',
  'smtp',
  'static',
  'status',
  'support',
  'tunnel',
  'wharf',
  'www',
]);

export function isDnsLabel(value: string): boolean {
  return DNS_LABEL_PATTERN.test(value);
}

/**
 * A lowercase host name of 1–253 characters in labels (`*.` first when `wildcard`): nothing else, no
 * port, no trailing dot, no spaces or quotes.
 */
export function isHostname(host: string, options: { wildcard?: boolean } = {}): boolean {
  let name = host;
  if (options.wildcard && name.startsWith('*.')) name = name.slice(2);
  if (name.length === 0 || name.length > DNS_NAME_MAX) return false;
  return name.split('.').every((label) => DNS_LABEL_PATTERN.test(label));
}

/** What a tunnel sends as the Host header: `preserve`, `rewrite`, or a host name with an optional port. */
export function isHostHeaderMode(value: string): boolean {
  return value === 'preserve' || value === 'rewrite' || isHostWithPort(value);
}

/** A host name with an optional port, as a Host header may name it. */
export function isHostWithPort(value: string): boolean {
  return HOST_WITH_PORT_PATTERN.test(value);
}

/** The host label a project's service is served at: `<subdomain>-<service>`. */
export function serviceLabel(subdomain: string, service: string): string {
  return `${subdomain}-${service}`;
}
