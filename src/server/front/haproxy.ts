// HAProxy as a child of the platform, in master-worker mode: `haproxy -W -S master.sock -f haproxy.cfg`
// run in the front's folder. A new configuration is checked first (`haproxy -c`), then applied with the
// master CLI's `reload`: the master starts a new worker, which takes the listening sockets over from the
// old one (`expose-fd listeners`: no connection is refused meanwhile), and the old one finishes what it
// was doing and leaves. The master is started under `setpriv --pdeathsig KILL` when the machine has it,
// so that it (and its workers, which leave with it) never outlives a platform killed outright; a master
// left from such a platform without setpriv is found by its command line and stopped at the next start.
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MASTER_SOCKET } from './haproxy-config.js';

export interface HaproxyInstall {
  path: string;
  /** `2.6.12-1+deb12u4` */
  version: string;
}

/** The oldest HAProxy the generated configuration works with (`option idle-close-on-response`). */
export const MIN_HAPROXY = [2, 6] as const;

/** Where `haproxy` is: WHARF_HAPROXY, else the PATH, else the sbin folders a package puts it in. */
export function findHaproxy(env: NodeJS.ProcessEnv = process.env): HaproxyInstall | null {
  const candidates = env.WHARF_HAPROXY
    ? [env.WHARF_HAPROXY]
    : [...(env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/sbin', '/usr/local/sbin', '/sbin'].map(
        (dir) => join(dir, 'haproxy'),
      );
  for (const path of candidates) {
    if (!existsSync(path)) continue;
    try {
      const out = execFileSync(path, ['-v'], { encoding: 'utf8', timeout: 5_000, stdio: 'pipe' });
      const match = /HA-?Proxy version (\S+)/i.exec(out);
      if (match) return { path, version: match[1]! };
    } catch {
      // not runnable: try the next one
    }
  }
  return null;
}

/** Why `install` cannot run the front, or null. */
export function unsupportedHaproxy(install: HaproxyInstall): string | null {
  const [major = 0, minor = 0] = install.version.split(/[.-]/).map(Number);
  const [wantMajor, wantMinor] = MIN_HAPROXY;
  if (major > wantMajor || (major === wantMajor && minor >= wantMinor)) return null;
  return `HAProxy ${install.version} at ${install.path} is too old for the front: it needs ${wantMajor}.${wantMinor} or newer`;
}

export interface HaproxyProcesses {
  master: number | null;
  /** The current worker(s). */
  workers: number[];
  /** Workers a reload replaced that are still finishing their connections. */
  old: number[];
  /** Reloads the master refused (a configuration that did not load). */
  failed: number;
}

export interface HaproxyOptions {
  install: HaproxyInstall;
  /** The front's folder: the configuration, its files and the sockets, by relative name. */
  dir: string;
  /** Each line HAProxy writes (alerts, warnings, notices). */
  onLine(line: string): void;
  /** HAProxy exited once running, not asked to (killed, crashed). */
  onExit?(): void;
}

const START_TIMEOUT_MS = 15_000;
const RELOAD_TIMEOUT_MS = 15_000;
const COMMAND_TIMEOUT_MS = 5_000;

export class Haproxy {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private readonly tail: string[] = [];
  private stopping = false;

  constructor(private readonly options: HaproxyOptions) {}

  /** The last lines HAProxy wrote, for an error message. */
  output(lines = 8): string {
    return this.tail.slice(-lines).join('\n');
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Checks a configuration file (relative to the folder) without applying it; null when valid. */
  check(file: string): Promise<string | null> {
    return new Promise((resolve) => {
      execFile(
        this.options.install.path,
        ['-c', '-q', '-C', this.options.dir, '-f', file],
        { cwd: this.options.dir, timeout: 30_000, maxBuffer: 1024 * 1024 },
        (error, stdout, stderr) => {
          if (!error) return resolve(null);
          const said = `${stdout}\n${stderr}`
            .split('\n')
            .filter((l) => /ALERT|error/i.test(l))
            .slice(0, 5)
            .join('; ');
          resolve(said || error.message);
        },
      );
    });
  }

  /** Starts the master and waits for its first worker; fails with HAProxy's words. */
  async start(): Promise<void> {
    await stopLeftovers(this.options.dir);
    const args = ['-W', '-S', `unix@${MASTER_SOCKET},mode,600`, '-C', this.options.dir, '-f', 'haproxy.cfg'];
    const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));
    const [command, argv] = setpriv
      ? [setpriv, ['--pdeathsig', 'KILL', '--', this.options.install.path, ...args]]
      : [this.options.install.path, args];
    const child = spawn(command, argv, { cwd: this.options.dir, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.once('error', (error) => this.line(`cannot run HAProxy: ${error.message}`));
    let partial = '';
    const onData = (chunk: Buffer) => {
      const text = partial + chunk.toString();
      const lines = text.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) this.line(line.trim());
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    let started = false;
    child.once('exit', (code, signal) => {
      if (this.child === child) this.child = null;
      if (this.stopping) return;
      this.line(`HAProxy exited (${signal ?? `code ${code}`})`);
      if (started) this.options.onExit?.();
    });
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (this.child === null) throw new Error(`HAProxy did not start: ${this.output() || 'no output'}`);
      const procs = await this.processes().catch(() => null);
      if (procs && procs.workers.length > 0) {
        started = true;
        return;
      }
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`HAProxy did not start within ${START_TIMEOUT_MS / 1000} s: ${this.output()}`);
      }
      await sleep(25);
    }
  }

  /**
   * Applies the configuration now in the folder: resolves once a new worker runs it; fails (the old
   * worker keeps serving) when the master could not load it.
   */
  async reload(): Promise<void> {
    const before = await this.processes();
    await this.command('reload').catch(() => undefined);
    const deadline = Date.now() + RELOAD_TIMEOUT_MS;
    for (;;) {
      await sleep(20);
      // The master re-executes itself: its socket may not answer for a moment.
      const after = await this.processes().catch(() => null);
      if (after) {
        if (after.failed > before.failed) {
          throw new Error(`HAProxy kept its previous configuration: ${this.output(5)}`);
        }
        if (after.workers.some((pid) => !before.workers.includes(pid))) return;
      }
      if (this.child === null) throw new Error(`HAProxy exited during a reload: ${this.output()}`);
      if (Date.now() > deadline)
        throw new Error(`HAProxy did not reload within ${RELOAD_TIMEOUT_MS / 1000} s`);
    }
  }

  /** The master and its workers, from the master CLI's `show proc`. */
  async processes(): Promise<HaproxyProcesses> {
    return parseShowProc(await this.command('show proc'));
  }

  /** One command on the master CLI (`@!<pid> <command>` reaches a worker); resolves with its answer. */
  command(line: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(join(this.options.dir, MASTER_SOCKET));
      let answer = '';
      socket.setTimeout(COMMAND_TIMEOUT_MS, () =>
        socket.destroy(new Error(`HAProxy did not answer "${line}"`)),
      );
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      socket.once('error', reject);
      socket.once('close', (failed) => {
        if (!failed) resolve(answer);
      });
      // The master CLI answers a command once the sender has said all it had to say.
      socket.end(`${line}\n`);
    });
  }

  /** Stops HAProxy now (its connections close): on platform shutdown. */
  async stop(): Promise<void> {
    this.stopping = true;
    try {
      await this.kill();
    } finally {
      this.stopping = false;
    }
  }

  private async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill('SIGTERM');
    const gone = await Promise.race([this.exited.then(() => true), sleep(5_000).then(() => false)]);
    if (!gone) {
      child.kill('SIGKILL');
      await this.exited;
    }
  }

  private line(line: string): void {
    this.tail.push(line);
    if (this.tail.length > 100) this.tail.shift();
    this.options.onLine(line);
  }
}

