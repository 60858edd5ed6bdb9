// Getting a project's source into a fresh workspace before a build: a shallow git clone of one branch,
// or the stored upload archive extracted. Output goes to the deploy's build log line by line.
//
// Whatever arrives is then checked on disk, links resolved as the kernel resolves them (Dokku's rule):
// no symbolic link with an absolute target, none climbing out with `..`, none that leaves the source
// once the links it goes through are followed (`s -> .` then `u -> s/..` each look harmless alone),
// and no hard link sharing its file with one outside. Otherwise the edge, the build or the app would
// read through them whatever the platform's user can read: the data folder's secret and database.
import { spawn } from 'node:child_process';
import { lstatSync, mkdirSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { TopLevel } from '../projects/archive.js';
import { maskUrlsIn, splitUserinfo } from '../projects/repo-url.js';
import { readLines } from './lines.js';

export type LineSink = (line: string) => void;

export class SourceError extends Error {}

/**
 * `git clone --depth 1 --branch <branch>` of `url` into `dest` (which must not exist yet), then the
 * checkout's links checked. `url` may hold credentials (`https://user:TOKEN@host/…`): they reach git
 * only, never its command line, its output, the checkout's `.git/config` or an error message.
 */
/**
 * The ssh of tenants' clones: none of the platform user's keys (OpenSSH finds them through the
 * password database, whatever HOME says), no agent, no ssh config of the machine's, never a prompt.
 */
export const TENANT_SSH_COMMAND = [
  'ssh',
  '-F /dev/null',
  '-o IdentityFile=/dev/null',
  '-o IdentitiesOnly=yes',
  '-o IdentityAgent=none',
  '-o BatchMode=yes',
  '-o UserKnownHostsFile=/dev/null',
  '-o GlobalKnownHostsFile=/dev/null',
  '-o StrictHostKeyChecking=accept-new',
].join(' ');

export async function cloneRepository(options: {
  url: string;
  branch: string;
  dest: string;
  onLine: LineSink;
  timeoutMs?: number;
  /** Follow no HTTP redirect (a platform several accounts share: one could point into its network). */
  noRedirects?: boolean;
}): Promise<void> {
  const { bare, userinfo } = splitUserinfo(options.url);
  // Over HTTP the credentials go in a header set through the environment (not argv, which any local
  // process may read, and not the remote URL, which git would write into .git/config).
  const overHttp = userinfo !== null && /^https?:/i.test(bare);
  const cloneUrl = overHttp ? bare : options.url;
  // No redirects then: the header would follow one to whatever host it names.
  const credentials: Record<string, string> = overHttp
    ? {
        GIT_CONFIG_COUNT: '2',
        GIT_CONFIG_KEY_0: 'http.extraHeader',
        GIT_CONFIG_VALUE_0: `Authorization: Basic ${basicAuth(userinfo)}`,
        GIT_CONFIG_KEY_1: 'http.followRedirects',
        GIT_CONFIG_VALUE_1: 'false',
      }
    : options.noRedirects
      ? { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.followRedirects', GIT_CONFIG_VALUE_0: 'false' }
      : {};
  const args = [
    'clone',
    '--depth',
    '1',
    '--single-branch',
    '--branch',
    options.branch,
    '--',
    cloneUrl,
    options.dest,
  ];
  const shown = maskUrlsIn(options.url);
  const child = spawn('git', args, {
    // Nothing of the platform's: not its variables, its git config nor its SSH keys (a tenant must not
    // clone what the operator can reach). Only transports that cannot run commands (no ext::). Never
    // stop to ask for credentials: a private repository fails with git's own message instead.
    env: {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: '/nonexistent',
      LANG: 'C.UTF-8',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_ALLOW_PROTOCOL: 'http:https:ssh:git:file',
      GIT_TERMINAL_PROMPT: '0',
      GIT_ASKPASS: '/bin/false',
      SSH_ASKPASS: '/bin/false',
      GIT_SSH_COMMAND: TENANT_SSH_COMMAND,
      ...credentials,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    readLines(stream, (raw) => {
      const line = maskUrlsIn(raw);
      options.onLine(line);
      tail.push(line);
      if (tail.length > 20) tail.shift();
    });
  }
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 5 * 60_000);
  const code = await new Promise<number | null>((resolve) => {
    child.once('close', (exitCode) => resolve(exitCode));
    child.once('error', (error) => {
      tail.push(error.message);
      resolve(127);
    });
  });
  clearTimeout(timer);
  if (code !== 0) {
    // git's errors (a repository may bring several: "does not appear to be a git repository", then
    // "Could not read from remote repository"), the first being the most specific; else its last words.
    const errors = tail.filter((l) => /^(fatal|error):/i.test(l.trim()));
    const reason =
      (errors.length > 0 ? errors.map((l) => l.trim()).join(' ') : undefined) ??
      tail.filter((l) => /fatal|error|not found|could not/i.test(l)).at(-1) ??
      tail.at(-1) ??
      `exit code ${code}`;
    throw new SourceError(`git clone of ${shown} (branch ${options.branch}) failed: ${reason}`);
  }
  // Another scheme (ssh://user@…) needed the userinfo in the URL: keep it out of the checkout.
  if (userinfo !== null && !overHttp) await git(options.dest, ['remote', 'set-url', 'origin', bare]);
  assertLinksInside(options.dest);
}

/** Basic credentials from `user:password` (each part percent-decoded, as in a URL). */
function basicAuth(userinfo: string): string {
  const colon = userinfo.indexOf(':');
  const [user, password] =
    colon === -1 ? [userinfo, ''] : [userinfo.slice(0, colon), userinfo.slice(colon + 1)];
  const decode = (part: string) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  };
  return Buffer.from(`${decode(user)}:${decode(password)}`).toString('base64');
}

function git(cwd: string, args: string[]): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('git', args, {
      cwd,
      env: {
        PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
        HOME: '/nonexistent',
        GIT_CONFIG_NOSYSTEM: '1',
      },
      stdio: 'ignore',
    });
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolvePromise() : reject(new SourceError(`git ${args[0]} failed (exit code ${code})`)),
    );
  });
}

