// SPEC.md, written as a client that knows only SPEC.md would call it: §2.1 Project, §2.2 build
// configuration and service rules, §3 lifecycle, §4.1 every project endpoint, §5 (X-API-Key, a
// deploy-scoped key), §7 success statuses, §8 limits and §9 (everything under /api/v1). Each answer is
// held to SPEC's table with the checker of test/helpers/spec-contract.ts, which is itself checked first.
// The image source is pulled from a loopback registry and run on the Docker engine (skipped without
// one, except in CI, where a missing engine fails the file as in containers.test.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_LABEL } from '../../src/server/runtime/drivers/docker.js';
import { archiveOf, gitRepo, nodeApp, viaEdge, waitFor } from '../helpers/deploy.js';
import { until } from '../helpers/poll.js';
import { quietPort, quietPorts } from '../helpers/ports.js';
import {
  dockerClient,
  hasImage,
  publishTestImage,
  requireEngine,
  startRegistry,
  testImages,
} from '../helpers/engine.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';
import {
  BUILD_CONFIG,
  GIT_HOST_PROJECT,
  IMAGE_PROJECT,
  PROJECT,
  PROJECT_DETAIL,
  REPOSITORY_PROJECT,
  SPEC_PROJECT_STATUSES,
  type SpecTable,
  UPLOAD_PROJECT,
  expectSpec,
  tableViolations,
} from '../helpers/spec-contract.js';

/** Why the image-source test cannot run here (no engine or base images), or null; throws in CI instead. */
const engineMissing = await requireEngine();

let tp: TestPlatform;
let repos: string;
let repoUrl: string;
/** A key of scope `deploy` only (§5.2). */
let deployKey: string;

beforeAll(async () => {
  repos = mkdtempSync(join(tmpdir(), 'wharf-spec-repos-'));
  repoUrl = gitRepo(repos, 'acme/site', nodeApp('hello from git'));
  tp = await startPlatform({ healthTimeoutMs: 20_000, workerGraceMs: 500, gitHostUrl: `file://${repos}` });
  deployKey = (await tp.newAccount({ scopes: ['deploy'] })).key;
});

afterAll(async () => {
  await tp?.close();
  rmSync(repos, { recursive: true, force: true });
});

const api = (path: string, options: Parameters<typeof call>[1] = {}) =>
  call(`${tp.api}${path}`, { key: deployKey, ...options });

async function created(body: Record<string, unknown>, table: SpecTable) {
  const result = await api('/projects', { body });
  expect(result.status, JSON.stringify(result.body)).toBeGreaterThanOrEqual(200);
  expect(result.status).toBeLessThan(300);
  expectSpec(result.body, table, 'the create answer');
  return result.body as { id: string; subdomain: string; status: string };
}

async function pollSettled(id: string) {
  const detail = await waitFor({ ...tp, key: deployKey }, id, (p) => p.status !== 'building', 60_000);
  return detail;
}

describe('the SPEC table checker', () => {
  const table: SpecTable = { name: 'string', ok: 'boolean', port: 'integer', addr: { form: 'host:port' } };
  const good = { name: 'a', ok: true, port: 80, addr: '127.0.0.1:5000', extra: null };

  it('passes a value with every field of its type, extra fields aside', () => {
    expect(tableViolations(good, table)).toEqual([]);
  });

  it('fails on a missing field and on a renamed one', () => {
    const { ok: _ok, ...missing } = good;
    expect(tableViolations(missing, table)).toEqual(['$.ok: missing']);
    const { name, ...rest } = good;
    expect(tableViolations({ ...rest, title: name }, table)).toEqual(['$.name: missing']);
  });

  it('fails on null where the table types a string, a boolean or an integer', () => {
    expect(tableViolations({ ...good, name: null, ok: null, port: null }, table)).toHaveLength(3);
  });

  it('fails on a fraction where the table says integer, and on a string of the wrong form', () => {
    expect(tableViolations({ ...good, port: 19.16 }, table)).toEqual([
      '$.port: expected an integer, got the fraction 19.16',
    ]);
    expect(tableViolations({ ...good, addr: '127.0.0.1' }, table)).toHaveLength(1);
  });
});

