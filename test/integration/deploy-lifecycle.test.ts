// Deploys over time: zero-downtime redeploys under load, failed redeploys, cancelled deploys, stop and
// delete, crash restarts with backoff, and a platform restart that runs the release again unbuilt.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/server/runtime/process.js';
import { type TestPlatform, call, expectProblem, startPlatform } from '../helpers/platform.js';
import {
  type Files,
  accepts,
  archiveOf,
  createProject,
  deploy,
  deployFiles,
  gitRepo,
  logLines,
  nodeApp,
  settled,
  startedPorts,
  upload,
  viaEdge,
  waitFor,
  waitForLog,
} from '../helpers/deploy.js';
import { quietFor, until } from '../helpers/poll.js';

let tp: TestPlatform;

beforeAll(async () => {
  tp = await startPlatform({ healthTimeoutMs: 15_000, restartLimit: 3, restartBackoffMs: 200 });
});

afterAll(async () => {
  await tp?.close();
});

/**
 * An app whose answers take a little while, so a redeploy always finds requests in flight; it dies at once
 * on SIGTERM, so only the runtime's drain keeps those requests from failing.
 */
const slowApp = (version: string): Files =>
  nodeApp(version, {
    'server.js': `
const http = require('node:http');
const server = http.createServer((req, res) => {
  setTimeout(() => res.end(${JSON.stringify(version)} + ' ' + req.url), 5 + Math.random() * 20);
});
server.listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
`,
  });

/**
 * An app that starts a child process listening on a port of its own, and answers with that port; the
 * child may ignore SIGTERM, so only the SIGKILL after the grace time ends it.
 */
const familyApp = (childIgnoresTerm: boolean): Files =>
  nodeApp('family', {
    'server.js': `
const http = require('node:http');
const { spawn } = require('node:child_process');
let childPort = null;
const child = spawn(process.execPath, ['-e', \`
  ${childIgnoresTerm ? "process.on('SIGTERM', () => console.log('child ignores SIGTERM'));" : ''}
  const s = require('node:http').createServer((q, r) => r.end('child')).listen(0, '127.0.0.1', () => console.log('child port ' + s.address().port));
\`], { stdio: ['ignore', 'pipe', 'inherit'] });
child.stdout.on('data', (d) => {
  const m = /child port (\\d+)/.exec(String(d));
  if (m) childPort = Number(m[1]);
  process.stdout.write(d);
});
http.createServer((req, res) => res.end(JSON.stringify({ pid: process.pid, childPort })))
  .listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
`,
  });

async function familyPorts(host: string): Promise<{ app: number; child: number }> {
  let child: number | null = null;
  await until(async () => {
    child = (JSON.parse((await viaEdge(tp.edgePort, host, '/')).body) as { childPort: number | null })
      .childPort;
    return child !== null;
  }, 'the child process to listen');
  const lines = await logLines(tp, (await projectByHost(host)).id);
  return { app: startedPorts(lines).at(-1)!, child: child! };
}

async function projectByHost(host: string) {
  const list = await call<Array<{ id: string; subdomain: string }>>(`${tp.api}/projects`, { key: tp.key });
  return list.body.find((p) => `${p.subdomain}.localhost` === host)!;
}

const releases = (dataDir: string, id: string): string[] => {
  try {
    return readdirSync(join(dataDir, 'apps', id)).filter((f) => f.startsWith('rel_'));
  } catch {
    return [];
  }
};