/** `show proc` of the master CLI: its sections `# workers`, `# old workers`, `# programs`. */
export function parseShowProc(text: string): HaproxyProcesses {
  const result: HaproxyProcesses = { master: null, workers: [], old: [], failed: 0 };
  let section: 'master' | 'workers' | 'old' | 'other' = 'master';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      if (/^#\s*workers/.test(line)) section = 'workers';
      else if (/^#\s*old workers/.test(line)) section = 'old';
      else if (!line.startsWith('#<PID>')) section = 'other';
      continue;
    }
    const [pid, type] = line.split(/\s+/);
    const n = Number(pid);
    if (!Number.isInteger(n)) continue;
    if (section === 'master' && type === 'master') {
      result.master = n;
      result.failed = Number(/\[failed: (\d+)\]/.exec(line)?.[1] ?? 0);
    } else if (section === 'workers' && type === 'worker') result.workers.push(n);
    else if (section === 'old' && type === 'worker') result.old.push(n);
  }
  return result;
}

/**
 * `show stat` (CSV): the current sessions of each server, by the address it points at, e.g.
 * `127.0.0.1:4242` → 2.
 */
export function sessionsByAddress(csv: string): Map<string, number> {
  const lines = csv.split('\n').filter((l) => l.trim() !== '');
  const header = lines.find((l) => l.startsWith('# '));
  const sessions = new Map<string, number>();
  if (!header) return sessions;
  const columns = header.slice(2).split(',');
  const svname = columns.indexOf('svname');
  const scur = columns.indexOf('scur');
  const addr = columns.indexOf('addr');
  if (svname === -1 || scur === -1 || addr === -1) return sessions;
  for (const line of lines) {
    if (line.startsWith('#')) continue;
    const fields = line.split(',');
    const name = fields[svname];
    if (name === 'FRONTEND' || name === 'BACKEND') continue;
    const address = fields[addr] ?? '';
    sessions.set(address, (sessions.get(address) ?? 0) + Number(fields[scur] ?? 0));
  }
  return sessions;
}

/**
 * HAProxy processes left running by a platform that died without stopping them (and without setpriv):
 * those whose command line is the one this class starts, for this very folder. Killed by pid; resolves
 * once they are gone (their listening ports with them).
 */
async function stopLeftovers(dir: string): Promise<void> {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return;
  }
  const ours = pids.map(Number).filter((pid) => {
    if (pid === process.pid) return false;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const at = argv.indexOf('-C');
      return at > 0 && argv[at + 1] === dir && argv.includes('-W') && argv.some((a) => a.endsWith('haproxy'));
    } catch {
      return false;
    }
  });
  for (const pid of ours) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  const deadline = Date.now() + 3_000;
  while (ours.some((pid) => existsSync(`/proc/${pid}`) && !isZombie(pid)) && Date.now() < deadline) {
    await sleep(20);
  }
}

function isZombie(pid: number): boolean {
  try {
    return /\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/** The `haproxy` account (Debian's package makes it) and its primary group, from /etc/passwd and /etc/group. */
export function haproxyAccount(): { user: string; group: string; gid: number } | null {
  try {
    const user = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .map((line) => line.split(':'))
      .find((fields) => fields[0] === 'haproxy');
    if (!user) return null;
    const gid = Number(user[3]);
    const group = readFileSync('/etc/group', 'utf8')
      .split('\n')
      .map((line) => line.split(':'))
      .find((fields) => Number(fields[2]) === gid)?.[0];
    if (!Number.isInteger(gid) || !group) return null;
    return { user: 'haproxy', group, gid };
  } catch {
    return null;
  }
}
