// The swarm runtime against a real one-node Swarm (engines.sh makes the test engine one): each release
// a Swarm service of its image, with the plan's limits, replicas, an in-task health check and an
// overlay network per project; the edge reaches the tasks on their host-mode ports; redeploys and
// rollbacks switch without a failed request; Swarm restarts a crashed task; a platform restart
// follows the running service; stop and delete remove what the project had.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Project, Release } from '../../src/shared/api/projects.js';
import { PLATFORM_LABEL, PROJECT_LABEL } from '../../src/server/runtime/drivers/docker.js';
import { SERVICE_LABEL, removeStraySecrets } from '../../src/server/runtime/drivers/swarm.js';
import { buildPlatform } from '../../src/server/app.js';
import {
  archiveOf,
  createProject,
  deploy,
  deployFiles,
  keepRequesting,
  logLines,
  settled,
  taskApp as app,
  upload,
  viaEdge,
  waitFor,
  waitForLog,
} from '../helpers/deploy.js';
import {
  type TestRegistry,
  importTinyImage,
  publishTestImage,
  pushImage as pushEngineImage,
  registryTags,
  startRegistryRelay,
  requirePodman,
  requireSwarm,
  startRegistry,
  testImages,
} from '../helpers/engine.js';
import { assertBuilt, runWharf } from '../helpers/cli.js';
import { until } from '../helpers/poll.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';

const reason = await requireSwarm();
const podman = await requirePodman();
const images = testImages() ?? { node: 'unset', python: 'unset' };
const docker = new Docker();

async function servicesOf(tp: TestPlatform, projectId: string) {
  return docker.listServices({
    filters: {
      label: [`${PLATFORM_LABEL}=${tp.platform.runtime.platformId}`, `${PROJECT_LABEL}=${projectId}`],
    },
  });
}

async function releasesOf(tp: TestPlatform, id: string): Promise<Release[]> {
  const answer = await call<Release[]>(`${tp.api}/projects/${id}/releases`, { key: tp.key });
  expect(answer.status).toBe(200);
  return answer.body;
}

const config = {
  runtime: 'swarm' as const,
  images,
  healthTimeoutMs: 20_000,
  restartBackoffMs: 200,
  keepReleases: 3,
  sandbox: { memoryMiB: 256, pids: 200, cpus: 0.5 },
};

