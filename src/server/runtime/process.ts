// Running one command of a deployed app: in its own process group (so stopping it stops everything it
// started), with its output read line by line, and a health check that waits for its port. The
// runtime's `process` driver builds on this; the `sandbox` driver wraps the same command in bwrap.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { readLines } from './lines.js';
import { canCheckPortOwners, groupHoldsPort, groupMembers, portIsFree } from './ports.js';

export interface ProcessSpec {
  /** A shell command line, run with /bin/sh -c. */
  command: string;
  cwd: string;
  env: Record<string, string>;
  /** The program to run instead of `/bin/sh -c command` (the sandbox's chain, which runs the command). */
  argv?: string[];
  /** Written to the program's fd 3, then closed (the sandbox's script holding the app's variables). */
  script?: string;
  /** A pipe on the program's fd 4, whose text `RunningProcess.status` gives (bwrap's --json-status-fd). */
  statusPipe?: boolean;
  /**
   * Each line the command writes, without its newline; lines longer than 16 KiB come in marked pieces
   * (lines.ts), so no output can grow the platform's memory.
   */
  onLine(stream: 'stdout' | 'stderr', line: string): void;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface RunningProcess {
  pid: number;
  /** Settles when the command's own process has exited. */
  exited: Promise<ProcessExit>;
  /**
   * With `statusPipe`: what the program wrote on its fd 4 (its first 4 KiB), once every holder of the
   * pipe closed it; nothing ('') when it is still open a second after the program exited (a process
   * left behind holds it, or this process was too busy to read it: either way, not known).
   */
  status?: Promise<string>;
  /** SIGTERM to the whole group, SIGKILL after `graceMs`; resolves once the process has exited. */
  stop(graceMs?: number): Promise<ProcessExit>;
}

export function startProcess(spec: ProcessSpec): RunningProcess {
  const argv = spec.argv ?? ['/bin/sh', '-c', spec.command];
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: spec.cwd,
    env: spec.env,
    // Its own process group: kill(-pid) then reaches every process the command starts.
    detached: true,
    stdio: [
      'ignore',
      'pipe',
      'pipe',
      spec.script === undefined ? 'ignore' : 'pipe',
      spec.statusPipe ? 'pipe' : 'ignore',
    ],
  });
  if (spec.script !== undefined) {
    const fd3 = child.stdio[3] as Writable;
    // The program may die before it reads it all: that shows as its exit, not as an error here.
    fd3.on('error', () => undefined);
    fd3.end(spec.script);
  }
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => {
      spec.onLine('stderr', `could not start: ${error.message}`);
      resolve({ code: 127, signal: null });
    });
  });
  const status = spec.statusPipe ? readStatus(child.stdio[4] as Readable, exited) : undefined;
  for (const [name, stream] of [
    ['stdout', child.stdout!],
    ['stderr', child.stderr!],
  ] as const) {
    readLines(stream, (line) => spec.onLine(name, line));
  }
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // the group is gone already
    }
  };
  return {
    pid: child.pid ?? -1,
    exited,
    ...(status && { status }),
    async stop(graceMs = 5_000) {
      signalGroup('SIGTERM');
      // The whole group gets the grace time, not only the command's shell: under `sh -c 'npm start'`
      // the shell dies of SIGTERM at once while the app is still closing its connections.
      let done = false;
      void exited.then(() => (done = true));
      const deadline = Date.now() + graceMs;
      while (!(done && !groupAlive(child.pid)) && Date.now() < deadline) await sleep(20);
      // Whatever is left of the group goes now, and is gone (its ports free) before stop resolves.
      signalGroup('SIGKILL');
      const exit = await exited;
      const killed = Date.now() + 2_000;
      while (groupAlive(child.pid) && Date.now() < killed) await sleep(10);
      return exit;
    },
  };
}

const STATUS_LIMIT = 4096;

function readStatus(pipe: Readable, exited: Promise<ProcessExit>): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  pipe.on('data', (chunk: Buffer) => {
    if (length >= STATUS_LIMIT) return;
    chunks.push(chunk.subarray(0, STATUS_LIMIT - length));
    length += chunk.length;
  });
  pipe.on('error', () => undefined);
  const text = () => Buffer.concat(chunks).toString('utf8');
  return new Promise((resolve) => {
    pipe.once('close', () => resolve(text()));
    // A process the program left behind may hold the pipe open. What was read by then may be only a
    // part (on a loaded machine the timer can come before the read of what is in the pipe already):
    // no status, rather than one that could read as a sandbox that was never set up.
    void exited.then(() => setTimeout(() => resolve(''), 1_000).unref());
  });
}

