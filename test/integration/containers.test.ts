// The container runtime against a real engine (Docker here; the Podman smoke test runs the same deploy
// on Podman's API): every kind of source built or pulled as an image and run as one container per
// project, with limits; redeploys without a failed request; rollbacks without a build; a platform
// restart that follows the running containers instead of rebuilding them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Project, Release } from '../../src/shared/api/projects.js';
import { PLATFORM_LABEL, PROJECT_LABEL } from '../../src/server/runtime/drivers/docker.js';
import {
  archiveOf,
  createProject,
  deploy,
  deployFiles,
  gitRepo,
  keepRequesting,
  logLines,
  nodeApp,
  settled,
  upload,
  viaEdge,
  waitFor,
  waitForLog,
} from '../helpers/deploy.js';
import { until } from '../helpers/poll.js';
import { publishTestImage, requireEngine, startRegistry, testImages } from '../helpers/engine.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';

const reason = await requireEngine();
const images = testImages() ?? { node: 'unset', python: 'unset' };
const docker = new Docker();

/** A Node app started with `node server.js` (no npm needed). */
const plainNode = (greeting: string) => ({ ...nodeApp(greeting), Procfile: 'web: node server.js\n' });

async function containersOf(tp: TestPlatform, projectId: string) {
  return docker.listContainers({
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

describe.skipIf(reason !== null)('the container runtime', () => {
  let tp: TestPlatform;
  let root: string;
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'wharf-containers-'));
    tp = await startPlatform({
      runtime: 'container',
      images,
      healthTimeoutMs: 30_000,
      restartBackoffMs: 200,
      keepReleases: 2,
      sandbox: { memoryMiB: 256, pids: 200, cpus: 0.5 },
    });
  }, 60_000);
  afterAll(async () => {
    await tp?.close();
    rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it('says it runs apps in containers', async () => {
    expect(tp.platform.runtime.kind).toBe('container');
    expect(tp.platform.runtimeNotes.join('\n')).toMatch(/apps run in containers on (Docker|Podman)/);
    const info = await call<{ runtime: string }>(`${tp.api}/platform`, { key: tp.key });
    expect(info.body.runtime).toBe('container');
  });

  it('builds an upload without a Dockerfile from detection, with limits, published on loopback only', async () => {
    const project = await createProject(tp, { name: 'Up', subdomain: 'c-upload', deploy_source: 'upload' });
    const detail = await deployFiles(tp, project.id, plainNode('hello from a container'));
    const lines = detail.logs.map((l) => l.line);
    expect(lines.some((l) => l.includes(`building the image FROM ${images.node}`))).toBe(true);
    expect((await viaEdge(tp.edgePort, 'c-upload.localhost', '/x')).body).toBe('hello from a container /x');

    const [container] = await containersOf(tp, project.id);
    expect(container).toBeDefined();
    const info = await docker.getContainer(container!.Id).inspect();
    expect(info.HostConfig.Memory).toBe(256 * 1024 * 1024);
    expect(info.HostConfig.PidsLimit).toBe(200);
    expect(info.HostConfig.NanoCpus).toBe(0.5e9);
    expect(info.HostConfig.NetworkMode).toBe(`wharf-${project.id.toLowerCase()}`);
    const published = Object.values(info.NetworkSettings.Ports ?? {}).flat();
    expect(published.length).toBeGreaterThan(0);
    for (const binding of published) expect(binding?.HostIp).toBe('127.0.0.1');
    // The project's env vars are not baked into the image.
    const [release] = await releasesOf(tp, project.id);
    expect(release!.image).toMatch(new RegExp(`^wharf/${project.id.toLowerCase()}:rel_`));
  }, 120_000);

  it('builds a git repository with its own Dockerfile, and runs the image’s command on its EXPOSEd port', async () => {
    const repo = gitRepo(root, 'own-dockerfile', {
      ...nodeApp('built by its own Dockerfile'),
      Dockerfile: [
        `FROM ${images.node}`,
        'WORKDIR /srv',
        'COPY server.js .',
        'RUN echo "a step of the tenant’s own Dockerfile"',
        'ENV PORT=8080',
        'EXPOSE 8080',
        'CMD ["node", "server.js"]',
        '',
      ].join('\n'),
    });
    const project = await createProject(tp, { name: 'Own', subdomain: 'c-own', repo_url: repo });
    await deploy(tp, project.id);
    const detail = await waitFor(tp, project.id, settled, 120_000);
    expect(detail.project.status, detail.logs.map((l) => l.line).join('\n')).toBe('running');
    const lines = detail.logs.map((l) => l.line);
    expect(lines).toContain('building the image from the source’s own Dockerfile');
    expect(lines.some((l) => l.includes('a step of the tenant’s own Dockerfile'))).toBe(true);
    expect(lines.some((l) => l.includes('port 8080 inside'))).toBe(true);
    expect((await viaEdge(tp.edgePort, 'c-own.localhost', '/')).body).toBe('built by its own Dockerfile /');
    const [release] = await releasesOf(tp, project.id);
    expect(release!.commit).toMatch(/^[0-9a-f]{40}$/);
  }, 180_000);

  it('runs a Python app FROM the Python base, in a virtualenv', async () => {
    const project = await createProject(tp, { name: 'Py', subdomain: 'c-py', deploy_source: 'upload' });
    await upload(
      tp,
      project.id,
      archiveOf({
        'requirements.txt': '',
        'app.py': [
          'import http.server, os',
          'class H(http.server.BaseHTTPRequestHandler):',
          '    def do_GET(self):',
          '        self.send_response(200); self.end_headers(); self.wfile.write(b"hello from python")',
          'http.server.HTTPServer(("0.0.0.0", int(os.environ["PORT"])), H).serve_forever()',
          '',
        ].join('\n'),
      }),
    );
    await deploy(tp, project.id);
    // A virtualenv and pip take a while on a small machine.
    const detail = await waitFor(tp, project.id, settled, 150_000);
    expect(detail.project.status, detail.logs.map((l) => l.line).join('\n')).toBe('running');
    expect(detail.logs.some((l) => l.line.includes(`FROM ${images.python}`))).toBe(true);
    expect((await viaEdge(tp.edgePort, 'c-py.localhost', '/')).body).toBe('hello from python');
  }, 240_000);

  it('runs several services in one container, each at its host with its own env and log lines', async () => {
    const service = (name: string, port: number | null, kind: 'web' | 'worker' = 'web') => ({
      name,
      kind,
      root_dir: name,
      ...(port ? { port } : {}),
      start_cmd: kind === 'worker' ? 'node worker.js' : 'node server.js',
      env_overrides: { SERVICE_NAME: name },
    });
    const server = `
const http = require('node:http');
http.createServer((req, res) => res.end(process.env.SERVICE_NAME + ' ' + process.env.SHARED + ' ' + process.env.PORT))
  .listen(Number(process.env.PORT), () => console.log(process.env.SERVICE_NAME + ' listening'));
`;
    const project = await createProject(tp, {
      name: 'Multi',
      subdomain: 'c-multi',
      deploy_source: 'upload',
      build_config: {
        services: [service('web', null), service('api', 5000), service('jobs', null, 'worker')],
      },
    });
    await call(`${tp.api}/projects/${project.id}`, {
      key: tp.key,
      method: 'PUT',
      body: { env_vars: { SHARED: 'yes' } },
    });
    await deployFiles(tp, project.id, {
      'web/server.js': server,
      'api/server.js': server,
      'jobs/worker.js': `console.log('worker ' + process.env.SERVICE_NAME + ' started'); setInterval(() => {}, 1000);`,
    });
    expect((await viaEdge(tp.edgePort, 'c-multi.localhost', '/')).body).toBe('web yes 3000');
    expect((await viaEdge(tp.edgePort, 'c-multi-api.localhost', '/')).body).toBe('api yes 5000');
    expect(await containersOf(tp, project.id)).toHaveLength(1);
    // A service counts as up once it answers (a worker once it stays up), not once its output was
    // copied into the log: its lines may come a moment later.
    await waitForLog(tp, project.id, /^worker jobs started$/);
    await waitForLog(tp, project.id, /^api listening$/);
    const logs = await call<{ logs: Array<{ service: string | null; line: string }> }>(
      `${tp.api}/projects/${project.id}`,
      { key: tp.key },
    );
    const lines = logs.body.logs;
    expect(lines).toContainEqual(expect.objectContaining({ service: 'api', line: 'api listening' }));
    expect(lines).toContainEqual(expect.objectContaining({ service: 'jobs', line: 'worker jobs started' }));
    // No app of its own in the root folder: the web service answers at the subdomain, as the log says.
    expect(lines.map((l) => l.line)).toContain(
      'no app to serve in the root folder (no start_cmd, none detected): c-multi is served by the service web',
    );
  }, 180_000);

  it('runs the project-level app (root_dir, start_cmd, port_override) at the subdomain and each service beside it', async () => {
    const server = (name: string) => `
const http = require('node:http');
http.createServer((req, res) => res.end('${name} ' + process.cwd() + ' ' + process.env.PORT + ' ' + (process.env.SERVICE_NAME ?? '-')))
  .listen(Number(process.env.PORT), () => console.log('${name} listening'));
`;
    const project = await createProject(tp, {
      name: 'Primary',
      subdomain: 'c-primary',
      deploy_source: 'upload',
      build_config: {
        root_dir: 'app',
        start_cmd: 'node server.js',
        port_override: 4100,
        services: [
          {
            name: 'api',
            root_dir: 'api',
            port: 5100,
            start_cmd: 'node server.js',
            env_overrides: { SERVICE_NAME: 'api' },
          },
        ],
      },
    });
    const detail = await deployFiles(tp, project.id, {
      'app/server.js': server('primary'),
      // A service's root_dir is a folder of the repository, here outside the project's root_dir.
      'api/server.js': server('api'),
    });
    expect((await viaEdge(tp.edgePort, 'c-primary.localhost', '/')).body).toBe('primary /app/app 4100 -');
    expect((await viaEdge(tp.edgePort, 'c-primary-api.localhost', '/')).body).toBe('api /app/api 5100 api');
    expect(await containersOf(tp, project.id)).toHaveLength(1);
    expect(detail.logs.map((l) => l.line)).toContainEqual(
      expect.stringMatching(/^starting a container of wharf\/\S+ \(ports 4100, 5100 inside\)$/),
    );
    await waitForLog(tp, project.id, /^api listening$/);
    await waitForLog(tp, project.id, /^primary listening$/);
    const logs = await call<{ logs: Array<{ service: string | null; line: string }> }>(
      `${tp.api}/projects/${project.id}`,
      { key: tp.key },
    );
    expect(logs.body.logs).toContainEqual(
      expect.objectContaining({ service: null, line: 'primary listening' }),
    );
    expect(logs.body.logs).toContainEqual(expect.objectContaining({ service: 'api', line: 'api listening' }));
  }, 180_000);

  it('runs the command of the source’s own Dockerfile as the primary app beside a service', async () => {
    const server = (name: string) =>
      `require('node:http').createServer((q, s) => s.end('${name} ' + process.cwd() + ' ' + process.env.PORT))` +
      `.listen(Number(process.env.PORT));\n`;
    const project = await createProject(tp, {
      name: 'Own and api',
      subdomain: 'c-own-api',
      deploy_source: 'upload',
      build_config: { services: [{ name: 'api', root_dir: 'api', start_cmd: 'node server.js' }] },
    });
    await deployFiles(tp, project.id, {
      'srv/server.js': server('own'),
      'api/server.js': server('api'),
      Dockerfile: [
        `FROM ${images.node}`,
        'WORKDIR /srv',
        'COPY srv/server.js .',
        'COPY api /app/api',
        'EXPOSE 8080',
        'CMD ["node", "server.js"]',
        '',
      ].join('\n'),
    });
    // Its command, in its WORKDIR, on its EXPOSEd port; the service in its folder under /app.
    expect((await viaEdge(tp.edgePort, 'c-own-api.localhost', '/')).body).toBe('own /srv 8080');
    expect((await viaEdge(tp.edgePort, 'c-own-api-api.localhost', '/')).body).toBe('api /app/api 3000');
  }, 180_000);

  it('redeploys without a failed request, rolls back without a build, and prunes images beyond keepReleases', async () => {
    const project = await createProject(tp, { name: 'Roll', subdomain: 'c-roll', deploy_source: 'upload' });
    await deployFiles(tp, project.id, plainNode('v1'));
    const traffic = keepRequesting(tp.edgePort, 'c-roll.localhost');
    await deployFiles(tp, project.id, plainNode('v2'));
    expect((await viaEdge(tp.edgePort, 'c-roll.localhost', '/')).body).toBe('v2 /');
    const [v2, v1] = await releasesOf(tp, project.id);
    expect(v2!.current).toBe(true);
    expect(v1!.rollback_available).toBe(true);

    const rolled = await call<Project>(`${tp.api}/projects/${project.id}/rollback`, {
      key: tp.key,
      body: { release_id: v1!.id },
    });
    expect(rolled.status).toBe(202);
    expect(rolled.body.status).toBe('building');
    const detail = await waitFor(tp, project.id, settled, 60_000);
    const { failures, served } = await traffic.stop();
    expect(detail.project.status).toBe('running');
    expect(failures).toEqual([]);
    expect(served).toBeGreaterThan(10);
    expect((await viaEdge(tp.edgePort, 'c-roll.localhost', '/')).body).toBe('v1 /');
    const rollbackLog = detail.logs.map((l) => l.line);
    const from = rollbackLog.findIndex((l) => l.startsWith(`rollback to release ${v1!.id}`));
    expect(from).toBeGreaterThanOrEqual(0);
    expect(
      rollbackLog.slice(from).filter((l) => l.includes('Step 1/')),
      rollbackLog.slice(from).join('\n'),
    ).toEqual([]);

    // A third release: keepReleases is 2, so the oldest served one loses its image.
    await deployFiles(tp, project.id, plainNode('v3'));
    await deployFiles(tp, project.id, plainNode('v4'));
    // The old version drains, then releases beyond the kept ones lose their image.
    let oldest: Release | undefined;
    await until(
      async () =>
        (oldest = (await releasesOf(tp, project.id)).find((r) => r.id === v2!.id))?.rollback_available ===
        false,
      'the third-newest release to lose its image',
      40_000,
      200,
    );
    if (!oldest) throw new Error('release v2 is missing');
    const image = oldest.image!;
    await until(
      () =>
        docker
          .getImage(image)
          .inspect()
          .then(
            () => false,
            () => true,
          ),
      `the image ${image} to be removed`,
      30_000,
      200,
    );
    const refused = await call(`${tp.api}/projects/${project.id}/rollback`, {
      key: tp.key,
      body: { release_id: oldest.id },
    });
    expect(refused.status).toBe(409);
  }, 300_000);

  it('restarts a crashed container with backoff', async () => {
    const project = await createProject(tp, { name: 'Crash', subdomain: 'c-crash', deploy_source: 'upload' });
    await deployFiles(tp, project.id, {
      ...plainNode('crashy'),
      'server.js': `
const http = require('node:http');
http.createServer((req, res) => { res.end('bye'); if (req.url === '/crash') setTimeout(() => process.exit(3), 10); })
  .listen(Number(process.env.PORT), () => console.log('up'));
`,
    });
    await viaEdge(tp.edgePort, 'c-crash.localhost', '/crash');
    await waitForLog(tp, project.id, /the container exited with code 3; restarting/, 20_000);
    await waitForLog(tp, project.id, /the container is back up/, 60_000);
    expect((await viaEdge(tp.edgePort, 'c-crash.localhost', '/')).status).toBe(200);
  }, 120_000);

  it('fails a deploy whose image build fails, with the build’s output and the old version serving', async () => {
    const project = await createProject(tp, { name: 'Bad', subdomain: 'c-bad', deploy_source: 'upload' });
    await deployFiles(tp, project.id, plainNode('still here'));
    const files = {
      ...plainNode('never'),
      Dockerfile: `FROM ${images.node}\nRUN echo "about to fail" && exit 7\n`,
    };
    await upload(tp, project.id, archiveOf(files));
    await deploy(tp, project.id);
    const detail = await waitFor(tp, project.id, (p) => p.status !== 'building', 120_000);
    expect(detail.project.status).toBe('running');
    expect(detail.project.last_deploy_error).toMatch(/image build failed/);
    const lines = await logLines(tp, project.id);
    expect(lines.some((l) => l.includes('about to fail'))).toBe(true);
    expect((await viaEdge(tp.edgePort, 'c-bad.localhost', '/')).body).toBe('still here /');
    const [failed] = await releasesOf(tp, project.id);
    expect(failed!.status).toBe('failed');
    expect(failed!.rollback_available).toBe(false);
  }, 180_000);

  it('pulls an image source from a private registry with saved credentials, its progress in the log', async () => {
    const password = 'registry-pw-5e4d3c2b1a';
    const registry = await startRegistry({ user: 'robot', password });
    const ref = `${registry.host}/tenant/app:1`;
    try {
      // The smaller of the two bases: the push and the pull move all of its layers.
      await publishTestImage(
        ref,
        {
          'app.py': [
            'import http.server, os',
            'class H(http.server.BaseHTTPRequestHandler):',
            '    def do_GET(self):',
            '        self.send_response(200); self.end_headers(); self.wfile.write(b"from the registry " + self.path.encode())',
            'http.server.HTTPServer(("0.0.0.0", int(os.environ["PORT"])), H).serve_forever()',
            '',
          ].join('\n'),
          Dockerfile: `FROM ${images.python}\nCOPY app.py /srv/\nEXPOSE 7000\nENV PORT=7000\nCMD ["python3", "-u", "/srv/app.py"]\n`,
        },
        { authconfig: registry.authconfig! },
      );

      // Without the login, the pull fails and says so.
      const project = await createProject(tp, { name: 'Img', subdomain: 'c-image', image: ref });
      await deploy(tp, project.id);
      const refused = await waitFor(tp, project.id, settled, 60_000);
      expect(refused.project.status).toBe('failed');
      expect(refused.project.last_deploy_error).toMatch(new RegExp(`^could not pull ${ref}: `));

      const saved = await call(`${tp.api}/projects/${project.id}/registry-credentials`, {
        key: tp.key,
        method: 'PUT',
        body: { username: 'robot', password },
      });
      expect(saved.status).toBe(200);
      await deploy(tp, project.id);
      const detail = await waitFor(tp, project.id, settled, 120_000);
      expect(detail.project.status, detail.logs.map((l) => l.line).join('\n')).toBe('running');
      const lines = detail.logs.map((l) => l.line);
      expect(lines).toContain(`pulling ${ref}`);
      expect(lines).toContain(`as robot at ${registry.host}`);
      expect(lines.some((l) => /Pull complete|Downloaded newer image/.test(l))).toBe(true);
      expect(lines.join('\n')).not.toContain(password);
      expect((await viaEdge(tp.edgePort, 'c-image.localhost', '/')).body).toBe('from the registry /');
      const [release] = await releasesOf(tp, project.id);
      expect(release!.image).toBe(ref);
    } finally {
      await docker
        .getImage(ref)
        .remove({ force: true })
        .catch(() => undefined);
      await registry.close();
    }
  }, 240_000);
});

describe.skipIf(reason !== null)('a platform restart with the container runtime', () => {
  it('removes its project networks once it has stopped their containers', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-networks-'));
    const tp = await startPlatform({ runtime: 'container', images, dataDir, stopContainersOnExit: true });
    let closed = false;
    try {
      const project = await createProject(tp, { name: 'Net', subdomain: 'c-net', deploy_source: 'upload' });
      await deployFiles(tp, project.id, plainNode('networked'));
      const network = docker.getNetwork(`wharf-${project.id.toLowerCase()}`);
      expect((await network.inspect()) as unknown).toBeTruthy();
      await tp.close();
      closed = true;
      expect(await containersOf(tp, project.id)).toEqual([]);
      await expect(network.inspect()).rejects.toThrow(/no such network|not found/i);
    } finally {
      if (!closed) await tp.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  it('follows the running container instead of rebuilding or restarting it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-restart-'));
    const config = { runtime: 'container' as const, images, dataDir, stopContainersOnExit: false };
    let tp = await startPlatform(config);
    try {
      const project = await createProject(tp, { name: 'Stay', subdomain: 'c-stay', deploy_source: 'upload' });
      await deployFiles(tp, project.id, plainNode('survives restarts'));
      const [before] = await containersOf(tp, project.id);
      await tp.platform.app.close();
      // Down: the container keeps serving on its own port.
      expect((await containersOf(tp, project.id)).map((c) => c.Id)).toEqual([before!.Id]);

      tp = await startPlatform({ ...config, stopContainersOnExit: true });
      await waitForLog(tp, project.id, /kept running in its container/, 30_000);
      await until(
        async () => (await viaEdge(tp.edgePort, 'c-stay.localhost', '/')).status === 200,
        'the app to answer',
        30_000,
      );
      expect((await viaEdge(tp.edgePort, 'c-stay.localhost', '/')).body).toBe('survives restarts /');
      expect((await containersOf(tp, project.id)).map((c) => c.Id)).toEqual([before!.Id]);
      const lines = await logLines(tp, project.id);
      expect(lines.filter((l) => l.startsWith('deploy rel_'))).toHaveLength(1);
    } finally {
      await tp.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
});