describe('redeploys', () => {
  it('switches to the new version under concurrent load without failing a request', async () => {
    const host = 'zero.localhost';
    const project = await createProject(tp, { name: 'Zero', subdomain: 'zero', deploy_source: 'upload' });
    await deployFiles(tp, project.id, slowApp('v1'));
    const [v1Port] = startedPorts(await logLines(tp, project.id));
    expect(v1Port).toBeGreaterThan(0);

    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const answers: Array<{ started: number; body: string }> = [];
    const failures: string[] = [];
    let loading = true;
    const clients = Array.from({ length: 8 }, async (_, client) => {
      for (let i = 0; loading; i++) {
        const started = Date.now();
        try {
          const answer = await viaEdge(tp.edgePort, host, `/c${client}/${i}`, { agent });
          if (answer.status === 200 && /^v[12] \/c\d+\/\d+$/.test(answer.body)) {
            answers.push({ started, body: answer.body });
          } else failures.push(`${answer.status} ${answer.body.slice(0, 200)}`);
        } catch (error) {
          failures.push(String(error));
        }
      }
    });
    try {
      await new Promise((r) => setTimeout(r, 300));
      await upload(tp, project.id, archiveOf(slowApp('v2')));
      await deploy(tp, project.id);
      const { project: done, logs } = await waitFor(tp, project.id, settled);
      const switched = Date.now();
      expect(done.status, logs.map((l) => l.line).join('\n')).toBe('running');
      await new Promise((r) => setTimeout(r, 500));
      loading = false;
      await Promise.all(clients);

      expect(failures).toEqual([]);
      const before = answers.filter((a) => a.body.startsWith('v1 '));
      const after = answers.filter((a) => a.started > switched);
      expect(before.length).toBeGreaterThan(20);
      expect(after.length).toBeGreaterThan(20);
      expect(after.filter((a) => !a.body.startsWith('v2 '))).toEqual([]);

      // The old process is stopped once its requests are done; its release folder stays for a rollback.
      const ports = startedPorts(await logLines(tp, project.id));
      expect(ports).toHaveLength(2);
      expect(ports[0]).toBe(v1Port);
      await until(async () => !(await accepts(v1Port!)), `v1's port ${v1Port} to close`);
      expect(await accepts(ports[1]!)).toBe(true);
      expect(releases(tp.dataDir, project.id)).toHaveLength(2);
    } finally {
      loading = false;
      await Promise.all(clients);
      agent.destroy();
    }
  });

  it.each([
    [
      'build fails',
      nodeApp('v2', {
        'package.json': JSON.stringify({
          name: 'v2',
          scripts: { build: 'echo v2 does not build && exit 1', start: 'node server.js' },
        }),
      }),
      /^the new version failed \(build failed: `npm run build` exited with code \d+\); the previous version keeps serving$/,
    ],
    [
      'start crashes',
      nodeApp('v2', { 'server.js': `console.error('v2 crashed on start'); process.exit(4);` }),
      /^the new version failed \(the app exited \(code \d+\) before it listened on port \d+\); the previous version keeps serving$/,
    ],
  ])('a redeploy whose %s leaves v1 serving and running', async (label, v2, error) => {
    const subdomain = `keep-${label.split(' ')[0]}`;
    const host = `${subdomain}.localhost`;
    const project = await createProject(tp, { name: 'Keep', subdomain, deploy_source: 'upload' });
    await deployFiles(tp, project.id, nodeApp('v1'));
    const [v1Port] = startedPorts(await logLines(tp, project.id));

    await upload(tp, project.id, archiveOf(v2));
    await deploy(tp, project.id);
    // While v2 builds, v1 answers.
    expect((await viaEdge(tp.edgePort, host, '/during')).body).toBe('v1 /during');
    const { project: done, logs } = await waitFor(tp, project.id, (p) => p.status !== 'building');
    expect(done.status).toBe('running');
    expect(done.last_deploy_error).toMatch(error);
    const lines = logs.map((l) => l.line);
    expect(lines.at(-1)).toBe('the previous version keeps serving');
    expect((await viaEdge(tp.edgePort, host, '/after')).body).toBe('v1 /after');
    expect(await accepts(v1Port!)).toBe(true);
    // Only v1's release is left.
    expect(releases(tp.dataDir, project.id)).toHaveLength(1);
    const v2Port = startedPorts(lines)[1];
    if (v2Port !== undefined) expect(await accepts(v2Port)).toBe(false);

    // A good deploy afterwards clears the error.
    await deployFiles(tp, project.id, nodeApp('v3'));
    const fixed = await call(`${tp.api}/projects/${project.id}`, { key: tp.key });
    expect(fixed.body.project.last_deploy_error).toBeNull();
    expect((await viaEdge(tp.edgePort, host, '/')).body).toBe('v3 /');
  });

  it('a service on a fixed port is replaced in place: the old one stops first and frees the port', async () => {
    const port = await freePort();
    const project = await createProject(tp, {
      name: 'Fixed',
      subdomain: 'fixed',
      deploy_source: 'upload',
      build_config: { services: [{ name: 'web', root_dir: 'web', start_cmd: 'npm start', port }] },
    });
    // Only the service's folder holds an app: the project answers at its subdomain from its web service.
    // (A README beside it: an upload of one top folder would be unpacked from it.)
    const inWeb = (files: Record<string, string>) => ({
      'README.md': 'fixed\n',
      ...Object.fromEntries(Object.entries(files).map(([k, v]) => [`web/${k}`, v])),
    });
    await deployFiles(tp, project.id, inWeb(nodeApp('fixed v1')));
    expect((await viaEdge(tp.edgePort, 'fixed.localhost', '/')).body).toBe('fixed v1 /');
    const { logs } = await deployFiles(tp, project.id, inWeb(nodeApp('fixed v2')));
    const lines = logs.map((l) => l.line);
    expect(lines).toContain(
      'a service has a fixed port, so the running version stops before the new one starts (no zero-downtime switch)',
    );
    expect(startedPorts(lines)).toEqual([port, port]);
    expect((await viaEdge(tp.edgePort, 'fixed-web.localhost', '/')).body).toBe('fixed v2 /');
  });

  it('a deploy started while another builds cancels it, and the newer one wins', async () => {
    const project = await createProject(tp, { name: 'Twice', subdomain: 'twice', deploy_source: 'upload' });
    await upload(
      tp,
      project.id,
      archiveOf(
        nodeApp('first', {
          'package.json': JSON.stringify({
            name: 'first',
            scripts: { build: 'echo first building && sleep 20', start: 'node server.js' },
          }),
        }),
      ),
    );
    await deploy(tp, project.id);
    await waitForLog(tp, project.id, /^first building$/);
    await upload(tp, project.id, archiveOf(nodeApp('second')));
    await deploy(tp, project.id);
    const { project: done, logs } = await waitFor(tp, project.id, settled);
    expect(done.status).toBe('running');
    expect(logs.map((l) => l.line)).toContainEqual(
      expect.stringMatching(/^deploy rel_\w+ cancelled: a newer deploy started$/),
    );
    expect((await viaEdge(tp.edgePort, 'twice.localhost', '/')).body).toBe('second /');
    await quietFor(300);
    expect((await call(`${tp.api}/projects/${project.id}`, { key: tp.key })).body.project.status).toBe(
      'running',
    );
  });
});

