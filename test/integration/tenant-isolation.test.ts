// Tenant code against the platform and against other tenants, tried as an attacker would from a second
// account: builds and apps that read the platform's secret, its process environment and database,
// another project's files; output floods that used to end the platform; ports that belong to the
// platform or to another project; the process runtime on a platform of several accounts.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Project } from '../../src/shared/api/projects.js';
import { detectCgroups } from '../../src/server/runtime/cgroups.js';
import { MAX_LINE_BYTES } from '../../src/server/runtime/lines.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';
import {
  archiveOf,
  createProject,
  deploy,
  deployFiles,
  logLines,
  nodeApp,
  settled,
  upload,
  viaEdge,
  waitFor,
} from '../helpers/deploy.js';

const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;
const isRoot = process.getuid?.() === 0;

/** The machine's processes: real uid and command line (from /proc, as `ps` would show them). */
function processes(): Array<{ pid: number; ppid: number; uid: number; args: string }> {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
        const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
        // After the command name's closing parenthesis: state, then the parent's pid.
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return uid === undefined ? [] : [{ pid: Number(pid), ppid, uid: Number(uid), args }];
      } catch {
        return [];
      }
    });
}

/** The processes this test process started, at any depth (the platform runs in it): not other suites'. */
function ownProcesses(): ReturnType<typeof processes> {
  const all = processes();
  const own = new Set([process.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all) {
      if (!own.has(p.pid) && own.has(p.ppid)) {
        own.add(p.pid);
        grew = true;
      }
    }
  }
  return all.filter((p) => p.pid !== process.pid && own.has(p.pid));
}

/** The process's memory once garbage is collected (vitest runs with --expose-gc). */
function settledMemory(): NodeJS.MemoryUsage {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (!collect) throw new Error('run with --expose-gc (vitest.config.ts sets it)');
  collect();
  return process.memoryUsage();
}

/** The same platform seen with another account's key. */
function as(tp: TestPlatform, key: string): TestPlatform {
  return { ...tp, key };
}

