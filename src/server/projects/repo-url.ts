// Which `file://` repositories a project may be deployed from. The platform's data folder holds every
// project's sources (uploads, the AI builder's repositories, the workspaces), so no project may name a
// repository inside it, bar the AI builder's own repository of that same project; and a platform that
// runs with `localRepos` off takes no `file://` URL at all.
import { realpathSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PlatformConfig } from '../config.js';

/** Why `url` may not be cloned for the project, or null when it may (every non-`file:` URL may). */
export function refusedRepoUrl(
  config: Pick<PlatformConfig, 'dataDir' | 'localRepos'>,
  url: string,
  projectId?: string,
): string | null {
  if (!/^file:/i.test(url)) return null;
  if (!config.localRepos) {
    return 'must not be a file:// URL: this platform runs with --no-local-repos (use an https://, ssh:// or git:// URL)';
  }
  let path: string;
  try {
    path = realPath(fileURLToPath(url));
  } catch {
    return 'must be a file:// URL of a local path (file:///path/to/repo)';
  }
  const dataDir = realPath(config.dataDir);
  if (path !== dataDir && !path.startsWith(dataDir + sep)) return null;
  if (projectId !== undefined && path === realPath(join(config.dataDir, 'ai-repos', projectId))) {
    return null;
  }
  return `must not point into the platform's data folder (${config.dataDir}): it holds the sources of every project`;
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