describe('stop and delete', () => {
  it('stop ends the whole process group, frees the ports, and the edge says Stopped', async () => {
    const host = 'halt.localhost';
    const project = await createProject(tp, { name: 'Halt', subdomain: 'halt', deploy_source: 'upload' });
    await deployFiles(tp, project.id, familyApp(true));
    const ports = await familyPorts(host);
    expect(await accepts(ports.app)).toBe(true);
    expect(await accepts(ports.child)).toBe(true);

    const stopped = await call(`${tp.api}/projects/${project.id}/stop`, { key: tp.key, method: 'POST' });
    expect(stopped.status).toBe(200);
    expect(stopped.body.status).toBe('stopped');
    await until(
      async () => !(await accepts(ports.app)) && !(await accepts(ports.child)),
      'both ports to close',
    );
    // The release's files stay: a rollback (or a start) can bring it back without a build.
    expect(releases(tp.dataDir, project.id)).toHaveLength(1);
    expect(await logLines(tp, project.id)).toContain('stopped');

    const page = await viaEdge(tp.edgePort, host, '/');
    expect(page.status).toBe(503);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['x-wharf-edge']).toBe('Stopped');
    expect(page.body).toContain('Halt is stopped.');

    // Still stopped a moment later: nothing restarts it.
    await quietFor(500);
    expect((await call(`${tp.api}/projects/${project.id}`, { key: tp.key })).body.project.status).toBe(
      'stopped',
    );

    // Deploying again from stopped brings it back.
    await deploy(tp, project.id);
    const { project: again } = await waitFor(tp, project.id, settled);
    expect(again.status).toBe('running');
    expect((await viaEdge(tp.edgePort, host, '/')).status).toBe(200);
  });

  it('stop during a build cancels it and it stays stopped', async () => {
    const project = await createProject(tp, {
      name: 'Halt build',
      subdomain: 'halt-build',
      deploy_source: 'upload',
      build_config: {
        build_cmd: 'echo building for long && sleep 30 && echo never',
        start_cmd: 'node server.js',
      },
    });
    await upload(tp, project.id, archiveOf(nodeApp()));
    await deploy(tp, project.id);
    await waitForLog(tp, project.id, /^building for long$/);
    const started = Date.now();
    const stopped = await call(`${tp.api}/projects/${project.id}/stop`, { key: tp.key, method: 'POST' });
    expect(stopped.body.status).toBe('stopped');
    expect(Date.now() - started).toBeLessThan(5_000);
    await waitForLog(tp, project.id, /^deploy rel_\w+ cancelled: the project was stopped$/);
    await quietFor(300);
    const detail = await call(`${tp.api}/projects/${project.id}`, { key: tp.key });
    expect(detail.body.project.status).toBe('stopped');
    expect(detail.body.project.last_deploy_error).toBeNull();
    expect(releases(tp.dataDir, project.id)).toEqual([]);
    const page = await viaEdge(tp.edgePort, 'halt-build.localhost', '/');
    expect(page.headers['x-wharf-edge']).toBe('Stopped');
  });

  it('delete stops everything, removes its files, and its host answers 404', async () => {
    const host = 'doomed.localhost';
    const project = await createProject(tp, { name: 'Doomed', subdomain: 'doomed', deploy_source: 'upload' });
    await deployFiles(tp, project.id, familyApp(false));
    const ports = await familyPorts(host);

    const deleted = await call(`${tp.api}/projects/${project.id}`, { key: tp.key, method: 'DELETE' });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: project.id, deleted: true });
    await until(
      async () => !(await accepts(ports.app)) && !(await accepts(ports.child)),
      'both ports to close',
    );
    expectProblem(await call(`${tp.api}/projects/${project.id}`, { key: tp.key }), 404, 'not_found');
    const page = await viaEdge(tp.edgePort, host, '/');
    expect(page.status).toBe(404);
    expect(page.headers['x-wharf-edge']).toBe('No app here');
    expect(readdirSync(join(tp.dataDir, 'apps'))).not.toContain(project.id);
    expect(readdirSync(join(tp.dataDir, 'uploads'))).not.toContain(project.id);
  });
});