describe('§2.1 and §4.1: creating a project', () => {
  it('from a repository (repo_url, branch) answers the project object with its id', async () => {
    const project = await created(
      { name: 'Repo', subdomain: 'spec-repo', repo_url: repoUrl, branch: 'main' },
      REPOSITORY_PROJECT,
    );
    expect(project.id).not.toBe('');
    expect(project).toMatchObject({
      name: 'Repo',
      subdomain: 'spec-repo',
      repo_url: repoUrl,
      branch: 'main',
    });
  });

  it('from git_host_repo <owner>/<repo> with a branch', async () => {
    const project = await created(
      { name: 'Hosted', subdomain: 'spec-hosted', git_host_repo: 'acme/site', branch: 'main' },
      GIT_HOST_PROJECT,
    );
    expect(project).toMatchObject({ git_host_repo: 'acme/site', branch: 'main' });
  });

  it('with every repository field at once, as §4.1 lists them: repo_url, git_host_repo and branch', async () => {
    const result = await api('/projects', {
      body: {
        name: 'All',
        subdomain: 'spec-repo-all',
        repo_url: repoUrl,
        git_host_repo: 'acme/site',
        branch: 'main',
      },
    });
    expect(result.status, JSON.stringify(result.body)).toBe(201);
    expectSpec(result.body, { ...REPOSITORY_PROJECT, ...GIT_HOST_PROJECT }, 'the create answer');
  });

  it('from an image, with every string field a string (never null)', async () => {
    const project = await created(
      { name: 'Image', subdomain: 'spec-image', image: 'nginx:1.27' },
      IMAGE_PROJECT,
    );
    expect(project).toMatchObject({ image: 'nginx:1.27' });
  });

  it('from an upload (deploy_source "upload")', async () => {
    await created({ name: 'Upload', subdomain: 'spec-upload', deploy_source: 'upload' }, UPLOAD_PROJECT);
  });

  it('refuses a body with no source (bad input)', async () => {
    const result = await api('/projects', { body: { name: 'None', subdomain: 'spec-none' } });
    expect(result.status).toBe(422);
  });
});

