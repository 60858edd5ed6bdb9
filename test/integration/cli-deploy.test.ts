// The project commands of `wharf` (login, projects, deploy, logs, stop) as a user runs them: the built
// bin/wharf.js in a child process with its own WHARF_HOME, against a real platform with its runtime
// and edge.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Project } from '../../src/shared/api/projects.js';
import { archiveOf, createProject, nodeApp, upload, viaEdge, waitFor } from '../helpers/deploy.js';
import { type CliResult, assertBuilt, runWharf, wharfBin, wharfEnv } from '../helpers/cli.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';

const dirs: string[] = [];
const children: ChildProcess[] = [];

let t: TestPlatform;
/** The WHARF_HOME whose local platform `t` is: its data dir is `<localHome>/platform`. */
let localHome: string;
let origin: string;
let apiPort: number;

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wharf-cli-deploy-'));
  dirs.push(dir);
  return dir;
}

beforeAll(async () => {
  assertBuilt();
  localHome = tempDir();
  t = await startPlatform({ dataDir: join(localHome, 'platform'), healthTimeoutMs: 10_000 });
  origin = new URL(t.api).origin;
  apiPort = Number(new URL(t.api).port);
});

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

afterAll(async () => {
  await t?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** `wharf <args>` in a home of its own (a fresh one unless given). */
function run(
  args: string[],
  options: { home?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CliResult> {
  return runWharf(args, { ...options, home: options.home ?? tempDir() });
}

/** Runs a command against the test platform with --platform and --api-key. */
function wharf(args: string[], key: string = t.key, timeoutMs?: number): Promise<CliResult> {
  return run([...args, '--platform', origin, '--api-key', key], timeoutMs ? { timeoutMs } : {});
}

let labels = 0;
function label(prefix: string): string {
  labels += 1;
  return `${prefix}-${labels}`;
}

/** An upload project whose archive holds `files`, ready to deploy. */
async function uploadProject(name: string, files: Record<string, string>): Promise<Project> {
  const project = await createProject(t, { name, subdomain: label('cli'), deploy_source: 'upload' });
  await upload(t, project.id, archiveOf(files));
  return project;
}

const failingApp = {
  'package.json': JSON.stringify({ name: 'x', scripts: { start: 'node server.js' } }),
  'server.js': "console.error('boom: DATABASE_URL is not set');\nprocess.exit(1);\n",
};

/** A port on 127.0.0.1 where nothing listens. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/** Starts a long-running command and lets the test read its output as it comes. */
function start(args: string[]) {
  const child = spawn(process.execPath, [wharfBin, ...args, '--platform', origin, '--api-key', t.key], {
    env: wharfEnv({ home: tempDir() }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((done) => child.on('close', done));
  return {
    child,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    async waitFor(predicate: (stdout: string) => boolean, timeoutMs = 10_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(stdout)) {
        if (Date.now() > deadline || child.exitCode !== null) {
          throw new Error(`output did not arrive; stdout:\n${stdout}\nstderr:\n${stderr}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

describe('wharf projects', () => {
  it('says there are none, and prints [] with --json, for an account without projects', async () => {
    const other = await t.newAccount();
    const table = await wharf(['projects'], other.key);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout.trim()).toBe('No projects yet.');
    const json = await wharf(['projects', '--json'], other.key);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([]);
  });

  it('prints a table of name, subdomain, status and URL, and the API objects with --json', async () => {
    const other = await t.newAccount();
    const headers = { key: other.key };
    const first = await call<Project>(`${t.api}/projects`, {
      ...headers,
      body: { name: 'Shop front', subdomain: label('shop'), image: 'nginx' },
    });
    const second = await call<Project>(`${t.api}/projects`, {
      ...headers,
      body: { name: 'Api', subdomain: label('api'), deploy_source: 'upload' },
    });
    const result = await wharf(['projects'], other.key);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^NAME\s+SUBDOMAIN\s+STATUS\s+URL$/);
    // Newest first, columns aligned under the header.
    expect(lines[1]).toMatch(
      new RegExp(`^Api\\s+${second.body.subdomain}\\s+created\\s+${second.body.url}$`),
    );
    expect(lines[2]).toMatch(
      new RegExp(`^Shop front\\s+${first.body.subdomain}\\s+created\\s+${first.body.url}$`),
    );
    expect(lines[1]!.indexOf(second.body.subdomain)).toBe(lines[0]!.indexOf('SUBDOMAIN'));
    expect(lines[2]!.indexOf('created')).toBe(lines[0]!.indexOf('STATUS'));

    const json = await wharf(['projects', '--json'], other.key);
    const projects = JSON.parse(json.stdout) as Project[];
    expect(projects.map((p) => p.id)).toEqual([second.body.id, first.body.id]);
    expect(projects[0]).toMatchObject({ status: 'created', url: second.body.url, last_deploy_error: null });
  });

  it('uses the local platform of WHARF_HOME (WHARF_PORT) with its local account key, without flags', async () => {
    const project = await createProject(t, { name: 'Local one', subdomain: label('local'), image: 'nginx' });
    const result = await run(['projects'], { home: localHome, env: { WHARF_PORT: String(apiPort) } });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(project.subdomain);
  });

  it('fails with one line when no local platform is running, and never starts one', async () => {
    const port = await closedPort();
    for (const home of [tempDir(), localHome]) {
      const result = await run(['projects'], { home, env: { WHARF_PORT: String(port) } });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `wharf: no platform is running at http://127.0.0.1:${port}: start one with \`wharf platform\` (or open the app)\n`,
      );
    }
    const fresh = tempDir();
    await run(['projects'], { home: fresh, env: { WHARF_PORT: String(port) } });
    expect(existsSync(join(fresh, 'platform'))).toBe(false);
  });

  it('explains a refused key and a remote platform without a saved key', async () => {
    const refused = await wharf(['projects'], 'wk_' + 'x'.repeat(32));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `wharf: the platform at ${origin} refused the API key given with --api-key or WHARF_API_KEY (the API key is not valid)\n`,
    );
    const noKey = await run(['projects', '--platform', origin]);
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toContain(
      `no API key is saved for ${origin}: run \`wharf login --platform ${origin}`,
    );
  });
});

describe('wharf login', () => {
  it('checks the key, stores it 0600 and makes the platform the default for the next commands', async () => {
    const home = tempDir();
    const account = await t.newAccount({ email: `login-${Date.now()}@example.com` });
    const login = await run(['login', '--platform', `${origin}/some/path`, '--api-key', account.key], {
      home,
    });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toContain(`Logged in to ${origin} as login-`);
    expect(login.stdout).toContain(account.accountId);

    const secrets = join(home, 'secrets.json');
    expect(statSync(secrets).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(secrets, 'utf8'))).toEqual({ [`api-key:${origin}`]: account.key });
    expect(JSON.parse(readFileSync(join(home, 'settings.json'), 'utf8'))).toEqual({ platform: origin });

    const created = await call<Project>(`${t.api}/projects`, {
      key: account.key,
      body: { name: 'After login', subdomain: label('login'), image: 'nginx' },
    });
    const projects = await run(['projects'], { home });
    expect(projects.code, projects.stderr).toBe(0);
    expect(projects.stdout).toContain(created.body.subdomain);

    // Back to the local platform: the remote key stays saved for later.
    const local = await run(['login', '--platform', 'local'], {
      home,
      env: { WHARF_PORT: String(await closedPort()) },
    });
    expect(local.code, local.stderr).toBe(0);
    expect(local.stdout).toMatch(/^Using the local platform \(http:\/\/127\.0\.0\.1:\d+\) from now on\.\n/);
    expect(local.stdout).toContain('It is not running now');
    expect(JSON.parse(readFileSync(join(home, 'settings.json'), 'utf8'))).toEqual({ platform: 'local' });
    expect(JSON.parse(readFileSync(secrets, 'utf8'))).toHaveProperty([`api-key:${origin}`]);
  });

  it('refuses a key the platform does not know, and saves nothing', async () => {
    const home = tempDir();
    const result = await run(['login', '--platform', origin, '--api-key', 'wk_' + 'A'.repeat(32)], { home });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `wharf: the platform at ${origin} refused the API key: the API key is not valid\n`,
    );
    expect(existsSync(join(home, 'secrets.json'))).toBe(false);
    expect(existsSync(join(home, 'settings.json'))).toBe(false);
  });

  it('says so when nothing answers at the URL', async () => {
    const port = await closedPort();
    const result = await run(['login', '--platform', `http://127.0.0.1:${port}`, '--api-key', t.key]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `wharf: cannot reach the platform at http://127.0.0.1:${port}: nothing is listening there\n`,
    );
  });

  it('tells the user to log in again once the saved key is revoked', async () => {
    const home = tempDir();
    const created = await call<{ id: string; key: string }>(`${t.api}/keys`, {
      key: t.key,
      body: { scopes: ['deploy'], name: 'cli login test' },
    });
    expect((await run(['login', '--platform', origin, '--api-key', created.body.key], { home })).code).toBe(
      0,
    );
    await call(`${t.api}/keys/${created.body.id}`, { method: 'DELETE', key: t.key });
    const result = await run(['projects'], { home });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `wharf: the platform at ${origin} refused the saved API key (the API key has been revoked): run \`wharf login --platform ${origin} --api-key KEY\` with a valid one\n`,
    );
  });
});

describe('naming a project', () => {
  it('refuses an unknown name with the close matches, and a name two projects share', async () => {
    const other = await t.newAccount();
    const body = (subdomain: string) => ({ name: 'Twin', subdomain, image: 'nginx' });
    const a = await call<Project>(`${t.api}/projects`, { key: other.key, body: body(label('twin')) });
    const b = await call<Project>(`${t.api}/projects`, { key: other.key, body: body(label('twin')) });

    const unknown = await wharf(['stop', 'twim'], other.key);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(
      /^wharf: no project "twim"; did you mean twin-\d+ \("Twin"\), twin-\d+ \("Twin"\)\?\n$/,
    );

    const ambiguous = await wharf(['logs', 'Twin'], other.key);
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toContain(`"Twin" fits 2 projects:`);
    expect(ambiguous.stderr).toContain(a.body.id);
    expect(ambiguous.stderr).toContain(b.body.id);

    for (const name of [a.body.subdomain, a.body.id]) {
      const byName = await wharf(['logs', name], other.key);
      expect(byName.code, byName.stderr).toBe(0);
    }
    // Another account's project is unknown here, even by its id.
    const foreign = await wharf(['logs', a.body.id]);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain(`no project "${a.body.id}"`);
  });
});

describe('wharf deploy', () => {
  it('--follow prints the build and the app output, then the URL, and exits 0 once it runs', async () => {
    const project = await uploadProject('Follow me', nodeApp('hello from the cli'));
    const result = await wharf(['deploy', project.subdomain, '--follow'], t.key, 40_000);
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toContainEqual(expect.stringMatching(/^deploy rel_\w+ started/));
    expect(lines).toContainEqual(expect.stringMatching(/^listening on \d+$/));
    expect(lines.at(-1)).toBe(`Follow me is running at ${project.url}`);
    expect(result.stderr).toBe('');

    const answer = await viaEdge(t.edgePort, `${project.subdomain}.localhost`, '/x');
    expect(answer.body).toBe('hello from the cli /x');
  }, 45_000);

  it('prefixes the lines of a service and lists the service URLs', async () => {
    const project = await uploadProject('Services', nodeApp('hello from web'));
    const config = await call(`${t.api}/projects/${project.id}/build-config`, {
      method: 'PUT',
      key: t.key,
      body: { services: [{ name: 'web', start_cmd: 'node server.js' }] },
    });
    expect(config.status).toBe(200);
    const result = await wharf(['deploy', project.subdomain, '-f'], t.key, 40_000);
    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(result.stdout).toMatch(/^web \| listening on \d+$/m);
    const running = result.stdout.trimEnd().split('\n').slice(-2);
    expect(running[0]).toBe(`Services is running at ${project.url}`);
    expect(running[1]).toMatch(
      new RegExp(`^  web\\s+http://${project.subdomain}-web\\.localhost:${t.edgePort}$`),
    );
  }, 45_000);

  it('--follow exits 1 with the error when the app exits at start, also when a running version keeps serving', async () => {
    const project = await uploadProject('Broken', failingApp);
    const failed = await wharf(['deploy', project.subdomain, '--follow'], t.key, 40_000);
    expect(failed.code, failed.stdout).toBe(1);
    expect(failed.stdout).toContain('boom: DATABASE_URL is not set');
    expect(failed.stderr).toMatch(
      new RegExp(`^wharf: the deploy of ${project.subdomain} \\("Broken"\\) failed: .*exited \\(code 1\\)`),
    );
    expect(failed.stderr.trim().split('\n')).toHaveLength(1);

    // Fix it, deploy, then break it again: the redeploy fails while the good version keeps serving.
    await upload(t, project.id, archiveOf(nodeApp('good version')));
    expect((await wharf(['deploy', project.subdomain, '--follow'], t.key, 40_000)).code).toBe(0);
    await upload(t, project.id, archiveOf(failingApp));
    const redeploy = await wharf(['deploy', project.subdomain, '--follow'], t.key, 40_000);
    expect(redeploy.code, redeploy.stdout).toBe(1);
    expect(redeploy.stderr).toContain('the previous version keeps serving');
    const detail = await call<{ project: Project }>(`${t.api}/projects/${project.id}`, { key: t.key });
    expect(detail.body.project.status).toBe('running');
    expect((await viaEdge(t.edgePort, `${project.subdomain}.localhost`, '/')).body).toBe('good version /');

    const table = await wharf(['projects']);
    expect(table.stdout).toMatch(new RegExp(`${project.subdomain}\\s+running \\(last deploy failed\\)`));
  }, 90_000);

  it('Ctrl+C stops following, leaves the deploy running, and exits 130', async () => {
    const project = await uploadProject('Slow', nodeApp());
    const config = await call(`${t.api}/projects/${project.id}/build-config`, {
      method: 'PUT',
      key: t.key,
      body: { install_cmd: 'echo installing && sleep 2', start_cmd: 'node server.js' },
    });
    expect(config.status).toBe(200);
    const follow = start(['deploy', project.subdomain, '--follow']);
    await follow.waitFor((out) => out.includes('installing\n'));
    follow.child.kill('SIGINT');
    expect(await follow.exited).toBe(130);
    expect(follow.stderr()).toBe(
      `Stopped following; the deploy goes on (wharf logs ${project.subdomain} -f to follow it).\n`,
    );
    const { project: after } = await waitFor(t, project.id, (p) => p.status !== 'building');
    expect(after.status).toBe('running');
  }, 40_000);

  it('without --follow starts the deploy and says how to follow it', async () => {
    const project = await uploadProject('Quick', nodeApp());
    const result = await wharf(['deploy', 'Quick']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`Deploying Quick… (wharf logs ${project.subdomain} -f to follow)\n`);
    const { project: settledProject } = await waitFor(t, project.id, (p) => p.status !== 'building');
    expect(settledProject.status).toBe('running');
  }, 40_000);

  it("prints the platform's problem detail and exits 1 when there is nothing to deploy", async () => {
    const project = await createProject(t, {
      name: 'Empty',
      subdomain: label('empty'),
      deploy_source: 'upload',
    });
    const result = await wharf(['deploy', project.subdomain, '--follow']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `wharf: project Empty deploys from an upload and none was sent yet: POST the source archive to /projects/${project.id}/upload first\n`,
    );
  });
});

describe('wharf logs', () => {
  async function projectWithLines(): Promise<Project> {
    const project = await createProject(t, { name: 'Logged', subdomain: label('logged'), image: 'nginx' });
    await t.platform.logs.append(project.id, [
      { stream: 'build', service: null, line: 'npm ci' },
      { stream: 'build', service: 'api', line: 'added 12 packages' },
      { stream: 'runtime', service: 'web', line: 'listening on 3000' },
      { stream: 'system', service: null, line: 'running' },
    ]);
    return project;
  }

  it('says so for a project without lines, on stderr, and exits 0', async () => {
    const project = await createProject(t, { name: 'Quiet', subdomain: label('quiet'), image: 'nginx' });
    const result = await wharf(['logs', project.subdomain]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('Quiet has no log lines yet.\n');
  });

  it('prints time, stream, service and line, oldest first, and filters by service, stream and count', async () => {
    const project = await projectWithLines();
    const all = await wharf(['logs', project.subdomain]);
    expect(all.code, all.stderr).toBe(0);
    const time = String.raw`\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}`;
    expect(all.stdout.trimEnd().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^${time} build   \\| npm ci$`)),
      expect.stringMatching(new RegExp(`^${time} build   api \\| added 12 packages$`)),
      expect.stringMatching(new RegExp(`^${time} runtime web \\| listening on 3000$`)),
      expect.stringMatching(new RegExp(`^${time} system  \\| running$`)),
    ]);

    const lines = (r: { stdout: string }) =>
      r.stdout
        .trimEnd()
        .split('\n')
        .map((l) => l.split(' | ')[1]);
    expect(lines(await wharf(['logs', project.subdomain, '-n', '2']))).toEqual([
      'listening on 3000',
      'running',
    ]);
    expect(lines(await wharf(['logs', project.subdomain, '--stream', 'build']))).toEqual([
      'npm ci',
      'added 12 packages',
    ]);
    expect(lines(await wharf(['logs', project.subdomain, '--service', 'web']))).toEqual([
      'listening on 3000',
    ]);
    expect(lines(await wharf(['logs', project.subdomain, '--stream', 'build', '--lines', '1']))).toEqual([
      'added 12 packages',
    ]);
    const none = await wharf(['logs', project.subdomain, '--service', 'worker']);
    expect(none.code).toBe(0);
    expect(none.stderr).toBe('Logged has no log lines that match.\n');
    const later = await wharf(['logs', project.subdomain, '--since', '2999-01-01']);
    expect(later.stdout).toBe('');
  });

  it('-f prints what is there, then each new line, until Ctrl+C', async () => {
    const project = await projectWithLines();
    const follow = start(['logs', project.subdomain, '-f', '-n', '2']);
    await follow.waitFor((out) => out.includes('| running'));
    await t.platform.logs.append(project.id, [
      { stream: 'runtime', service: 'web', line: 'GET / 200' },
      { stream: 'runtime', service: 'web', line: 'GET / 200' },
    ]);
    await follow.waitFor((out) => out.split('GET / 200').length === 3);
    follow.child.kill('SIGINT');
    expect(await follow.exited).toBe(0);
    const lines = follow
      .stdout()
      .trimEnd()
      .split('\n')
      .map((l) => l.split(' | ')[1]);
    expect(lines).toEqual(['listening on 3000', 'running', 'GET / 200', 'GET / 200']);
    expect(follow.stderr()).toBe('');
  }, 20_000);

  it('-f ends quietly with 0 when its reader goes away (| head)', async () => {
    const project = await projectWithLines();
    const follow = start(['logs', project.subdomain, '-f']);
    await follow.waitFor((out) => out.includes('| running'));
    follow.child.stdout!.destroy();
    await t.platform.logs.append(project.id, [{ stream: 'runtime', service: null, line: 'after' }]);
    expect(await follow.exited).toBe(0);
    expect(follow.stderr()).toBe('');
  }, 20_000);

  it('-f with a filter prints only the matching new lines', async () => {
    const project = await projectWithLines();
    const follow = start(['logs', project.subdomain, '--follow', '--stream', 'system']);
    await follow.waitFor((out) => out.includes('| running'));
    await t.platform.logs.append(project.id, [
      { stream: 'runtime', service: null, line: 'not this one' },
      { stream: 'system', service: null, line: 'stopped' },
    ]);
    await follow.waitFor((out) => out.includes('| stopped'));
    follow.child.kill('SIGTERM');
    expect(await follow.exited).toBe(0);
    expect(follow.stdout()).not.toContain('not this one');
    expect(follow.stdout().trimEnd().split('\n')).toHaveLength(2);
  }, 20_000);
});

describe('wharf stop', () => {
  it('stops a running project and prints its new status', async () => {
    const project = await uploadProject('Stop me', nodeApp());
    expect((await wharf(['deploy', project.subdomain, '--follow'], t.key, 40_000)).code).toBe(0);
    const result = await wharf(['stop', 'Stop me']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('Stop me: stopped\n');
    const detail = await call<{ project: Project }>(`${t.api}/projects/${project.id}`, { key: t.key });
    expect(detail.body.project.status).toBe('stopped');
    const logs = await wharf(['logs', project.subdomain, '-n', '1']);
    expect(logs.stdout).toMatch(/system {2}\| stopped\n$/);
  }, 45_000);
});

describe('errors from the platform', () => {
  /** A server that answers every request with this status, content type and body. */
  async function fakePlatform(
    status: number,
    type: string,
    body: string,
  ): Promise<{ url: string; server: Server }> {
    const server = createHttpServer((_req, res) => {
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
  }

  it('prints the detail of a problem+json answer and each field error', async () => {
    const problem = {
      type: 'about:blank',
      title: 'Validation failed',
      status: 422,
      code: 'validation_failed',
      detail: 'the request is not valid',
      errors: [
        { path: 'services[0].name', message: 'must be a DNS label' },
        { path: 'env_vars.1X', message: 'names must match ^[A-Za-z_][A-Za-z0-9_]*$' },
      ],
    };
    const fake = await fakePlatform(422, 'application/problem+json', JSON.stringify(problem));
    try {
      const result = await run(['projects', '--platform', fake.url, '--api-key', t.key]);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        'wharf: the request is not valid\n' +
          '  services[0].name: must be a DNS label\n' +
          '  env_vars.1X: names must match ^[A-Za-z_][A-Za-z0-9_]*$\n',
      );
    } finally {
      fake.server.close();
    }
  });

  it('says when the URL is not a Wharf platform', async () => {
    const fake = await fakePlatform(404, 'text/html', '<h1>Not here</h1>');
    try {
      const result = await run(['login', '--platform', fake.url, '--api-key', t.key]);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^wharf: .*answered 404 .*is it a Wharf platform\?\n$/);
    } finally {
      fake.server.close();
    }
  });
});

describe('usage', () => {
  it.each([
    [['deploy']],
    [['logs']],
    [['stop']],
    [['deploy', 'x', '--no-such-flag']],
    [['logs', 'x', '--stream', 'stdout']],
    [['logs', 'x', '-n', '0']],
    [['logs', 'x', '--lines', 'ten']],
    [['logs', 'x', '--since', 'yesterday']],
    [['projects', '--platform', 'ftp://example.com']],
    [['projects', '--api-key', 'not-a-key']],
    [['login']],
    [['login', '--platform', 'http://127.0.0.1:9', '--api-key', 'wk_short']],
    [['login', '--platform', 'http://127.0.0.1:9']],
    [['login', '--platform', 'local', '--api-key', 'wk_' + 'a'.repeat(32)]],
  ])('exits with 2 and says what is wrong for %j', async (args) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr.length).toBeGreaterThan(0);
  });

  it.each([
    [['login', '--help']],
    [['projects', '--help']],
    [['deploy', '--help']],
    [['logs', '--help']],
    [['stop', '--help']],
  ])('prints help and exits 0 for %j', async (args) => {
    const result = await run(args);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: wharf \w+/);
  });
});