describe('delete during a deploy', () => {
  it('waits for the cancelled clone to stop before removing the files, and answers 200', async () => {
    // Enough files that the clone is still writing when the delete arrives.
    const files: Files = { ...nodeApp('never served') };
    for (let i = 0; i < 3000; i++) files[`assets/file-${i}.txt`] = `asset ${i}\n`.repeat(20);
    const repos = mkdtempSync(join(tmpdir(), 'wharf-delete-clone-'));
    try {
      const url = gitRepo(repos, 'big', files);
      const project = await createProject(tp, { name: 'Cloning', subdomain: 'cloning', repo_url: url });
      await deploy(tp, project.id);
      await waitForLog(tp, project.id, /^cloning /);
      const deleted = await call(`${tp.api}/projects/${project.id}`, { key: tp.key, method: 'DELETE' });
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
      expect(readdirSync(join(tp.dataDir, 'apps'))).not.toContain(project.id);
    } finally {
      rmSync(repos, { recursive: true, force: true });
    }
  });
});

describe('crash restarts', () => {
  it('restarts a crashed app with doubling backoff, and it serves again', async () => {
    const host = 'phoenix.localhost';
    const project = await createProject(tp, {
      name: 'Phoenix',
      subdomain: 'phoenix',
      deploy_source: 'upload',
    });
    await deployFiles(
      tp,
      project.id,
      nodeApp('phoenix', {
        'server.js': `
const http = require('node:http');
http.createServer((req, res) => {
  if (req.url === '/crash') { res.end('bye'); setTimeout(() => process.exit(7), 10); return; }
  res.end('phoenix ' + req.url);
}).listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
`,
      }),
    );
    for (const [attempt, delay] of [
      [1, '0.2'],
      [2, '0.4'],
    ] as const) {
      expect((await viaEdge(tp.edgePort, host, '/crash')).body).toBe('bye');
      await waitForLog(
        tp,
        project.id,
        new RegExp(`^the app exited with code \\d+; restarting in ${delay} s \\(attempt ${attempt} of 3\\)$`),
      );
      await until(
        async () =>
          (await logLines(tp, project.id)).filter((l) => l === 'the app is back up').length === attempt,
        `restart ${attempt}`,
      );
      const answer = await viaEdge(tp.edgePort, host, '/again');
      expect(answer.status).toBe(200);
      expect(answer.body).toBe('phoenix /again');
    }
    const detail = await call(`${tp.api}/projects/${project.id}`, { key: tp.key });
    expect(detail.body.project.status).toBe('running');
    expect(startedPorts(await logLines(tp, project.id))).toHaveLength(3);
  });

  it('an app down between restarts answers 502 with a retrying page', async () => {
    const host = 'flaky.localhost';
    const slow = await startPlatform({ restartLimit: 2, restartBackoffMs: 3_000 });
    try {
      const project = await createProject(slow, {
        name: 'Flaky',
        subdomain: 'flaky',
        deploy_source: 'upload',
      });
      await deployFiles(
        slow,
        project.id,
        nodeApp('flaky', {
          'server.js': `
require('node:http').createServer((req, res) => {
  res.end('flaky ' + req.url);
  if (req.url === '/crash') setTimeout(() => process.exit(1), 10);
}).listen(Number(process.env.PORT));
`,
        }),
      );
      await viaEdge(slow.edgePort, host, '/crash');
      await waitForLog(slow, project.id, /restarting in 3 s \(attempt 1 of 2\)$/);
      const page = await viaEdge(slow.edgePort, host, '/');
      expect(page.status).toBe(502);
      expect(page.headers['retry-after']).toBe('5');
      expect(page.headers['x-wharf-edge']).toBe('Not running');
      expect(page.body).toContain('This app is not running.');
      expect(page.body).not.toContain('crashed');
    } finally {
      await slow.close();
    }
  });
});