describe('§4.1: every project endpoint, with a deploy-scoped key', () => {
  let id: string;

  beforeAll(async () => {
    id = (await created({ name: 'Life', subdomain: 'spec-life', deploy_source: 'upload' }, PROJECT)).id;
  });

  it('GET /projects lists projects', async () => {
    const result = await api('/projects');
    expect(result.status).toBe(200);
    expect(Array.isArray(result.body)).toBe(true);
    for (const project of result.body as unknown[]) expectSpec(project, PROJECT, 'a listed project');
    expect((result.body as Array<{ id: string }>).map((p) => p.id)).toContain(id);
  });

  it('PUT /projects/:id takes { env_vars } (object string to string)', async () => {
    const result = await api(`/projects/${id}`, {
      method: 'PUT',
      body: { env_vars: { GREETING: 'hi', EMPTY: '' } },
    });
    expect(result.status).toBe(200);
    expectSpec(result.body, PROJECT, 'the update answer');
    expect((result.body as { env_vars: unknown }).env_vars).toEqual({ GREETING: 'hi', EMPTY: '' });
  });

  it('PUT /projects/:id refuses env_vars values that are not strings (bad input)', async () => {
    const result = await api(`/projects/${id}`, { method: 'PUT', body: { env_vars: { N: 1 } } });
    expect(result.status).toBe(422);
  });

  it('POST /projects/:id/upload takes a .tar.gz build context', async () => {
    const result = await api(`/projects/${id}/upload`, {
      body: archiveOf(nodeApp('hello from the upload')),
      headers: { 'content-type': 'application/gzip' },
    });
    expect(result.status, JSON.stringify(result.body)).toBe(200);
  });

  it('PUT /projects/:id/build-config takes every field of §2.2', async () => {
    const config = {
      install_cmd: 'true',
      build_cmd: 'true',
      start_cmd: 'node server.js',
      root_dir: '.',
      port_override: await quietPort(),
      services: [],
    };
    expect(tableViolations(config, BUILD_CONFIG)).toEqual([]);
    const result = await api(`/projects/${id}/build-config`, { method: 'PUT', body: config });
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expectSpec(result.body, PROJECT, 'the build-config answer');
    expect((result.body as { build_config: unknown }).build_config).toMatchObject(config);
  });

  it('POST /projects/:id/deploy builds and starts; polling ends running, at port_override', async () => {
    const deployed = await api(`/projects/${id}/deploy`, { method: 'POST' });
    expect(deployed.status, JSON.stringify(deployed.body)).toBeLessThan(300);
    expectSpec(deployed.body, PROJECT, 'the deploy answer');
    expect((deployed.body as { status: string }).status).toBe('building');
    const detail = await pollSettled(id);
    expect(detail.project.status).toBe('running');
    const port = detail.project.build_config.port_override!;
    const env = JSON.parse((await viaEdge(tp.edgePort, 'spec-life.localhost', '/env')).body) as Record<
      string,
      string
    >;
    expect(env).toMatchObject({ PORT: String(port), GREETING: 'hi' });
  });

  it('GET /projects/:id answers { project, logs }', async () => {
    const result = await api(`/projects/${id}`);
    expect(result.status).toBe(200);
    expectSpec(result.body, PROJECT_DETAIL, 'the project detail');
    expect(SPEC_PROJECT_STATUSES).toContain((result.body as { project: { status: string } }).project.status);
  });

  it('GET /projects/:id/logs answers the deploy log lines', async () => {
    const result = await api(`/projects/${id}/logs`);
    expect(result.status).toBe(200);
    expect(Array.isArray(result.body)).toBe(true);
    expect(JSON.stringify(result.body)).toContain('deploy rel_');
    // The app's own line travels through its output pipe, which may arrive a moment after its port
    // answered (on a busy machine): it is in the log soon after.
    await until(
      async () => JSON.stringify((await api(`/projects/${id}/logs`)).body).includes('listening on'),
      'the app’s "listening on" line in GET /logs',
      10_000,
      100,
    );
  });

  it('POST /projects/:id/stop stops it', async () => {
    const result = await api(`/projects/${id}/stop`, { method: 'POST' });
    expect(result.status).toBe(200);
    expectSpec(result.body, PROJECT, 'the stop answer');
    expect((await viaEdge(tp.edgePort, 'spec-life.localhost', '/')).status).toBeGreaterThanOrEqual(500);
  });

  it('DELETE /projects/:id deletes it; it is then not found', async () => {
    const result = await api(`/projects/${id}`, { method: 'DELETE' });
    expect(result.status).toBe(200);
    expect((await api(`/projects/${id}`)).status).toBe(404);
  });
});

describe('§3: the lifecycle', () => {
  it('a repository project deploys to running', async () => {
    const project = await created(
      { name: 'Repo deploy', subdomain: 'spec-repo-run', git_host_repo: 'acme/site', branch: 'main' },
      GIT_HOST_PROJECT,
    );
    await api(`/projects/${project.id}/deploy`, { method: 'POST' });
    expect((await pollSettled(project.id)).project.status).toBe('running');
    expect((await viaEdge(tp.edgePort, 'spec-repo-run.localhost', '/')).body).toBe('hello from git /');
  });

  it('a deploy whose start fails ends failed, and the deploy logs hold the output', async () => {
    const project = await created(
      { name: 'Broken', subdomain: 'spec-broken', deploy_source: 'upload' },
      UPLOAD_PROJECT,
    );
    await api(`/projects/${project.id}/upload`, {
      body: archiveOf({ 'server.js': 'console.log("about to crash"); process.exit(3);' }),
      headers: { 'content-type': 'application/gzip' },
    });
    await api(`/projects/${project.id}/build-config`, {
      method: 'PUT',
      body: { start_cmd: 'node server.js' },
    });
    await api(`/projects/${project.id}/deploy`, { method: 'POST' });
    const detail = await pollSettled(project.id);
    expect(detail.project.status).toBe('failed');
    expect(detail.logs.map((l) => l.line)).toContain('about to crash');
    const logs = await api(`/projects/${project.id}/logs`);
    expect(JSON.stringify(logs.body)).toContain('about to crash');
  });

  it('an upload project deployed before its upload is refused (bad input)', async () => {
    const project = await created(
      { name: 'Empty', subdomain: 'spec-empty', deploy_source: 'upload' },
      PROJECT,
    );
    const result = await api(`/projects/${project.id}/deploy`, { method: 'POST' });
    expect(result.status).toBe(409);
  });
});

