// What the sandbox does not show of the machine beyond its data and homes: the doors out. A desktop
// session's bus (/run/user/UID/bus, from which `systemd-run --user` starts anything), a rootless engine's
// socket there, Docker's socket right in /run and the engines' state would each let a command act
// outside the sandbox.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { SandboxDriver, runSockets } from '../../src/server/runtime/drivers/host.js';
import type { RunningProcess } from '../../src/server/runtime/process.js';

const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;
const isRoot = process.getuid?.() === 0;

const root = mkdtempSync(join(tmpdir(), 'wharf-sandbox-doors-'));
const servers: Server[] = [];
const running: RunningProcess[] = [];
const cleanups: Array<() => void> = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.stop(1_000)));
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  for (const cleanup of cleanups.reverse()) cleanup();
  rmSync(root, { recursive: true, force: true });
});

function listen(path: string): Promise<void> {
  const server = createServer((socket) => socket.end('out of the sandbox\n'));
  servers.push(server);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, resolve);
  });
}

describe('runSockets: the sockets right in a folder', () => {
  it('lists sockets, not files, folders or sockets deeper down', async () => {
    const dir = join(root, 'run');
    mkdirSync(join(dir, 'deeper'), { recursive: true });
    writeFileSync(join(dir, 'plain.pid'), '1\n');
    await listen(join(dir, 'engine.sock'));
    await listen(join(dir, 'deeper', 'other.sock'));
    expect(runSockets(dir)).toEqual([join(dir, 'engine.sock')]);
    expect(runSockets(join(root, 'missing'))).toEqual([]);
  });
});

describe.skipIf(!hasBwrap || !isRoot)('a sandboxed command', () => {
  it('sees no socket in /run, nothing of /run/user, and no engine state', { timeout: 30_000 }, async () => {
    const tag = `wharf-door-${randomBytes(4).toString('hex')}`;
    const socket = `/run/${tag}.sock`;
    await listen(socket);
    cleanups.push(() => rmSync(socket, { force: true }));
    const runUserExisted = existsSync('/run/user');
    const session = `/run/user/${tag}`;
    mkdirSync(session, { recursive: true });
    writeFileSync(join(session, 'bus'), 'a session bus would be here\n');
    cleanups.push(() => rmSync(runUserExisted ? session : '/run/user', { recursive: true, force: true }));
    const engineState = existsSync('/var/lib/docker');

    const driver = new SandboxDriver({ hidden: [join(root, 'data')], users: null, cgroups: null });
    const workspace = mkdtempSync(join(root, 'ws-'));
    const lines: string[] = [];
    const proc = driver.run({
      projectId: 'p1',
      command: [
        `[ -S ${socket} ] && echo "socket visible"`,
        `[ -e ${session}/bus ] && echo "session visible"`,
        `[ -d /var/lib/docker ] && ls -A /var/lib/docker | sed 's/^/engine state: /'`,
        // What an app needs is still there.
        `[ -r /etc/passwd ] && echo "etc readable"`,
        'echo done',
      ].join('; '),
      cwd: workspace,
      env: {},
      workspace,
      onLine: (_stream, line) => lines.push(line),
    });
    running.push(proc);
    expect(await proc.exited).toEqual({ code: 0, signal: null });
    expect(lines).toEqual(['etc readable', 'done']);
    // The check above means something only if they are there outside.
    expect(spawnSync('sh', ['-c', `[ -S ${socket} ] && [ -e ${session}/bus ]`]).status).toBe(0);
    if (engineState) expect(spawnSync('sh', ['-c', 'ls -A /var/lib/docker | grep -q .']).status).toBe(0);
  });
});
