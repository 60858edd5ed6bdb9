// The drivers that run an app's commands on this machine.
//
// `process` runs each command in its own process group as the platform's own user: tenant code can read
// everything the platform can. It is for one person on their own machine, and the runtime refuses it
// for a platform with several accounts.
//
// `sandbox` runs the same inside bubblewrap:
// - the file system is the machine's, read-only, but for the project's own folder of releases (the only
//   writable place besides a private /tmp); the platform's data folder, the user's Wharf home, /root and
//   /home are empty in there, and so are the per-user runtime folders (/run/user: a desktop session's
//   D-Bus and agents) and the container engines' sockets and state, the doors out of the sandbox;
// - the mounts are a private copy of the machine's, taken at the start: one made on the machine later
//   does not show up inside (ownMounts);
// - the app sees only its own processes (pid namespace), its own IPC and host name;
// - when the platform runs as root, each project's commands run as a user of their own (one uid per
//   project from `uidBase`), without capabilities and with no_new_privs, so one tenant cannot read or
//   signal another's files or processes; otherwise they run as the platform's user inside a user
//   namespace, with the same walls;
// - where control groups can be written, each project gets its memory, process and CPU ceiling;
// - the commands and everything that starts them before the drop of privileges get a clean environment:
//   the project's variables reach only the app, through a script bwrap copies into the sandbox, so
//   nothing a tenant sets (LD_PRELOAD…) runs in a privileged process.
// The network is shared: the edge reaches the app on 127.0.0.1:PORT, and the runtime checks that the
// port is held by the project's own processes (ports.ts). Sharing it also shares the abstract Unix
// sockets (an X server's, a session bus started with an abstract address): a machine with a desktop
// session should run apps in containers.
import { spawnSync } from 'node:child_process';
import { existsSync, lchownSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve, sep } from 'node:path';
import type { RuntimeKind } from '../../config.js';
import type { Cgroups, ResourceLimits } from '../cgroups.js';
import { type RunningProcess, startProcess } from '../process.js';

export interface RunSpec {
  /** The project the command belongs to: the sandbox gives each its own user and resource group. */
  projectId: string;
  /** A shell command line. */
  command: string;
  cwd: string;
  env: Record<string, string>;
  /** The project's folder of releases: the only one the sandbox lets the command write. */
  workspace: string;
  onLine(stream: 'stdout' | 'stderr', line: string): void;
}

export interface CommandDriver {
  readonly kind: Exclude<RuntimeKind, 'auto'>;
  /**
   * Before a project's commands run: its user, its resource group (with `limits`, from its account's
   * plan), and its files handed to that user. Idempotent; `dirs` are folders the platform has just
   * written (a new release, the project's home); changed limits apply to the group at once.
   */
  prepare(projectId: string, dirs: string[], limits: ResourceLimits): Promise<void>;
  run(spec: RunSpec): RunningProcess;
  /** After a project is deleted. */
  forget(projectId: string): void;
}

export class ProcessDriver implements CommandDriver {
  readonly kind = 'process';

  async prepare(): Promise<void> {}

  run(spec: RunSpec): RunningProcess {
    return startProcess(spec);
  }

  forget(): void {}
}

export class SandboxUnavailableError extends Error {}

/** Gives each project its own uid (root platforms only); kept in the store so restarts agree. */
export interface SandboxUsers {
  uidFor(projectId: string): Promise<number>;
}

export interface SandboxOptions {
  /** Folders the app must not see (the platform's data, the user's Wharf home). */
  hidden: string[];
  /** Per-project users when the platform runs as root; null runs commands as the platform's user. */
  users: SandboxUsers | null;
  /** Control groups for resource limits, or null where they cannot be used. */
  cgroups: Cgroups | null;
  bwrap?: string;
  /** The `unshare` that gives bwrap a mount namespace of its own (ownMounts). */
  unshare?: string;
}

/** Where the command's script is put inside the sandbox (a private tmpfs). */
const SCRIPT_PATH = '/tmp/.wharf-run.sh';
/** What the privileged steps (the cgroup join, bwrap, the drop to the project's user) run with. */
const CLEAN_ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' };
/** Joins the groups named before `--`, then runs what follows: race-free, since nothing forked yet. */
const JOIN_CGROUPS =
  'for f; do shift; [ "$f" = -- ] && break; echo $$ > "$f" || { echo "could not join the resource group $f" >&2; exit 125; }; done; exec "$@"';

export class SandboxDriver implements CommandDriver {
  readonly kind = 'sandbox';
  private readonly bwrap: string;
  private readonly uids = new Map<string, number>();
  private readonly groups = new Map<string, { files: string[]; limits: string }>();