describe('§2.2 and §8: services', () => {
  const service = (name: string, port: number, extra: Record<string, unknown> = {}) => ({
    name,
    root_dir: name,
    port,
    install_cmd: 'true',
    build_cmd: 'true',
    start_cmd: 'node server.js',
    env_overrides: { SERVICE_NAME: name },
    ...extra,
  });

  it('run beside the primary app, each at <subdomain>-<name> through the edge', async () => {
    const project = await created(
      { name: 'Multi', subdomain: 'spec-multi', deploy_source: 'upload' },
      UPLOAD_PROJECT,
    );
    await api(`/projects/${project.id}/upload`, {
      body: archiveOf({
        ...nodeApp('primary app'),
        ...Object.fromEntries(Object.entries(nodeApp('web app')).map(([k, v]) => [`web/${k}`, v])),
        ...Object.fromEntries(Object.entries(nodeApp('api app')).map(([k, v]) => [`api/${k}`, v])),
      }),
      headers: { 'content-type': 'application/gzip' },
    });
    const ports = await quietPorts(3);
    const body = {
      install_cmd: 'true',
      build_cmd: 'true',
      start_cmd: 'node server.js',
      root_dir: '.',
      port_override: ports[0],
      services: [service('web', ports[1]!), service('api', ports[2]!)],
    };
    expect(tableViolations(body, BUILD_CONFIG)).toEqual([]);
    const saved = await api(`/projects/${project.id}/build-config`, { method: 'PUT', body });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    await api(`/projects/${project.id}/deploy`, { method: 'POST' });
    expect((await pollSettled(project.id)).project.status).toBe('running');
    // The primary app (root_dir and the project's commands) keeps the subdomain, even beside a service
    // named web, and listens on port_override.
    expect((await viaEdge(tp.edgePort, 'spec-multi.localhost', '/')).body).toBe('primary app /');
    const primaryEnv = JSON.parse((await viaEdge(tp.edgePort, 'spec-multi.localhost', '/env')).body) as {
      PORT: string;
    };
    expect(primaryEnv.PORT).toBe(String(body.port_override));
    expect((await viaEdge(tp.edgePort, 'spec-multi-web.localhost', '/')).body).toBe('web app /');
    expect((await viaEdge(tp.edgePort, 'spec-multi-api.localhost', '/')).body).toBe('api app /');
    const env = JSON.parse((await viaEdge(tp.edgePort, 'spec-multi-api.localhost', '/env')).body) as Record<
      string,
      string
    >;
    expect(env).toMatchObject({ SERVICE_NAME: 'api', PORT: String(body.services[1]!.port) });
    await api(`/projects/${project.id}/stop`, { method: 'POST' });
  });

  it('the primary app is the project-level one (root_dir, start_cmd, port_override) at <subdomain>; a service at <subdomain>-<name>', async () => {
    const project = await created(
      { name: 'Primary', subdomain: 'spec-primary', deploy_source: 'upload' },
      UPLOAD_PROJECT,
    );
    const under = (folder: string, greeting: string) =>
      Object.fromEntries(Object.entries(nodeApp(greeting)).map(([k, v]) => [`${folder}/${k}`, v]));
    const uploaded = await api(`/projects/${project.id}/upload`, {
      body: archiveOf({
        // An app at the repository root too: answering from it would mean root_dir was ignored.
        ...nodeApp('repository root'),
        ...under('app', 'primary app'),
        ...under('api', 'api service'),
        // A service's root_dir is a directory of the repository ("several directories of one
        // repository"), not one inside the project's root_dir.
        ...under('app/api', 'api inside app'),
      }),
      headers: { 'content-type': 'application/gzip' },
    });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
    const primaryPorts = await quietPorts(2);
    const body = {
      root_dir: 'app',
      start_cmd: 'node server.js',
      port_override: primaryPorts[0],
      services: [
        {
          name: 'api',
          root_dir: 'api',
          port: primaryPorts[1]!,
          start_cmd: 'node server.js',
          env_overrides: { SERVICE_NAME: 'api' },
        },
      ],
    };
    expect(tableViolations(body, BUILD_CONFIG).filter((v) => !v.endsWith(': missing'))).toEqual([]);
    const saved = await api(`/projects/${project.id}/build-config`, { method: 'PUT', body });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    await api(`/projects/${project.id}/deploy`, { method: 'POST' });
    const detail = await pollSettled(project.id);
    expect(detail.project.status, detail.logs.map((l) => l.line).join('\n')).toBe('running');

    const env = async (host: string) =>
      JSON.parse((await viaEdge(tp.edgePort, host, '/env')).body) as Record<string, string>;
    expect((await viaEdge(tp.edgePort, 'spec-primary.localhost', '/')).body).toBe('primary app /');
    expect((await env('spec-primary.localhost')).PORT).toBe(String(body.port_override));
    expect((await env('spec-primary.localhost')).SERVICE_NAME).toBeUndefined();
    expect((await viaEdge(tp.edgePort, 'spec-primary-api.localhost', '/')).body).toBe('api service /');
    expect(await env('spec-primary-api.localhost')).toMatchObject({
      SERVICE_NAME: 'api',
      PORT: String(body.services[0]!.port),
    });
    await api(`/projects/${project.id}`, { method: 'DELETE' });
  });

  it('takes the optional commands and folders as empty strings, meaning none', async () => {
    const project = await created(
      { name: 'Blank', subdomain: 'spec-blank', deploy_source: 'upload' },
      PROJECT,
    );
    const blankPorts = await quietPorts(2);
    const body = {
      install_cmd: '',
      build_cmd: '',
      start_cmd: '',
      root_dir: '',
      port_override: blankPorts[0],
      services: [service('api', blankPorts[1]!, { root_dir: '', install_cmd: '', build_cmd: '' })],
    };
    expect(tableViolations(body, BUILD_CONFIG)).toEqual([]);
    const result = await api(`/projects/${project.id}/build-config`, { method: 'PUT', body });
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect((result.body as { build_config: unknown }).build_config).toMatchObject({
      install_cmd: null,
      build_cmd: null,
      start_cmd: null,
      root_dir: '.',
      services: [{ name: 'api', root_dir: null, install_cmd: null, build_cmd: null }],
    });
  });

  it('refuses an empty start_cmd for a service, which must start (bad input)', async () => {
    const project = await created(
      { name: 'NoStart', subdomain: 'spec-nostart', deploy_source: 'upload' },
      PROJECT,
    );
    const result = await api(`/projects/${project.id}/build-config`, {
      method: 'PUT',
      body: { services: [service('api', await quietPort(), { start_cmd: '' })] },
    });
    expect(result.status).toBe(422);
  });

  it('an empty services array means a single-service project', async () => {
    const project = await created(
      { name: 'Single', subdomain: 'spec-single', deploy_source: 'upload' },
      PROJECT,
    );
    const result = await api(`/projects/${project.id}/build-config`, {
      method: 'PUT',
      body: { start_cmd: 'node server.js', services: [] },
    });
    expect(result.status).toBe(200);
    expect((result.body as { service_urls: object }).service_urls).toEqual({});
  });

  describe('refuses a build-config that breaks a rule (bad input)', () => {
    let id: string;
    beforeAll(async () => {
      id = (await created({ name: 'Rules', subdomain: 'spec-rules', deploy_source: 'upload' }, PROJECT)).id;
    });
    const put = (body: unknown) => api(`/projects/${id}/build-config`, { method: 'PUT', body });

    it.each([
      ['six services (at most 5)', [1, 2, 3, 4, 5, 6].map((n) => service(`s${n}`, 41_000 + n))],
      ['a name that is not a lowercase DNS label', [service('Web', 41_011)]],
      ['a name with an underscore', [service('my_api', 41_012)]],
      ['two services of one name', [service('api', 41_013), service('api', 41_014)]],
      ['two services on one port', [service('api', 41_015), service('web', 41_015)]],
    ])('%s', async (_what, services) => {
      const result = await put({ start_cmd: 'node server.js', services });
      expect(result.status, JSON.stringify(result.body)).toBe(422);
    });

    it('a port_override that is not an integer', async () => {
      expect((await put({ port_override: 3000.5 })).status).toBe(422);
      expect((await put({ port_override: '3000' })).status).toBe(422);
    });

    it('a port_override equal to a service port', async () => {
      const result = await put({ port_override: 41_020, services: [service('api', 41_020)] });
      expect(result.status).toBe(422);
    });

    it('a port_override the machine has in use (the edge here), naming port_override', async () => {
      const result = await put({ port_override: tp.edgePort });
      expect(result.status).toBe(422);
      expect(JSON.stringify(result.body)).toContain('"path":"port_override"');
    });

    it('but an image project takes any port_override: it is the port inside its container', async () => {
      const image = await created({ name: 'Img', subdomain: 'spec-img-port', image: 'nginx:1.27' }, PROJECT);
      const result = await api(`/projects/${image.id}/build-config`, {
        method: 'PUT',
        body: { port_override: tp.edgePort },
      });
      expect(result.status, JSON.stringify(result.body)).toBe(200);
    });

    it('exactly five services are accepted', async () => {
      // Above the kernel's ephemeral range (32768–60999): no connection of another test takes them.
      const services = [1, 2, 3, 4, 5].map((n) => service(`s${n}`, 62_030 + n));
      const result = await put({ services });
      expect(result.status, JSON.stringify(result.body)).toBe(200);
    });
  });
});

