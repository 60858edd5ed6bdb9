// `wharf http` as a user runs it: the built bin/wharf.js in a child process with its own WHARF_HOME,
// against a real platform (API + tunnel edge) and a real local app: the printed URL serves the app
// through the edge, each request gets a line, the inspector answers, a dropped connection is reported
// and reconnected, Ctrl+C exits 0 with the traffic in the Mirror; bad input exits 2, a refused
// subdomain 1.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Mirror } from '../../src/core/mirror/mirror.js';
import { TunnelClient } from '../../src/core/tunnel/client.js';
import { startPlatform, type TestPlatform } from '../helpers/platform.js';
import { assertBuilt, wharfBin } from '../helpers/cli.js';
import { closedPort, startLocalApp, type LocalApp } from '../helpers/local-app.js';

const bin = wharfBin;
const dirs: string[] = [];
const children: ChildProcess[] = [];

let tp: TestPlatform;
let origin: string;
let app: LocalApp;
let appPort: number;

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wharf-cli-http-'));
  dirs.push(dir);
  return dir;
}

beforeAll(async () => {
  assertBuilt();
  tp = await startPlatform();
  origin = new URL(tp.api).origin;
  app = await startLocalApp((req, res) => {
    if (req.url === '/fail') {
      req.socket.destroy();
      return;
    }
    res.setHeader('content-type', 'text/plain');
    res.end(`local app: ${req.method} ${req.url}`);
  });
  appPort = app.port;
});

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