/**
 * Whether a process of the group `pgid` still runs. Zombies do not count: they hold no port, and an
 * orphan's may wait long for its new parent to reap it.
 */
function groupAlive(pgid: number | undefined): boolean {
  if (pgid === undefined) return false;
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  if (process.platform !== 'linux') return true;
  return groupMembers(pgid).length > 0;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class HealthCheckError extends Error {}

/**
 * Resolves once the app accepts TCP connections on 127.0.0.1:`port`; rejects when `exited` settles
 * first (the app died) or after `timeoutMs`. With `owner` (the app's process group, asked at each
 * check: a sandbox started again has a new one), the listening socket must belong to that group: a port
 * some other program holds is not this app being up.
 */
export async function waitForPort(
  port: number,
  options: { timeoutMs: number; exited?: Promise<ProcessExit>; owner?: () => number },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  let died: ProcessExit | null = null;
  let heldByOther = false;
  const checkOwner = options.owner !== undefined && canCheckPortOwners();
  void options.exited?.then((exit) => (died = exit));
  for (let delay = 25; ; delay = Math.min(delay * 2, 250)) {
    if (await accepts(port)) {
      const owner = options.owner?.() ?? -1;
      if (!checkOwner || owner <= 0 || groupHoldsPort(owner, port)) return;
      heldByOther = true;
    }
    const other = heldByOther ? `; port ${port} is held by another program, not by this app` : '';
    if (died) {
      const { code, signal } = died as ProcessExit;
      throw new HealthCheckError(
        `the app exited (${signal ? `signal ${signal}` : `code ${code}`}) before it listened on port ${port}${other}`,
      );
    }
    if (Date.now() + delay > deadline) {
      throw new HealthCheckError(
        heldByOther
          ? `the app did not listen on port ${port} within ${Math.round(options.timeoutMs / 1000)} s${other}`
          : `nothing listened on port ${port} within ${Math.round(options.timeoutMs / 1000)} s`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Where the kernel takes the local ports of outgoing connections from (Linux's default if unknown). */
export function ephemeralPorts(rangeFile = '/proc/sys/net/ipv4/ip_local_port_range'): [number, number] {
  try {
    const [low, high] = readFileSync(rangeFile, 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low! > 0 && low! <= high!) return [low!, high!];
  } catch {
    // not Linux, or no /proc: the default
  }
  return [32_768, 60_999];
}

/** App ports come from here, below the ephemeral range (and above the ports people pick by hand). */
const APP_PORTS_FROM = 20_000;
/** A port handed out stays its app's for this long, whether or not it listens yet. */
const HANDED_OUT_MS = 60_000;
const handedOut = new Map<number, number>();

/**
 * A port free on 127.0.0.1 right now, for an app's PORT. It is taken below the kernel's ephemeral
 * range: a port found free in that range can be taken by any outgoing connection on the machine (a
 * busy platform makes many) before the app listens on it, and that start then fails its health check.
 * Two apps starting at once never get the same one. Where the range leaves no room below it, the
 * kernel picks, as before.
 */
export async function freePort(range: [number, number] = ephemeralPorts()): Promise<number> {
  const now = Date.now();
  for (const [port, at] of handedOut) if (now - at > HANDED_OUT_MS) handedOut.delete(port);
  const [low] = range;
  const high = low - 1;
  if (high - APP_PORTS_FROM >= 1_000) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = APP_PORTS_FROM + Math.floor(Math.random() * (high - APP_PORTS_FROM + 1));
      if (handedOut.has(port)) continue;
      // Held while it is looked at, so that a start beside this one cannot pick it meanwhile.
      handedOut.set(port, now);
      if (await portIsFree(port)) return port;
      handedOut.delete(port);
    }
  }
  const port = await portTheKernelPicks();
  handedOut.set(port, now);
  return port;
}

/** A port of 127.0.0.1 the kernel gives a listener, free again once it is closed. */
function portTheKernelPicks(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
