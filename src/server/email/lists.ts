// The list checks of a verification: disposable domains, role accounts, free mail providers.
// The lists come from packages (disposable-email-domains, role-based-email-addresses, email-providers)
// and are loaded on first use through require, at run time: they hold ~125,000 domains, which would
// otherwise be parsed at every platform start and inlined into the bundle.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

let disposable: Set<string> | null = null;
let roles: Set<string> | null = null;
let providers: Set<string> | null = null;
let commonProviders: Set<string> | null = null;

function disposableDomains(): Set<string> {
  disposable ??= new Set([
    ...(require('disposable-email-domains/index.json') as string[]),
    // Domains whose every subdomain is disposable too (the parent walk below covers them).
    ...(require('disposable-email-domains/wildcard.json') as string[]),
  ]);
  return disposable;
}

function roleLocalParts(): Set<string> {
  roles ??= new Set((require('role-based-email-addresses') as string[]).map((role) => role.toLowerCase()));
  return roles;
}

function freeProviderDomains(): Set<string> {
  providers ??= new Set(require('email-providers/all.json') as string[]);
  return providers;
}

/** The most used providers (email-providers' common.json): well-known real domains. */
export function commonProviderDomains(): Set<string> {
  commonProviders ??= new Set(require('email-providers/common.json') as string[]);
  return commonProviders;
}

/** True when `domain` (lowercase ASCII) or any parent domain of it is a disposable mail domain. */
export function isDisposable(domain: string): boolean {
  const list = disposableDomains();
  const labels = domain.split('.');
  for (let i = 0; i < labels.length - 1; i += 1) {
    if (list.has(labels.slice(i).join('.'))) return true;
  }
  return false;
}

/** True when the local part, without its `+tag` and lowercased, names a role (info@, admin@, sales@…). */
export function isRoleAccount(local: string): boolean {
  const base = local.split('+')[0]!.toLowerCase();
  return base.length > 0 && roleLocalParts().has(base);
}

/**
 * Names reserved for examples and tests (RFC 2606, RFC 6761): nobody's mail, whatever a list says
 * (email-providers lists example.com).
 */
const RESERVED = /(?:^|\.)(?:example\.(?:com|net|org)|example|test|invalid|localhost)$/;

/** True when `domain` is a free mail provider's (and not a disposable one, nor a reserved name). */
export function isFreeProvider(domain: string): boolean {
  return freeProviderDomains().has(domain) && !isDisposable(domain) && !RESERVED.test(domain);
}
