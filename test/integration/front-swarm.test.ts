// `--front haproxy` with `--runtime swarm`: a real HAProxy in front of a platform whose apps run as
// services of a real one-node Swarm (engines.sh makes the test engine one). HAProxy sends an app's
// requests straight to its tasks, on their machines' ports, in turn; a redeploy under a request loop
// drops nothing (the new tasks routed, the old ones stopped only once HAProxy sends them nothing); a
// task Swarm starts again elsewhere after a crash is routed where it is now.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findHaproxy } from '../../src/server/front/haproxy.js';
import { type RunningPlatform, servePlatform } from '../../src/server/serve.js';
import { createProject, deployFiles, taskApp as app, viaEdge } from '../helpers/deploy.js';
import { sentTo } from '../helpers/front.js';
import { requireSwarm, testImages } from '../helpers/engine.js';
import { until } from '../helpers/poll.js';
import type { TestPlatform } from '../helpers/platform.js';

const haproxy = findHaproxy();
// CI installs HAProxy and runs a Swarm: there the suite must run, not skip.
if (!haproxy && process.env.CI) throw new Error('front tests: haproxy is not installed');
const reason = haproxy ? await requireSwarm() : 'haproxy is not installed';
const images = testImages() ?? { node: 'unset', python: 'unset' };

interface Server {
  host: string;
  port: number;
}

const key = (servers: readonly Server[]) =>
  servers
    .map((s) => `${s.host}:${s.port}`)
    .sort()
    .join(',');

