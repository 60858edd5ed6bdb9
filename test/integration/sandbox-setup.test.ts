// The sandbox runtime when bubblewrap's setup fails: bwrap remounts every mount under / one by one, and
// one that goes away meanwhile (a container's file system on a machine that also runs Docker) fails the
// start with "Unable to apply mount flags: remount ...: Invalid argument" (bubblewrap#650). The driver
// starts such a sandbox again; it never starts again a command that ran and failed. Started in a mount
// namespace of its own (ownMounts), it no longer races at all, and a mount made on the machine after the
// start stays out of the sandbox.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ownMounts, SandboxDriver, setupFailed } from '../../src/server/runtime/drivers/host.js';
import type { RunningProcess } from '../../src/server/runtime/process.js';

const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;
const isRoot = process.getuid?.() === 0;

const root = mkdtempSync(join(tmpdir(), 'wharf-sandbox-setup-'));
const running: RunningProcess[] = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.stop(1_000)));
  rmSync(root, { recursive: true, force: true });
});

describe('setupFailed: what bwrap --json-status-fd says', () => {
  it('is a setup failure when the sandbox was created and no command exit came', () => {
    expect(setupFailed('{ "child-pid": 4321, "cgroup-namespace": 4026531835 }\n')).toBe(true);
  });
  it('is not one when the command ran (whatever its exit code)', () => {
    expect(setupFailed('{ "child-pid": 4321 }\n{ "exit-code": 1 }\n')).toBe(false);
    expect(setupFailed('{ "child-pid": 4321 }\n{ "exit-code": 0 }\n')).toBe(false);
  });
  it('is not one when bwrap never created the sandbox (nothing, or not JSON)', () => {
    expect(setupFailed('')).toBe(false);
    expect(setupFailed('bwrap: Unknown option --nope\n')).toBe(false);
    expect(setupFailed('null\n"child-pid"\n[1]\n')).toBe(false);
  });
});

/**
 * A bwrap that fails its setup as the real one does (status "child-pid" on the --json-status-fd, the
 * error on stderr, exit 1) on the calls for which `failing` (a shell test on the call's number $n)
 * holds, and is the real bwrap otherwise. With `probes: 'real'` the driver's probe (`--ro-bind / /
 * --unshare-pid true`) always goes to the real bwrap and is not counted: $n numbers the starts alone.
 * The real probe can itself fail for the reason this file is about (a container's mount going away
 * meanwhile, on a machine running other tests' containers); the driver then probes again, and a count
 * that took the probe for call 1 would hand those tries to `failing`. With `probes: 'counted'` the
 * probe is call 1, for the test of a failing probe.
 */
function flakyBwrap(
  name: string,
  failing: string,
  probes: 'real' | 'counted' = 'real',
): { path: string; calls: () => number } {
  const dir = join(root, name);
  mkdirSync(dir);
  const calls = join(dir, 'calls');
  writeFileSync(calls, '');
  const path = join(dir, 'bwrap');
  const passProbe =
    probes === 'real'
      ? `[ "$*" = "--json-status-fd 3 --ro-bind / / --unshare-pid true" ] && exec bwrap "$@"\n`
      : '';
  writeFileSync(
    path,
    `#!/bin/sh
${passProbe}echo call >> ${JSON.stringify(calls)}
n=$(wc -l < ${JSON.stringify(calls)})
if ${failing}; then
  fd=
  prev=
  for a; do [ "$prev" = --json-status-fd ] && fd=$a; prev=$a; done
  [ -n "$fd" ] && eval "echo '{ \\"child-pid\\": 99999 }' >&$fd"
  echo 'bwrap: Can'"'"'t bind mount /oldroot/ on /newroot/: Unable to apply mount flags: remount "/newroot/var/lib/docker/overlay2/x/merged": Invalid argument' >&2
  exit 1
fi
exec bwrap "$@"
`,
  );
  chmodSync(path, 0o755);
  return { path, calls: () => readFileSync(calls, 'utf8').split('\n').filter(Boolean).length };
}

function sandbox(bwrap: string): SandboxDriver {
  return new SandboxDriver({ hidden: [join(root, 'hidden')], users: null, cgroups: null, bwrap });
}

function run(driver: SandboxDriver, command: string) {
  const workspace = mkdtempSync(join(root, 'ws-'));
  const lines: Array<[string, string]> = [];
  const proc = driver.run({
    projectId: 'p1',
    command,
    cwd: workspace,
    env: { GREETING: 'hello from the sandbox' },
    workspace,
    onLine: (stream, line) => lines.push([stream, line]),
  });
  running.push(proc);
  // A pipe's last lines may be read after the exit event: `finished` is the exit once they are in.
  const finished = proc.exited.then(async (exit) => {
    await quiet(lines);
    return exit;
  });
  return { proc, lines, workspace, finished };
}

