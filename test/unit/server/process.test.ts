// The runtime's process layer on real processes: output by line, process groups, health checks.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/poll.js';
import {
  HealthCheckError,
  ephemeralPorts,
  freePort,
  startProcess,
  waitForPort,
  type RunningProcess,
} from '../../../src/server/runtime/process.js';

const cwd = mkdtempSync(join(tmpdir(), 'wharf-process-'));
const running: RunningProcess[] = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.stop(1_000)));
  rmSync(cwd, { recursive: true, force: true });
});

function start(command: string, env: Record<string, string> = {}) {
  const lines: Array<[string, string]> = [];
  const proc = startProcess({
    command,
    cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    onLine: (stream, line) => lines.push([stream, line]),
  });
  running.push(proc);
  return { proc, lines };
}

const node = JSON.stringify(process.execPath);
const server = `${node} -e "require('http').createServer((q,s)=>s.end('ok')).listen(process.env.PORT,'127.0.0.1',()=>console.log('listening on '+process.env.PORT))"`;

/** Whether the process runs (a zombie, killed but not yet reaped by its new parent, does not). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

describe('startProcess', () => {
  it('reports stdout and stderr line by line and the exit code', async () => {
    const { proc, lines } = start(`printf 'one\\ntwo\\n'; printf 'partial' ; echo oops >&2; exit 3`);
    expect(await proc.exited).toEqual({ code: 3, signal: null });
    await new Promise((r) => setTimeout(r, 20));
    expect(lines.filter(([s]) => s === 'stdout').map(([, l]) => l)).toEqual(['one', 'two', 'partial']);
    expect(lines).toContainEqual(['stderr', 'oops']);
  });

  it('gives the app its PORT and waits until it listens', async () => {
    const port = await freePort();
    const { proc, lines } = start(server, { PORT: String(port) });
    await waitForPort(port, { timeoutMs: 10_000, exited: proc.exited });
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('ok');
    // The port may accept before the line has come through the pipe.
    await until(() => lines.some(([, l]) => l === `listening on ${port}`), 'the listening line');
    expect(lines).toContainEqual(['stdout', `listening on ${port}`]);
    const exit = await proc.stop();
    expect(exit.signal === 'SIGTERM' || exit.code !== 0).toBe(true);
  });

  it('stops every process the command started, not only the shell', async () => {
    const { proc, lines } = start(`sleep 300 & echo "child $!"; wait`);
    await until(() => lines.some(([, l]) => l.startsWith('child ')), 'the child pid line');
    const childPid = Number(lines.find(([, l]) => l.startsWith('child '))?.[1].split(' ')[1]);
    expect(alive(childPid)).toBe(true);
    await proc.stop(1_000);
    await until(() => !alive(childPid), 'the child gone', 3_000);
  });

  it('kills a command that ignores SIGTERM once the grace time is over', async () => {
    // Stopped only once the shell has set its trap (a SIGTERM before that would end it).
    const { proc, lines } = start(`trap '' TERM; echo ready; sleep 300`);
    await until(() => lines.some(([, l]) => l === 'ready'), 'the trap set');
    const started = Date.now();
    const exit = await proc.stop(300);
    expect(exit.signal).toBe('SIGKILL');
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});

describe('waitForPort', () => {
  it('fails at once, saying so, when the app exits before it listens', async () => {
    const port = await freePort();
    const { proc } = start('echo starting; exit 1');
    await expect(waitForPort(port, { timeoutMs: 10_000, exited: proc.exited })).rejects.toThrow(
      new HealthCheckError(`the app exited (code 1) before it listened on port ${port}`),
    );
  });

  it('fails after the time-out when nothing listens', async () => {
    const port = await freePort();
    const { proc } = start('sleep 300');
    const started = Date.now();
    await expect(waitForPort(port, { timeoutMs: 400, exited: proc.exited })).rejects.toThrow(
      /within 0 s|within 1 s|nothing listened/,
    );
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it.skipIf(process.platform !== 'linux')(
    'does not take a port another program holds for the app being up, and says so',
    async () => {
      const squatter = createServer((socket) => socket.end());
      await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
      const port = (squatter.address() as AddressInfo).port;
      try {
        // The app never listens: the port answers all the same, held by this test's own process.
        const { proc } = start('sleep 300');
        await expect(
          waitForPort(port, { timeoutMs: 600, exited: proc.exited, owner: () => proc.pid }),
        ).rejects.toThrow(`port ${port} is held by another program, not by this app`);
      } finally {
        squatter.close();
      }
    },
  );

  it.skipIf(process.platform !== 'linux')('takes the port once the app’s own process holds it', async () => {
    const port = await freePort();
    const { proc } = start(server, { PORT: String(port) });
    await waitForPort(port, { timeoutMs: 10_000, exited: proc.exited, owner: () => proc.pid });
  });
});

describe('freePort', () => {
  it('hands out ports below the kernel’s ephemeral range, free, and never the same one twice at once', async () => {
    const [low] = ephemeralPorts();
    const ports = await Promise.all(Array.from({ length: 40 }, () => freePort()));
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(low);
    }
  });

  it('passes over ports something listens on', async () => {
    // A range that leaves 1,001 ports below it (20000–21000), a tenth of them held here (those another
    // program holds are held all the same): 200 asked for, none of them one of those.
    const held: Server[] = [];
    for (let port = 20_000; port < 20_100; port++) {
      const server = createServer();
      const listening = await new Promise<boolean>((resolve) => {
        server.once('error', () => resolve(false));
        server.listen(port, '127.0.0.1', () => resolve(true));
      });
      if (listening) held.push(server);
    }
    try {
      expect(held.length).toBeGreaterThan(90);
      const ports = await Promise.all(Array.from({ length: 200 }, () => freePort([21_001, 60_999])));
      for (const port of ports) {
        expect(port).toBeGreaterThanOrEqual(20_100);
        expect(port).toBeLessThanOrEqual(21_000);
      }
    } finally {
      for (const server of held) server.close();
    }
  });

  it('lets the kernel pick where the ephemeral range leaves no room below it', async () => {
    const port = await freePort([1_024, 65_535]);
    expect(port).toBeGreaterThan(0);
    expect(
      await new Promise((resolve) => {
        const server = createServer();
        server.once('error', () => resolve(false));
        server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
      }),
    ).toBe(true);
  });

  it('reads the range from the kernel, and falls back to Linux’s default on a file it cannot read', () => {
    const file = join(cwd, 'ip_local_port_range');
    writeFileSync(file, '40000\t50000\n');
    expect(ephemeralPorts(file)).toEqual([40_000, 50_000]);
    writeFileSync(file, 'not a range\n');
    expect(ephemeralPorts(file)).toEqual([32_768, 60_999]);
    expect(ephemeralPorts(join(cwd, 'missing'))).toEqual([32_768, 60_999]);
  });
});
