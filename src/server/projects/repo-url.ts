// Which `file://` repositories a project may be deployed from. The platform's data folder holds every
// project's sources (uploads, the AI builder's repositories, the workspaces), so no project may name a
// repository inside it, bar the AI builder's own repository of that same project; and a platform that
// runs with `localRepos` off takes no `file://` URL of a tenant's at all, while the AI builder's own
// repository still deploys (the platform wrote it: it opens nothing on the machine to tenants).
//
// And how a URL's userinfo (`https://user:TOKEN@host/…`) is kept out of sight: masked as
// `https://***@host/…` wherever a URL is shown, the real one only handed to git.
import { lookup } from 'node:dns/promises';
import { realpathSync } from 'node:fs';
import { isIP } from 'node:net';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PlatformConfig } from '../config.js';
import { isPrivateAddress } from '../email/private-address.js';

/** Why `url` may not be cloned for the project, or null when it may (every non-`file:` URL may). */
export function refusedRepoUrl(
  config: Pick<PlatformConfig, 'dataDir' | 'localRepos'>,
  url: string,
  projectId?: string,
): string | null {
  if (!/^file:/i.test(url)) return null;
  let path: string | null;
  try {
    path = realPath(fileURLToPath(url));
  } catch {
    path = null;
  }
  // Only the platform writes this URL (a project's id is not known before it exists to name it).
  if (path !== null && projectId !== undefined && path === aiRepoPath(config.dataDir, projectId)) return null;
  if (!config.localRepos) {
    return 'must not be a file:// URL: this platform runs with --no-local-repos (use an https://, ssh:// or git:// URL)';
  }
  if (path === null) return 'must be a file:// URL of a local path (file:///path/to/repo)';
  const dataDir = realPath(config.dataDir);
  if (path !== dataDir && !path.startsWith(dataDir + sep)) return null;
  return `must not point into the platform's data folder (${config.dataDir}): it holds the sources of every project`;
}

function aiRepoPath(dataDir: string, projectId: string): string {
  return realPath(join(dataDir, 'ai-repos', projectId));
}

/** The path with symlinks resolved in the part of it that exists (the rest may not exist yet). */
function realPath(path: string): string {
  const absolute = resolve(path);
  try {
    return realpathSync(absolute);
  } catch {
    const parent = dirname(absolute);
    return parent === absolute ? absolute : join(realPath(parent), basename(absolute));
  }
}

// `scheme://userinfo@…`: the userinfo runs to the last `@` before the path, as URL parsers read it.
const USERINFO = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#\s]*)@/i;
const USERINFO_ANYWHERE = /([a-z][a-z0-9+.-]*:\/\/)[^/?#\s@]*(?:@[^/?#\s@]*)*@/gi;

/** The masked form every reader sees: `https://***@host/…` (a URL without userinfo is unchanged). */
export function maskRepoUrl(url: string): string {
  return url.replace(USERINFO, '$1***@');
}

/** The URL split into its userinfo (null when it has none) and the URL without it. */
export function splitUserinfo(url: string): { bare: string; userinfo: string | null } {
  const match = USERINFO.exec(url);
  if (!match) return { bare: url, userinfo: null };
  return { bare: match[1]! + url.slice(match[0].length), userinfo: match[2]! };
}

/** `masked` (from maskRepoUrl) with the userinfo put back: the URL only a clone may see. */
export function unmaskRepoUrl(masked: string, userinfo: string): string {
  return masked.replace(USERINFO, (_all, scheme: string) => `${scheme}${userinfo}@`);
}

/** Text (a git message, a log line) with the userinfo of every URL in it masked. */
export function maskUrlsIn(text: string): string {
  return text.replace(USERINFO_ANYWHERE, '$1***@');
}

/** The host a git URL names (`https://host/…`, `ssh://user@host/…`, `user@host:path`); null for file://. */
export function repoHost(url: string): string | null {
  const scp = /^[A-Za-z0-9._-]+@([A-Za-z0-9.-]+):/.exec(url);
  if (scp) return scp[1]!;
  try {
    const parsed = new URL(url);
    if (parsed.protocol === 'file:') return null;
    return parsed.hostname.replace(/^\[(.*)\]$/, '$1') || null;
  } catch {
    return null;
  }
}

/**
 * On a platform several accounts share (`localRepos` off), why the platform may not clone from `url`: its
 * host resolves to a loopback, private or otherwise special-purpose address, which would let a tenant
 * make the platform fetch from its internal network (cloud metadata, admin ports). Null when it may, and
 * when the name does not resolve (git then fails with its own message). A name that resolves elsewhere
 * at clone time (DNS rebinding) is not caught here; redirects are not followed on such platforms.
 */
export async function refusedRepoTarget(
  config: Pick<PlatformConfig, 'localRepos'>,
  url: string,
  resolve: (host: string) => Promise<Array<{ address: string }>> = (host) =>
    lookup(host, { all: true, verbatim: true }),
): Promise<string | null> {
  if (config.localRepos) return null;
  const host = repoHost(url);
  if (host === null) return null;
  let addresses: Array<{ address: string }>;
  try {
    addresses = isIP(host) === 0 ? await resolve(host) : [{ address: host }];
  } catch {
    return null;
  }
  const inside = addresses.find((a) => isPrivateAddress(a.address));
  if (!inside) return null;
  return `must not point to a loopback or private address (${host} is ${inside.address}): this platform runs with --no-local-repos`;
}
