// Helpers for deploy tests: fixture apps written to disk, a local bare git repository to clone over
// file://, requests through the app edge with the app's Host header, and waiting for a status.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type Agent, request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Project, ProjectDetail } from '../../src/shared/api/projects.js';
import { type TestPlatform, call } from './platform.js';
import { tarball } from '../fixtures/tarball.js';
import { until } from './poll.js';

export type Files = Record<string, string>;

/** A Node HTTP app with no dependencies: answers `<greeting> <path>` and logs a line on start. */
export function nodeApp(greeting = 'hello from v1', extra: Files = {}): Files {
  return {
    'package.json': JSON.stringify({ name: 'fixture', private: true, scripts: { start: 'node server.js' } }),
    'server.js': `
const http = require('node:http');
const server = http.createServer((req, res) => {
  if (req.url === '/env') return res.end(JSON.stringify(process.env));
  if (req.url === '/headers') return res.end(JSON.stringify(req.headers));
  res.end(${JSON.stringify(greeting)} + ' ' + req.url);
});
server.listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`,
    ...extra,
  };
}

/**
 * A Node app started with `node server.js` (a Procfile) that says which task or container answered
 * (`/task`), answers `/slow` after 300 ms, and exits on `/crash`.
 */
export function taskApp(greeting: string): Files {
  return nodeApp(greeting, {
    Procfile: 'web: node server.js\n',
    'server.js': `
const http = require('node:http');
const os = require('node:os');
const server = http.createServer((req, res) => {
  if (req.url === '/task') return res.end(os.hostname());
  if (req.url === '/crash') { res.end('bye'); setTimeout(() => process.exit(3), 10); return; }
  if (req.url === '/slow') return setTimeout(() => res.end(${JSON.stringify(greeting)} + ' slow'), 300);
  res.end(${JSON.stringify(greeting)} + ' ' + req.url);
});
server.listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`,
  });
}

/**
 * Starts a deploy through `tp` whose image build sleeps a minute (FROM `base`), and resolves once the
 * build is in its sleep: for tests of what happens to a deploy under way.
 */
export async function startSlowDeploy(tp: TestPlatform, id: string, base: string): Promise<void> {
  const dockerfile = [`FROM ${base}`, 'RUN sleep 60', 'COPY server.js .', 'CMD ["node", "server.js"]', ''];
  await upload(tp, id, archiveOf({ ...nodeApp('slow'), Dockerfile: dockerfile.join('\n') }));
  await deploy(tp, id);
  await waitForLog(tp, id, /RUN sleep 60/, 30_000);
}

export function writeFiles(dir: string, files: Files): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
}

export function archiveOf(files: Files): Buffer {
  return tarball(Object.entries(files).map(([path, content]) => ({ path, content })));
}

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Wharf Tests',
  GIT_AUTHOR_EMAIL: 'tests@wharf.invalid',
  GIT_COMMITTER_NAME: 'Wharf Tests',
  GIT_COMMITTER_EMAIL: 'tests@wharf.invalid',
};

/**
 * A bare repository at `<root>/<name>.git` holding `files` on `branch`; returns its file:// URL.
 * Call again with the same root and name to push a new commit.
 */