describe('crash limit', () => {
  let strict: TestPlatform;
  beforeAll(async () => {
    strict = await startPlatform({ restartLimit: 1, restartBackoffMs: 100 });
  });
  afterAll(async () => {
    await strict?.close();
  });

  it('an app that always crashes right after it is healthy ends failed', async () => {
    const project = await createProject(strict, {
      name: 'Doomed loop',
      subdomain: 'loop',
      deploy_source: 'upload',
    });
    await upload(
      strict,
      project.id,
      archiveOf(
        nodeApp('loop', {
          'server.js': `
require('node:http').createServer((q, r) => r.end('loop')).listen(Number(process.env.PORT), () => {
  console.log('up, crashing soon');
  setTimeout(() => { console.error('crashing now'); process.exit(2); }, 1000);
});
`,
        }),
      ),
    );
    await deploy(strict, project.id);
    const { project: done, logs } = await waitFor(strict, project.id, (p) => p.status === 'failed', 15_000);
    expect(done.last_deploy_error).toBe('the app kept crashing (2 times in a row): see the runtime logs');
    const lines = logs.map((l) => l.line);
    expect(lines).toContainEqual(expect.stringMatching(/restarting in 0\.1 s \(attempt 1 of 1\)$/));
    expect(lines).toContainEqual(expect.stringMatching(/it crashed 2 times in a row, so it stays down$/));
    expect(lines.filter((l) => l === 'crashing now')).toHaveLength(2);
    const ports = startedPorts(lines);
    expect(ports).toHaveLength(2);
    for (const port of ports) expect(await accepts(port)).toBe(false);
    const page = await viaEdge(strict.edgePort, 'loop.localhost', '/');
    expect(page.status).toBe(502);
    expect(page.headers['x-wharf-edge']).toBe('Not running');
    expect(page.body).not.toContain('kept crashing');
    // It stays down.
    await quietFor(500);
    expect(startedPorts(await logLines(strict, project.id))).toHaveLength(2);
  });
});

