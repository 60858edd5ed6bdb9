// The container runtime on Podman's Docker-compatible API (`podman system service`): the same deploy as
// on Docker — an image built from detection, one container with limits on its own network, served at
// its host, a redeploy, a rollback without a build, and everything removed with the project.
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Project, Release } from '../../src/shared/api/projects.js';
import { PLATFORM_LABEL } from '../../src/server/runtime/drivers/docker.js';
import { createProject, deployFiles, nodeApp, settled, viaEdge, waitFor } from '../helpers/deploy.js';
import { podmanHost, requirePodman, testImages } from '../helpers/engine.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';

const reason = await requirePodman();
const images = testImages() ?? { node: 'unset', python: 'unset' };
const plainNode = (greeting: string) => ({ ...nodeApp(greeting), Procfile: 'web: node server.js\n' });

describe.skipIf(reason !== null)('the container runtime on Podman', () => {
  let tp: TestPlatform;
  let podman: Docker;
  beforeAll(async () => {
    // The platform finds its engine where any Docker client would: DOCKER_HOST.
    process.env.DOCKER_HOST = podmanHost()!;
    podman = new Docker({ socketPath: podmanHost()!.replace(/^unix:\/\//, '') });
    tp = await startPlatform({
      runtime: 'container',
      images,
      healthTimeoutMs: 60_000,
      sandbox: { memoryMiB: 256, pids: 200, cpus: 0.5 },
    });
  }, 60_000);
  afterAll(async () => {
    await tp?.close();
    delete process.env.DOCKER_HOST;
  }, 60_000);

  it('builds, runs, redeploys and rolls back an app as on Docker', async () => {
    expect(tp.platform.runtimeNotes.join('\n')).toMatch(/apps run in containers on Podman/);
    const project = await createProject(tp, { name: 'Pod', subdomain: 'on-podman', deploy_source: 'upload' });
    await deployFiles(tp, project.id, plainNode('v1 on podman'));
    expect((await viaEdge(tp.edgePort, 'on-podman.localhost', '/')).body).toBe('v1 on podman /');

    const [container] = await podman.listContainers({
      filters: { label: [`${PLATFORM_LABEL}=${tp.platform.runtime.platformId}`] },
    });
    const info = await podman.getContainer(container!.Id).inspect();
    expect(info.HostConfig.Memory).toBe(256 * 1024 * 1024);
    expect(info.HostConfig.PidsLimit).toBe(200);

    await deployFiles(tp, project.id, plainNode('v2 on podman'));
    expect((await viaEdge(tp.edgePort, 'on-podman.localhost', '/')).body).toBe('v2 on podman /');
    const releases = (await call<Release[]>(`${tp.api}/projects/${project.id}/releases`, { key: tp.key }))
      .body;
    const v1 = releases[1]!;
    const rolled = await call<Project>(`${tp.api}/projects/${project.id}/rollback`, {
      key: tp.key,
      body: { release_id: v1.id },
    });
    expect(rolled.status).toBe(202);
    expect((await waitFor(tp, project.id, settled, 60_000)).project.status).toBe('running');
    expect((await viaEdge(tp.edgePort, 'on-podman.localhost', '/')).body).toBe('v1 on podman /');

    // Deleting the project removes its containers, images and network from the engine.
    expect((await call(`${tp.api}/projects/${project.id}`, { key: tp.key, method: 'DELETE' })).status).toBe(
      200,
    );
    const left = await podman.listContainers({
      all: true,
      filters: { label: [`${PLATFORM_LABEL}=${tp.platform.runtime.platformId}`] },
    });
    expect(left).toEqual([]);
    for (const release of releases) {
      await expect(podman.getImage(release.image!).inspect()).rejects.toThrow();
    }
  }, 300_000);
});
