// API.md §1 and §4 against a real platform: creating projects from each source, reading, listing,
// replacing env vars and build configuration, deleting, every validation rule with its error path,
// host name conflicts across projects and accounts, and the isolation of accounts (404, never 403).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Problem } from '../../src/shared/api/common.js';
import { EMPTY_BUILD_CONFIG, Project, ProjectDetail } from '../../src/shared/api/projects.js';
import { nodeAppTarball } from '../fixtures/tarball.js';
import {
  type CallResult,
  call,
  expectProblem,
  startPlatform,
  type TestPlatform,
} from '../helpers/platform.js';

const EDGE_PORT = 9999;

let t: TestPlatform;

beforeAll(async () => {
  t = await startPlatform({ edgePort: EDGE_PORT });
});

afterAll(async () => {
  await t?.close();
});

let labels = 0;
/** A fresh subdomain for this server: `<prefix><n>`. */
function label(prefix = 'p'): string {
  labels += 1;
  return `${prefix}${labels}`;
}

const GIT = { repo_url: 'https://github.com/acme/demo.git' };

function create(body: unknown, key: string = t.key): Promise<CallResult> {
  return call(`${t.api}/projects`, { method: 'POST', key, body });
}

/** Creates a project that must succeed; returns it parsed with the Project schema. */
async function createOk(extra: Record<string, unknown> = {}, key: string = t.key): Promise<Project> {
  const res = await create({ name: 'Demo', subdomain: label(), ...GIT, ...extra }, key);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return Project.parse(res.body);
}

function projectUrl(id: string, suffix = ''): string {
  return `${t.api}/projects/${encodeURIComponent(id)}${suffix}`;
}

/** A 422 validation_failed whose `errors` name exactly these paths (each at least once). */
function expectInvalid(res: CallResult, paths: string[]): Problem {
  const problem = expectProblem(res, 422, 'validation_failed');
  expect(problem.errors, 'errors must be listed').toBeDefined();
  const got = [...new Set(problem.errors!.map((e) => e.path))].sort();
  expect(got).toEqual([...new Set(paths)].sort());
  for (const error of problem.errors!) expect(error.message.length).toBeGreaterThan(0);
  return problem;
}

/** A 422 whose error paths are all among `allowed` (the contract names the rule, not the field). */
function expectInvalidAmong(res: CallResult, allowed: string[]): void {
  const problem = expectProblem(res, 422, 'validation_failed');
  const got = problem.errors!.map((e) => e.path);
  expect(got.length).toBeGreaterThan(0);
  for (const path of got) expect(allowed).toContain(path);
}

const service = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  start_cmd: 'node index.js',
  ...extra,
});

