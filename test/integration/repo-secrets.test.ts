// Credentials in a repo_url (`http://user:TOKEN@host/…`, issue 13 item 8): the platform clones with
// them, and nowhere else do they appear: not in API responses (masked `http://***@host/…`), logs, deploy
// errors, public error pages, the checkout's .git/config, nor the bytes of platform.db. A real git
// server over smart HTTP (`git http-backend` behind Basic auth) runs here on 127.0.0.1.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Project, ProjectDetail } from '../../src/shared/api/projects.js';
import { gitRepo, logLines, nodeApp, settled, viaEdge, waitFor } from '../helpers/deploy.js';
import { type TestPlatform, call, startPlatform } from '../helpers/platform.js';
import { storeBytes } from '../helpers/test-store.js';

const TOKEN = 'ghp_S3cr3tT0kenThatMustNeverLeak0123456789';
const USER = 'deploy-bot';

/** Smart-HTTP git server for the bare repositories under `root`, answering only Basic USER:TOKEN. */
async function startGitServer(
  root: string,
): Promise<{ url: string; auths: string[]; close(): Promise<void> }> {
  const auths: string[] = [];
  const children = new Set<ChildProcess>();
  const expected = `Basic ${Buffer.from(`${USER}:${TOKEN}`).toString('base64')}`;
  const server: Server = createServer((req, res) => {
    const authorization = req.headers.authorization ?? '';
    auths.push(authorization);
    if (authorization !== expected) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' });
      res.end();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://git');
    const child = spawn('git', ['http-backend'], {
      env: {
        ...process.env,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
        GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
        REMOTE_ADDR: '127.0.0.1',
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    children.add(child);
    child.once('close', () => children.delete(child));
    req.pipe(child.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      headersDone = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString().split('\r\n')) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
        else res.setHeader(name, value);
      }
      res.statusCode = status;
      res.write(head.subarray(end + 4));
    });
    child.stdout.once('end', () => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    auths,
    close: () =>
      new Promise<void>((resolve) => {
        for (const child of children) child.kill('SIGKILL');
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const repos = mkdtempSync(join(tmpdir(), 'wharf-secret-repos-'));
let git: Awaited<ReturnType<typeof startGitServer>>;
let tp: TestPlatform;

beforeAll(async () => {
  gitRepo(repos, 'app', nodeApp('hello from a private repo'));
  git = await startGitServer(repos);
  tp = await startPlatform({ healthTimeoutMs: 20_000, limits: { builds: 20 } });
}, 30_000);

afterAll(async () => {
  await tp?.close();
  await git?.close();
  rmSync(repos, { recursive: true, force: true });
});

function withToken(path: string): string {
  return `http://${USER}:${TOKEN}@${git.url}/${path}`;
}

function masked(path: string): string {
  return `http://***@${git.url}/${path}`;
}

async function create(key: string, body: Record<string, unknown>): Promise<Project> {
  const created = await call<Project>(`${tp.api}/projects`, { key, body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

async function deployAndSettle(id: string): Promise<ProjectDetail> {
  const started = await call(`${tp.api}/projects/${id}/deploy`, { key: tp.key, method: 'POST' });
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  expect(JSON.stringify(started.body)).not.toContain(TOKEN);
  return waitFor(tp, id, settled, 40_000);
}

describe('a repo_url with credentials', () => {
  let project: Project;

  it('is answered masked by create, get and list, and the raw responses hold no token', async () => {
    project = await create(tp.key, { name: 'Private', subdomain: 'private', repo_url: withToken('app.git') });
    expect(project.repo_url).toBe(masked('app.git'));
    const got = await call<ProjectDetail>(`${tp.api}/projects/${project.id}`, { key: tp.key });
    expect(got.body.project.repo_url).toBe(masked('app.git'));
    const listed = await fetch(`${tp.api}/projects`, { headers: { 'x-api-key': tp.key } });
    const text = await listed.text();
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(USER);
    expect((JSON.parse(text) as Project[]).find((p) => p.id === project.id)?.repo_url).toBe(
      masked('app.git'),
    );
  });

  it('clones with the credentials, and neither the logs nor the checkout keep them', async () => {
    const detail = await deployAndSettle(project.id);
    expect(detail.project.status, detail.logs.map((l) => l.line).join('\n')).toBe('running');
    const expected = `Basic ${Buffer.from(`${USER}:${TOKEN}`).toString('base64')}`;
    expect(git.auths).toContain(expected);
    const lines = await logLines(tp, project.id);
    expect(lines.join('\n')).not.toContain(TOKEN);
    expect(lines).toContainEqual(
      expect.stringMatching(/^deploy rel_\w+ started \(source: git http:\/\/\*\*\*@/),
    );
    expect(lines).toContain(`cloning ${masked('app.git')} (branch main)`);
    const appDir = join(tp.dataDir, 'apps', project.id);
    const [release] = readdirSync(appDir).filter((name) => name.startsWith('rel_'));
    const config = readFileSync(join(appDir, release!, '.git', 'config'), 'utf8');
    expect(config).not.toContain(TOKEN);
    expect(config).toContain(`url = http://${git.url}/app.git`);
    expect((await viaEdge(tp.edgePort, 'private.localhost', '/x')).body).toBe('hello from a private repo /x');
  });

  it('keeps the credentials when the project is updated without repo_url', async () => {
    const updated = await call<Project>(`${tp.api}/projects/${project.id}`, {
      key: tp.key,
      method: 'PUT',
      body: { env_vars: { GREETING: 'hi' } },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.repo_url).toBe(masked('app.git'));
    const detail = await deployAndSettle(project.id);
    expect(detail.project.status, detail.logs.map((l) => l.line).join('\n')).toBe('running');
    expect(detail.project.last_deploy_error).toBeNull();
  });

  it('is not found for another account, by id or in its list', async () => {
    const other = await tp.newAccount();
    const got = await call(`${tp.api}/projects/${project.id}`, { key: other.key });
    expect(got.status).toBe(404);
    expect(JSON.stringify(got.body)).not.toContain(TOKEN);
    const list = await call<Project[]>(`${tp.api}/projects`, { key: other.key });
    expect(list.body.map((p) => p.id)).not.toContain(project.id);
    const deploy = await call(`${tp.api}/projects/${project.id}/deploy`, { key: other.key, method: 'POST' });
    expect(deploy.status).toBe(404);
  });

  it('never reaches a failed deploy’s error, its logs or its public 502 page', async () => {
    const broken = await create(tp.key, {
      name: 'Missing',
      subdomain: 'missing-repo',
      repo_url: withToken('nothing-here.git'),
    });
    const detail = await deployAndSettle(broken.id);
    expect(detail.project.status).toBe('failed');
    const error = detail.project.last_deploy_error ?? '';
    expect(error).toMatch(
      /^git clone of http:\/\/\*\*\*@127\.0\.0\.1:\d+\/nothing-here\.git \(branch main\) failed/,
    );
    expect(error).not.toContain(TOKEN);
    expect((await logLines(tp, broken.id)).join('\n')).not.toContain(TOKEN);

    const page = await viaEdge(tp.edgePort, 'missing-repo.localhost', '/');
    expect(page.status).toBe(502);
    expect(page.body).toContain('This app is not running.');
    expect(page.body).not.toContain(TOKEN);
    expect(page.body).not.toContain('nothing-here');
    expect(page.body).not.toContain('git clone');
  });

  it('never reaches a 503 page either (stopped, not deployed yet)', async () => {
    const fresh = await create(tp.key, {
      name: 'Fresh',
      subdomain: 'fresh-private',
      repo_url: withToken('app.git'),
    });
    const notYet = await viaEdge(tp.edgePort, 'fresh-private.localhost', '/');
    expect(notYet.status).toBe(503);
    expect(notYet.body).not.toContain(TOKEN);
    await call(`${tp.api}/projects/${project.id}/stop`, { key: tp.key, method: 'POST' });
    const stopped = await viaEdge(tp.edgePort, 'private.localhost', '/');
    expect(stopped.status).toBe(503);
    expect(stopped.body).not.toContain(TOKEN);
    expect(stopped.body).not.toContain(git.url);
    expect(fresh.repo_url).toBe(masked('app.git'));
  });

  it('is not in the bytes of the store', async () => {
    const stored = await storeBytes(tp.dataDir, tp.databaseUrl);
    expect(stored.includes(TOKEN)).toBe(false);
    expect(stored.includes(`${USER}:`)).toBe(false);
  });
});

describe('a repo_url with credentials stored before they were sealed', () => {
  it('is sealed at the next start: masked, out of platform.db, and still cloned with them', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-secret-legacy-'));
    try {
      let first: TestPlatform | null = await startPlatform({ dataDir, healthTimeoutMs: 20_000 });
      const project = await call<Project>(`${first.api}/projects`, {
        key: first.key,
        body: { name: 'Legacy', subdomain: 'legacy', repo_url: `http://${git.url}/app.git` },
      });
      expect(project.status).toBe(201);
      // As an older platform stored it: the URL as given, credentials and all.
      await first.platform.db
        .updateTable('projects')
        .set({
          repo_url: withToken('app.git'),
          repo_url_secret: null,
          last_deploy_error: `git clone of ${withToken('app.git')} (branch main) failed: timed out`,
        })
        .where('id', '=', project.body.id)
        .execute();
      await first.platform.db
        .insertInto('project_logs')
        .values({
          project_id: project.body.id,
          ts: new Date().toISOString(),
          stream: 'build',
          service: null,
          line: `cloning ${withToken('app.git')} (branch main)`,
        })
        .execute();
      await first.close();
      first = null;
      expect((await storeBytes(dataDir)).includes(TOKEN)).toBe(true);

      const second = await startPlatform({ dataDir, healthTimeoutMs: 20_000 });
      try {
        expect((await storeBytes(dataDir)).includes(TOKEN)).toBe(false);
        const got = await call<ProjectDetail>(`${second.api}/projects/${project.body.id}`, {
          key: second.key,
        });
        expect(got.body.project.repo_url).toBe(masked('app.git'));
        expect(got.body.project.last_deploy_error).toBe(
          `git clone of ${masked('app.git')} (branch main) failed: timed out`,
        );
        expect(got.body.logs.map((l) => l.line)).toContain(`cloning ${masked('app.git')} (branch main)`);
        const started = await call(`${second.api}/projects/${project.body.id}/deploy`, {
          key: second.key,
          method: 'POST',
        });
        expect(started.status).toBe(202);
        const detail = await waitFor(second, project.body.id, settled, 40_000);
        expect(detail.project.status, detail.logs.map((l) => l.line).join('\n')).toBe('running');
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the masking', () => {
  it('leaves URLs without credentials and scp-like addresses as they are', async () => {
    const plain = await create(tp.key, {
      name: 'Plain',
      subdomain: 'plain-url',
      repo_url: `http://${git.url}/app.git`,
    });
    expect(plain.repo_url).toBe(`http://${git.url}/app.git`);
    const scp = await create(tp.key, {
      name: 'Scp',
      subdomain: 'scp-url',
      repo_url: 'git@example.invalid:a/b.git',
    });
    expect(scp.repo_url).toBe('git@example.invalid:a/b.git');
  });
});
