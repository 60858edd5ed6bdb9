// What a project may use of the machine comes from its account's plan: two accounts on two plans get
// different memory, CPU and process ceilings for their image builds and containers (container
// runtime) and for their control groups (sandbox runtime); a plan that leaves a resource out gets
// the operator's default; moving an account to another plan applies at its projects' next start.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformConfigInput } from '../../src/server/config.js';
import { PLATFORM_LABEL, PROJECT_LABEL } from '../../src/server/runtime/drivers/docker.js';
import { detectCgroups } from '../../src/server/runtime/cgroups.js';
import { createProject, deployFiles, nodeApp, viaEdge } from '../helpers/deploy.js';
import { requireEngine, testImages } from '../helpers/engine.js';
import { startPlatform, type TestPlatform } from '../helpers/platform.js';

const MiB = 1024 * 1024;

/** Two plans with their own resources, and one that leaves memory and processes to the defaults. */
const plans: PlatformConfigInput = {
  plans: {
    small: { allowance_usd: 1, memory_mib: 160, cpus: 0.25, pids: 64 },
    big: { allowance_usd: 50, memory_mib: 384, cpus: 1.5, pids: 300 },
    partial: { allowance_usd: 5, cpus: 0.75 },
  },
  defaultPlan: 'small',
  sandbox: { memoryMiB: 256, pids: 200, cpus: 0.5 },
};

/** The same platform seen with another account's key. */
function as(tp: TestPlatform, key: string): TestPlatform {
  return { ...tp, key };
}

const engineMissing = await requireEngine();
/** This run's, in the build steps (see measured). */
const RUN = randomBytes(6).toString('hex');
const images = testImages() ?? { node: 'unset', python: 'unset' };

describe.skipIf(engineMissing !== null)('plan resources on the container runtime', () => {
  const docker = new Docker();
  let tp: TestPlatform;
  let small: TestPlatform;
  let big: TestPlatform;
  let partial: TestPlatform;

  beforeAll(async () => {
    tp = await startPlatform({ ...plans, runtime: 'container', images, healthTimeoutMs: 30_000 });
    small = as(tp, (await tp.newAccount({ plan: 'small' })).key);
    big = as(tp, (await tp.newAccount({ plan: 'big' })).key);
    partial = as(tp, (await tp.newAccount({ plan: 'partial' })).key);
  }, 60_000);
  afterAll(async () => {
    await tp?.close();
  }, 60_000);

  async function hostConfig(projectId: string) {
    const [container] = await docker.listContainers({
      filters: {
        label: [`${PLATFORM_LABEL}=${tp.platform.runtime.platformId}`, `${PROJECT_LABEL}=${projectId}`],
      },
    });
    expect(container).toBeDefined();
    return (await docker.getContainer(container!.Id).inspect()).HostConfig;
  }

  /**
   * A source whose own Dockerfile prints the build's memory ceiling as a build step. The step names a
   * value of this run: a step the engine's cache holds (a run stopped before it cleaned up built the
   * same) would print nothing.
   */
  const measured = (greeting: string) => ({
    ...nodeApp(greeting),
    Dockerfile: [
      `FROM ${images.node}`,
      'WORKDIR /srv',
      'COPY server.js .',
      `RUN echo "run ${RUN}; build memory ceiling: $(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"`,
      'ENV PORT=8080',
      'EXPOSE 8080',
      'CMD ["node", "server.js"]',
      '',
    ].join('\n'),
  });

  it('gives two accounts on two plans the ceilings of their own plan, build and container alike', async () => {
    const a = await createProject(small, { name: 'Small', subdomain: 'plan-small', deploy_source: 'upload' });
    const b = await createProject(big, { name: 'Big', subdomain: 'plan-big', deploy_source: 'upload' });
    const [da, db] = await Promise.all([
      deployFiles(small, a.id, measured('small plan')),
      deployFiles(big, b.id, measured('big plan')),
    ]);

    const smallLines = da.logs.map((l) => l.line);
    const bigLines = db.logs.map((l) => l.line);
    expect(smallLines).toContain('resources of plan small: 160 MiB memory, 0.25 CPU, 64 processes');
    expect(bigLines).toContain('resources of plan big: 384 MiB memory, 1.5 CPU, 300 processes');
    expect(smallLines.some((l) => l.includes(`build memory ceiling: ${160 * MiB}`))).toBe(true);
    expect(bigLines.some((l) => l.includes(`build memory ceiling: ${384 * MiB}`))).toBe(true);

    const ha = await hostConfig(a.id);
    expect([ha.Memory, ha.PidsLimit, ha.NanoCpus]).toEqual([160 * MiB, 64, 0.25e9]);
    const hb = await hostConfig(b.id);
    expect([hb.Memory, hb.PidsLimit, hb.NanoCpus]).toEqual([384 * MiB, 300, 1.5e9]);
    expect((await viaEdge(tp.edgePort, 'plan-small.localhost', '/')).body).toBe('small plan /');
    expect((await viaEdge(tp.edgePort, 'plan-big.localhost', '/')).body).toBe('big plan /');
  }, 180_000);

  it('takes what a plan leaves out from the operator’s defaults', async () => {
    const p = await createProject(partial, {
      name: 'Partial',
      subdomain: 'plan-partial',
      deploy_source: 'upload',
    });
    const detail = await deployFiles(partial, p.id, measured('partial plan'));
    expect(detail.logs.map((l) => l.line)).toContain(
      'resources of plan partial: 256 MiB memory, 0.75 CPU, 200 processes',
    );
    const h = await hostConfig(p.id);
    expect([h.Memory, h.PidsLimit, h.NanoCpus]).toEqual([256 * MiB, 200, 0.75e9]);
  }, 120_000);

  it('applies a plan change at the next start: a redeploy gets the new ceilings', async () => {
    const { accountId, key } = await tp.newAccount({ plan: 'small' });
    const mover = as(tp, key);
    const p = await createProject(mover, { name: 'Mover', subdomain: 'plan-mover', deploy_source: 'upload' });
    await deployFiles(mover, p.id, measured('before'));
    expect((await hostConfig(p.id)).Memory).toBe(160 * MiB);

    await tp.platform.db.updateTable('accounts').set({ plan: 'big' }).where('id', '=', accountId).execute();
    const detail = await deployFiles(mover, p.id, measured('after'));
    expect(detail.logs.map((l) => l.line)).toContain(
      'resources of plan big: 384 MiB memory, 1.5 CPU, 300 processes',
    );
    const h = await hostConfig(p.id);
    expect([h.Memory, h.PidsLimit, h.NanoCpus]).toEqual([384 * MiB, 300, 1.5e9]);
  }, 180_000);
});