describe('platform restart', () => {
  it('runs the serving release again on the same data dir, without a rebuild', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-restart-'));
    let first: TestPlatform | null = await startPlatform({ dataDir });
    let second: TestPlatform | null = null;
    try {
      const project = await createProject(first, {
        name: 'Lasting',
        subdomain: 'lasting',
        deploy_source: 'upload',
      });
      const { logs } = await deployFiles(first, project.id, nodeApp('still here'));
      const releaseId = /^deploy (rel_\w+) started/.exec(logs[0]!.line)![1]!;
      const [oldPort] = startedPorts(logs.map((l) => l.line));
      expect((await viaEdge(first.edgePort, 'lasting.localhost', '/')).body).toBe('still here /');

      await first.close();
      first = null;
      expect(await accepts(oldPort!)).toBe(false);

      second = await startPlatform({ dataDir });
      const restarted = second;
      await waitForLog(
        restarted,
        project.id,
        new RegExp(`^platform restarted: starting release ${releaseId} again$`),
      );
      const { project: running } = await waitFor(restarted, project.id, settled);
      expect(running.status).toBe('running');
      await until(
        async () => (await viaEdge(restarted.edgePort, 'lasting.localhost', '/')).status === 200,
        'the app to answer through the new edge',
      );
      expect((await viaEdge(restarted.edgePort, 'lasting.localhost', '/back')).body).toBe('still here /back');
      const lines = await logLines(restarted, project.id);
      const after = lines.slice(lines.findIndex((l) => l.startsWith('platform restarted')));
      expect(after.filter((l) => /^deploy rel_/.test(l) || l.startsWith('$ '))).toEqual([]);
      expect(after).toContainEqual(expect.stringMatching(/^running at http:\/\/lasting\.localhost:\d+$/));
      expect(releases(dataDir, project.id)).toEqual([releaseId]);
    } finally {
      await first?.close();
      await second?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a deploy interrupted by a shutdown runs again after the restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-restart-'));
    // While this port answers the build takes long: the first platform is closed during it. (A file
    // would not do: the sandbox gives builds a /tmp of their own.)
    const slow = createServer();
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const slowPort = (slow.address() as AddressInfo).port;
    const waitWhileSlow = `node -e "require('net').connect(${slowPort}, '127.0.0.1').on('connect', () => setTimeout(() => {}, 30000)).on('error', () => {})"`;
    let first: TestPlatform | null = await startPlatform({ dataDir });
    let second: TestPlatform | null = null;
    try {
      const project = await createProject(first, {
        name: 'Interrupted',
        subdomain: 'interrupted',
        deploy_source: 'upload',
        build_config: {
          build_cmd: `echo build started && ${waitWhileSlow}`,
          start_cmd: 'node server.js',
        },
      });
      await upload(first, project.id, archiveOf(nodeApp('finally')));
      await deploy(first, project.id);
      await waitForLog(first, project.id, /^build started$/);
      await first.close();
      first = null;
      await new Promise((resolve) => slow.close(resolve));

      second = await startPlatform({ dataDir });
      const restarted = second;
      const { project: done, logs } = await waitFor(restarted, project.id, settled);
      expect(done.status).toBe('running');
      const lines = logs.map((l) => l.line);
      expect(lines).toContain('platform restarted: the last deploy was interrupted, deploying again');
      expect((await viaEdge(restarted.edgePort, 'interrupted.localhost', '/')).body).toBe('finally /');
    } finally {
      await first?.close();
      await second?.close();
      slow.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('kills apps a crashed platform left running in its apps folder before restoring', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'wharf-restart-'));
    const orphanDir = join(dataDir, 'apps', 'prj_gone', 'rel_old');
    mkdirSync(orphanDir, { recursive: true });
    // What a platform killed with SIGKILL leaves: an app in its own process group, still running.
    const orphan = spawn('sleep', ['60'], { cwd: orphanDir, detached: true, stdio: 'ignore' });
    orphan.unref();
    const exited = new Promise((resolve) => orphan.once('exit', resolve));
    const tp2 = await startPlatform({ dataDir });
    try {
      await expect(
        Promise.race([exited, new Promise((r) => setTimeout(() => r('alive'), 5_000))]),
      ).resolves.not.toBe('alive');
    } finally {
      if (orphan.exitCode === null) orphan.kill('SIGKILL');
      await tp2.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
