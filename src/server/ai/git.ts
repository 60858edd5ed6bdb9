// The git history of an AI project: a plain repository at `<dataDir>/ai-repos/<projectId>` with `main`
// checked out, which the runtime clones over file:// like any other git source. Every generation,
// repair and edit is one commit, so an edit can be rolled back with git. Writes to one repository are
// serialized here, so a repair and an edit never interleave their commits. In a cluster each node has
// its copy, kept in step with the one in the database through a RepoShare (shared-repos.ts).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Files of an app: relative path → text content. */
export type AppFiles = Record<string, string>;

const COMMITTER = [
  '-c',
  'user.name=Wharf AI',
  '-c',
  'user.email=ai@wharf.invalid',
  '-c',
  'commit.gpgsign=false',
];
const GIT_TIMEOUT_MS = 60_000;
/** Generated projects are small: bigger files are not app source and are not read back. */
const MAX_FILE_BYTES = 1024 * 1024;

export class GitError extends Error {}

function git(cwd: string, args: string[], input?: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      args,
      {
        cwd,
        encoding: 'buffer',
        maxBuffer: 64 * 1024 * 1024,
        timeout: GIT_TIMEOUT_MS,
        // The user's and the system's git configuration play no part; nothing ever prompts.
        env: {
          PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
          HOME: cwd,
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_CONFIG_GLOBAL: '/dev/null',
          GIT_TERMINAL_PROMPT: '0',
          LANG: 'C',
        },
      },
      (error, stdout, stderr) => {
        if (error) {
          const said = stderr.toString().trim().split('\n').at(-1);
          const verb = args.find((arg, i) => !arg.startsWith('-') && args[i - 1] !== '-c');
          reject(new GitError(`git ${verb} failed: ${said || error.message}`));
        } else resolve(stdout);
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** Checks that a generated path stays inside the repository and out of its .git folder. */
export function safeRelativePath(path: string): string | null {
  const clean = normalize(path.replace(/\\/g, '/')).replace(/^(\.\/)+/, '');
  if (clean === '' || clean === '.' || clean.startsWith('/') || clean.split(sep).includes('..')) return null;
  if (clean.split(sep)[0] === '.git') return null;
  return clean;
}

/**
 * How the nodes of a cluster share a project's repository (shared-repos.ts): before a change, this
 * node's copy is brought up to the shared one; after it, the new commits are shared in turn.
 */
export interface RepoShare {
  /** Makes `repo` the shared repository of `projectId`; resolves with the shared head (null: none). */
  pull(projectId: string, repo: AiRepo): Promise<string | null>;
  /** Shares `repo`'s commits, unless the shared head is no longer `base` (another node changed it). */
  push(projectId: string, repo: AiRepo, base: string | null): Promise<void>;
}

export class AiRepo {
  private static readonly locks = new Map<string, Promise<unknown>>();

  constructor(
    readonly dir: string,
    private readonly shared: { projectId: string; share: RepoShare } | null = null,
  ) {}

  static at(dataDir: string, projectId: string, share: RepoShare | null = null): AiRepo {
    return new AiRepo(join(dataDir, 'ai-repos', projectId), share ? { projectId, share } : null);
  }

  /** The URL the project's `repo_url` holds. */
  get url(): string {
    return pathToFileURL(this.dir).href;
  }

  /**
   * Runs `task` alone on this repository (other writers wait). A shared repository is brought up to
   * date first, and what `task` committed is shared after it (rejecting when another node changed the
   * repository meanwhile).
   */
  exclusive<T>(task: () => Promise<T>): Promise<T> {
    const previous = AiRepo.locks.get(this.dir) ?? Promise.resolve();
    const shared = this.shared;
    const body = shared
      ? async () => {
          const base = await shared.share.pull(shared.projectId, this);
          const result = await task();
          const head = await this.head();
          if (head !== null && head !== base) await shared.share.push(shared.projectId, this, base);
          return result;
        }
      : task;
    const run = previous.then(body, body);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    AiRepo.locks.set(this.dir, settled);
    void settled.then(() => {
      if (AiRepo.locks.get(this.dir) === settled) AiRepo.locks.delete(this.dir);
    });
    return run;
  }

  async init(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    await git(this.dir, ['init', '--quiet', '--initial-branch', 'main']);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * Makes the working tree exactly `files` (tracked files not in it are deleted) and commits it. Returns
   * the new commit, or null when nothing changed.
   */
  async commitFiles(files: AppFiles, message: string): Promise<string | null> {
    const tracked = await this.trackedPaths();
    const wanted = new Map<string, string>();
    for (const [path, content] of Object.entries(files)) {
      const clean = safeRelativePath(path);
      if (!clean) throw new GitError(`the generated path "${path}" leaves the project folder`);
      wanted.set(clean, content);
    }
    for (const path of tracked) {
      if (!wanted.has(path)) rmSync(join(this.dir, path), { force: true });
    }
    for (const [path, content] of wanted) {
      mkdirSync(dirname(join(this.dir, path)), { recursive: true });
      writeFileSync(join(this.dir, path), content);
    }
    await git(this.dir, ['add', '--all']);
    const status = (await git(this.dir, ['status', '--porcelain'])).toString();
    if (status.trim() === '' && tracked.length > 0) return null;
    await git(this.dir, [...COMMITTER, 'commit', '--quiet', '--allow-empty', '-m', message]);
    return (await git(this.dir, ['rev-parse', 'HEAD'])).toString().trim();
  }

  /** The text files of HEAD (binary and oversized files are left out). */
  async readHead(): Promise<AppFiles> {
    const paths = await this.trackedPaths();
    if (paths.length === 0) return {};
    const out = await git(this.dir, ['cat-file', '--batch'], paths.map((p) => `HEAD:${p}`).join('\n') + '\n');
    const files: AppFiles = {};
    let offset = 0;
    for (const path of paths) {
      const headerEnd = out.indexOf(0x0a, offset);
      if (headerEnd < 0) break;
      const header = out.subarray(offset, headerEnd).toString();
      const [, type, sizeText] = header.split(' ');
      if (type === undefined || sizeText === undefined) {
        // "<object> missing": nothing follows its header line.
        offset = headerEnd + 1;
        continue;
      }
      const size = Number(sizeText);
      const content = out.subarray(headerEnd + 1, headerEnd + 1 + size);
      offset = headerEnd + 1 + size + 1;
      if (type === 'blob' && size <= MAX_FILE_BYTES && !content.includes(0)) {
        files[path] = content.toString('utf8');
      }
    }
    return files;
  }

  /** The commit checked out, or null (no repository here, or no commit yet). */
  async head(): Promise<string | null> {
    if (!existsSync(join(this.dir, '.git'))) return null;
    try {
      return (await git(this.dir, ['rev-parse', '--verify', '--quiet', 'HEAD'])).toString().trim() || null;
    } catch {
      return null;
    }
  }

  /** Writes the whole history (branch `main`) as a git bundle to `file`. */
  async bundle(file: string): Promise<void> {
    await git(this.dir, ['bundle', 'create', '--quiet', file, 'main']);
  }

  /**
   * Makes this repository the one in `bundle` (written by bundle()): cloned beside it, then swapped in
   * whole, so a reader never sees half of it. Resolves with the head it now has.
   */
  async replaceFrom(bundle: string): Promise<string> {
    const parent = dirname(this.dir);
    mkdirSync(parent, { recursive: true });
    const staging = join(parent, `.new-${randomBytes(9).toString('base64url')}`);
    try {
      await git(parent, ['clone', '--quiet', '--branch', 'main', bundle, staging]);
      await git(staging, ['remote', 'remove', 'origin']);
      const head = await new AiRepo(staging).head();
      if (head === null) throw new GitError(`the shared repository has no commit`);
      const old = `${staging}-old`;
      if (existsSync(this.dir)) renameSync(this.dir, old);
      renameSync(staging, this.dir);
      rmSync(old, { recursive: true, force: true });
      return head;
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  }

  /** Commit subjects, newest first. */
  async log(): Promise<string[]> {
    try {
      const out = (await git(this.dir, ['log', '--format=%s'])).toString();
      return out.split('\n').filter((l) => l !== '');
    } catch {
      return [];
    }
  }

  private async trackedPaths(): Promise<string[]> {
    let out: Buffer;
    try {
      out = await git(this.dir, ['ls-tree', '-r', '-z', '--name-only', 'HEAD']);
    } catch {
      return []; // no commit yet
    }
    return out
      .toString('utf8')
      .split('\0')
      .filter((p) => p !== '');
  }
}