  /**
   * What bwrap is started through: a mount namespace of its own with private propagation (ownMounts),
   * or nothing where this machine refuses one (then `ownMountsRefused` says why).
   */
  private readonly frame: string[];
  readonly ownMountsRefused: string | null = null;

  constructor(private readonly options: SandboxOptions) {
    this.bwrap = options.bwrap ?? 'bwrap';
    const root = process.getuid?.() === 0;
    const own = ownMounts(root, options.unshare);
    const framed = probeSandbox([...own, this.bwrap]);
    if (framed.ok) {
      this.frame = own;
      return;
    }
    const plain = probeSandbox([this.bwrap]);
    if (!plain.ok) {
      throw new SandboxUnavailableError(
        `the sandbox runtime needs bubblewrap (bwrap), which ${
          plain.missing ? 'is not installed' : `does not run here (${plain.reason})`
        }: install it (apt-get install bubblewrap) or use --runtime process on a machine only you use`,
      );
    }
    this.frame = [];
    this.ownMountsRefused = framed.missing ? 'unshare (util-linux) is not installed' : framed.reason;
  }

  /** Whether each project runs as a user of its own (the platform runs as root). */
  get perProjectUsers(): boolean {
    return this.options.users !== null;
  }

  async prepare(projectId: string, dirs: string[], limits: ResourceLimits): Promise<void> {
    if (this.options.users) {
      let uid = this.uids.get(projectId);
      if (uid === undefined) {
        uid = await this.options.users.uidFor(projectId);
        this.uids.set(projectId, uid);
      }
      for (const dir of dirs) chownTree(dir, uid);
    }
    const key = JSON.stringify(limits);
    if (this.options.cgroups && this.groups.get(projectId)?.limits !== key) {
      const files = this.options.cgroups.prepare(`wharf-${projectId}`, limits);
      this.groups.set(projectId, { files, limits: key });
    }
  }

  run(spec: RunSpec): RunningProcess {
    const uid = this.uids.get(spec.projectId);
    if (this.options.users && uid === undefined) {
      throw new Error(`the sandbox was not prepared for project ${spec.projectId}`);
    }
    const drop =
      uid === undefined
        ? []
        : [
            '--cap-add',
            'CAP_SETUID',
            '--cap-add',
            'CAP_SETGID',
            '--',
            'setpriv',
            `--reuid=${uid}`,
            `--regid=${uid}`,
            '--clear-groups',
            '--inh-caps=-all',
            '--no-new-privs',
          ];
    const groups = this.groups.get(spec.projectId)?.files ?? [];
    const join = groups.length === 0 ? [] : ['/bin/sh', '-c', JOIN_CGROUPS, 'sh', ...groups, '--'];
    // Each start reads the machine afresh: what is mounted, which sockets are in /run.
    const start = () =>
      startProcess({
        ...spec,
        env: CLEAN_ENV,
        argv: [...join, ...this.frame, ...this.sandboxArgs(spec), ...drop, '--', '/bin/sh', SCRIPT_PATH],
        script: commandScript(spec.command, spec.env),
        statusPipe: true,
      });
    return startAgainIfSetupFails(start, (line) => spec.onLine('stderr', line));
  }

  /** bwrap's arguments for one start of `spec`'s command, up to the command. */
  private sandboxArgs(spec: RunSpec): string[] {
    const hidden = this.hiddenDirs();
    // The folders between a hidden one and the workspace: bwrap would make them 0700 root, which the
    // project's user could not pass through.
    const covered = [...hidden, '/tmp'];
    const between: string[] = [];
    for (
      let dir = dirname(spec.workspace);
      covered.some((h) => dir.startsWith(h + sep));
      dir = dirname(dir)
    ) {
      between.unshift(dir);
    }
    // prettier-ignore
    return [
      this.bwrap,
      '--json-status-fd', '4',
      '--ro-bind', '/', '/',
      '--dev', '/dev',
      '--proc', '/proc',
      '--perms', '1777', '--tmpfs', '/tmp',
      ...hidden.flatMap((dir) => ['--tmpfs', dir]),
      ...runSockets().flatMap((socket) => ['--ro-bind', '/dev/null', socket]),
      ...this.toolchains(hidden).flatMap((dir) => ['--ro-bind', dir, dir]),
      ...between.flatMap((dir) => ['--perms', '0755', '--dir', dir]),
      '--bind', spec.workspace, spec.workspace,
      '--perms', '0444', '--file', '3', SCRIPT_PATH,
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--die-with-parent',
      '--chdir', spec.cwd,
    ];
  }