/** Waits until `lines` stopped growing for 50 ms (2 s at most). */
async function quiet(lines: unknown[]): Promise<void> {
  let seen = -1;
  for (let i = 0; i < 40 && seen !== lines.length; i++) {
    seen = lines.length;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!hasBwrap)('a sandbox whose setup fails', () => {
  it('is started again, and the command runs once it is set up', async () => {
    const bwrap = flakyBwrap('twice', '[ $n -le 2 ]');
    const { lines, finished } = run(sandbox(bwrap.path), 'echo "$GREETING"; exit 0');
    expect(await finished).toEqual({ code: 0, signal: null });
    expect(bwrap.calls()).toBe(3);
    expect(lines).toContainEqual(['stdout', 'hello from the sandbox']);
    const notes = lines.filter(([, line]) => line.startsWith('the sandbox could not be set up'));
    expect(notes.map(([, line]) => line)).toEqual([
      'the sandbox could not be set up (attempt 1 of 3); starting it again',
      'the sandbox could not be set up (attempt 2 of 3); starting it again',
    ]);
    // What bwrap said stays in the log: the operator sees why it took more than one start.
    expect(lines.filter(([, line]) => line.includes('Unable to apply mount flags'))).toHaveLength(2);
  });

  it('gives up after three starts, with bwrap’s own exit and message', async () => {
    const bwrap = flakyBwrap('always', 'true');
    const { lines, finished } = run(sandbox(bwrap.path), 'echo never');
    expect(await finished).toEqual({ code: 1, signal: null });
    expect(bwrap.calls()).toBe(3);
    expect(lines.some(([, line]) => line === 'never')).toBe(false);
    expect(lines.filter(([, line]) => line.includes('Unable to apply mount flags'))).toHaveLength(3);
  });

  it('never starts again a command that ran and failed', async () => {
    const bwrap = flakyBwrap('none', 'false');
    const { lines, finished } = run(sandbox(bwrap.path), 'echo ran; exit 7');
    expect(await finished).toEqual({ code: 7, signal: null });
    expect(bwrap.calls()).toBe(1);
    expect(lines.filter(([, line]) => line === 'ran')).toHaveLength(1);
  });

  it('a failed probe is tried again too: the platform keeps its sandbox', async () => {
    const bwrap = flakyBwrap('probe', '[ $n -lt 3 ]', 'counted');
    const driver = sandbox(bwrap.path);
    expect(bwrap.calls()).toBe(3);
    const { lines, finished } = run(driver, 'echo "$GREETING"');
    expect(await finished).toEqual({ code: 0, signal: null });
    expect(lines).toContainEqual(['stdout', 'hello from the sandbox']);
  });

  it('stopped between two starts, it starts no more', async () => {
    const bwrap = flakyBwrap('stopped', 'true');
    const { proc } = run(sandbox(bwrap.path), 'sleep 30');
    const stopping = proc.stop(1_000);
    await proc.exited;
    await stopping;
    // Give a pending start the time it would have taken (the retry waits 50 ms, then 100 ms).
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(bwrap.calls()).toBeLessThanOrEqual(2);
  });

  it.skipIf(!isRoot)(
    'the real race: starts while mounts under / come and go all succeed',
    { timeout: 60_000 },
    async () => {
      // A shared mount of our own, as Docker makes /var/lib/docker, with mounts churning inside it.
      const churn = join(root, 'churn');
      mkdirSync(churn);
      const mount = (...args: string[]) => spawnSync('mount', args, { stdio: 'ignore' }).status === 0;
      expect(mount('--bind', churn, churn)).toBe(true);
      expect(mount('--make-shared', churn)).toBe(true);
      let churner: ChildProcess | null = null;
      try {
        const points = Array.from({ length: 60 }, (_, i) => join(churn, `m${i}`));
        for (const point of points) mkdirSync(point);
        churner = spawn(
          '/bin/sh',
          [
            '-c',
            `while :; do for p in "$@"; do mount -t tmpfs churn "$p"; done; for p in "$@"; do umount "$p"; done; done`,
            'sh',
            ...points,
          ],
          { stdio: 'ignore', detached: true },
        );
        const driver = sandbox('bwrap');
        let restarted = 0;
        const failed: string[][] = [];
        for (let i = 0; i < 120; i++) {
          const { lines, finished } = run(driver, 'echo up');
          const exit = await finished;
          if (exit.code !== 0 || !lines.some(([, line]) => line === 'up'))
            failed.push(lines.map(([, l]) => l));
          if (lines.some(([, line]) => line.startsWith('the sandbox could not be set up'))) restarted += 1;
        }
        expect(failed).toEqual([]);
        // In a mount namespace of its own, bwrap reads a table nothing changes: the race cannot strike
        // (in the same namespace as the churn it did in about 3 of 100 starts, and three times in a row
        // on a loaded machine).
        expect(driver.ownMountsRefused).toBeNull();
        expect(restarted).toBe(0);
      } finally {
        if (churner?.pid) {
          try {
            process.kill(-churner.pid, 'SIGKILL');
          } catch {
            // gone
          }
        }
        spawnSync('sh', ['-c', `umount -R ${JSON.stringify(churn)}`], { stdio: 'ignore' });
      }
    },
  );
});

/**
 * A shared mount of our own outside /tmp (the sandbox has a /tmp of its own), as systemd makes /, with
 * an empty folder `late` in it to mount on once a sandbox runs.
 */
function sharedMount(): { dir: string; late: string; cleanup: () => void } {
  const dir = mkdtempSync('/var/tmp/wharf-late-mount-');
  const late = join(dir, 'late');
  mkdirSync(late);
  expect(spawnSync('mount', ['--bind', dir, dir]).status).toBe(0);
  expect(spawnSync('mount', ['--make-shared', dir]).status).toBe(0);
  return {
    dir,
    late,
    cleanup: () => {
      spawnSync('umount', ['-R', dir], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What a sandboxed shell says of `late` once `go` exists in its folder: whether it is mounted, writable. */
const LOOK_AT_LATE = (late: string) =>
  `echo ready; while [ ! -e go ]; do sleep 0.05; done; ` +
  `if grep -q " ${late} " /proc/self/mountinfo; then echo seen; else echo unseen; fi; ` +
  `if touch ${late}/x 2>/dev/null; then echo wrote; else echo refused; fi`;

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`no ${what} in 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.skipIf(!hasBwrap || !isRoot)('a sandbox’s mounts', () => {
  it(
    'a mount made on the machine after the app started stays out of its sandbox',
    { timeout: 30_000 },
    async () => {
      const shared = sharedMount();
      try {
        const { lines, workspace, finished } = run(sandbox('bwrap'), LOOK_AT_LATE(shared.late));
        await until(() => lines.some(([, line]) => line === 'ready'), 'start');
        expect(spawnSync('mount', ['-t', 'tmpfs', 'late', shared.late]).status).toBe(0);
        writeFileSync(join(workspace, 'go'), '');
        expect(await finished).toEqual({ code: 0, signal: null });
        // Without a mount namespace of its own: "seen" and "wrote", into the machine's new mount.
        expect(lines.map(([, line]) => line)).toEqual(['ready', 'unseen', 'refused']);
        expect(readdirSync(shared.late)).toEqual([]);
      } finally {
        shared.cleanup();
      }
    },
  );

  it('where the machine refuses the namespace, the sandbox starts without it and says why', async () => {
    const dir = join(root, 'refusing-unshare');
    mkdirSync(dir);
    const unshare = join(dir, 'unshare');
    writeFileSync(
      unshare,
      `#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n`,
    );
    chmodSync(unshare, 0o755);
    const driver = new SandboxDriver({ hidden: [join(root, 'hidden')], users: null, cgroups: null, unshare });
    expect(driver.ownMountsRefused).toBe('unshare: unshare failed: Operation not permitted');
    const { lines, finished } = run(driver, 'echo "$GREETING"');
    expect(await finished).toEqual({ code: 0, signal: null });
    expect(lines).toContainEqual(['stdout', 'hello from the sandbox']);
    const missing = new SandboxDriver({
      hidden: [join(root, 'hidden')],
      users: null,
      cgroups: null,
      unshare: join(dir, 'nowhere'),
    });
    expect(missing.ownMountsRefused).toBe('unshare (util-linux) is not installed');
  });

  it(
    'a platform that is not root gets the same, in a user namespace mapped to its own user',
    { timeout: 30_000 },
    async () => {
      const shared = sharedMount();
      const workspace = mkdtempSync('/var/tmp/wharf-late-mount-ws-');
      chmodSync(workspace, 0o777);
      try {
        // The driver's frame for a platform that is not root, around the real bwrap, run as `nobody`.
        const child = spawn(
          'setpriv',
          [
            '--reuid=65534',
            '--regid=65534',
            '--clear-groups',
            '--',
            ...ownMounts(false),
            'bwrap',
            '--ro-bind',
            '/',
            '/',
            '--dev',
            '/dev',
            '--proc',
            '/proc',
            '--tmpfs',
            '/tmp',
            '--bind',
            workspace,
            workspace,
            '--unshare-pid',
            '--chdir',
            workspace,
            '/bin/sh',
            '-c',
            `id -u; ${LOOK_AT_LATE(shared.late)}`,
          ],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        const lines: string[] = [];
        let stderr = '';
        child.stdout
          .setEncoding('utf8')
          .on('data', (chunk: string) => lines.push(...chunk.split('\n').filter(Boolean)));
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
        const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
        await until(() => lines.includes('ready') || child.exitCode !== null, 'start');
        expect(stderr).toBe('');
        expect(spawnSync('mount', ['-t', 'tmpfs', 'late', shared.late]).status).toBe(0);
        writeFileSync(join(workspace, 'go'), '');
        expect(await exited).toBe(0);
        expect(lines).toEqual(['65534', 'ready', 'unseen', 'refused']);
      } finally {
        shared.cleanup();
        rmSync(workspace, { recursive: true, force: true });
      }
    },
  );
});