describe.skipIf(!hasBwrap)('tenant code in the default runtime', () => {
  let tp: TestPlatform;
  let attacker: TestPlatform;
  let victim: Project;

  beforeAll(async () => {
    // A variable of the platform's own process: no tenant may read it.
    process.env.WHARF_TEST_PLATFORM_ONLY = 'platform-eyes-only';
    tp = await startPlatform({ healthTimeoutMs: 20_000 });
    const second = await tp.newAccount();
    attacker = as(tp, second.key);
    victim = await createProject(tp, {
      name: 'Victim',
      subdomain: 'victim',
      deploy_source: 'upload',
      env_vars: { VICTIM_TOKEN: 'victim-secret-value' },
    });
    await deployFiles(tp, victim.id, nodeApp('victim says hi'));
  }, 60_000);
  afterAll(async () => {
    delete process.env.WHARF_TEST_PLATFORM_ONLY;
    await tp?.close();
  });

  it('picks the sandbox by default when bubblewrap is there', () => {
    expect(tp.platform.runtime.kind).toBe('sandbox');
  });

  it('a build reads neither the secret, nor the platform’s environment, nor its database; the victim keeps serving', async () => {
    const victimDir = join(tp.dataDir, 'apps', victim.id);

    const platformPid = process.pid;
    const probe = [
      `cat ${join(tp.dataDir, 'secret')} && echo READ-SECRET || echo no-secret`,
      `cat ${join(tp.dataDir, 'local-account.json')} && echo READ-ACCOUNT || echo no-account`,
      `grep -c 'victim-secret-valu[e]' ${join(tp.dataDir, 'platform.db')} && echo READ-DB || echo no-db`,
      `tr '\\0' '\\n' < /proc/${platformPid}/environ | grep platform-eyes-only && echo READ-ENV || echo no-env`,
      `ls ${victimDir} && echo LISTED-VICTIM || echo no-victim`,
      `env | grep -c WHARF_TEST_PLATFORM_ONLY || echo no-platform-vars`,
      `kill -0 ${platformPid} && echo SIGNALLED || echo no-signal`,
      'echo uid=$(id -u)',
    ].join('; ');
    const project = await createProject(attacker, {
      name: 'Snoop',
      subdomain: 'snoop',
      deploy_source: 'upload',
      build_config: { build_cmd: probe, start_cmd: 'node server.js' },
    });
    await deployFiles(attacker, project.id, nodeApp('snoop'));
    const lines = await logLines(attacker, project.id);
    for (const refused of ['no-secret', 'no-account', 'no-db', 'no-env', 'no-victim', 'no-signal']) {
      expect(lines, lines.join('\n')).toContain(refused);
    }
    for (const leaked of [
      'READ-SECRET',
      'READ-ACCOUNT',
      'READ-DB',
      'READ-ENV',
      'LISTED-VICTIM',
      'SIGNALLED',
    ]) {
      expect(lines).not.toContain(leaked);
    }
    expect(lines).toContain('no-platform-vars');
    expect(lines.join('\n')).not.toContain('victim-secret-value');
    if (isRoot) {
      // A root platform runs each project as a uid of its own, never 0.
      const uid = Number(/^uid=(\d+)$/.exec(lines.find((l) => /^uid=\d+$/.test(l)) ?? '')?.[1]);
      expect(uid).toBeGreaterThanOrEqual(tp.platform.config.sandbox.uidBase);
    }
    const page = await viaEdge(tp.edgePort, 'victim.localhost', '/');
    expect(page.body).toBe('victim says hi /');
  }, 90_000);

  it.skipIf(!isRoot)(
    'two projects run as two users: one cannot read the other’s files',
    async () => {
      const a = await createProject(tp, {
        name: 'Owner A',
        subdomain: 'owner-a',
        deploy_source: 'upload',
        build_config: { start_cmd: 'node server.js' },
      });
      await deployFiles(tp, a.id, { ...nodeApp('a'), 'private.txt': 'only-for-a' });
      const aDir = join(tp.dataDir, 'apps', a.id);
      const b = await createProject(attacker, {
        name: 'Owner B',
        subdomain: 'owner-b',
        deploy_source: 'upload',
        build_config: {
          build_cmd: `id -u; find ${aDir} -name private.txt -exec cat {} + 2>&1 || true; echo done-looking`,
          start_cmd: 'node server.js',
        },
      });
      await deployFiles(attacker, b.id, nodeApp('b'));
      const lines = await logLines(attacker, b.id);
      expect(lines).toContain('done-looking');
      expect(lines).not.toContain('only-for-a');
      const uids = ownProcesses()
        .filter((p) => p.args === 'node server.js')
        .map((p) => p.uid);
      expect(uids.length).toBeGreaterThanOrEqual(2);
      expect(uids.every((uid) => uid >= tp.platform.config.sandbox.uidBase)).toBe(true);
    },
    90_000,
  );

  it('a variable a tenant sets (LD_PRELOAD) never loads into a privileged step', async () => {
    // A shared object whose constructor leaves a mark with its uid wherever it is loaded.
    const dir = mkdtempSync(join(tmpdir(), 'wharf-preload-'));
    const mark = join(dir, 'loaded-as');
    try {
      writeFileSync(
        join(dir, 'mark.c'),
        `#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
  FILE *f = fopen("${mark}", "a");
  if (f) { fprintf(f, "%d\\n", (int)getuid()); fclose(f); }
}
`,
      );
      const compiler = spawnSync('cc', ['--version']).status === 0 ? 'cc' : 'gcc';
      const built = spawnSync(compiler, [
        '-shared',
        '-fPIC',
        '-o',
        join(dir, 'mark.so'),
        join(dir, 'mark.c'),
      ]);
      if (built.status !== 0) throw new Error(`cc failed: ${built.stderr}`);
      const project = await createProject(attacker, {
        name: 'Preload',
        subdomain: 'preload',
        deploy_source: 'upload',
        env_vars: { LD_PRELOAD: join(dir, 'mark.so') },
        build_config: { start_cmd: 'node server.js' },
      });
      await deployFiles(attacker, project.id, nodeApp('preload'));
      // Every process that loaded it ran as the project's user (or could not even write the mark).
      const uids = existsSync(mark) ? readFileSync(mark, 'utf8').trim().split('\n').map(Number) : [];
      if (isRoot) expect(uids.filter((uid) => uid === 0)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it('a 600 MB line without a newline and an endless flood leave the platform and the victim serving', async () => {
    const before = settledMemory();
    const flood = await createProject(attacker, {
      name: 'Flood',
      subdomain: 'flood',
      deploy_source: 'upload',
      build_config: {
        // One line of 600 MB, then a flood of short lines that outruns the log store.
        build_cmd: "head -c 629145600 /dev/zero | tr '\\0' 'a'; echo; yes 'flood line' | head -n 300000",
        start_cmd: 'node server.js',
      },
    });
    await upload(attacker, flood.id, archiveOf(nodeApp('flooded')));
    await deploy(attacker, flood.id);
    // While it floods, the platform and the victim answer.
    const started = Date.now();
    let answered = 0;
    while (Date.now() - started < 3_000) {
      const health = await call(`${tp.api}/health`, {});
      expect(health.status).toBe(200);
      const page = await viaEdge(tp.edgePort, 'victim.localhost', '/');
      expect(page.body).toBe('victim says hi /');
      answered += 1;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(answered).toBeGreaterThan(5);
    const done = await waitFor(attacker, flood.id, settled, 120_000);
    expect(done.project.status, done.project.last_deploy_error ?? '').toBe('running');
    const lines = await logLines(attacker, flood.id);
    // What the store could not keep up with is dropped and counted, never buffered without bound.
    expect(
      lines.some((l) =>
        /^\(\d+ lines dropped: output came faster than the log keeps, 1000 lines a second\)$/.test(l),
      ),
    ).toBe(true);
    expect(lines.some((l) => l.startsWith('running at '))).toBe(true);
    expect(Math.max(...lines.map((l) => Buffer.byteLength(l)))).toBeLessThanOrEqual(MAX_LINE_BYTES + 64);
    // The platform never held the line: once its garbage is collected, the heap holds no more than a
    // little of it, and the process as a whole (memory the allocator keeps after freeing included) grew
    // by less than the line.
    const after = settledMemory();
    expect(after.heapUsed - before.heapUsed).toBeLessThan(64 * 1024 * 1024);
    expect(after.rss - before.rss).toBeLessThan(600 * 1024 * 1024);
  }, 180_000);

  it('refuses a service port of the platform or of another project with 422', async () => {
    const api = Number(new URL(tp.api).port);
    const taken = 62_111; // above the ephemeral range: no connection of another test holds it
    const own = await createProject(tp, {
      name: 'Ported',
      subdomain: 'ported',
      deploy_source: 'upload',
      build_config: { services: [{ name: 'web', port: taken, start_cmd: 'node server.js' }] },
    });
    expect(own.build_config.services[0]?.port).toBe(taken);
    const project = await createProject(attacker, {
      name: 'Thief',
      subdomain: 'thief',
      deploy_source: 'upload',
    });
    for (const [port, message] of [
      [tp.edgePort, /in use on this machine/],
      [api, /in use on this machine/],
      [taken, /declared by another project/],
    ] as const) {
      const answer = await call<{ code: string; errors: Array<{ path: string; message: string }> }>(
        `${tp.api}/projects/${project.id}/build-config`,
        {
          key: attacker.key,
          method: 'PUT',
          body: { services: [{ name: 'web', port, start_cmd: 'node server.js' }] },
        },
      );
      expect(answer.status, `port ${port}`).toBe(422);
      expect(answer.body.code).toBe('validation_failed');
      expect(answer.body.errors[0]?.path).toBe('services[0].port');
      expect(answer.body.errors[0]?.message).toMatch(message);
    }
  });

  it('a declared port another program holds fails that deploy, not the program', async () => {
    const squatter: Server = createServer((socket) => socket.end('squatter\n'));
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    const port = (squatter.address() as AddressInfo).port;
    try {
      const project = await createProject(attacker, {
        name: 'Late',
        subdomain: 'late',
        deploy_source: 'upload',
      });
      // Saved while the port was free…
      squatter.close();
      await new Promise((r) => setTimeout(r, 50));
      const saved = await call(`${tp.api}/projects/${project.id}/build-config`, {
        key: attacker.key,
        method: 'PUT',
        body: { services: [{ name: 'web', port, start_cmd: 'node server.js' }] },
      });
      expect(saved.status).toBe(200);
      // …and taken before the deploy.
      await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
      await upload(attacker, project.id, archiveOf(nodeApp('late')));
      await deploy(attacker, project.id);
      const done = await waitFor(attacker, project.id, settled, 30_000);
      expect(done.project.status).toBe('failed');
      expect(done.project.last_deploy_error).toMatch(new RegExp(`port ${port} is already in use`));
    } finally {
      squatter.close();
    }
  }, 60_000);

  it.skipIf(!('version' in detectCgroups()))(
    'each project runs in a resource group of its own with its memory and process ceilings',
    async () => {
      const project = await createProject(attacker, {
        name: 'Grouped',
        subdomain: 'grouped',
        deploy_source: 'upload',
        build_config: { build_cmd: 'cat /proc/self/cgroup', start_cmd: 'node server.js' },
      });
      await deployFiles(attacker, project.id, nodeApp('grouped'));
      const lines = await logLines(attacker, project.id);
      expect(lines.some((l) => l.includes(`wharf-apps/wharf-${project.id}`))).toBe(true);
    },
    60_000,
  );
});

describe('the process runtime on a platform of several accounts', () => {
  let tp: TestPlatform;

  beforeAll(async () => {
    tp = await startPlatform({ runtime: 'process' });
  });
  afterAll(async () => {
    await tp?.close();
  });

  it('runs apps for a single account', async () => {
    const project = await createProject(tp, { name: 'Solo', subdomain: 'solo', deploy_source: 'upload' });
    await deployFiles(tp, project.id, nodeApp('solo'));
  }, 60_000);

  it('refuses to deploy once a second account exists, saying what to install', async () => {
    await tp.newAccount();
    const project = await createProject(tp, {
      name: 'Solo 2',
      subdomain: 'solo-two',
      deploy_source: 'upload',
    });
    await upload(tp, project.id, archiveOf(nodeApp('no')));
    const answer = await call<{ code: string; detail: string }>(`${tp.api}/projects/${project.id}/deploy`, {
      key: tp.key,
      method: 'POST',
    });
    expect(answer.status).toBe(503);
    expect(answer.body.code).toBe('unavailable');
    expect(answer.body.detail).toMatch(/apt-get install bubblewrap/);
    expect(answer.body.detail).toMatch(/--runtime sandbox/);
  });
});

describe('a platform several accounts share (--no-local-repos)', () => {
  let tp: TestPlatform;

  beforeAll(async () => {
    tp = await startPlatform({ localRepos: false });
  });
  afterAll(async () => {
    await tp?.close();
  });

  it('refuses a repository on a loopback or private address with 422, so the platform fetches nothing inside', async () => {
    for (const repo_url of [
      'http://127.0.0.1:9/repo.git',
      'https://localhost/repo.git',
      'http://[::1]/a.git',
    ]) {
      const answer = await call<{ code: string; errors: Array<{ path: string; message: string }> }>(
        `${tp.api}/projects`,
        { key: tp.key, body: { name: 'Inside', subdomain: `inside-${Date.now()}`, repo_url } },
      );
      expect(answer.status, repo_url).toBe(422);
      expect(answer.body.errors[0]?.path).toBe('repo_url');
      expect(answer.body.errors[0]?.message).toMatch(/loopback or private address/);
    }
  });
});