describe('POST /projects: creating from each source', () => {
  it('creates a git project from repo_url with branch main by default, status created and no deploy yet', async () => {
    const subdomain = label('git');
    const res = await create({ name: 'Git app', subdomain, repo_url: 'https://github.com/acme/demo.git' });
    expect(res.status).toBe(201);
    const project = Project.parse(res.body);
    expect(project.id).toMatch(/^prj_/);
    expect(project).toMatchObject({
      name: 'Git app',
      subdomain,
      repo_url: 'https://github.com/acme/demo.git',
      git_host_repo: '',
      branch: 'main',
      image: '',
      deploy_source: 'git',
      env_vars: {},
      status: 'created',
      service_urls: {},
      last_deploy_at: null,
      last_deploy_error: null,
    });
    expect(project.build_config).toEqual(EMPTY_BUILD_CONFIG);
    expect(project.url).toBe(`http://${subdomain}.localhost:${EDGE_PORT}`);
    expect(Number.isNaN(Date.parse(project.created_at))).toBe(false);
    expect(project.updated_at).toBe(project.created_at);
  });

  it('keeps the branch given with a repo_url', async () => {
    const project = await createOk({ branch: 'release/1.2' });
    expect(project.branch).toBe('release/1.2');
  });

  it('accepts scp-like and ssh repo URLs', async () => {
    expect((await createOk({ repo_url: 'git@github.com:acme/demo.git' })).repo_url).toBe(
      'git@github.com:acme/demo.git',
    );
    expect((await createOk({ repo_url: 'ssh://git@example.com/acme/demo.git' })).deploy_source).toBe('git');
  });

  it('creates a git project from git_host_repo owner/repo with its branch', async () => {
    const subdomain = label('host');
    const res = await create({ name: 'Hosted', subdomain, git_host_repo: 'acme/demo', branch: 'develop' });
    expect(res.status).toBe(201);
    const project = Project.parse(res.body);
    expect(project).toMatchObject({
      repo_url: '',
      git_host_repo: 'acme/demo',
      branch: 'develop',
      image: '',
      deploy_source: 'git',
      status: 'created',
    });
  });

  it('defaults the branch of a git_host_repo project to main', async () => {
    const res = await create({ name: 'Hosted', subdomain: label(), git_host_repo: 'acme/demo' });
    expect(res.status).toBe(201);
    expect(Project.parse(res.body).branch).toBe('main');
  });

  it('creates an image project with deploy_source image and an empty branch', async () => {
    const res = await create({ name: 'Image', subdomain: label('img'), image: 'ghcr.io/acme/app:1.2.3' });
    expect(res.status).toBe(201);
    const project = Project.parse(res.body);
    expect(project).toMatchObject({
      repo_url: '',
      git_host_repo: '',
      branch: '',
      image: 'ghcr.io/acme/app:1.2.3',
      deploy_source: 'image',
      status: 'created',
    });
  });

  it('creates an upload project from deploy_source "upload" with no other source', async () => {
    const res = await create({ name: 'Upload', subdomain: label('up'), deploy_source: 'upload' });
    expect(res.status).toBe(201);
    const project = Project.parse(res.body);
    expect(project).toMatchObject({
      repo_url: '',
      git_host_repo: '',
      branch: '',
      image: '',
      deploy_source: 'upload',
      status: 'created',
    });
  });

  it('accepts an explicit deploy_source that matches the source given', async () => {
    expect((await createOk({ deploy_source: 'git' })).deploy_source).toBe('git');
    const res = await create({ name: 'I', subdomain: label(), image: 'nginx:1.27', deploy_source: 'image' });
    expect(res.status).toBe(201);
    expect(Project.parse(res.body).deploy_source).toBe('image');
  });

  it('stores env_vars and a build_config given at create, with service_urls for its web services only', async () => {
    const subdomain = label('svc');
    const project = await createOk({
      subdomain,
      env_vars: { NODE_ENV: 'production', _X1: '' },
      build_config: { services: [service('web', { port: 3000 }), service('worker', { kind: 'worker' })] },
    });
    expect(project.env_vars).toEqual({ NODE_ENV: 'production', _X1: '' });
    expect(project.build_config.services.map((s) => s.name)).toEqual(['web', 'worker']);
    expect(project.build_config.services[0]).toMatchObject({ kind: 'web', port: 3000, root_dir: null });
    expect(project.service_urls).toEqual({ web: `http://${subdomain}-web.localhost:${EDGE_PORT}` });
  });

  it('accepts the boundaries: a 64-character name, a 63-character subdomain, a one-character subdomain', async () => {
    expect((await createOk({ name: 'n'.repeat(64) })).name).toBe('n'.repeat(64));
    const long = `z${labels}`.padEnd(63, 'z');
    expect((await createOk({ subdomain: long })).subdomain).toBe(long);
    expect((await createOk({ subdomain: '7' })).subdomain).toBe('7');
  });
});

describe('project URLs on an edge at port 80', () => {
  let edge80: TestPlatform;
  beforeAll(async () => {
    // The edge listens on a free port; the URLs are made for the port 80 it is said to be reached on
    // (as behind a proxy or a port forward), so the test needs neither root nor a free port 80.
    edge80 = await startPlatform();
    edge80.platform.config.edgePort = 80;
  });
  afterAll(async () => {
    await edge80?.close();
  });

  it('leaves the port out of url and service_urls when the edge port is 80', async () => {
    const res = await call(`${edge80.api}/projects`, {
      key: edge80.key,
      body: {
        name: 'Port 80',
        subdomain: 'plain',
        image: 'nginx',
        build_config: { services: [service('web')] },
      },
    });
    expect(res.status).toBe(201);
    const project = Project.parse(res.body);
    expect(project.url).toBe('http://plain.localhost');
    expect(project.service_urls).toEqual({ web: 'http://plain-web.localhost' });
  });
});