/**
 * Extracts a stored upload (already checked when it was received) into `dest`. An archive holding one
 * top-level folder and nothing else (as `tar czf app.tar.gz app/` makes) is unpacked from inside it.
 */
export async function extractUpload(options: {
  archive: string;
  dest: string;
  onLine: LineSink;
}): Promise<void> {
  const { extract, list } = await import('tar');
  const top = new TopLevel();
  await list({ file: options.archive, onReadEntry: (entry) => top.add(entry.path, entry.type) });
  const folder = top.folder;
  const strip = folder === null ? 0 : 1;
  mkdirSync(options.dest, { recursive: true });
  await extract({ file: options.archive, cwd: options.dest, strict: true, strip });
  // Checked when it was received, but that check may predate the rules of today: check what is on disk.
  assertLinksInside(options.dest);
  const entries = readdirSync(options.dest).length;
  options.onLine(
    `extracted the upload${folder !== null ? ` from its folder ${folder}/` : ''}: ${entries} entries at the top level`,
  );
}

/** How many links may be followed in one resolution before it counts as a loop (as Linux's ELOOP). */
const MAX_LINK_HOPS = 40;

class LinkLoop extends Error {}

/**
 * Throws a SourceError naming the first link (in path order) that breaks Dokku's rule: an absolute
 * target, a target climbing out with `..`, a target that resolves outside `root` through other links,
 * a loop; or a hard link whose file also has names outside `root`.
 */
