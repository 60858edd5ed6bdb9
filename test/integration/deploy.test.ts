// Deploys end to end: real platform, real runtime, real edge, fixture apps the tests create. This file:
// the sources (git over file://, the git host, uploads, images), detection, services and env, failed
// deploys, and the sandbox runtime.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectDetail } from '../../src/shared/api/projects.js';
import { type TestPlatform, call, expectProblem, startPlatform } from '../helpers/platform.js';
import {
  type Files,
  archiveOf,
  createProject,
  deploy,
  deployFiles,
  gitRepo,
  nodeApp,
  settled,
  startedPorts,
  upload,
  viaEdge,
  waitFor,
  waitForLog,
} from '../helpers/deploy.js';

let tp: TestPlatform;
let repos: string;

beforeAll(async () => {
  repos = mkdtempSync(join(tmpdir(), 'wharf-repos-'));
  tp = await startPlatform({ healthTimeoutMs: 15_000, workerGraceMs: 500, gitHostUrl: `file://${repos}` });
});

afterAll(async () => {
  await tp?.close();
  rmSync(repos, { recursive: true, force: true });
});

const onPath = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
const text = (logs: Array<{ line: string }>) => logs.map((l) => l.line).join('\n');

describe('deploy from git', () => {
  it('clones a file:// repository, detects Node, runs it and serves it at its host', async () => {
    const url = gitRepo(repos, 'git-app', nodeApp('hello from git'));
    const project = await createProject(tp, { name: 'Git app', subdomain: 'git-app', repo_url: url });
    const accepted = await deploy(tp, project.id);
    expect(accepted.status).toBe('building');
    const { project: running, logs } = await waitFor(tp, project.id, settled);
    expect(running.status, logs.map((l) => l.line).join('\n')).toBe('running');
    expect(running.last_deploy_error).toBeNull();
    const lines = logs.map((l) => l.line);
    expect(lines).toContain(`cloning ${url} (branch main)`);
    expect(lines).toContainEqual(expect.stringMatching(/^detected Node\.js: package\.json found/));
    expect(lines).toContainEqual(expect.stringMatching(/^running at http:\/\/git-app\.localhost:\d+ /));
    const [port] = startedPorts(lines);
    // The app's own output comes through its pipe: it may be stored a moment after the health check.
    await waitForLog(tp, project.id, new RegExp(`^listening on ${port}$`));
    const answer = await viaEdge(tp.edgePort, 'git-app.localhost', '/x');
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('hello from git /x');
  });

  it('resolves git_host_repo "owner/repo" against the git host, finding owner/repo.git', async () => {
    gitRepo(join(repos, 'acme'), 'shop', nodeApp('hello from the git host'));
    expect(existsSync(join(repos, 'acme', 'shop.git', 'HEAD'))).toBe(true);
    expect(existsSync(join(repos, 'acme', 'shop'))).toBe(false);
    const project = await createProject(tp, {
      name: 'Host',
      subdomain: 'host-app',
      git_host_repo: 'acme/shop',
    });
    await deploy(tp, project.id);
    const { project: done, logs } = await waitFor(tp, project.id, settled);
    expect(done.status, text(logs)).toBe('running');
    expect(text(logs)).toContain(`cloning file://${repos}/acme/shop (branch main)`);
    expect((await viaEdge(tp.edgePort, 'host-app.localhost', '/')).body).toBe('hello from the git host /');
  });

  it('deploys the branch it is given', async () => {
    const url = gitRepo(repos, 'branches', nodeApp('on main'));
    gitRepo(repos, 'branches', nodeApp('on feature/x'), 'feature/x');
    const project = await createProject(tp, {
      name: 'Branches',
      subdomain: 'branch-app',
      repo_url: url,
      branch: 'feature/x',
    });
    await deploy(tp, project.id);
    const { project: done, logs } = await waitFor(tp, project.id, settled);
    expect(done.status, text(logs)).toBe('running');
    expect((await viaEdge(tp.edgePort, 'branch-app.localhost', '/b')).body).toBe('on feature/x /b');
  });

  it('a missing branch fails with git’s message in the logs and in last_deploy_error', async () => {
    const url = gitRepo(repos, 'nobranch', nodeApp());
    const project = await createProject(tp, {
      name: 'No branch',
      subdomain: 'no-branch',
      repo_url: url,
      branch: 'nope',
    });
    await deploy(tp, project.id);
    const { project: done, logs } = await waitFor(tp, project.id, settled);
    expect(done.status).toBe('failed');
    expect(logs.map((l) => l.line)).toContainEqual(expect.stringMatching(/Remote branch nope not found/));
    expect(done.last_deploy_error).toMatch(
      /^git clone of file:\/\/.*nobranch\.git \(branch nope\) failed: .*Remote branch nope not found/,
    );
    expect(logs.at(-1)?.line).toBe(`deploy failed: ${done.last_deploy_error}`);
    expect(existsSync(join(tp.dataDir, 'apps', project.id))).toBe(true);
    // The failed release's folder is gone.
    expect(readdirSync(join(tp.dataDir, 'apps', project.id)).filter((f) => f.startsWith('rel_'))).toEqual([]);
    const page = await viaEdge(tp.edgePort, 'no-branch.localhost');
    expect(page.status).toBe(502);
    // The public page says nothing of why: the owner reads that in Wharf.
    expect(page.body).toContain('This app is not running.');
    expect(page.body).not.toContain('Remote branch nope not found');
  });

  it("refuses a file:// repository in the platform's data folder, where every project's sources live", async () => {
    const before = await call<unknown[]>(`${tp.api}/projects`, { key: tp.key });
    for (const inside of [
      tp.dataDir,
      join(tp.dataDir, 'ai-repos', 'prj_someoneelse'),
      join(tp.dataDir, 'uploads', '..', 'apps'),
    ]) {
      const result = await call(`${tp.api}/projects`, {
        key: tp.key,
        body: { name: 'Peek', subdomain: 'peek', repo_url: `file://${inside}` },
      });
      expect(expectProblem(result, 422, 'validation_failed').errors).toEqual([
        {
          path: 'repo_url',
          message: expect.stringContaining("must not point into the platform's data folder"),
        },
      ]);
    }
    const after = await call<unknown[]>(`${tp.api}/projects`, { key: tp.key });
    expect(after.body).toHaveLength(before.body.length);

    // A project that names one anyway (stored before this rule, say) fails its deploy without cloning.
    const project = await createProject(tp, {
      name: 'Sneak',
      subdomain: 'sneak',
      repo_url: `file://${repos}/acme/shop`,
    });
    await tp.platform.db
      .updateTable('projects')
      .set({ repo_url: `file://${join(tp.dataDir, 'ai-repos', 'prj_someoneelse')}` })
      .where('id', '=', project.id)
      .execute();
    await deploy(tp, project.id);
    const { project: done, logs } = await waitFor(tp, project.id, settled);
    expect(done.status).toBe('failed');
    expect(done.last_deploy_error).toContain("must not point into the platform's data folder");
    expect(logs.map((l) => l.line)).not.toContainEqual(expect.stringMatching(/^cloning /));
  });

  it('a repository that does not exist fails without prompting for credentials', async () => {
    const project = await createProject(tp, {
      name: 'Gone',
      subdomain: 'gone-repo',
      repo_url: `file://${repos}/does-not-exist.git`,
    });
    await deploy(tp, project.id);
    const { project: done } = await waitFor(tp, project.id, settled);
    expect(done.status).toBe('failed');
    expect(done.last_deploy_error).toMatch(
      /does not appear to be a git repository|not found|does not exist/i,
    );
  });
});