describe('§2.2: root_dir', () => {
  it('a project-level root_dir other than "." is the directory of the repository the app runs in', async () => {
    // The repository root holds an app of its own: answering from it would mean root_dir was ignored.
    const url = gitRepo(repos, 'acme/nested', {
      ...nodeApp('from the repository root'),
      ...Object.fromEntries(Object.entries(nodeApp('from app/')).map(([k, v]) => [`app/${k}`, v])),
    });
    const project = await created(
      { name: 'Nested', subdomain: 'spec-rootdir', repo_url: url, branch: 'main' },
      REPOSITORY_PROJECT,
    );
    const body = { root_dir: 'app', start_cmd: 'node server.js', port_override: await quietPort() };
    expect(tableViolations(body, BUILD_CONFIG).filter((v) => !v.endsWith(': missing'))).toEqual([]);
    const saved = await api(`/projects/${project.id}/build-config`, { method: 'PUT', body });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    expect((saved.body as { build_config: unknown }).build_config).toMatchObject(body);
    await api(`/projects/${project.id}/deploy`, { method: 'POST' });
    expect((await pollSettled(project.id)).project.status).toBe('running');
    expect((await viaEdge(tp.edgePort, 'spec-rootdir.localhost', '/')).body).toBe('from app/ /');
    const env = JSON.parse((await viaEdge(tp.edgePort, 'spec-rootdir.localhost', '/env')).body) as Record<
      string,
      string
    >;
    expect(env.PORT).toBe(String(body.port_override));
    await api(`/projects/${project.id}`, { method: 'DELETE' });
  });
});