export function assertLinksInside(root: string): void {
  const realRoot = realpathSync.native(root);
  const inodes = new Map<string, { path: string; links: number; seen: number }>();
  const pending = [root];
  while (pending.length > 0) {
    const dir = pending.pop()!;
    const names = readdirSync(dir).sort();
    // Depth-first in path order: the first link named is the first an author would look at.
    const subdirs: string[] = [];
    for (const name of names) {
      const path = join(dir, name);
      const stat = lstatSync(path);
      if (stat.isSymbolicLink()) {
        const problem = symlinkProblem(root, realRoot, path);
        if (problem) {
          const target = readlinkSync(path);
          throw new SourceError(
            `symbolic link "${shownPath(root, path)}" (-> ${target}) leaves the source: ${problem}`,
          );
        }
      } else if (stat.isDirectory()) {
        subdirs.push(path);
      } else if (stat.isFile() && stat.nlink > 1 && !isGitMetadata(root, path)) {
        const key = `${stat.dev}:${stat.ino}`;
        const known = inodes.get(key) ?? { path, links: stat.nlink, seen: 0 };
        known.seen += 1;
        inodes.set(key, known);
      }
    }
    pending.push(...subdirs.reverse());
  }
  for (const { path, links, seen } of inodes.values()) {
    if (seen < links) {
      throw new SourceError(
        `hard link "${shownPath(root, path)}" leaves the source: its file also has a name outside it`,
      );
    }
  }
}

/** git may hard-link its objects from a local repository; no build or page reads them as files. */
function isGitMetadata(root: string, path: string): boolean {
  return path.startsWith(join(root, '.git') + sep);
}

function shownPath(root: string, path: string): string {
  return relative(root, path).split(sep).join('/');
}

function inside(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** Why the link at `path` leaves the source, or null when it stays inside. */
function symlinkProblem(root: string, realRoot: string, path: string): string | null {
  const target = readlinkSync(path);
  if (isAbsolute(target)) return 'its target is an absolute path';
  if (!inside(root, resolve(dirname(path), target))) return 'its target climbs out with ".."';
  let real: string;
  try {
    real = realpathSync.native(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') return 'it is a loop of links';
    if (code !== 'ENOENT' && code !== 'ENOTDIR') return `it cannot be resolved (${code})`;
    // Dangling: resolve what exists as the kernel would, the missing rest as written.
    try {
      real = resolvePhysically(realpathSync.native(dirname(path)), target, 0);
    } catch (inner) {
      if (inner instanceof LinkLoop) return 'it is a loop of links';
      throw inner;
    }
  }
  return inside(realRoot, real) ? null : 'through the links it goes through, it resolves outside the source';
}

/** `target` resolved from the real folder `from` component by component, following links. */
function resolvePhysically(from: string, target: string, hops: number): string {
  const parts = target.split('/');
  let current = isAbsolute(target) ? '/' : from;
  for (let i = 0; i < parts.length; i += 1) {
    const part = parts[i]!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      current = dirname(current);
      continue;
    }
    const next = join(current, part);
    let isLink: boolean;
    try {
      isLink = lstatSync(next).isSymbolicLink();
    } catch {
      return resolve(next, ...parts.slice(i + 1));
    }
    if (isLink) {
      if (hops >= MAX_LINK_HOPS) throw new LinkLoop();
      current = resolvePhysically(current, readlinkSync(next), hops + 1);
    } else current = next;
  }
  return current;
}

/** The commit a clone checked out, or null (not a git checkout, or git could not tell). */
export async function headCommit(dir: string): Promise<string | null> {
  const child = spawn('git', ['-C', dir, 'rev-parse', '--verify', 'HEAD'], {
    env: {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: '/nonexistent',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CEILING_DIRECTORIES: dirname(dir),
    },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    if (out.length < 200) out += chunk;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  const code = await new Promise<number | null>((resolve) => {
    child.once('close', resolve);
    child.once('error', () => resolve(null));
  });
  clearTimeout(timer);
  const sha = out.trim();
  return code === 0 && /^[0-9a-f]{40,64}$/.test(sha) ? sha : null;
}