  forget(projectId: string): void {
    this.uids.delete(projectId);
    this.groups.delete(projectId);
    this.options.cgroups?.remove(`wharf-${projectId}`);
  }

  /**
   * On a platform that runs as its own user (a developer's machine), the toolchains on its PATH that
   * live in a hidden home (nvm's node, pyenv, cargo) are shown read-only, so apps find them. A root
   * platform shows none: a project's user could not read them anyway.
   */
  private toolchains(hidden: string[]): string[] {
    if (this.options.users) return [];
    return toolchainDirs(process.env.PATH ?? '', hidden, this.options.hidden);
  }

  /**
   * The hidden folders: the platform's own, each created first when missing (bwrap cannot make a mount
   * point on the read-only root, it fails "Can't mkdir", and one created later would show through; one
   * that cannot be created has nothing to hide), the home folders (an operator's keys and tokens live
   * there), and the doors out that this machine has (OUTSIDE_DOORS).
   */
  private hiddenDirs(): string[] {
    const homes = ['/root', '/home', homedir()];
    const ours = new Set([...homes, ...this.options.hidden].map((dir) => resolve(dir)));
    const dirs = [...new Set([...ours, ...OUTSIDE_DOORS.filter((dir) => isDirectory(dir))])];
    // A folder inside another hidden one is hidden with it (and could not be mounted on first).
    const outer = dirs.filter((dir) => !dirs.some((other) => other !== dir && dir.startsWith(other + sep)));
    return outer.filter((dir) => {
      try {
        if (ours.has(dir)) mkdirSync(dir, { recursive: true });
      } catch {
        // not ours to create
      }
      return existsSync(dir);
    });
  }
}

/**
 * The folders through which a command could act outside the sandbox, hidden where they exist (never
 * created): the per-user runtime folders (a desktop session's D-Bus, from which `systemd-run --user`
 * starts anything; keyring and SSH agents; a rootless Podman's or Docker's socket) and the container
 * engines' sockets and state. The sockets right in /run (Docker's) are covered one by one (runSockets).
 */
const OUTSIDE_DOORS = [
  '/run/user',
  '/run/docker',
  '/run/podman',
  '/run/containerd',
  '/run/containers',
  '/run/crio',
  '/run/buildkit',
  '/var/lib/docker',
  '/var/lib/containers',
];

function isDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The sockets right in /run (Docker's docker.sock, an engine's API socket): each one a door out. */
export function runSockets(dir = '/run'): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isSocket())
      .map((entry) => join(dir, entry.name));
  } catch {
    return [];
  }
}

/**
 * How many times one start of a sandbox is tried. bwrap's setup can fail on a busy machine: it remounts
 * each mount under / read-only one by one, and one that goes away meanwhile (a container's file system
 * on a machine that also runs Docker) fails the whole setup with "Unable to apply mount flags: remount
 * ...: Invalid argument" (bubblewrap#650). Started in a mount namespace of its own (ownMounts), bwrap
 * reads a table nothing changes; where that is refused, trying again finds the table as it is now.
 */
const SETUP_ATTEMPTS = 3;

/**
 * The mount namespace bwrap starts in: a copy of the machine's, made private. bwrap builds the sandbox's
 * root from the mount table it reads; where that table is shared with the machine (systemd makes / a
 * shared mount), two things go wrong without it:
 * - a mount that goes away while bwrap remounts the ones it read fails the setup (bubblewrap#650; a
 *   machine that also runs containers mounts and unmounts all the time): in a private copy nothing
 *   comes or goes, so the setup no longer races;
 * - a mount made on the machine after an app started shows up inside its sandbox, and writable: bwrap
 *   made its mounts read-only, not the ones that arrive later. In a private copy none arrive.
 * A mount removed from the machine later is removed from the copy too once its mount point is deleted
 * (Linux detaches mounts on a deleted mount point in every namespace), so a container engine's cleanup
 * is not held up.
 * As root, `unshare --mount` is enough; any other user needs a user namespace for it, mapped to itself,
 * in which bwrap then makes its own (where this is refused, e.g. Ubuntu's AppArmor rule for user
 * namespaces, bwrap starts without it and the setup races are retried).
 */
export function ownMounts(root: boolean, unshare = 'unshare'): string[] {
  return root
    ? [unshare, '--mount', '--propagation', 'private']
    : [unshare, '--user', '--map-current-user', '--mount', '--propagation', 'private'];
}

type Probe = { ok: true } | { ok: false; missing: boolean; reason: string };