describe('deploy from an upload', () => {
  it('answers 409 upload_required before the first upload, and stays created', async () => {
    const project = await createProject(tp, { name: 'Up', subdomain: 'up-early', deploy_source: 'upload' });
    const result = await call(`${tp.api}/projects/${project.id}/deploy`, { key: tp.key, method: 'POST' });
    const problem = expectProblem(result, 409, 'upload_required');
    expect(problem.detail).toContain(`/projects/${project.id}/upload`);
    const after = await call(`${tp.api}/projects/${project.id}`, { key: tp.key });
    expect(after.body.project.status).toBe('created');
    expect(after.body.project.last_deploy_at).toBeNull();
  });

  it('runs an archive with the files at its root', async () => {
    const project = await createProject(tp, { name: 'Up', subdomain: 'up-flat', deploy_source: 'upload' });
    const { logs } = await deployFiles(tp, project.id, nodeApp('hello from an upload'));
    expect(text(logs)).toContain('extracted the upload: 2 entries at the top level');
    expect((await viaEdge(tp.edgePort, 'up-flat.localhost', '/u')).body).toBe('hello from an upload /u');
  });

  it('runs an archive holding one top-level folder from inside it', async () => {
    const project = await createProject(tp, { name: 'Up', subdomain: 'up-folder', deploy_source: 'upload' });
    const inFolder = Object.fromEntries(
      Object.entries(nodeApp('hello from a folder')).map(([path, content]) => [`my-app/${path}`, content]),
    );
    const { logs } = await deployFiles(tp, project.id, inFolder);
    expect(text(logs)).toContain('extracted the upload from its folder my-app/: 2 entries at the top level');
    expect((await viaEdge(tp.edgePort, 'up-folder.localhost', '/f')).body).toBe('hello from a folder /f');
  });
});