const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;
const cgroups = detectCgroups();
const sandboxMissing = !hasBwrap ? 'bwrap is not installed' : 'reason' in cgroups ? cgroups.reason : null;
// CI's machine has both: there the suite must run, not skip.
if (sandboxMissing && process.env.CI) throw new Error(`plan resources in the sandbox: ${sandboxMissing}`);

describe.skipIf(sandboxMissing !== null)('plan resources in the sandbox', () => {
  let tp: TestPlatform;

  beforeAll(async () => {
    tp = await startPlatform({ ...plans, runtime: 'sandbox', healthTimeoutMs: 20_000 });
  }, 60_000);
  afterAll(async () => {
    await tp?.close();
  });

  /** An app that answers with its own control group's memory and process ceilings. */
  const reporter = {
    'package.json': JSON.stringify({ name: 'reporter', version: '1.0.0' }),
    'server.js': `
const fs = require('fs');
const http = require('http');
const group = fs.readFileSync('/proc/self/cgroup', 'utf8').trim().split('\\n');
function read(controller, v2, v1) {
  const own = group.find((l) => l.startsWith('0::'));
  if (own && fs.existsSync('/sys/fs/cgroup/cgroup.controllers')) return fs.readFileSync('/sys/fs/cgroup' + own.slice(3) + '/' + v2, 'utf8').trim();
  const row = group.find((l) => l.split(':')[1].split(',').includes(controller));
  return fs.readFileSync('/sys/fs/cgroup/' + controller + row.split(':')[2] + '/' + v1, 'utf8').trim();
}
http.createServer((req, res) => {
  res.end(JSON.stringify({ memory: read('memory', 'memory.max', 'memory.limit_in_bytes'), pids: read('pids', 'pids.max', 'pids.max') }));
}).listen(process.env.PORT);
`,
    Procfile: 'web: node server.js\n',
  };

  it('puts each account’s projects in a control group with its plan’s ceilings', async () => {
    const small = as(tp, (await tp.newAccount({ plan: 'small' })).key);
    const big = as(tp, (await tp.newAccount({ plan: 'big' })).key);
    const a = await createProject(small, { name: 'S', subdomain: 'sbx-small', deploy_source: 'upload' });
    const b = await createProject(big, { name: 'B', subdomain: 'sbx-big', deploy_source: 'upload' });
    const [da, db] = await Promise.all([
      deployFiles(small, a.id, reporter),
      deployFiles(big, b.id, reporter),
    ]);
    expect(da.logs.map((l) => l.line)).toContain(
      'resources of plan small: 160 MiB memory, 0.25 CPU, 64 processes',
    );
    expect(db.logs.map((l) => l.line)).toContain(
      'resources of plan big: 384 MiB memory, 1.5 CPU, 300 processes',
    );

    const seen = async (host: string) =>
      JSON.parse((await viaEdge(tp.edgePort, host, '/')).body) as { memory: string; pids: string };
    expect(await seen('sbx-small.localhost')).toEqual({ memory: String(160 * MiB), pids: '64' });
    expect(await seen('sbx-big.localhost')).toEqual({ memory: String(384 * MiB), pids: '300' });
  }, 120_000);
});