/** Whether `argv` (bwrap, maybe after a frame) starts a sandbox here; a setup race is tried again. */
function probeSandbox(argv: string[]): Probe {
  for (let attempt = 1; ; attempt++) {
    const probe = spawnSync(
      argv[0]!,
      [...argv.slice(1), '--json-status-fd', '3', '--ro-bind', '/', '/', '--unshare-pid', 'true'],
      { encoding: 'utf8', env: CLEAN_ENV, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] },
    );
    if (probe.error) {
      const missing = (probe.error as NodeJS.ErrnoException).code === 'ENOENT';
      return { ok: false, missing, reason: probe.error.message };
    }
    if (probe.status === 0) return { ok: true };
    const status = (probe.output?.[3] as string | null | undefined) ?? '';
    if (attempt === SETUP_ATTEMPTS || !setupFailed(status)) {
      return { ok: false, missing: false, reason: probe.stderr.trim() || `exit ${probe.status}` };
    }
  }
}

/**
 * Whether bwrap's --json-status-fd output says the sandbox was created ("child-pid") but never ran the
 * command: bwrap reports an "exit-code" only for a command it started. A failure before the sandbox
 * existed (an unknown option, no namespaces) or in the command itself is not a setup failure.
 */
export function setupFailed(status: string): boolean {
  let created = false;
  for (const line of status.split('\n')) {
    let doc: unknown;
    try {
      doc = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof doc !== 'object' || doc === null) continue;
    if ('exit-code' in doc) return false;
    if ('child-pid' in doc) created = true;
  }
  return created;
}

/**
 * A sandboxed command, started again (up to SETUP_ATTEMPTS times in all) when bwrap failed to set the
 * sandbox up. Its pid is the current attempt's; `exited` settles with the last attempt's exit.
 */
function startAgainIfSetupFails(start: () => RunningProcess, note: (line: string) => void): RunningProcess {
  let current = start();
  let stopped = false;
  const exited = (async () => {
    for (let attempt = 1; ; attempt++) {
      const exit = await current.exited;
      const status = (await current.status) ?? '';
      if (stopped || attempt === SETUP_ATTEMPTS || !setupFailed(status)) return exit;
      note(`the sandbox could not be set up (attempt ${attempt} of ${SETUP_ATTEMPTS}); starting it again`);
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      if (stopped) return exit;
      current = start();
    }
  })();
  return {
    get pid() {
      return current.pid;
    },
    exited,
    async stop(graceMs?: number) {
      stopped = true;
      await current.stop(graceMs);
      return exited;
    },
  };
}

/**
 * The folders to show read-only for the PATH entries inside `hidden` folders: a `bin` or `shims`
 * folder's prefix (which holds its libraries), else the entry itself; never anything in or around
 * `never` (the platform's data), never a hidden folder itself, and only the `bin` of `~/.local`.
 */
export function toolchainDirs(path: string, hidden: string[], never: string[]): string[] {
  const inside = (dir: string, parent: string) => dir === parent || dir.startsWith(parent + sep);
  const out = new Set<string>();
  for (const entry of path.split(':')) {
    if (entry === '' || !entry.startsWith('/')) continue;
    const dir = resolve(entry);
    const home = hidden.find((h) => dir.startsWith(h + sep));
    if (home === undefined || !existsSync(dir)) continue;
    const base = basename(dir);
    let shown = base === 'bin' || base === 'shims' ? dirname(dir) : dir;
    if (hidden.includes(shown) || basename(shown) === '.local') shown = dir;
    if (never.some((n) => inside(resolve(n), shown) || inside(shown, resolve(n)))) continue;
    out.add(shown);
  }
  // A folder inside another shown one comes with it.
  return [...out].filter((dir) => ![...out].some((other) => other !== dir && dir.startsWith(other + sep)));
}

/**
 * The script the sandboxed shell runs: the project's variables, then its command. Values are
 * single-quoted (a quote inside becomes '\''), so nothing in them is interpreted.
 */
export function commandScript(command: string, env: Record<string, string>): string {
  const lines = Object.entries(env).map(([name, value]) => `export ${name}=${shellQuote(value)}`);
  lines.push(`exec /bin/sh -c ${shellQuote(command)}`);
  return `${lines.join('\n')}\n`;
}

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", "'\\''")}'`;
}

/** Hands a folder the platform wrote to the project's user; links are changed, never followed. */
function chownTree(dir: string, uid: number): void {
  let stat;
  try {
    stat = lstatSync(dir);
  } catch {
    return;
  }
  if (stat.uid !== uid || stat.gid !== uid) lchownSync(dir, uid, uid);
  if (!stat.isDirectory()) return;
  for (const entry of readdirSync(dir)) chownTree(join(dir, entry), uid);
}