afterAll(async () => {
  await app?.close();
  await tp?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The environment of a run: its own home, and none of the developer's WHARF_* overrides. */
function envFor(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['WHARF_PLATFORM_URL', 'WHARF_API_KEY', 'WHARF_PORT', 'WHARF_INSPECTOR_PORT'])
    delete env[name];
  return { ...env, WHARF_HOME: home };
}

function start(args: string[], home = tempDir(), extraEnv: Record<string, string> = {}) {
  const child = spawn(process.execPath, [bin, 'http', ...args], {
    env: { ...envFor(home), ...extraEnv },
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
    home,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    async waitFor(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!predicate()) {
        if (Date.now() > deadline || child.exitCode !== null) {
          throw new Error(`timed out waiting for ${what}\nstdout:\n${stdout}\nstderr:\n${stderr}`);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  };
}

async function exitOf(run: ReturnType<typeof start>, timeoutMs = 15_000): Promise<number | null> {
  const timer = setTimeout(() => run.child.kill('SIGKILL'), timeoutMs);
  const code = await run.exited;
  clearTimeout(timer);
  return code;
}

function get(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false, timeout: 10_000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer on ${port}${path}`)));
    req.on('error', reject);
    req.end();
  });
}

const connection = () => ['--platform', origin, '--api-key', tp.key];

describe('wharf http', () => {
  it('tunnels a port, prints each request, serves the inspector, reconnects, and stops on Ctrl+C', async () => {
    const run = start([
      String(appPort),
      '--subdomain',
      'cli-demo',
      '--inspect',
      '127.0.0.1:0',
      ...connection(),
    ]);
    await run.waitFor(() => run.stdout().includes('Press Ctrl+C'), 'the tunnel to come online');
    const url = /Forwarding\s+(\S+) -> http:\/\/localhost:(\d+)/.exec(run.stdout());
    expect(url?.[1]).toBe(`http://cli-demo.tunnel.localhost:${tp.edgePort}`);
    expect(url?.[2]).toBe(String(appPort));
    expect(run.stdout()).toMatch(new RegExp(`Platform\\s+${origin}`));
    expect(run.stdout()).toContain(`History     ${join(run.home, 'mirror.db')}`);

    const host = { host: `cli-demo.tunnel.localhost:${tp.edgePort}` };
    const answer = await get(tp.edgePort, '/hello?from=edge', host);
    expect(answer).toEqual({ status: 200, body: 'local app: GET /hello?from=edge' });
    await run.waitFor(() => /GET\s+\/hello\?from=edge\s+200\s+\d+ ms/.test(run.stdout()), 'the request line');
    const line = run
      .stdout()
      .split('\n')
      .find((l) => l.includes('/hello?from=edge'))!;
    expect(line).toMatch(/^\d\d:\d\d:\d\d {2}GET /);

    // Requests stored in one batch are printed in one write, still a line each.
    await Promise.all([1, 2, 3, 4, 5].map((i) => get(tp.edgePort, `/batch-${i}`, host)));
    await run.waitFor(() => (run.stdout().match(/\/batch-\d/g) ?? []).length === 5, 'the batch’s lines');
    const batch = run
      .stdout()
      .split('\n')
      .filter((l) => l.includes('/batch-'));
    expect(batch).toHaveLength(5);
    for (const l of batch) expect(l).toMatch(/^\d\d:\d\d:\d\d {2}GET\s+\/batch-[1-5]\s+200\s+\d+ ms$/);

    // A request the app fails: the line says why.
    await get(tp.edgePort, '/fail', host);
    // No response from the app: the status is the tunnel client's own 502, beside why.
    await run.waitFor(() => /\/fail\s+502\s+\d+ ms {2}! /.test(run.stdout()), 'the failure line');

    // The inspector: the page URL with its token, and the API, which needs that token.
    const page = /Inspector\s+(http:\/\/127\.0\.0\.1:(\d+)\/#token=(\S+))/.exec(run.stdout());
    expect(page).not.toBeNull();
    const inspectorPort = Number(page![2]);
    const token = page![3]!;
    const infoFile = join(run.home, 'inspector.json');
    expect(run.stdout()).toContain(`with X-Wharf-Token (also in ${infoFile})`);
    expect(statSync(infoFile).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(infoFile, 'utf8'))).toMatchObject({
      url: `http://127.0.0.1:${inspectorPort}`,
      port: inspectorPort,
      token,
    });
    const inspectorHost = { host: `127.0.0.1:${inspectorPort}` };
    for (const path of ['/api/tunnels', '/api/requests/http?q=hello']) {
      const refused = await get(inspectorPort, path, inspectorHost);
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'unauthorized' });
      expect(refused.body).not.toContain('hello');
      expect(refused.body).not.toContain(token);
    }
    const withToken = { ...inspectorHost, 'x-wharf-token': token };
    const tunnels = await get(inspectorPort, '/api/tunnels', withToken);
    expect(JSON.parse(tunnels.body).tunnels[0]).toMatchObject({
      name: 'cli-demo',
      public_url: url![1],
      config: { addr: `http://localhost:${appPort}` },
    });
    const listed = await get(inspectorPort, '/api/requests/http?q=hello', withToken);
    expect(JSON.parse(listed.body).requests.map((r: { path: string }) => r.path)).toEqual([
      '/hello?from=edge',
    ]);

    // The platform drops the connection: the command says so, and comes back on the same subdomain.
    tp.platform.tunnels.find(tp.accountId, 'cli-demo').session!.destroy();
    await run.waitFor(() => run.stderr().includes('Reconnected: '), 'the reconnection', 15_000);
    expect(run.stderr()).toMatch(/Connection lost: .*retrying in/);
    expect(run.stderr()).toContain(`Reconnected: ${url![1]}`);
    expect((await get(tp.edgePort, '/after', host)).status).toBe(200);
    await run.waitFor(() => run.stdout().includes('/after'), 'the line after reconnecting');

    run.child.kill('SIGINT');
    expect(await exitOf(run)).toBe(0);
    expect(run.stdout()).toContain('Stopped.');
    expect(existsSync(infoFile)).toBe(false);

    // Everything is in the Mirror of its WHARF_HOME.
    const mirror = new Mirror(join(run.home, 'mirror.db'));
    try {
      const paths = mirror.captures.list({}).requests.map((r) => r.path);
      // Newest first; the batch's five, sent at once, in whichever order they were stored.
      expect(paths).toHaveLength(8);
      expect(paths.slice(0, 2)).toEqual(['/after', '/fail']);
      expect(paths.slice(2, 7).sort()).toEqual(['/batch-1', '/batch-2', '/batch-3', '/batch-4', '/batch-5']);
      expect(paths[7]).toBe('/hello?from=edge');
    } finally {
      mirror.close();
    }
  }, 60_000);

  it('says when nothing listens on the local port, and when the app answers there', async () => {
    const idle = await startLocalApp((_req, res) => res.end('late app'));
    const port = idle.port;
    await idle.close();

    const run = start([String(port), '--subdomain', 'cli-late', ...connection()]);
    await run.waitFor(() => run.stdout().includes('Press Ctrl+C'), 'the tunnel to come online');
    await run.waitFor(
      () => run.stderr().includes(`Nothing listens on localhost:${port} yet`),
      'the no-listener warning',
    );
    // The app starts: the port watch (every 3 s) says so.
    await idle.listen();
    try {
      await run.waitFor(
        () => run.stderr().includes(`localhost:${port} answers now.`),
        'the app to answer',
        10_000,
      );
      expect(await get(tp.edgePort, '/', { host: `cli-late.tunnel.localhost:${tp.edgePort}` })).toEqual({
        status: 200,
        body: 'late app',
      });
    } finally {
      run.child.kill('SIGINT');
      expect(await exitOf(run)).toBe(0);
      await idle.close();
    }
  });

  it('starts the local platform in its own process when none runs, and says so', async () => {
    const apiPort = await closedPort();
    const run = start([String(appPort), '--subdomain', 'cli-local', '--no-inspect'], tempDir(), {
      WHARF_PORT: String(apiPort),
    });
    await run.waitFor(
      () => run.stdout().includes('Press Ctrl+C'),
      'the tunnel on the local platform',
      20_000,
    );
    expect(run.stdout()).toMatch(
      /Platform\s+http:\/\/127\.0\.0\.1:\d+ \(local, started in this process: it stops with it\)/,
    );
    expect(run.stdout()).not.toContain('Inspector');
    expect(existsSync(join(run.home, 'inspector.json'))).toBe(false);
    const url = new URL(/Forwarding\s+(\S+)/.exec(run.stdout())![1]!);
    expect(url.hostname).toBe('cli-local.tunnel.localhost');
    const answer = await get(Number(url.port), '/local', { host: url.host });
    expect(answer).toEqual({ status: 200, body: 'local app: GET /local' });
    await run.waitFor(() => run.stdout().includes('/local'), 'the request line');
    run.child.kill('SIGINT');
    expect(await exitOf(run)).toBe(0);
  }, 40_000);

  it('exits 2 on a bad port or option, before connecting', async () => {
    for (const args of [
      ['99999'],
      ['abc'],
      ['0'],
      [String(appPort), '--subdomain', 'Bad_Name'],
      [String(appPort), '--inspect', '10.0.0.1:4040'],
    ]) {
      const run = start([...args, ...connection()]);
      expect(await exitOf(run), args.join(' ')).toBe(2);
    }
    const run = start(['70000', ...connection()]);
    expect(await exitOf(run)).toBe(2);
    expect(run.stderr()).toMatch(/port/);
  });

  it('exits 1 with the platform’s reason when the subdomain is held by another account', async () => {
    const other = await tp.newAccount();
    const holder = new TunnelClient({
      platformUrl: origin,
      apiKey: other.key,
      localPort: appPort,
      subdomain: 'cli-held',
    });
    await holder.start();
    try {
      const run = start([String(appPort), '--subdomain', 'cli-held', '--no-inspect', ...connection()]);
      expect(await exitOf(run)).toBe(1);
      expect(run.stderr()).toMatch(/^wharf: the tunnel subdomain "cli-held" is held by another account$/m);
      expect(run.stdout()).not.toContain('Forwarding');
    } finally {
      await holder.stop();
    }
  });

  it('exits 1 with what to do when no key is saved for the platform', async () => {
    const run = start([String(appPort), '--platform', 'http://127.0.0.1:9', '--no-inspect']);
    expect(await exitOf(run)).toBe(1);
    expect(run.stderr()).toMatch(/no API key is saved for http:\/\/127\.0\.0\.1:9: run `wharf login/);
  });
});