describe('detection and static sites', () => {
  it('serves a static site with content types, an SPA fallback and 404s for missing files', async () => {
    const project = await createProject(tp, { name: 'Site', subdomain: 'site', deploy_source: 'upload' });
    const { logs } = await deployFiles(tp, project.id, {
      'index.html': '<!doctype html><h1>the site</h1>',
      'style.css': 'h1 { color: teal }',
      'about/index.html': '<h1>about</h1>',
    });
    expect(text(logs)).toContain(
      'detected static site: index.html found, served by the built-in static server',
    );
    expect(text(logs)).toContain('serving ./ as a static site');
    expect(logs.some((l) => /^starting /.test(l.line))).toBe(false);

    const home = await viaEdge(tp.edgePort, 'site.localhost', '/');
    expect(home.status).toBe(200);
    expect(home.headers['content-type']).toMatch(/^text\/html/);
    expect(home.body).toBe('<!doctype html><h1>the site</h1>');
    const css = await viaEdge(tp.edgePort, 'site.localhost', '/style.css');
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    expect(css.body).toBe('h1 { color: teal }');
    const about = await viaEdge(tp.edgePort, 'site.localhost', '/about/');
    expect(about.body).toBe('<h1>about</h1>');
    const spa = await viaEdge(tp.edgePort, 'site.localhost', '/some/route');
    expect(spa.status).toBe(200);
    expect(spa.headers['content-type']).toMatch(/^text\/html/);
    expect(spa.body).toBe('<!doctype html><h1>the site</h1>');
    const missing = await viaEdge(tp.edgePort, 'site.localhost', '/missing.css');
    expect(missing.status).toBe(404);
    expect(missing.body).not.toContain('the site');
    const head = await viaEdge(tp.edgePort, 'site.localhost', '/style.css', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    const post = await viaEdge(tp.edgePort, 'site.localhost', '/', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  });

  it('serves a Node project whose build writes dist/index.html and that has no start script', async () => {
    const project = await createProject(tp, { name: 'Built', subdomain: 'built', deploy_source: 'upload' });
    const { logs } = await deployFiles(tp, project.id, {
      'package.json': JSON.stringify({ name: 'built', private: true, scripts: { build: 'node build.js' } }),
      'build.js': `
const fs = require('node:fs');
fs.mkdirSync('dist', { recursive: true });
fs.writeFileSync('dist/index.html', '<h1>built at ' + (process.env.CI ? 'ci' : 'home') + '</h1>');
console.log('wrote dist/index.html');
`,
    });
    const lines = logs.map((l) => l.line);
    expect(lines).toContain('$ npm run build');
    expect(lines).toContain('wrote dist/index.html');
    expect(lines).toContain('detected static site: the build wrote dist/index.html');
    expect(lines).toContain('serving dist/ as a static site');
    const page = await viaEdge(tp.edgePort, 'built.localhost', '/');
    expect(page.status).toBe(200);
    expect(page.body).toBe('<h1>built at ci</h1>');
  });

  it("runs a Procfile's worker process beside its web process, and a worker-only Procfile alone", async () => {
    const both = await createProject(tp, { name: 'Proc', subdomain: 'proc-both', deploy_source: 'upload' });
    const files = nodeApp('hello from the web process', {
      'tick.js': `console.log('worker ticking with PORT=' + process.env.PORT); setInterval(() => {}, 1000);`,
    });
    const { logs } = await deployFiles(tp, both.id, {
      ...files,
      Procfile: 'web: node server.js\nworker: node tick.js\n',
    });
    expect(text(logs)).toContain('detected Procfile: web and worker process found');
    expect(logs.find((l) => l.line.startsWith('worker ticking'))).toMatchObject({ service: 'worker' });
    expect((await viaEdge(tp.edgePort, 'proc-both.localhost', '/p')).body).toBe(
      'hello from the web process /p',
    );

    const alone = await createProject(tp, { name: 'Jobs', subdomain: 'proc-jobs', deploy_source: 'upload' });
    const { logs: workerLogs } = await deployFiles(tp, alone.id, {
      'tick.js': `console.log('only a worker here'); setInterval(() => {}, 1000);`,
      Procfile: 'worker: node tick.js\n',
    });
    expect(text(workerLogs)).toContain('only a worker here');
  });

  it('fails clearly when nothing says how to start the app', async () => {
    const project = await createProject(tp, {
      name: 'Nothing',
      subdomain: 'nothing',
      deploy_source: 'upload',
    });
    await upload(tp, project.id, archiveOf({ 'README.md': '# nothing to run' }));
    await deploy(tp, project.id);
    const { project: done } = await waitFor(tp, project.id, settled);
    expect(done.status).toBe('failed');
    expect(done.last_deploy_error).toMatch(/^no start command: set start_cmd in the build config/);
  });

  it.skipIf(!onPath('python3'))(
    'runs a Python app from requirements.txt and app.py in a virtualenv',
    async () => {
      const project = await createProject(tp, { name: 'Py', subdomain: 'py-app', deploy_source: 'upload' });
      const { logs } = await deployFiles(tp, project.id, {
        'requirements.txt': '',
        'app.py': `
import os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello from python " + self.path + " in " + sys.prefix).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

print("python listening", flush=True)
HTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
`,
      });
      const lines = logs.map((l) => l.line);
      expect(lines).toContain(
        'detected Python: requirements.txt found; installing into a virtualenv (.venv)',
      );
      expect(lines).toContain('$ python3 -m venv .venv && .venv/bin/pip install -r requirements.txt');
      const answer = await viaEdge(tp.edgePort, 'py-app.localhost', '/py');
      expect(answer.status).toBe(200);
      // The app runs with the virtualenv's python.
      expect(answer.body).toMatch(/^hello from python \/py in .*\/rel_[^/]+\/\.venv$/);
    },
    60_000,
  );
});

/** A service of the two-service fixture: answers its name, its env and its port. */
const serviceServer = (name: string) => `
const http = require('node:http');
http.createServer((req, res) => {
  if (req.url === '/env') return res.end(JSON.stringify(process.env));
  res.end('${name} service ' + req.url);
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('${name} listening on ' + process.env.PORT));
`;

describe('services', () => {
  const leaked = 'WHARF_TEST_PLATFORM_ONLY';

  it('runs web, api and a worker, each at its host with its own env; platform env stays out', async () => {
    process.env[leaked] = 'the platform’s secret';
    process.env.WHARF_SECRET ??= 'platform-secret-for-the-test';
    const project = await createProject(tp, {
      name: 'Two services',
      subdomain: 'duo',
      deploy_source: 'upload',
      env_vars: { SHARED: 'for everyone', ROLE: 'project default', PORT: '1' },
      build_config: {
        services: [
          {
            name: 'web',
            root_dir: 'web',
            start_cmd: 'node server.js',
            env_overrides: { ROLE: 'web role', WEB_ONLY: 'w' },
          },
          {
            name: 'api',
            root_dir: 'api',
            start_cmd: 'node server.js',
            env_overrides: { ROLE: 'api role', API_ONLY: 'a' },
          },
          {
            name: 'jobs',
            kind: 'worker',
            root_dir: 'jobs',
            start_cmd: 'node worker.js',
            env_overrides: { ROLE: 'worker role' },
          },
        ],
      },
    });
    expect(project.service_urls).toEqual({
      web: `http://duo-web.localhost:${tp.edgePort}`,
      api: `http://duo-api.localhost:${tp.edgePort}`,
    });
    try {
      const { logs } = await deployFiles(tp, project.id, {
        'web/server.js': serviceServer('web'),
        'api/server.js': serviceServer('api'),
        'jobs/worker.js': `
console.log('worker started: ROLE=' + process.env.ROLE + ' SHARED=' + process.env.SHARED + ' WEB_ONLY=' + process.env.WEB_ONLY);
setInterval(() => {}, 1000);
`,
      });
      const lines = logs.map((l) => l.line);
      // No app of its own in the root folder: the web service answers at the subdomain, as before.
      expect(lines).toContain(
        'no app to serve in the root folder (no start_cmd, none detected): duo is served by the service web',
      );
      expect(lines).toContain('jobs is up (a worker, alive after 0.5 s)');
      expect(lines).toContain('starting jobs: node worker.js');
      // The worker's own output is copied into the log as it comes: it may land after the deploy settled.
      expect(await waitForLog(tp, project.id, /^worker started/)).toBe(
        'worker started: ROLE=worker role SHARED=for everyone WEB_ONLY=undefined',
      );
      const output = await call<ProjectDetail>(`${tp.api}/projects/${project.id}`, { key: tp.key });
      expect(output.body.logs.find((l) => l.line.startsWith('worker started'))).toMatchObject({
        stream: 'runtime',
        service: 'jobs',
      });

      for (const [host, want] of [
        ['duo.localhost', 'web service /'],
        ['duo-web.localhost', 'web service /'],
        ['duo-api.localhost', 'api service /'],
      ]) {
        const answer = await viaEdge(tp.edgePort, host!, '/');
        expect(answer.status, host).toBe(200);
        expect(answer.body, host).toBe(want);
      }
      const worker = await viaEdge(tp.edgePort, 'duo-jobs.localhost', '/');
      expect(worker.status).toBe(404);
      expect(worker.headers['x-wharf-edge']).toBe('No such service');

      const webEnv = JSON.parse((await viaEdge(tp.edgePort, 'duo-web.localhost', '/env')).body) as Record<
        string,
        string
      >;
      const apiEnv = JSON.parse((await viaEdge(tp.edgePort, 'duo-api.localhost', '/env')).body) as Record<
        string,
        string
      >;
      expect(webEnv).toMatchObject({ SHARED: 'for everyone', ROLE: 'web role', WEB_ONLY: 'w' });
      expect(apiEnv).toMatchObject({ SHARED: 'for everyone', ROLE: 'api role', API_ONLY: 'a' });
      expect(webEnv.API_ONLY).toBeUndefined();
      expect(apiEnv.WEB_ONLY).toBeUndefined();
      // PORT is the runtime's, not the project's "1", and it is the port each service listens on.
      const ports = startedPorts(lines);
      expect(ports).toHaveLength(2);
      expect(ports).toContain(Number(webEnv.PORT));
      expect(ports).toContain(Number(apiEnv.PORT));
      expect(webEnv.PORT).not.toBe(apiEnv.PORT);
      expect(lines).toContain(`web listening on ${webEnv.PORT}`);
      for (const env of [webEnv, apiEnv]) {
        expect(env[leaked]).toBeUndefined();
        expect(env.WHARF_SECRET).toBeUndefined();
        expect(env.VITEST).toBeUndefined();
        expect(Object.keys(env).filter((k) => k.startsWith('WHARF_'))).toEqual([]);
      }
    } finally {
      delete process.env[leaked];
    }
  });

  it('detects the primary app in root_dir (with its Procfile worker) beside a service', async () => {
    // The service's root_dir "api" names no folder of the repository, only one inside root_dir (how
    // configs were read before): it is taken there, and the log says so.
    const project = await createProject(tp, {
      name: 'Detected primary',
      subdomain: 'prime',
      deploy_source: 'upload',
      build_config: {
        root_dir: 'app',
        services: [{ name: 'api', root_dir: 'api', start_cmd: 'node server.js' }],
      },
    });
    const { logs } = await deployFiles(tp, project.id, {
      'README.md': 'a repository with its app in app/\n',
      ...Object.fromEntries(Object.entries(nodeApp('primary')).map(([k, v]) => [`app/${k}`, v])),
      'app/Procfile': `web: node server.js\nworker: node -e "console.log('primary worker up'); setInterval(() => {}, 1000)"\n`,
      'app/api/server.js': serviceServer('api'),
    });
    expect(logs.map((l) => l.line)).toContain(
      'services.api.root_dir "api" is not a folder of the repository; using app/api (inside root_dir) instead',
    );
    expect((await viaEdge(tp.edgePort, 'prime.localhost', '/')).body).toBe('primary /');
    expect((await viaEdge(tp.edgePort, 'prime-api.localhost', '/')).body).toBe('api service /');
    await waitForLog(tp, project.id, /^primary worker up$/);
  });

  it('without an app in root_dir, the web service answers at the subdomain on port_override', async () => {
    const port = 62_347; // above the ephemeral range: no connection of another test holds it
    const project = await createProject(tp, {
      name: 'Fallback',
      subdomain: 'fallback',
      deploy_source: 'upload',
      build_config: {
        port_override: port,
        services: [
          { name: 'api', root_dir: 'api', start_cmd: 'node server.js' },
          { name: 'web', root_dir: 'web', start_cmd: 'node server.js' },
        ],
      },
    });
    // A build in the root folder that writes no site: nothing to serve there.
    const { logs } = await deployFiles(tp, project.id, {
      'package.json': JSON.stringify({ name: 'monorepo', private: true, scripts: { build: 'echo built' } }),
      'api/server.js': serviceServer('api'),
      'web/server.js': serviceServer('web'),
    });
    expect(logs.map((l) => l.line).filter((l) => l.startsWith('no app to serve'))).toEqual([
      `no app to serve in the root folder (no start_cmd, none detected): fallback is served by the service web, on port_override ${port}`,
    ]);
    expect((await viaEdge(tp.edgePort, 'fallback.localhost', '/')).body).toBe('web service /');
    const env = JSON.parse((await viaEdge(tp.edgePort, 'fallback-web.localhost', '/env')).body) as {
      PORT: string;
    };
    expect(env.PORT).toBe(String(port));
    expect((await viaEdge(tp.edgePort, 'fallback-api.localhost', '/')).body).toBe('api service /');
  });
});

describe('failed deploys', () => {
  it('a failing build fails the deploy with its output and "build failed"', async () => {
    const project = await createProject(tp, {
      name: 'Bad build',
      subdomain: 'bad-build',
      deploy_source: 'upload',
    });
    await upload(
      tp,
      project.id,
      archiveOf(
        nodeApp('never', {
          'package.json': JSON.stringify({
            name: 'bad',
            private: true,
            scripts: {
              build: 'echo compiling the thing && echo the compiler broke >&2 && exit 3',
              start: 'node server.js',
            },
          }),
        }),
      ),
    );
    await deploy(tp, project.id);
    const { project: done, logs } = await waitFor(tp, project.id, settled);
    expect(done.status).toBe('failed');
    const lines = logs.map((l) => l.line);
    expect(lines).toContain('compiling the thing');
    expect(lines).toContain('the compiler broke');
    expect(done.last_deploy_error).toMatch(/^build failed: `npm run build` exited with code \d+$/);
    expect(lines).toContain(`deploy failed: ${done.last_deploy_error}`);
    expect(lines.some((l) => l.startsWith('starting '))).toBe(false);
    expect((await viaEdge(tp.edgePort, 'bad-build.localhost')).status).toBe(502);

    // Fixed and deployed again, from failed: it runs and the error is gone.
    const { project: fixed } = await deployFiles(tp, project.id, nodeApp('fixed'));
    expect(fixed.last_deploy_error).toBeNull();
    expect((await viaEdge(tp.edgePort, 'bad-build.localhost', '/')).body).toBe('fixed /');
  });

  it('a start command that exits fails the deploy, its output in the logs', async () => {
    const project = await createProject(tp, {
      name: 'Boom',
      subdomain: 'boom',
      deploy_source: 'upload',
      build_config: { start_cmd: `node -e "console.error('boom'); process.exit(1)"` },
    });
    await upload(tp, project.id, archiveOf({ 'package.json': '{"name":"boom"}' }));
    await deploy(tp, project.id);
    const { project: done, logs } = await waitFor(tp, project.id, settled);
    expect(done.status).toBe('failed');
    expect(done.last_deploy_error).toMatch(/^the app exited \(code 1\) before it listened on port \d+$/);
    expect(logs.find((l) => l.line === 'boom')).toMatchObject({ stream: 'runtime', service: null });
  });

  it('an image source without a container engine fails with one clear line', async () => {
    // An engine may answer on this machine: point the platform at a socket nothing listens on.
    const before = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = `unix://${join(tp.dataDir, 'no-engine.sock')}`;
    try {
      const project = await createProject(tp, { name: 'Image', subdomain: 'img', image: 'nginx:1.27' });
      await deploy(tp, project.id);
      const { project: done, logs } = await waitFor(tp, project.id, settled);
      expect(done.status).toBe('failed');
      const said = logs.filter((l) => /no container engine answers/.test(l.line));
      expect(said).toHaveLength(1);
      expect(said[0]!.line).toMatch(
        /^deploy failed: no container engine answers at DOCKER_HOST=unix:\/\/.*no-engine\.sock \(.+\): image sources need a Docker-compatible engine$/,
      );
      expect(done.last_deploy_error).toMatch(
        /^no container engine answers at DOCKER_HOST=.*image sources need/,
      );
    } finally {
      if (before === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = before;
    }
  });
});

describe('health timeout', () => {
  let quick: TestPlatform;
  beforeAll(async () => {
    quick = await startPlatform({ healthTimeoutMs: 2_000 });
  });
  afterAll(async () => {
    await quick?.close();
  });

  it('an app that never listens fails after healthTimeoutMs and is stopped', async () => {
    const marker = `mute-${Date.now()}`;
    const project = await createProject(quick, {
      name: 'Mute',
      subdomain: 'mute',
      deploy_source: 'upload',
      // A marker in its command line finds the app among the machine's processes, whatever pid
      // namespace the runtime gave it.
      build_config: { start_cmd: `node mute.js ${marker}` },
    });
    await upload(
      quick,
      project.id,
      archiveOf({ 'mute.js': `console.log('mute started'); setInterval(() => {}, 1000);` }),
    );
    const started = Date.now();
    await deploy(quick, project.id);
    const { project: done, logs } = await waitFor(quick, project.id, settled);
    const took = Date.now() - started;
    expect(done.status).toBe('failed');
    expect(done.last_deploy_error).toMatch(/^nothing listened on port \d+ within 2 s$/);
    expect(took).toBeGreaterThanOrEqual(1_900);
    expect(took).toBeLessThan(10_000);
    expect(logs.map((l) => l.line)).toContain('mute started');
    expect(processesWith(marker)).toEqual([]);
  });
});

/** The live processes whose command line holds `marker`. */
function processesWith(marker: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker) && alive(Number(pid));
      } catch {
        return false;
      }
    })
    .map(Number);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A zombie still answers kill(0): look at its state.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