export function gitRepo(root: string, name: string, files: Files, branch = 'main'): string {
  const bare = join(root, `${name}.git`);
  const work = mkdtempSync(join(tmpdir(), 'wharf-git-work-'));
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', args, { cwd, env: GIT_ENV, stdio: 'pipe' });
  mkdirSync(dirname(bare), { recursive: true });
  try {
    git(root, 'init', '--quiet', '--bare', '--initial-branch', branch, bare);
  } catch {
    // exists already: push another commit
  }
  try {
    git(work, 'init', '--quiet', '--initial-branch', branch);
    writeFiles(work, files);
    git(work, 'add', '-A');
    git(work, 'commit', '--quiet', '-m', 'fixture');
    git(work, 'push', '--quiet', '--force', bare, `${branch}:${branch}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return `file://${bare}`;
}

export interface EdgeResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request to the edge on 127.0.0.1:`port` for `host` (names under *.localhost need not resolve). */
export function viaEdge(
  port: number,
  host: string,
  path = '/',
  options: {
    method?: string;
    agent?: Agent | false;
    headers?: Record<string, string>;
    body?: string | Buffer;
  } = {},
): Promise<EdgeResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers: { ...options.headers, host: `${host}:${port}` },
        agent: options.agent ?? false,
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from the edge for ${host}${path}`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/**
 * Requests `host` through the edge one after another until stopped (during a redeploy, say): stop()
 * resolves to what did not answer 200 and how many did.
 */
export function keepRequesting(
  port: number,
  host: string,
): { stop(): Promise<{ failures: string[]; served: number }> } {
  const failures: string[] = [];
  let served = 0;
  let polling = true;
  const loop = (async () => {
    while (polling) {
      try {
        const answer = await viaEdge(port, host, '/');
        if (answer.status !== 200) failures.push(`${answer.status} ${answer.body}`);
        served += 1;
      } catch (error) {
        failures.push((error as Error).message);
      }
    }
  })();
  return {
    async stop() {
      polling = false;
      await loop;
      return { failures, served };
    },
  };
}

export async function createProject(tp: TestPlatform, body: Record<string, unknown>): Promise<Project> {
  const created = await call<Project>(`${tp.api}/projects`, { key: tp.key, body });
  if (created.status !== 201) throw new Error(`create failed: ${JSON.stringify(created.body)}`);
  return created.body;
}

export async function upload(tp: TestPlatform, id: string, archive: Buffer): Promise<void> {
  const result = await call(`${tp.api}/projects/${id}/upload`, {
    key: tp.key,
    body: archive,
    headers: { 'content-type': 'application/gzip' },
  });
  if (result.status !== 200) throw new Error(`upload failed: ${JSON.stringify(result.body)}`);
}

export async function deploy(tp: TestPlatform, id: string): Promise<Project> {
  const result = await call<Project>(`${tp.api}/projects/${id}/deploy`, { key: tp.key, method: 'POST' });
  if (result.status !== 202) throw new Error(`deploy failed: ${JSON.stringify(result.body)}`);
  return result.body;
}

/** Polls the project until `done` says so; fails with its logs after `timeoutMs`. */
export async function waitFor(
  tp: TestPlatform,
  id: string,
  done: (project: Project) => boolean,
  timeoutMs = 30_000,
): Promise<ProjectDetail> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const detail = await call<ProjectDetail>(`${tp.api}/projects/${id}`, { key: tp.key });
    if (detail.status === 200 && done(detail.body.project)) return detail.body;
    if (Date.now() > deadline) {
      const { project, logs } = detail.body;
      throw new Error(
        `project ${id} is ${project?.status} after ${timeoutMs} ms; logs:\n${(logs ?? []).map((l) => `  [${l.stream}] ${l.line}`).join('\n')}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const settled = (project: Project) => project.status === 'running' || project.status === 'failed';

/** The project's last 500 log lines, as text. */
export async function logLines(tp: TestPlatform, id: string): Promise<string[]> {
  const detail = await call<ProjectDetail>(`${tp.api}/projects/${id}`, { key: tp.key });
  if (detail.status !== 200) throw new Error(`GET project ${id}: ${detail.status}`);
  return detail.body.logs.map((l) => l.line);
}

/** Polls the project's logs until a line matches; returns that line (fails with the logs). */
export async function waitForLog(
  tp: TestPlatform,
  id: string,
  pattern: RegExp,
  timeoutMs = 15_000,
): Promise<string> {
  let lines: string[] = [];
  try {
    await until(
      async () => (lines = await logLines(tp, id)).some((l) => pattern.test(l)),
      `a log line matching ${pattern}`,
      timeoutMs,
      100,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; logs:\n${lines.map((l) => `  ${l}`).join('\n')}`);
  }
  return lines.find((l) => pattern.test(l))!;
}

/** Whether something accepts TCP connections on 127.0.0.1:`port` right now. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.setTimeout(2_000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The PORTs the runtime gave the project's processes, oldest first, from its "starting …" lines. */
export function startedPorts(lines: string[]): number[] {
  return lines.flatMap((l) => {
    const match = /^starting .*\(PORT=(\d+)\)$/.exec(l);
    return match ? [Number(match[1])] : [];
  });
}

/**
 * Upload `files` as the project's source and deploy it; resolves once it runs (fails with the logs).
 * `timeoutMs` is for a deploy that pushes to a registry: its first push carries the base image too.
 */
export async function deployFiles(
  tp: TestPlatform,
  id: string,
  files: Files,
  timeoutMs?: number,
): Promise<ProjectDetail> {
  await upload(tp, id, archiveOf(files));
  await deploy(tp, id);
  const detail = await waitFor(tp, id, settled, timeoutMs);
  if (detail.project.status !== 'running') {
    throw new Error(
      `project ${id} is ${detail.project.status}: ${detail.project.last_deploy_error}; logs:\n${detail.logs.map((l) => `  ${l.line}`).join('\n')}`,
    );
  }
  return detail;
}
