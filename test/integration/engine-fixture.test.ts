// The container-test fixture itself (test/helpers/engine.ts, scripts/ci/engines.sh) against the real
// engines: the base images run, a loopback registry takes pushes and serves pulls, with and without
// basic auth. Skipped outside CI when there is no engine; in CI a missing engine fails the file.
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  dockerClient,
  dockerRun,
  hasImage,
  importTinyImage,
  podmanClient,
  pullImage,
  pushImage,
  removeContainers,
  removeImages,
  requireEngine,
  requirePodman,
  startRegistry,
  tagImage,
  testImages,
  type TestRegistry,
} from '../helpers/engine.js';

const skip = await requireEngine();
const skipPodman = skip ?? (await requirePodman());

describe.skipIf(skip)('the container engine fixture', () => {
  const images = testImages()!;
  const docker = dockerClient();
  let registry: TestRegistry | null = null;

  afterEach(async () => {
    await removeContainers();
    if (registry) {
      await removeImages(`${registry.host}/`);
      await registry.close();
      registry = null;
    }
  });

  it('the node base image runs node and has npm', { timeout: 60_000 }, async () => {
    const run = await dockerRun(images.node, ['sh', '-c', "node -e 'console.log(1)' && npm --version"]);
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/^1\n\d+\.\d+\.\d+\n$/);
  });

  it('the python base image runs python3 and has pip and venv', { timeout: 60_000 }, async () => {
    const run = await dockerRun(images.python, [
      'sh',
      '-c',
      "python3 -c 'print(1)' && python3 -m pip --version && python3 -m venv --without-pip /tmp/venv",
    ]);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/^1\npip \d+/);
  });

  it('enforces memory and pid limits and runs an init as PID 1', { timeout: 60_000 }, async () => {
    const hog = await dockerRun(
      images.node,
      ['node', '-e', 'const a = []; for (;;) a.push(Buffer.alloc(8 << 20, 1))'],
      { hostConfig: { Memory: 64 << 20, MemorySwap: 64 << 20 } },
    );
    expect(hog.exitCode).toBe(137); // killed by the OOM killer
    // cgroup v1 or v2: the container sees its own pids cgroup.
    const pids = await dockerRun(
      images.node,
      ['sh', '-c', 'cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max'],
      { hostConfig: { PidsLimit: 16 } },
    );
    expect(pids.stdout.trim()).toBe('16');
    const init = await dockerRun(images.node, ['cat', '/proc/1/comm'], { hostConfig: { Init: true } });
    expect(init.stdout.trim()).toBe('docker-init');
  });

  it(
    'pushes the node base image to a loopback registry and pulls it back',
    { timeout: 180_000 },
    async () => {
      registry = await startRegistry();
      const ref = `${registry.host}/wharf-fixture/node:1`;
      await tagImage(images.node, ref);
      await pushImage(ref);
      await removeImages(`${registry.host}/`);
      expect(await hasImage(ref)).toBe(false);
      await pullImage(ref);
      const [pulled, base] = await Promise.all([
        docker.getImage(ref).inspect(),
        docker.getImage(images.node).inspect(),
      ]);
      expect(pulled.Id).toBe(base.Id);
      const run = await dockerRun(ref, ['node', '-e', 'console.log(2)']);
      expect(run.stdout).toBe('2\n');
    },
  );

  it('a registry with basic auth serves only those with its credentials', { timeout: 60_000 }, async () => {
    const password = randomBytes(12).toString('base64url');
    registry = await startRegistry({ user: 'wharf', password });
    const authconfig = registry.authconfig!;
    const ref = `${registry.host}/wharf-fixture/tiny:1`;
    await importTinyImage(ref);

    await expect(pushImage(ref)).rejects.toThrow(/no basic auth credentials|unauthorized/i);
    await expect(pushImage(ref, { authconfig: { ...authconfig, password: 'wrong' } })).rejects.toThrow(
      /unauthorized|authentication required/i,
    );
    await pushImage(ref, { authconfig });

    await removeImages(`${registry.host}/`);
    expect(await hasImage(ref)).toBe(false);
    await expect(pullImage(ref)).rejects.toThrow(/no basic auth credentials|unauthorized/i);
    expect(await hasImage(ref)).toBe(false);
    await pullImage(ref, { authconfig });
    expect(await hasImage(ref)).toBe(true);
  });
});

describe.skipIf(skipPodman)("Podman's Docker-compatible API", () => {
  it('runs the node base image', { timeout: 60_000 }, async () => {
    const podman = podmanClient();
    try {
      const run = await dockerRun(testImages()!.node, ['node', '-e', 'console.log(3)'], {
        docker: podman,
        hostConfig: { Init: true, Memory: 128 << 20, PidsLimit: 64 },
      });
      expect(run).toMatchObject({ exitCode: 0, stdout: '3\n' });
    } finally {
      await removeContainers(undefined, podman);
    }
  });
});