describe.skipIf(!onPath('bwrap'))('the sandbox runtime', () => {
  let sandboxed: TestPlatform;
  let outside: string;

  beforeAll(async () => {
    sandboxed = await startPlatform({ runtime: 'sandbox', healthTimeoutMs: 15_000 });
    // Outside both the platform and /tmp (which the sandbox replaces), so a failed write means read-only.
    const base = existsSync('/var/tmp') ? '/var/tmp' : tmpdir();
    outside = mkdtempSync(join(base, 'wharf-outside-'));
  });
  afterAll(async () => {
    await sandboxed?.close();
    if (outside) rmSync(outside, { recursive: true, force: true });
  });

  const probeApp: Files = nodeApp('sandboxed', {
    'server.js': `
const fs = require('node:fs');
const http = require('node:http');
const attempt = (fn) => { try { return String(fn()); } catch (e) { return 'error ' + e.code; } };
http.createServer((req, res) => {
  if (req.url !== '/probe') return res.end('sandboxed ' + req.url);
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({
    writeOutside: attempt(() => fs.writeFileSync(process.env.OUTSIDE_FILE, 'escaped')),
    readDb: attempt(() => fs.readFileSync(process.env.PLATFORM_DB).length),
    dataDir: attempt(() => fs.readdirSync(process.env.DATA_DIR).join(',')),
    writeTmp: attempt(() => fs.writeFileSync('/tmp/' + process.env.TMP_NAME, 'private')),
    readTmp: attempt(() => fs.readFileSync('/tmp/' + process.env.TMP_NAME, 'utf8')),
    writeHere: attempt(() => fs.writeFileSync('written-here.txt', 'ok')),
    pid: process.pid,
  }));
}).listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
`,
  });

  it('deploys a Node app that cannot write outside its workspace nor see the platform’s data', async () => {
    const tmpName = `wharf-sandbox-${Date.now()}`;
    const project = await createProject(sandboxed, {
      name: 'Boxed',
      subdomain: 'boxed',
      deploy_source: 'upload',
      env_vars: {
        OUTSIDE_FILE: join(outside, 'escaped.txt'),
        PLATFORM_DB: join(sandboxed.dataDir, 'platform.db'),
        DATA_DIR: sandboxed.dataDir,
        TMP_NAME: tmpName,
      },
    });
    await deployFiles(sandboxed, project.id, probeApp);
    const answer = await viaEdge(sandboxed.edgePort, 'boxed.localhost', '/probe');
    expect(answer.status, answer.body).toBe(200);
    const probe = JSON.parse(answer.body) as Record<string, string>;
    expect(probe.writeOutside).toMatch(/^error E(ROFS|ACCES|PERM)$/);
    expect(existsSync(join(outside, 'escaped.txt'))).toBe(false);
    expect(probe.readDb).toMatch(/^error ENOENT$/);
    // Only the apps folder (for the workspace) shows through the hidden data dir.
    expect(probe.dataDir).toBe('apps');
    expect(probe.writeTmp).toBe('undefined');
    expect(probe.readTmp).toBe('private');
    expect(existsSync(join('/tmp', tmpName))).toBe(false);
    expect(probe.writeHere).toBe('undefined');
    // Its own pid namespace: the app is a low pid there.
    expect(Number(probe.pid)).toBeLessThan(100);
  });
});