describe.skipIf(engineMissing !== null)('§2.1, §3 and §4.1: an image source', () => {
  it('is pulled (no build) and run; polling ends running and the app answers through the edge', async () => {
    const docker = dockerClient();
    const registry = await startRegistry();
    const ref = `${registry.host}/spec/app:1`;
    let id: string | null = null;
    try {
      // The smaller of the test bases; the app listens on the PORT the platform sets.
      // Only the registry has it then: running it means pulling it.
      await publishTestImage(ref, {
        'app.py': [
          'import http.server, os',
          'class H(http.server.BaseHTTPRequestHandler):',
          '    def do_GET(self):',
          '        self.send_response(200); self.end_headers()',
          '        self.wfile.write(("pulled image " + self.path + " on " + os.environ["PORT"]).encode())',
          'http.server.HTTPServer(("0.0.0.0", int(os.environ["PORT"])), H).serve_forever()',
          '',
        ].join('\n'),
        Dockerfile: `FROM ${testImages()!.python}\nCOPY app.py /srv/\nEXPOSE 7000\nCMD ["python3", "-u", "/srv/app.py"]\n`,
      });
      expect(await hasImage(ref)).toBe(false);

      const project = await created({ name: 'Pulled', subdomain: 'spec-pulled', image: ref }, IMAGE_PROJECT);
      id = project.id;
      expect(project).toMatchObject({ image: ref });
      const deployed = await api(`/projects/${project.id}/deploy`, { method: 'POST' });
      expect(deployed.status, JSON.stringify(deployed.body)).toBe(202);
      expectSpec(deployed.body, IMAGE_PROJECT, 'the deploy answer');
      expect((deployed.body as { status: string }).status).toBe('building');

      const detail = await pollSettled(project.id);
      const lines = detail.logs.map((l) => l.line);
      expect(detail.project.status, lines.join('\n')).toBe('running');
      expectSpec(detail, { ...PROJECT_DETAIL, project: { object: IMAGE_PROJECT } }, 'the project detail');
      expect(detail.project.image).toBe(ref);
      expect(lines).toContain(`pulling ${ref}`);
      expect(lines.some((l) => /Pull complete|Downloaded newer image/.test(l))).toBe(true);
      // No build: neither a build command nor an image built from the source.
      expect(lines.filter((l) => /building the image|^\$ /.test(l))).toEqual([]);
      expect(await hasImage(ref)).toBe(true);
      expect((await viaEdge(tp.edgePort, 'spec-pulled.localhost', '/hi')).body).toBe(
        'pulled image /hi on 7000',
      );

      const deleted = await api(`/projects/${project.id}`, { method: 'DELETE' });
      expect(deleted.status).toBe(200);
      id = null;
      const label = `${PLATFORM_LABEL}=${tp.platform.runtime.platformId}`;
      await until(
        async () => (await docker.listContainers({ all: true, filters: { label: [label] } })).length === 0,
        'the image project’s container to be removed with the project',
        20_000,
        200,
      );
    } finally {
      if (id) await api(`/projects/${id}`, { method: 'DELETE' }).catch(() => undefined);
      await docker
        .getImage(ref)
        .remove({ force: true })
        .catch(() => undefined);
      await registry.close();
    }
  }, 180_000);
});