describe.skipIf(reason !== null)('the HAProxy front before Swarm services', () => {
  let running: RunningPlatform;
  let tp: TestPlatform;
  let dataDir: string;
  let projectId: string;
  const host = 'fs-app.localhost';

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'wharf-front-swarm-'));
    running = await servePlatform(
      {
        runtime: 'swarm',
        front: 'haproxy',
        images,
        healthTimeoutMs: 20_000,
        restartBackoffMs: 200,
        stopContainersOnExit: true,
        sandbox: { memoryMiB: 256, pids: 200, cpus: 0.5 },
        dataDir,
      },
      { host: '127.0.0.1', port: 0 },
      { port: 0 },
    );
    const local = JSON.parse(readFileSync(join(dataDir, 'local-account.json'), 'utf8')) as {
      account_id: string;
      api_key: string;
    };
    tp = {
      platform: running,
      api: running.apiUrl,
      edgePort: running.config.edgePort,
      httpsPort: null,
      dataDir,
      databaseUrl: null,
      key: local.api_key,
      accountId: local.account_id,
      newAccount: () => Promise.reject(new Error('not here')),
      close: () => Promise.resolve(),
    };
    const project = await createProject(tp, {
      name: 'Front swarm',
      subdomain: 'fs-app',
      deploy_source: 'upload',
      build_config: { replicas: 2 },
    });
    projectId = project.id;
    await deployFiles(tp, projectId, app('hello v1'));
  }, 240_000);

  afterAll(async () => {
    await running?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  /** The servers the front routes the app's host to now, once what is pending is applied. */
  const routed = async () => {
    await running.front!.sync();
    return (await running.front!.routes()).find((r) => r.host === host)?.servers ?? [];
  };

  it('sends an app’s requests straight to its tasks, in turn', async () => {
    const servers = running.runtime.servers(projectId, null)!;
    expect(servers).toHaveLength(2);
    expect(key(await routed())).toBe(key(servers));

    const before = await sentTo(running.front!.dir);
    const tasks = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const answer = await viaEdge(tp.edgePort, host, '/task');
      expect(answer.status).toBe(200);
      tasks.add(answer.body);
    }
    expect(tasks.size).toBe(2);
    const after = await sentTo(running.front!.dir);
    // Each task got its share straight from HAProxy, none through the Node edge.
    for (const server of servers) {
      const address = `${server.host}:${server.port}`;
      expect(after.get(address)! - (before.get(address) ?? 0)).toBe(3);
    }
  });

  it('redeploys under a request loop without a failed request, the old tasks let go of first', async () => {
    const old = await routed();
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    let looping = true;
    const failures: string[] = [];
    const seen = new Map<string, number>();
    const loop = async (path: string) => {
      while (looping) {
        try {
          const answer = await viaEdge(tp.edgePort, host, path, { agent });
          if (answer.status !== 200) failures.push(`${answer.status} ${answer.body.slice(0, 100)}`);
          else seen.set(answer.body, (seen.get(answer.body) ?? 0) + 1);
        } catch (error) {
          failures.push((error as Error).message);
        }
      }
    };
    try {
      const loops = [loop('/'), loop('/'), loop('/slow'), loop('/slow')];
      await until(() => (seen.get('hello v1 /') ?? 0) > 20, 'the loop to get going');
      await deployFiles(tp, projectId, app('hello v2'));
      await until(() => (seen.get('hello v2 /') ?? 0) > 20, 'the new version to answer through the front');
      const now = await routed();
      expect(now).toHaveLength(2);
      expect(key(now)).toBe(key(running.runtime.servers(projectId, null)!));
      expect(now.some((s) => old.some((o) => o.port === s.port))).toBe(false);
      // The old service goes once its requests are done.
      const oldAnswer = async () => {
        for (const server of old) {
          const ok = await fetch(`http://${server.host}:${server.port}/`, {
            signal: AbortSignal.timeout(2_000),
          })
            .then(() => true)
            .catch(() => false);
          if (ok) return true;
        }
        return false;
      };
      await until(async () => !(await oldAnswer()), 'the old tasks to stop', 60_000);
      looping = false;
      await Promise.all(loops);
    } finally {
      looping = false;
      agent.destroy();
    }
    expect(failures).toEqual([]);
    expect(seen.get('hello v1 slow')).toBeGreaterThan(0);
    expect(seen.get('hello v2 slow')).toBeGreaterThan(0);
  }, 180_000);

  it('routes a task Swarm started again after a crash where it answers now', async () => {
    const before = await routed();
    expect(before).toHaveLength(2);
    /** The task addresses HAProxy's current worker sends to (the table it runs, not the runtime's). */
    const inHaproxy = async () =>
      [...(await sentTo(running.front!.dir)).keys()].filter((a) => /^\d+\.\d+\.\d+\.\d+:\d+$/.test(a)).sort();
    expect(await inHaproxy()).toEqual(key(before).split(','));
    // What the runtime tells a front each time the app's servers change (the front's own 30 s rounds
    // would find the move too, late).
    const told: string[] = [];
    const stopListening = running.runtime.routes.subscribe({
      changed: (id) => {
        if (id === projectId) told.push(key(running.runtime.servers(projectId, null) ?? []));
      },
    });
    await viaEdge(tp.edgePort, host, '/crash').catch(() => undefined);
    // The crashed task's port leaves HAProxy's table and its successor's comes in, without asking the
    // front to sync.
    await until(
      async () => {
        const servers = running.runtime.servers(projectId, null) ?? [];
        // (The master CLI is away for a moment while HAProxy reloads.)
        const now = await inHaproxy().catch(() => []);
        return servers.length === 2 && key(servers) !== key(before) && now.join(',') === key(servers);
      },
      'HAProxy to route to the new task',
      20_000,
      250,
    );
    stopListening();
    const now = await routed();
    expect(told).toContain(key(now));
    const sent = await sentTo(running.front!.dir);
    const fresh = now.find((s) => !before.some((b) => b.port === s.port))!;
    const address = `${fresh.host}:${fresh.port}`;
    // Both tasks answer through the front again (the new one once it listens, and HAProxy's check
    // finds it up).
    const tasks = new Set<string>();
    await until(
      async () => {
        const answer = await viaEdge(tp.edgePort, host, '/task');
        if (answer.status === 200) tasks.add(answer.body);
        return tasks.size === 2;
      },
      'the new task to answer through the front',
      30_000,
      100,
    );
    expect((await sentTo(running.front!.dir)).get(address)! - (sent.get(address) ?? 0)).toBeGreaterThan(0);
  }, 120_000);
});