describe.skipIf(reason !== null)('the swarm runtime', () => {
  let tp: TestPlatform;
  beforeAll(async () => {
    tp = await startPlatform(config);
  }, 60_000);
  afterAll(async () => {
    await tp?.close();
  }, 60_000);

  it('says it runs apps as Swarm services', async () => {
    expect(tp.platform.runtime.kind).toBe('swarm');
    expect(tp.platform.runtimeNotes.join('\n')).toMatch(/apps run as Swarm services/);
    const info = await call<{ runtime: string }>(`${tp.api}/platform`, { key: tp.key });
    expect(info.body.runtime).toBe('swarm');
  });

  it('runs an upload as a service with the plan’s limits, a health check and replicas, reached in turn', async () => {
    const project = await createProject(tp, {
      name: 'Sw',
      subdomain: 's-upload',
      deploy_source: 'upload',
      build_config: { replicas: 2 },
    });
    expect(project.build_config.replicas).toBe(2);
    const detail = await deployFiles(tp, project.id, app('hello from a service'));
    const lines = detail.logs.map((l) => l.line);
    expect(
      lines.some((l) => /starting a Swarm service of wharf\/.* \(2 tasks, port \d+ inside\)/.test(l)),
    ).toBe(true);
    expect(lines.some((l) => l.startsWith('the service is up: 2 tasks running'))).toBe(true);
    expect((await viaEdge(tp.edgePort, 's-upload.localhost', '/x')).body).toBe('hello from a service /x');

    const [service] = await servicesOf(tp, project.id);
    expect(service).toBeDefined();
    const spec = service!.Spec!;
    expect(spec.Mode?.Replicated?.Replicas).toBe(2);
    const template = spec.TaskTemplate as {
      Resources: { Limits: { MemoryBytes: number; NanoCPUs: number; Pids?: number } };
      ContainerSpec: {
        Healthcheck?: { Test: string[] };
        Env: string[];
        CapabilityDrop?: string[];
        Init?: boolean;
      };
      Networks: Array<{ Target: string }>;
    };
    expect(template.Resources.Limits.MemoryBytes).toBe(256 * 1024 * 1024);
    expect(template.Resources.Limits.NanoCPUs).toBe(0.5e9);
    expect(template.ContainerSpec.Healthcheck?.Test[0]).toBe('CMD-SHELL');
    expect(template.ContainerSpec.Init).toBe(true);
    expect(template.ContainerSpec.CapabilityDrop).toContain('CAP_NET_RAW');
    expect(spec.EndpointSpec?.Mode).toBe('dnsrr');
    expect(spec.EndpointSpec?.Ports?.every((p) => p.PublishMode === 'host')).toBe(true);
    const network = await docker.getNetwork(template.Networks[0]!.Target).inspect();
    expect(network.Driver).toBe('overlay');
    expect(network.Name).toBe(`wharf-swarm-${project.id.toLowerCase()}`);

    // Both tasks answer, in turn.
    const tasks = new Set<string>();
    for (let i = 0; i < 6; i++) tasks.add((await viaEdge(tp.edgePort, 's-upload.localhost', '/task')).body);
    expect(tasks.size).toBe(2);
  }, 180_000);

  it('refuses replicas out of range at the field, and keeps the config', async () => {
    const project = await createProject(tp, { name: 'Rep', subdomain: 's-rep', deploy_source: 'upload' });
    for (const replicas of [0, 11, 1.5, '2']) {
      const answer = await call(`${tp.api}/projects/${project.id}/build-config`, {
        key: tp.key,
        method: 'PUT',
        body: { replicas },
      });
      expect(answer.status).toBe(422);
      expect(JSON.stringify(answer.body)).toMatch(/replicas/);
    }
    const kept = await call<{ project: Project }>(`${tp.api}/projects/${project.id}`, { key: tp.key });
    expect(kept.body.project.build_config.replicas).toBe(1);
  });

  it('redeploys and rolls back without a failed request, a service per release, the old one removed', async () => {
    const project = await createProject(tp, { name: 'Roll', subdomain: 's-roll', deploy_source: 'upload' });
    await deployFiles(tp, project.id, app('v1'));
    const traffic = keepRequesting(tp.edgePort, 's-roll.localhost');
    await deployFiles(tp, project.id, app('v2'));
    expect((await viaEdge(tp.edgePort, 's-roll.localhost', '/')).body).toBe('v2 /');
    const [v2, v1] = await releasesOf(tp, project.id);
    expect(v1!.rollback_available).toBe(true);
    await until(async () => (await servicesOf(tp, project.id)).length === 1, 'the old service to go', 30_000);

    const rolled = await call<Project>(`${tp.api}/projects/${project.id}/rollback`, {
      key: tp.key,
      body: { release_id: v1!.id },
    });
    expect(rolled.status).toBe(202);
    const detail = await waitFor(tp, project.id, settled, 90_000);
    const { failures, served } = await traffic.stop();
    expect(detail.project.status).toBe('running');
    expect(failures).toEqual([]);
    expect(served).toBeGreaterThan(10);
    expect((await viaEdge(tp.edgePort, 's-roll.localhost', '/')).body).toBe('v1 /');
    await until(async () => (await servicesOf(tp, project.id)).length === 1, 'v2’s service to go', 30_000);
    const [serving] = await servicesOf(tp, project.id);
    expect(serving!.Spec!.Labels!['dev.wharf.release']).toBe(v1!.id);
    expect(v2!.id).not.toBe(v1!.id);
  }, 300_000);

  it('has Swarm start a crashed task again, and the edge follows it', async () => {
    const project = await createProject(tp, { name: 'Crash', subdomain: 's-crash', deploy_source: 'upload' });
    await deployFiles(tp, project.id, app('crashy'));
    const before = (await viaEdge(tp.edgePort, 's-crash.localhost', '/task')).body;
    await viaEdge(tp.edgePort, 's-crash.localhost', '/crash');
    await until(
      async () => {
        const answer = await viaEdge(tp.edgePort, 's-crash.localhost', '/task');
        return answer.status === 200 && answer.body !== before;
      },
      'a new task to answer',
      60_000,
      250,
    );
    expect(
      (await call<{ project: Project }>(`${tp.api}/projects/${project.id}`, { key: tp.key })).body.project
        .status,
    ).toBe('running');
  }, 120_000);

  it('fails a deploy whose app never listens, with the old version serving', async () => {
    const project = await createProject(tp, { name: 'Deaf', subdomain: 's-deaf', deploy_source: 'upload' });
    await deployFiles(tp, project.id, app('still here'));
    const detail = await deployFiles(tp, project.id, {
      ...app('never'),
      'server.js': 'setInterval(() => {}, 1000); console.log("not listening");\n',
    }).catch(() => null);
    const after = detail ?? (await waitFor(tp, project.id, settled, 120_000));
    const lines = after.logs.map((l) => l.line);
    expect(
      lines.some((l) => /deploy failed: .*health check/.test(l)),
      lines.join('\n'),
    ).toBe(true);
    expect((await viaEdge(tp.edgePort, 's-deaf.localhost', '/')).body).toBe('still here /');
    await until(
      async () => (await servicesOf(tp, project.id)).length === 1,
      'the failed service to go',
      30_000,
    );
  }, 240_000);

  it('hands env values to the app as Swarm secrets: exact in the app, out of the service, gone with its release', async () => {
    const project = await createProject(tp, { name: 'Sec', subdomain: 's-secret', deploy_source: 'upload' });
    const env_vars = {
      API_TOKEN: 'tok-8c1f2e',
      TRICKY: `a "quoted" 'value' with $HOME, \\ and = signs\n\n`,
      MULTI: 'line one\nline two',
      EMPTY: '',
    };
    const put = await call(`${tp.api}/projects/${project.id}`, {
      key: tp.key,
      method: 'PUT',
      body: { env_vars },
    });
    expect(put.status).toBe(200);
    const envApp = (version: string) => ({
      ...app(version),
      'server.js': `
const http = require('node:http');
const names = ['API_TOKEN', 'TRICKY', 'MULTI', 'EMPTY'];
http.createServer((req, res) => {
  const env = Object.fromEntries(names.map((n) => [n, process.env[n]]));
  res.end(JSON.stringify({ version: ${JSON.stringify(version)}, env, port: process.env.PORT }));
}).listen(Number(process.env.PORT));
`,
    });
    const detail = await deployFiles(tp, project.id, envApp('v1'));
    const seen = JSON.parse((await viaEdge(tp.edgePort, 's-secret.localhost', '/')).body) as {
      env: Record<string, string>;
      port: string;
    };
    expect(seen.env).toEqual(env_vars);
    expect(Number(seen.port)).toBeGreaterThan(0);

    const [first] = await servicesOf(tp, project.id);
    const spec = first!.Spec!;
    const container = (spec.TaskTemplate as { ContainerSpec: { Env: string[]; Secrets?: unknown[] } })
      .ContainerSpec;
    // What `docker service inspect` shows: no value, only the platform's PORT and the empty one plainly.
    expect(JSON.stringify(spec)).not.toContain('tok-8c1f2e');
    expect(JSON.stringify(spec)).not.toContain('line two');
    expect(container.Env.map((e) => e.split('=')[0]).sort()).toEqual(['EMPTY', 'PORT']);
    expect(container.Secrets).toHaveLength(3);
    expect(detail.logs.map((l) => l.line).join('\n')).not.toContain('tok-8c1f2e');
    const secretsOf = (service: string) =>
      docker.listSecrets({ filters: { label: [`${SERVICE_LABEL}=${service}`] } });
    expect(await secretsOf(spec.Name!)).toHaveLength(3);

    // A new release gets its own; the old service's go with it.
    await deployFiles(tp, project.id, envApp('v2'));
    expect(JSON.parse((await viaEdge(tp.edgePort, 's-secret.localhost', '/')).body)).toMatchObject({
      version: 'v2',
      env: env_vars,
    });
    await until(async () => (await secretsOf(spec.Name!)).length === 0, 'v1’s secrets to go', 30_000);
    const deleted = await call(`${tp.api}/projects/${project.id}`, { key: tp.key, method: 'DELETE' });
    expect(deleted.status).toBe(200);
    const left = await docker.listSecrets({ filters: { label: [`${PROJECT_LABEL}=${project.id}`] } });
    expect(left).toEqual([]);
  }, 240_000);

  it('removes secrets a crash left without their service, and only those', async () => {
    const platformId = `stray-${randomBytes(4).toString('hex')}`;
    const make = async (service: string) =>
      (
        (await docker.createSecret({
          Name: `wharf-test-${randomBytes(6).toString('hex')}`,
          Labels: { [PLATFORM_LABEL]: platformId, [SERVICE_LABEL]: service },
          Data: Buffer.from('value').toString('base64'),
        })) as { id: string }
      ).id;
    const [orphan, kept] = [await make('wharf-gone'), await make('wharf-live')];
    const ids = async () =>
      (await docker.listSecrets({ filters: { label: [`${PLATFORM_LABEL}=${platformId}`] } })).map(
        (s) => s.ID,
      );
    // Younger than the grace time: a node may be about to create their service.
    await removeStraySecrets(docker, platformId, ['wharf-live']);
    expect((await ids()).sort()).toEqual([orphan, kept].sort());
    await removeStraySecrets(docker, platformId, ['wharf-live'], 0);
    expect(await ids()).toEqual([kept]);
    await docker.getSecret(kept).remove();
  });

  it('stops and deletes a project: its service and network go', async () => {
    const project = await createProject(tp, { name: 'Gone', subdomain: 's-gone', deploy_source: 'upload' });
    await deployFiles(tp, project.id, app('soon gone'));
    const stopped = await call<Project>(`${tp.api}/projects/${project.id}/stop`, {
      key: tp.key,
      method: 'POST',
    });
    expect(stopped.body.status).toBe('stopped');
    expect(await servicesOf(tp, project.id)).toEqual([]);
    expect((await viaEdge(tp.edgePort, 's-gone.localhost', '/')).status).toBe(503);
    await deployFiles(tp, project.id, app('back'));
    const deleted = await call(`${tp.api}/projects/${project.id}`, { key: tp.key, method: 'DELETE' });
    expect(deleted.status).toBe(200);
    expect(await servicesOf(tp, project.id)).toEqual([]);
    await until(
      () =>
        docker
          .getNetwork(`wharf-swarm-${project.id.toLowerCase()}`)
          .inspect()
          .then(
            () => false,
            () => true,
          ),
      'the project network to go',
      30_000,
    );
  }, 240_000);
});