describe('§5, §7 and §9', () => {
  it('answers 401 without X-API-Key, and takes the key in X-API-Key', async () => {
    expect((await call(`${tp.api}/projects`)).status).toBe(401);
    expect((await call(`${tp.api}/projects`, { key: deployKey })).status).toBe(200);
  });

  it('lives under /api/v1: the same path without the version is not an endpoint', async () => {
    expect(tp.api.endsWith('/api/v1')).toBe(true);
    const unversioned = await call(`${tp.api.replace(/\/v1$/, '')}/projects`, { key: deployKey });
    expect(unversioned.status).toBe(404);
  });

  it('every path of the OpenAPI document is under /api/v1', async () => {
    const doc = await call<{ paths: Record<string, unknown> }>(`${tp.api}/openapi.json`);
    expect(doc.status).toBe(200);
    const paths = Object.keys(doc.body.paths);
    expect(paths.length).toBeGreaterThan(0);
    expect(paths.filter((p) => !p.startsWith('/api/v1/'))).toEqual([]);
    for (const path of [
      '/api/v1/projects',
      '/api/v1/projects/{id}',
      '/api/v1/projects/{id}/upload',
      '/api/v1/projects/{id}/build-config',
      '/api/v1/projects/{id}/deploy',
      '/api/v1/projects/{id}/logs',
      '/api/v1/projects/{id}/stop',
      '/api/v1/domains',
      '/api/v1/domains/{id}/verify',
      '/api/v1/domains/{id}',
      '/api/v1/email/verify',
      '/api/v1/email/verify/batch',
      '/api/v1/ai/build',
      '/api/v1/ai/deploy',
      '/api/v1/ai/edit',
      '/api/v1/ai/agent',
      '/api/v1/ai/agent/stream',
      '/api/v1/tunnels/{tunnelUrl}/requests',
      '/api/v1/tunnels/{tunnelUrl}/replay/{requestId}',
    ]) {
      expect(paths, path).toContain(path);
    }
  });

  it('describes port_override as an integer of the build configuration in the OpenAPI document', async () => {
    const doc = await call<{ components: { schemas: Record<string, any> } }>(`${tp.api}/openapi.json`);
    const schema = JSON.stringify(doc.body.components.schemas);
    expect(schema).toContain('"port_override"');
  });
});