describe('GET /projects and GET /projects/:id', () => {
  it('lists the projects of the account newest first, each a valid Project', async () => {
    const other = await t.newAccount();
    const created: Project[] = [];
    for (let i = 0; i < 4; i++) created.push(await createOk({ name: `n${i}` }, other.key));
    const res = await call(`${t.api}/projects`, { key: other.key });
    expect(res.status).toBe(200);
    const list = (res.body as unknown[]).map((p) => Project.parse(p));
    expect(list.map((p) => p.id)).toEqual(created.map((p) => p.id).reverse());
  });

  it('lists every project created while the list is being read at the same time', async () => {
    const reader = await t.newAccount();
    const created: string[] = [];
    for (let round = 0; round < 40; round++) {
      const reads = Array.from({ length: 3 }, () => call(`${t.api}/projects`, { key: reader.key }));
      const [made] = await Promise.all([
        create({ name: `r${round}`, subdomain: label('live'), ...GIT }, reader.key),
        ...reads,
      ]);
      expect(made!.status).toBe(201);
      created.push((made!.body as Project).id);
    }
    const res = await call(`${t.api}/projects`, { key: reader.key });
    expect((res.body as Project[]).map((p) => p.id)).toEqual([...created].reverse());
  });

  it('lists the env vars written while the list is being read at the same time', async () => {
    const reader = await t.newAccount();
    const project = await createOk({}, reader.key);
    for (let round = 0; round < 40; round++) {
      const reads = Array.from({ length: 3 }, () => call(`${t.api}/projects`, { key: reader.key }));
      const [put] = await Promise.all([
        call(projectUrl(project.id), {
          method: 'PUT',
          key: reader.key,
          body: { env_vars: { ROUND: `${round}` } },
        }),
        ...reads,
      ]);
      expect(put!.status).toBe(200);
    }
    const res = await call(`${t.api}/projects`, { key: reader.key });
    expect((res.body as Project[])[0]!.env_vars).toEqual({ ROUND: '39' });
  });

  it('lists nothing for an account without projects', async () => {
    const fresh = await t.newAccount();
    const res = await call(`${t.api}/projects`, { key: fresh.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  it('returns { project, logs: [] } for a project never deployed', async () => {
    const project = await createOk({ env_vars: { A: '1' } });
    const res = await call(projectUrl(project.id), { key: t.key });
    expect(res.status).toBe(200);
    const detail = ProjectDetail.parse(res.body);
    expect(detail).toEqual({ project, logs: [] });
  });

  it('answers 404 not_found for an unknown id, well-formed or not', async () => {
    for (const id of ['prj_doesnotexist000000', 'nope', 'key_00000000', '..']) {
      expectProblem(await call(projectUrl(id), { key: t.key }), 404, 'not_found');
    }
  });

  it('answers 404 for PUT, PUT build-config, upload and DELETE of an unknown id', async () => {
    const id = 'prj_0000000000000000000000';
    expectProblem(
      await call(projectUrl(id), { method: 'PUT', key: t.key, body: { env_vars: {} } }),
      404,
      'not_found',
    );
    expectProblem(
      await call(projectUrl(id, '/build-config'), { method: 'PUT', key: t.key, body: {} }),
      404,
      'not_found',
    );
    expectProblem(
      await call(projectUrl(id, '/upload'), {
        key: t.key,
        body: nodeAppTarball(),
        headers: { 'content-type': 'application/gzip' },
      }),
      404,
      'not_found',
    );
    expectProblem(await call(projectUrl(id), { method: 'DELETE', key: t.key }), 404, 'not_found');
  });
});

describe('PUT /projects/:id (env vars)', () => {
  it('replaces the whole set of env vars, dropping the ones not sent', async () => {
    const project = await createOk({ env_vars: { A: '1', B: '2' } });
    const res = await call(projectUrl(project.id), {
      method: 'PUT',
      key: t.key,
      body: { env_vars: { C: '3', B: 'two' } },
    });
    expect(res.status).toBe(200);
    const updated = Project.parse(res.body);
    expect(updated.env_vars).toEqual({ C: '3', B: 'two' });
    expect(updated.id).toBe(project.id);
    expect(Date.parse(updated.updated_at)).toBeGreaterThanOrEqual(Date.parse(project.updated_at));
    const detail = ProjectDetail.parse((await call(projectUrl(project.id), { key: t.key })).body);
    expect(detail.project.env_vars).toEqual({ C: '3', B: 'two' });
  });

  it('clears every env var when sent an empty object', async () => {
    const project = await createOk({ env_vars: { A: '1' } });
    const res = await call(projectUrl(project.id), { method: 'PUT', key: t.key, body: { env_vars: {} } });
    expect(res.status).toBe(200);
    expect(Project.parse(res.body).env_vars).toEqual({});
  });

  it('keeps everything else of the project as it was', async () => {
    const project = await createOk({ build_config: { services: [service('web')] } });
    const res = await call(projectUrl(project.id), {
      method: 'PUT',
      key: t.key,
      body: { env_vars: { X: 'y' } },
    });
    const updated = Project.parse(res.body);
    expect({ ...updated, env_vars: {}, updated_at: '' }).toEqual({
      ...project,
      env_vars: {},
      updated_at: '',
    });
  });

  it('rejects a body without env_vars with 422 and the path env_vars', async () => {
    const project = await createOk();
    expectInvalid(await call(projectUrl(project.id), { method: 'PUT', key: t.key, body: {} }), ['env_vars']);
  });

  it('rejects other fields (name, subdomain) with 422 naming each', async () => {
    const project = await createOk();
    expectInvalid(
      await call(projectUrl(project.id), {
        method: 'PUT',
        key: t.key,
        body: { env_vars: {}, name: 'x', subdomain: 'y' },
      }),
      ['name', 'subdomain'],
    );
  });
});

describe('PUT /projects/:id/build-config', () => {
  it('replaces the build configuration and the service_urls with it', async () => {
    const subdomain = label('bc');
    const project = await createOk({
      subdomain,
      build_config: { install_cmd: 'npm ci', services: [service('web'), service('jobs')] },
    });
    expect(Object.keys(project.service_urls).sort()).toEqual(['jobs', 'web']);
    const res = await call(projectUrl(project.id, '/build-config'), {
      method: 'PUT',
      key: t.key,
      body: { root_dir: 'app', services: [service('api', { port: 8080, root_dir: 'srv/api' })] },
    });
    expect(res.status).toBe(200);
    const updated = Project.parse(res.body);
    expect(updated.build_config).toEqual({
      root_dir: 'app',
      install_cmd: null,
      build_cmd: null,
      start_cmd: null,
      port_override: null,
      replicas: 1,
      services: [
        {
          name: 'api',
          kind: 'web',
          root_dir: 'srv/api',
          install_cmd: null,
          build_cmd: null,
          start_cmd: 'node index.js',
          port: 8080,
          env_overrides: {},
        },
      ],
    });
    expect(updated.service_urls).toEqual({ api: `http://${subdomain}-api.localhost:${EDGE_PORT}` });
    const detail = ProjectDetail.parse((await call(projectUrl(project.id), { key: t.key })).body);
    expect(detail.project.build_config).toEqual(updated.build_config);
    expect(detail.project.service_urls).toEqual(updated.service_urls);
  });

  it('frees the hosts of removed services and claims the hosts of new ones', async () => {
    const subdomain = label('hosts');
    const project = await createOk({ subdomain, build_config: { services: [service('old')] } });
    // While "old" exists its host is taken.
    expectProblem(await create({ name: 'x', subdomain: `${subdomain}-old`, ...GIT }), 409, 'conflict');
    const res = await call(projectUrl(project.id, '/build-config'), {
      method: 'PUT',
      key: t.key,
      body: { services: [service('new')] },
    });
    expect(res.status).toBe(200);
    expect((await create({ name: 'x', subdomain: `${subdomain}-old`, ...GIT })).status).toBe(201);
    expectProblem(await create({ name: 'x', subdomain: `${subdomain}-new`, ...GIT }), 409, 'conflict');
  });

  it('keeps the same services when sent again (a project does not conflict with itself)', async () => {
    const project = await createOk({ build_config: { services: [service('web')] } });
    const res = await call(projectUrl(project.id, '/build-config'), {
      method: 'PUT',
      key: t.key,
      body: { services: [service('web'), service('more')] },
    });
    expect(res.status).toBe(200);
    expect(Object.keys(Project.parse(res.body).service_urls).sort()).toEqual(['more', 'web']);
  });

  it('resets to the defaults when sent an empty object', async () => {
    const project = await createOk({ build_config: { build_cmd: 'make', services: [service('web')] } });
    const res = await call(projectUrl(project.id, '/build-config'), { method: 'PUT', key: t.key, body: {} });
    expect(res.status).toBe(200);
    const updated = Project.parse(res.body);
    expect(updated.build_config).toEqual(EMPTY_BUILD_CONFIG);
    expect(updated.service_urls).toEqual({});
  });
});

describe('DELETE /projects/:id', () => {
  it('answers { id, deleted: true }, then 404 for the project, and frees its subdomain and service hosts', async () => {
    const subdomain = label('del');
    const project = await createOk({ subdomain, build_config: { services: [service('web')] } });
    const res = await call(projectUrl(project.id), { method: 'DELETE', key: t.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: project.id, deleted: true });

    expectProblem(await call(projectUrl(project.id), { key: t.key }), 404, 'not_found');
    expectProblem(await call(projectUrl(project.id), { method: 'DELETE', key: t.key }), 404, 'not_found');
    const list = (await call(`${t.api}/projects`, { key: t.key })).body as Project[];
    expect(list.map((p) => p.id)).not.toContain(project.id);

    expect((await create({ name: 'again', subdomain, ...GIT })).status).toBe(201);
    expect((await create({ name: 'again', subdomain: `${subdomain}-web`, ...GIT })).status).toBe(201);
  });

  it('frees the subdomain for another account too', async () => {
    const other = await t.newAccount();
    const subdomain = label('freed');
    const project = await createOk({ subdomain });
    expect((await call(projectUrl(project.id), { method: 'DELETE', key: t.key })).status).toBe(200);
    expect((await create({ name: 'mine now', subdomain, ...GIT }, other.key)).status).toBe(201);
  });
});

describe('POST /projects validation (422 validation_failed with the exact path)', () => {
  const base = () => ({ name: 'Demo', subdomain: label(), ...GIT });

  it('rejects a missing body with 400 invalid_json', async () => {
    expectProblem(
      await call(`${t.api}/projects`, {
        method: 'POST',
        key: t.key,
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_json',
    );
  });

  it('rejects a body that is not JSON with 400 invalid_json', async () => {
    expectProblem(
      await call(`${t.api}/projects`, {
        key: t.key,
        body: '{"name": ',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_json',
    );
  });

  it('rejects a text/plain body with 400 invalid_json', async () => {
    expectProblem(
      await call(`${t.api}/projects`, {
        key: t.key,
        body: 'hello',
        headers: { 'content-type': 'text/plain' },
      }),
      400,
      'invalid_json',
    );
  });

  it('rejects an empty name with the path name', async () => {
    expectInvalid(await create({ ...base(), name: '' }), ['name']);
  });

  it('rejects a 65-character name with the path name', async () => {
    expectInvalid(await create({ ...base(), name: 'n'.repeat(65) }), ['name']);
  });

  it('rejects a missing name and a missing subdomain, naming both', async () => {
    expectInvalid(await create({ ...GIT }), ['name', 'subdomain']);
  });

  it.each([
    ['uppercase', 'MyApp'],
    ['a leading hyphen', '-app'],
    ['a trailing hyphen', 'app-'],
    ['64 characters', 'a'.repeat(64)],
    ['an underscore', 'my_app'],
    ['a dot', 'my.app'],
    ['the empty string', ''],
  ])('rejects a subdomain with %s with the path subdomain', async (_what, subdomain) => {
    expectInvalid(await create({ ...base(), subdomain }), ['subdomain']);
  });

  it.each(['api', 'www', 'admin'])(
    'rejects the reserved subdomain %s with the path subdomain',
    async (sub) => {
      expectInvalid(await create({ ...base(), subdomain: sub }), ['subdomain']);
    },
  );

  it('rejects a body with no source with the empty path', async () => {
    expectInvalid(await create({ name: 'Demo', subdomain: label() }), ['']);
  });

  it('rejects two sources (repo_url and image) naming one of them', async () => {
    expectInvalidAmong(await create({ ...base(), image: 'nginx:1.27' }), ['repo_url', 'image']);
  });

  it('takes repo_url and git_host_repo together as one repository source (SPEC.md §4.1), cloning repo_url', async () => {
    const res = await create({ ...base(), git_host_repo: 'acme/demo', branch: 'dev' });
    expect(res.status).toBe(201);
    expect(Project.parse(res.body)).toMatchObject({
      repo_url: base().repo_url,
      git_host_repo: 'acme/demo',
      branch: 'dev',
      deploy_source: 'git',
    });
  });

  it('rejects git_host_repo together with an image, naming one of them', async () => {
    expectInvalidAmong(
      await create({ name: 'Demo', subdomain: label(), git_host_repo: 'acme/demo', image: 'nginx:1.27' }),
      ['git_host_repo', 'image'],
    );
  });

  it('rejects deploy_source "upload" together with repo_url', async () => {
    expectInvalidAmong(await create({ ...base(), deploy_source: 'upload' }), ['repo_url', 'deploy_source']);
  });

  it('rejects a deploy_source that contradicts the source given with the path deploy_source', async () => {
    expectInvalid(await create({ ...base(), deploy_source: 'image' }), ['deploy_source']);
  });

  it('rejects deploy_source "git" with no repository with the path deploy_source', async () => {
    expectInvalid(await create({ name: 'Demo', subdomain: label(), deploy_source: 'git' }), [
      'deploy_source',
    ]);
  });

  it('rejects an unknown deploy_source with the path deploy_source', async () => {
    expectInvalid(await create({ ...base(), deploy_source: 'ftp' }), ['deploy_source']);
  });

  it('rejects a branch with an image source with the path branch', async () => {
    expectInvalid(await create({ name: 'Demo', subdomain: label(), image: 'nginx:1.27', branch: 'main' }), [
      'branch',
    ]);
  });

  it('rejects a branch with an upload source with the path branch', async () => {
    expectInvalid(
      await create({ name: 'Demo', subdomain: label(), deploy_source: 'upload', branch: 'main' }),
      ['branch'],
    );
  });

  it.each(['not a url', 'ftp://example.com/repo.git', 'https://exa mple.com/x', 'javascript:alert(1)', ''])(
    'rejects the repo_url %j with the path repo_url',
    async (repo_url) => {
      expectInvalid(await create({ ...base(), repo_url }), ['repo_url']);
    },
  );

  it.each(['a/b/c', '../x', 'owner', 'owner/', '/repo', 'a b/c'])(
    'rejects the git_host_repo %j with the path git_host_repo',
    async (git_host_repo) => {
      expectInvalid(await create({ name: 'Demo', subdomain: label(), git_host_repo }), ['git_host_repo']);
    },
  );

  it.each(['-bad', 'has space', 'a..b', ''])('rejects the branch %j with the path branch', async (branch) => {
    expectInvalid(await create({ ...base(), branch }), ['branch']);
  });

  it.each(['Nginx:Latest', 'nginx:', 'nginx@sha256:xyz', 'has space', ''])(
    'rejects the image %j with the path image',
    async (image) => {
      expectInvalid(await create({ name: 'Demo', subdomain: label(), image }), ['image']);
    },
  );

  it('rejects an unknown field with its name as the path', async () => {
    expectInvalid(await create({ ...base(), color: 'blue' }), ['color']);
  });

  it('rejects a non-object body with a 4xx problem', async () => {
    for (const body of ['[]', '"text"', '42', 'null']) {
      const res = await call(`${t.api}/projects`, {
        key: t.key,
        body,
        headers: { 'content-type': 'application/json' },
      });
      expect([400, 422]).toContain(res.status);
      Problem.parse(res.body);
    }
  });
});

describe('env var rules (POST /projects and PUT /projects/:id)', () => {
  let target: Project;
  beforeAll(async () => {
    target = await createOk();
  });

  const endpoints = [
    ['POST /projects', (env_vars: unknown) => create({ name: 'Demo', subdomain: label(), ...GIT, env_vars })],
    [
      'PUT /projects/:id',
      (env_vars: unknown) => call(projectUrl(target.id), { method: 'PUT', key: t.key, body: { env_vars } }),
    ],
  ] as const;

  describe.each(endpoints)('%s', (_endpoint, send) => {
    it.each(['1A', 'A-B', '', 'A B', 'Ä'])(
      'rejects the name %j with the path env_vars.<name>',
      async (name) => {
        expectInvalid(await send({ OK: 'x', [name]: 'v' }), [`env_vars.${name}`]);
      },
    );

    it('rejects a value that is not a string with the path env_vars.<name>', async () => {
      expectInvalid(await send({ PORT: 8080 }), ['env_vars.PORT']);
      expectInvalid(await send({ FLAG: true }), ['env_vars.FLAG']);
      expectInvalid(await send({ NOTHING: null }), ['env_vars.NOTHING']);
    });

    it('rejects env_vars that are not an object with the path env_vars', async () => {
      expectInvalid(await send(['A=1']), ['env_vars']);
      expectInvalid(await send('A=1'), ['env_vars']);
    });

    it('rejects 201 variables with the path env_vars, and accepts 200', async () => {
      const vars = (n: number) =>
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`V${i}`, String(i)]));
      expectInvalid(await send(vars(201)), ['env_vars']);
      const ok = await send(vars(200));
      expect(ok.status).toBeLessThan(300);
      expect(Object.keys(Project.parse(ok.body).env_vars)).toHaveLength(200);
    });

    it('rejects a value over 32 KiB with the path env_vars.<name>, and accepts exactly 32 KiB', async () => {
      expectInvalid(await send({ BIG: 'x'.repeat(32 * 1024 + 1) }), ['env_vars.BIG']);
      // Counted in bytes: 16,385 two-byte characters are 32 KiB + 2.
      expectInvalid(await send({ BIG: 'é'.repeat(16 * 1024 + 1) }), ['env_vars.BIG']);
      const ok = await send({ BIG: 'x'.repeat(32 * 1024) });
      expect(ok.status).toBeLessThan(300);
      expect(Project.parse(ok.body).env_vars.BIG).toHaveLength(32 * 1024);
    });

    it('accepts names with underscores, digits after the first character and mixed case', async () => {
      const ok = await send({ _a: '1', Ab_9: '2', x: '' });
      expect(ok.status).toBeLessThan(300);
      expect(Project.parse(ok.body).env_vars).toEqual({ _a: '1', Ab_9: '2', x: '' });
    });
  });
});

describe('build config rules (PUT /projects/:id/build-config and build_config at create)', () => {
  let target: Project;
  beforeAll(async () => {
    target = await createOk({ subdomain: label('rules') });
  });

  const put = (config: unknown) =>
    call(projectUrl(target.id, '/build-config'), { method: 'PUT', key: t.key, body: config });

  /** Checks a bad config on both endpoints: bare paths on PUT, `build_config.`-prefixed at create. */
  async function rejectsBoth(config: Record<string, unknown>, paths: string[], subdomain?: string) {
    expectInvalid(await put(config), paths);
    const res = await create({
      name: 'Demo',
      subdomain: subdomain ?? label(),
      ...GIT,
      build_config: config,
    });
    expectInvalid(
      res,
      paths.map((p) => `build_config.${p}`),
    );
  }

  it('rejects a sixth service with 422 and the path services, and accepts five', async () => {
    const names = ['a', 'b', 'c', 'd', 'e', 'f'];
    await rejectsBoth({ services: names.map((n) => service(n)) }, ['services']);
    const ok = await put({ services: names.slice(0, 5).map((n) => service(n)) });
    expect(ok.status).toBe(200);
    expect(Object.keys(Project.parse(ok.body).service_urls)).toHaveLength(5);
  });

  it.each(['Web', 'web_1', '-web', 'web-', 'a.b', '', 's'.repeat(64)])(
    'rejects the service name %j (not a DNS label) with the path services[i].name',
    async (name) => {
      await rejectsBoth({ services: [service('ok'), service(name)] }, ['services[1].name']);
    },
  );

  it('rejects a duplicate service name with the path services[1].name', async () => {
    await rejectsBoth({ services: [service('web', { port: 1 }), service('web', { port: 2 })] }, [
      'services[1].name',
    ]);
  });

  it('rejects a service whose host <subdomain>-<name> is over 63 characters with the path services[i].name', async () => {
    const subdomain = target.subdomain;
    const tooLong = 'n'.repeat(63 - subdomain.length); // subdomain + "-" + name = 64
    expectInvalid(await put({ services: [service('ok'), service(tooLong)] }), ['services[1].name']);
    const fits = 'n'.repeat(62 - subdomain.length); // exactly 63
    const ok = await put({ services: [service(fits)] });
    expect(ok.status).toBe(200);
    expect(Project.parse(ok.body).service_urls[fits]).toBe(
      `http://${subdomain}-${fits}.localhost:${EDGE_PORT}`,
    );
  });

  it('rejects at create a service whose host is over 63 characters with the path build_config.services[i].name', async () => {
    const subdomain = label('c').padEnd(40, 'c');
    const res = await create({
      name: 'Demo',
      subdomain,
      ...GIT,
      build_config: { services: [service('n'.repeat(63 - subdomain.length))] },
    });
    expectInvalid(res, ['build_config.services[0].name']);
    // Nothing was created: the subdomain is still free.
    expect((await create({ name: 'Demo', subdomain, ...GIT })).status).toBe(201);
  });

  it.each([0, 65536, -1, 1.5, '80'])('rejects the port %j with the path services[i].port', async (port) => {
    await rejectsBoth({ services: [service('web', { port })] }, ['services[0].port']);
  });

  it('accepts the ports 1 and 65535', async () => {
    const ok = await put({ services: [service('lo', { port: 1 }), service('hi', { port: 65535 })] });
    expect(ok.status).toBe(200);
  });

  it('rejects a duplicate port with the path services[1].port', async () => {
    await rejectsBoth({ services: [service('a', { port: 3000 }), service('b', { port: 3000 })] }, [
      'services[1].port',
    ]);
  });

  it('rejects a service without start_cmd with the path services[i].start_cmd', async () => {
    await rejectsBoth({ services: [service('a'), { name: 'b' }] }, ['services[1].start_cmd']);
  });

  it('rejects an empty start_cmd with the path services[i].start_cmd', async () => {
    await rejectsBoth({ services: [service('a', { start_cmd: '' })] }, ['services[0].start_cmd']);
  });

  it.each(['/abs', 'a/../b', '..', '../up'])(
    'rejects the root_dir %j with the path root_dir',
    async (dir) => {
      await rejectsBoth({ root_dir: dir }, ['root_dir']);
    },
  );

  it.each(['/abs', 'a/../b'])(
    'rejects the service root_dir %j with the path services[i].root_dir',
    async (dir) => {
      await rejectsBoth({ services: [service('a'), service('b', { root_dir: dir })] }, [
        'services[1].root_dir',
      ]);
    },
  );

  it('rejects an unknown kind with the path services[i].kind', async () => {
    await rejectsBoth({ services: [service('a', { kind: 'cron' })] }, ['services[0].kind']);
  });

  it('rejects an unknown top-level field with its name as the path', async () => {
    await rejectsBoth({ dockerfile: 'Dockerfile' }, ['dockerfile']);
  });

  it('rejects an unknown service field with the path services[i].<field>', async () => {
    await rejectsBoth({ services: [service('a', { replicas: 3 })] }, ['services[0].replicas']);
  });

  it('rejects a bad env_overrides name with the path services[i].env_overrides.<name>', async () => {
    await rejectsBoth({ services: [service('a', { env_overrides: { '1X': 'v' } })] }, [
      'services[0].env_overrides.1X',
    ]);
  });

  it('leaves the build config unchanged after a rejected PUT', async () => {
    const before = ProjectDetail.parse((await call(projectUrl(target.id), { key: t.key })).body).project;
    expectInvalid(await put({ services: [service('x', { port: 0 })] }), ['services[0].port']);
    const after = ProjectDetail.parse((await call(projectUrl(target.id), { key: t.key })).body).project;
    expect(after).toEqual(before);
  });
});

describe('host name conflicts (409 conflict)', () => {
  it('rejects a subdomain already taken by the same account', async () => {
    const project = await createOk();
    expectProblem(await create({ name: 'dup', subdomain: project.subdomain, ...GIT }), 409, 'conflict');
  });

  it('rejects a subdomain taken by another account', async () => {
    const other = await t.newAccount();
    const theirs = await createOk({}, other.key);
    expectProblem(
      await create({ name: 'dup', subdomain: theirs.subdomain, image: 'nginx' }),
      409,
      'conflict',
    );
  });

  it("rejects a subdomain equal to another project's service host <sub>-<svc>", async () => {
    const other = await t.newAccount();
    const shop = await createOk({ build_config: { services: [service('web')] } }, other.key);
    expectProblem(await create({ name: 'dup', subdomain: `${shop.subdomain}-web`, ...GIT }), 409, 'conflict');
  });

  it("rejects at create a service whose host equals another project's subdomain, creating nothing", async () => {
    const base = label('blog');
    await createOk({ subdomain: `${base}-api` });
    const res = await create({
      name: 'blog',
      subdomain: base,
      ...GIT,
      build_config: { services: [service('api')] },
    });
    expectProblem(res, 409, 'conflict');
    // The failed create left nothing behind: the subdomain is still free.
    expect((await create({ name: 'blog', subdomain: base, ...GIT })).status).toBe(201);
  });

  it("rejects a build-config PUT whose service host equals another project's subdomain, changing nothing", async () => {
    const base = label('news');
    const other = await t.newAccount();
    await createOk({ subdomain: `${base}-feed` }, other.key);
    const project = await createOk({ subdomain: base, build_config: { services: [service('web')] } });
    const res = await call(projectUrl(project.id, '/build-config'), {
      method: 'PUT',
      key: t.key,
      body: { services: [service('feed')] },
    });
    expectProblem(res, 409, 'conflict');
    const after = ProjectDetail.parse((await call(projectUrl(project.id), { key: t.key })).body).project;
    expect(after.build_config).toEqual(project.build_config);
    expect(after.service_urls).toEqual(project.service_urls);
    // The old service host is still held by the project.
    expectProblem(await create({ name: 'x', subdomain: `${base}-web`, ...GIT }), 409, 'conflict');
  });

  it("rejects a build-config PUT whose service host equals another project's service host", async () => {
    // "a" with service "b-c" and "a-b" with service "c" both answer at a-b-c.
    const a = label('h');
    await createOk({ subdomain: a, build_config: { services: [service('b-c')] } });
    const ab = await createOk({ subdomain: `${a}-b` });
    const res = await call(projectUrl(ab.id, '/build-config'), {
      method: 'PUT',
      key: t.key,
      body: { services: [service('c')] },
    });
    expectProblem(res, 409, 'conflict');
  });
});

describe('races and limits', () => {
  it('gives a subdomain to exactly one of ten simultaneous creates; the others get 409 conflict', async () => {
    const subdomain = label('race');
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => create({ name: `r${i}`, subdomain, ...GIT })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of results.filter((r) => r.status !== 201)) expectProblem(r, 409, 'conflict');
  });

  it('gives a host to exactly one of a subdomain and a service host created at the same time', async () => {
    const base = label('race');
    const [a, b] = await Promise.all([
      create({ name: 'a', subdomain: `${base}-web`, ...GIT }),
      create({ name: 'b', subdomain: base, ...GIT, build_config: { services: [service('web')] } }),
    ]);
    expect([a!.status, b!.status].sort()).toEqual([201, 409]);
  });

  it('rejects a JSON body over 1 MiB with 413 payload_too_large', async () => {
    const res = await create({
      name: 'Big',
      subdomain: label(),
      ...GIT,
      env_vars: { A: 'x'.repeat(1024 * 1024) },
    });
    expectProblem(res, 413, 'payload_too_large');
  });

  it('rejects a name with control characters with the path name', async () => {
    expectInvalid(await create({ name: 'a\nb', subdomain: label(), ...GIT }), ['name']);
  });
});

describe("another account's project (404 not_found, never 403)", () => {
  let theirs: Project;
  let other: { accountId: string; key: string };

  beforeAll(async () => {
    other = await t.newAccount();
    theirs = await createOk(
      { deploy_source: 'upload', repo_url: undefined, env_vars: { SECRET: 's' } },
      other.key,
    );
  });

  it('answers 404 to GET', async () => {
    expectProblem(await call(projectUrl(theirs.id), { key: t.key }), 404, 'not_found');
  });

  it('answers 404 to PUT', async () => {
    expectProblem(
      await call(projectUrl(theirs.id), { method: 'PUT', key: t.key, body: { env_vars: { A: 'b' } } }),
      404,
      'not_found',
    );
  });

  it('answers 404 to PUT build-config', async () => {
    expectProblem(
      await call(projectUrl(theirs.id, '/build-config'), { method: 'PUT', key: t.key, body: {} }),
      404,
      'not_found',
    );
  });

  it('answers 404 to an upload', async () => {
    expectProblem(
      await call(projectUrl(theirs.id, '/upload'), {
        key: t.key,
        body: nodeAppTarball(),
        headers: { 'content-type': 'application/gzip' },
      }),
      404,
      'not_found',
    );
  });

  it('answers 404 to DELETE', async () => {
    expectProblem(await call(projectUrl(theirs.id), { method: 'DELETE', key: t.key }), 404, 'not_found');
  });

  it('does not show it in the list', async () => {
    const res = await call(`${t.api}/projects`, { key: t.key });
    expect(res.status).toBe(200);
    expect((res.body as Project[]).map((p) => p.id)).not.toContain(theirs.id);
  });

  it('left the project untouched for its owner', async () => {
    const res = await call(projectUrl(theirs.id), { key: other.key });
    expect(res.status).toBe(200);
    const detail = ProjectDetail.parse(res.body);
    expect(detail.project).toEqual(theirs);
    const list = (await call(`${t.api}/projects`, { key: other.key })).body as Project[];
    expect(list.map((p) => p.id)).toContain(theirs.id);
  });
});

describe('authentication of the project endpoints', () => {
  it('answers 401 unauthorized without a key', async () => {
    expectProblem(await call(`${t.api}/projects`), 401, 'unauthorized');
    expectProblem(await call(`${t.api}/projects`, { body: { name: 'x' } }), 401, 'unauthorized');
  });

  it('answers 403 forbidden to a key with only the email scope', async () => {
    const emailOnly = await t.newAccount({ scopes: ['email'] });
    expectProblem(await call(`${t.api}/projects`, { key: emailOnly.key }), 403, 'forbidden');
  });

  it('lets a deploy-scoped key create and read projects', async () => {
    const deployer = await t.newAccount({ scopes: ['deploy'] });
    const project = await createOk({}, deployer.key);
    expect((await call(projectUrl(project.id), { key: deployer.key })).status).toBe(200);
  });
});
