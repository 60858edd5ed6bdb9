// DNS label rules shared by the API schemas, the server and the UI: project subdomains, service names
// and tunnel subdomains are all single lowercase DNS labels.

export const DNS_LABEL_PATTERN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const DNS_LABEL_MAX = 63;

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

/** The host label a project's service is served at: `<subdomain>-<service>`. */
export function serviceLabel(subdomain: string, service: string): string {
  return `${subdomain}-${service}`;
}