describe.skipIf(reason !== null)('a platform restart with the swarm runtime', () => {
  it('follows the running service instead of rebuilding or restarting it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-swarm-restart-'));
    const restartConfig = { ...config, dataDir, stopContainersOnExit: false };
    let tp = await startPlatform(restartConfig);
    try {
      const project = await createProject(tp, { name: 'Stay', subdomain: 's-stay', deploy_source: 'upload' });
      await deployFiles(tp, project.id, app('survives restarts'));
      const [before] = await servicesOf(tp, project.id);
      await tp.platform.app.close();
      expect((await servicesOf(tp, project.id)).map((s) => s.ID)).toEqual([before!.ID]);

      tp = await startPlatform({ ...restartConfig, stopContainersOnExit: true });
      await waitForLog(tp, project.id, /kept running in its Swarm service/, 30_000);
      await until(
        async () => (await viaEdge(tp.edgePort, 's-stay.localhost', '/')).status === 200,
        'the app to answer',
        30_000,
      );
      expect((await viaEdge(tp.edgePort, 's-stay.localhost', '/')).body).toBe('survives restarts /');
      expect((await servicesOf(tp, project.id)).map((s) => s.ID)).toEqual([before!.ID]);
      const lines = await logLines(tp, project.id);
      expect(lines.filter((l) => l.startsWith('deploy rel_'))).toHaveLength(1);
    } finally {
      await tp.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  // Podman's Docker-compatible API has no Swarm: the platform must say so, not start half-way.
  it.skipIf(podman !== null)(
    'refuses to start on an engine that manages no Swarm, saying what to run',
    async () => {
      const saved = process.env.DOCKER_HOST;
      process.env.DOCKER_HOST = process.env.WHARF_TEST_PODMAN_HOST;
      const dataDir = mkdtempSync(join(tmpdir(), 'wharf-swarm-refused-'));
      try {
        await expect(buildPlatform({ ...config, dataDir })).rejects.toThrow(
          /--runtime swarm: the engine is not part of a Swarm .*docker swarm init/,
        );
      } finally {
        if (saved === undefined) delete process.env.DOCKER_HOST;
        else process.env.DOCKER_HOST = saved;
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
    60_000,
  );
});

// A Swarm of several machines pulls each task's image from a registry: the platform pushes what it
// builds to --registry, with its login, and hands the login to the service so the machines can pull.
describe.skipIf(reason !== null)('the swarm runtime with a registry', () => {
  const password = randomBytes(12).toString('hex');
  let registry: TestRegistry;
  let tp: TestPlatform;
  beforeAll(async () => {
    registry = await startRegistry({ user: 'pusher', password });
    tp = await startPlatform({ ...config, registry: { host: registry.host, username: 'pusher', password } });
  }, 60_000);
  afterAll(async () => {
    await tp?.close();
    await registry?.close();
  }, 60_000);

  const catalog = async (auth: string | null) => {
    const answer = await fetch(`http://${registry.host}/v2/_catalog`, {
      headers: auth ? { authorization: `Basic ${Buffer.from(auth).toString('base64')}` } : {},
    });
    return {
      status: answer.status,
      body: answer.ok ? ((await answer.json()) as { repositories: string[] }) : null,
    };
  };

  it('pushes each built image there and runs its service from there, pulled with the login', async () => {
    const project = await createProject(tp, {
      name: 'Pushed',
      subdomain: 's-pushed',
      deploy_source: 'upload',
    });
    // The first push carries the base image's layers too (a few hundred MB): later ones only the app's.
    await upload(tp, project.id, archiveOf(app('from the registry')));
    await deploy(tp, project.id);
    const detail = await waitFor(tp, project.id, settled, 150_000);
    expect(detail.project.status, detail.project.last_deploy_error ?? '').toBe('running');
    const lines = detail.logs.map((l) => l.line);
    expect(lines).toContain(`pushing the image to ${registry.host}`);
    expect(lines.some((l) => l.startsWith(`pushed ${registry.host}/wharf/`))).toBe(true);
    expect(lines.join('\n')).not.toContain(password);
    const [service] = await servicesOf(tp, project.id);
    const image = (service!.Spec!.TaskTemplate as { ContainerSpec: { Image: string } }).ContainerSpec.Image;
    expect(image.startsWith(`${registry.host}/wharf/${project.id.toLowerCase()}:`)).toBe(true);
    expect((await catalog(null)).status).toBe(401);
    expect((await catalog(`pusher:${password}`)).body?.repositories).toContain(
      `wharf/${project.id.toLowerCase()}`,
    );

    // Without a copy on this engine, the task Swarm starts after a crash comes from the registry.
    const local = image.split('@')[0]!;
    for (const ref of [local, local.slice(registry.host.length + 1)])
      await docker
        .getImage(ref)
        .remove({ force: true })
        .catch(() => undefined);
    const before = (await viaEdge(tp.edgePort, 's-pushed.localhost', '/task')).body;
    await viaEdge(tp.edgePort, 's-pushed.localhost', '/crash').catch(() => undefined);
    await until(
      async () => {
        const answer = await viaEdge(tp.edgePort, 's-pushed.localhost', '/task');
        return answer.status === 200 && answer.body !== before;
      },
      'a task pulled from the registry to answer',
      60_000,
      250,
    );
    expect(
      await docker
        .getImage(local)
        .inspect()
        .then(() => true),
    ).toBe(true);
  }, 180_000);

  it('deletes the registry’s copy of a release’s image once the release is gone, one a delete missed at the next start, and all of a deleted project’s, once the registry answers again if it was down', async () => {
    // keepReleases 1 keeps only the serving release: each deploy lets the one before it go, once its
    // service has drained.
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-swarm-registry-prune-'));
    // The platform reaches the registry through a relay the test can take down.
    const relay = await startRegistryRelay(registry.host);
    const pruningConfig = {
      ...config,
      dataDir,
      keepReleases: 1,
      stopContainersOnExit: false,
      registry: { host: relay.host, username: 'pusher', password },
    };
    let pruning = await startPlatform(pruningConfig);
    const leftovers = async () =>
      (await pruning.platform.db.selectFrom('registry_leftovers').select('project_id').execute()).map(
        (row) => row.project_id,
      );
    try {
      let janitor = pruning.platform.runtime.registryImages!;
      const project = await createProject(pruning, {
        name: 'Pruned',
        subdomain: 's-pruned',
        deploy_source: 'upload',
      });
      const repository = `wharf/${project.id.toLowerCase()}`;
      const tags = () => registryTags(registry, repository);
      const releaseIds: string[] = [];
      for (const version of ['one', 'two', 'three']) {
        // The first push carries the base image through the relay: 23 s once on a loaded CI machine.
        await deployFiles(pruning, project.id, app(`version ${version}`), 150_000);
        releaseIds.push((await releasesOf(pruning, project.id)).find((r) => r.current)!.id);
      }
      // What the platform still keeps (the current release and those it can roll back to).
      const kept = (await releasesOf(pruning, project.id))
        .filter((r) => r.current || r.rollback_available)
        .map((r) => r.id)
        .sort();
      expect(kept).not.toContain(releaseIds[0]);
      expect(kept).toContain(releaseIds[2]);
      // The project says `running` before the old version drains; the delete is queued after it.
      await until(
        async () => (await tags()).length === kept.length,
        'the dropped releases’ images to be deleted',
        60_000,
      );
      await janitor.idle();
      expect(await tags()).toEqual(kept);
      expect(janitor.deleted).toBe(releaseIds.length - kept.length);
      // The serving release still runs from the registry's copy.
      expect((await viaEdge(pruning.edgePort, 's-pruned.localhost', '/')).body).toContain('version three');

      // An image whose delete was missed (the registry was down, the platform stopped first) goes at
      // the next start; the kept ones stay.
      const authconfig = { username: 'pusher', password, serveraddress: registry.host };
      /** An image only the registry holds, as one the platform pushed and then lost track of. */
      const pushStray = async (ref: string) => {
        await importTinyImage(ref, docker);
        await pushEngineImage(ref, { authconfig, docker });
        await docker
          .getImage(ref)
          .remove({ force: true })
          .catch(() => undefined);
      };
      await pushStray(`${registry.host}/${repository}:rel_missed`);
      expect(await tags()).toEqual([...kept, 'rel_missed'].sort());
      await pruning.platform.app.close();
      pruning = await startPlatform({ ...pruningConfig, stopContainersOnExit: true });
      janitor = pruning.platform.runtime.registryImages!;
      await until(
        async () => (await tags()).length === kept.length,
        'the missed image to be swept at the start',
        30_000,
      );
      await janitor.idle();
      expect(await tags()).toEqual(kept);
      expect(janitor.deleted).toBe(1);

      // A project deleted while the registry is down: noted, and its repository emptied at the next
      // start, the note then gone.
      relay.down = true;
      const deleted = await call(`${pruning.api}/projects/${project.id}`, {
        key: pruning.key,
        method: 'DELETE',
      });
      expect(deleted.status).toBe(200);
      await janitor.idle();
      expect(await tags()).toEqual(kept);
      expect(await leftovers()).toEqual([project.id]);
      relay.down = false;
      await pruning.platform.app.close();
      pruning = await startPlatform(pruningConfig);
      janitor = pruning.platform.runtime.registryImages!;
      await until(
        async () => (await leftovers()).length === 0,
        'the deleted project’s repository to be emptied at the start',
        30_000,
      );
      expect(await tags()).toEqual([]);
      expect(janitor.deleted).toBe(kept.length);

      // A project deleted while the registry is up: emptied at once, every image of its repository.
      const other = await createProject(pruning, {
        name: 'Gone',
        subdomain: 's-gone',
        deploy_source: 'upload',
      });
      const otherRepository = `wharf/${other.id.toLowerCase()}`;
      await pushStray(`${registry.host}/${otherRepository}:rel_stray`);
      expect(await registryTags(registry, otherRepository)).toEqual(['rel_stray']);
      const gone = await call(`${pruning.api}/projects/${other.id}`, { key: pruning.key, method: 'DELETE' });
      expect(gone.status).toBe(200);
      await until(
        async () => (await leftovers()).length === 0,
        'the note of the deleted project to go',
        30_000,
      );
      expect(await registryTags(registry, otherRepository)).toEqual([]);
      expect(janitor.deleted).toBe(kept.length + 1);

      // A project deleted while the registry is down, the platform running on: its repository is
      // emptied once the registry answers again, without a restart (here swept every half second).
      await pruning.platform.app.close();
      pruning = await startPlatform({ ...pruningConfig, registrySweepMs: 500 });
      const later = await createProject(pruning, {
        name: 'Later',
        subdomain: 's-later',
        deploy_source: 'upload',
      });
      const laterRepository = `wharf/${later.id.toLowerCase()}`;
      await pushStray(`${registry.host}/${laterRepository}:rel_later`);
      relay.down = true;
      const laterGone = await call(`${pruning.api}/projects/${later.id}`, {
        key: pruning.key,
        method: 'DELETE',
      });
      expect(laterGone.status).toBe(200);
      await pruning.platform.runtime.registryImages!.idle();
      // Swept again and again while the registry is down: nothing is lost meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await leftovers()).toEqual([later.id]);
      expect(await registryTags(registry, laterRepository)).toEqual(['rel_later']);
      relay.down = false;
      await until(
        async () => (await leftovers()).length === 0,
        'the deleted project’s repository to be emptied once the registry answers again',
        30_000,
      );
      expect(await registryTags(registry, laterRepository)).toEqual([]);
    } finally {
      await pruning.close();
      await relay.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);

  it('runs an image source from another private registry with its project’s login, which a task started again pulls with', async () => {
    const theirPassword = randomBytes(12).toString('hex');
    const theirs = await startRegistry({ user: 'owner', password: theirPassword });
    try {
      const ref = `${theirs.host}/team/served:v1`;
      await publishTestImage(
        ref,
        {
          'server.js': app('from their registry')['server.js']!,
          Dockerfile: `FROM ${images.node}\nCOPY server.js /srv/\nENV PORT=7000\nEXPOSE 7000\nCMD ["node", "/srv/server.js"]\n`,
        },
        { authconfig: theirs.authconfig! },
      );

      const project = await createProject(tp, { name: 'Source', subdomain: 's-source', image: ref });
      const saved = await call(`${tp.api}/projects/${project.id}/registry-credentials`, {
        key: tp.key,
        method: 'PUT',
        body: { username: 'owner', password: theirPassword },
      });
      expect(saved.status).toBe(200);
      await deploy(tp, project.id);
      const detail = await waitFor(tp, project.id, settled, 120_000);
      expect(detail.project.status, detail.project.last_deploy_error ?? '').toBe('running');
      expect((await viaEdge(tp.edgePort, 's-source.localhost', '/')).body).toBe('from their registry /');
      expect(JSON.stringify(await servicesOf(tp, project.id))).not.toContain(theirPassword);

      // With no copy on this engine, the task Swarm starts after a crash is pulled with the project's login.
      await docker.getImage(ref).remove({ force: true });
      const before = (await viaEdge(tp.edgePort, 's-source.localhost', '/task')).body;
      await viaEdge(tp.edgePort, 's-source.localhost', '/crash').catch(() => undefined);
      await until(
        async () => {
          const answer = await viaEdge(tp.edgePort, 's-source.localhost', '/task');
          return answer.status === 200 && answer.body !== before;
        },
        'a task pulled from their registry to answer',
        60_000,
        250,
      );
      expect(
        await docker
          .getImage(ref)
          .inspect()
          .then(() => true),
      ).toBe(true);
      await call(`${tp.api}/projects/${project.id}`, { key: tp.key, method: 'DELETE' });
    } finally {
      await theirs.close();
    }
  }, 180_000);

  it('fails a deploy whose push the registry refuses, saying so without the password', async () => {
    const wrong = `not-${password}`;
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-swarm-refused-push-'));
    const refused = await startPlatform({
      ...config,
      dataDir,
      registry: { host: registry.host, username: 'pusher', password: wrong },
    });
    try {
      const project = await createProject(refused, {
        name: 'Refused',
        subdomain: 's-refused',
        deploy_source: 'upload',
      });
      await upload(refused, project.id, archiveOf(app('never pushed')));
      await deploy(refused, project.id);
      const detail = await waitFor(refused, project.id, settled, 120_000);
      expect(detail.project.status).toBe('failed');
      expect(detail.project.last_deploy_error).toMatch(
        new RegExp(`could not push the image to ${registry.host}`),
      );
      expect(JSON.stringify(detail)).not.toContain(wrong);
      expect(await servicesOf(refused, project.id)).toEqual([]);
    } finally {
      await refused.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  it('refuses a --registry with a path on the command line, saying what it takes', async () => {
    assertBuilt();
    const result = await runWharf([
      'platform',
      '--registry',
      'registry.example.com:5000/team',
      '--port',
      '0',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /--registry must be a registry's host:port, such as registry.example.com:5000/,
    );
  });

  it('refuses --registry without the swarm runtime, with a path, or with half a login', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-swarm-registry-config-'));
    try {
      const host = registry.host;
      await expect(
        buildPlatform({
          ...config,
          dataDir,
          runtime: 'container',
          registry: { host, username: null, password: null },
        }),
      ).rejects.toThrow(/--registry is for --runtime swarm/);
      await expect(
        buildPlatform({
          ...config,
          dataDir,
          registry: { host: `${host}/path`, username: null, password: null },
        }),
      ).rejects.toThrow(/--registry must be a registry host/);
      await expect(
        buildPlatform({ ...config, dataDir, registry: { host, username: 'pusher', password: null } }),
      ).rejects.toThrow(/WHARF_REGISTRY_USER and WHARF_REGISTRY_PASSWORD go together/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
