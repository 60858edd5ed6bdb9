// The `wharf` command as a user runs it: the built bin/wharf.js in a child process.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/server/runtime/process.js';
import { describeLocation } from '../../src/server/store/location.js';
import { call } from '../helpers/platform.js';
import { type CliResult, assertBuilt, runWharf, storeEnv, wharfBin } from '../helpers/cli.js';
import { testDatabase } from '../helpers/test-store.js';

const bin = wharfBin;
const dirs: string[] = [];
const children: ChildProcess[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wharf-cli-'));
  dirs.push(dir);
  return dir;
}

/** `wharf <args>` with this process's environment and `env` (runWharf: the store's too). */
const run = (args: string[], env: Record<string, string> = {}): Promise<CliResult> => runWharf(args, { env });

interface RunningCli {
  child: ChildProcess;
  api: string;
  output: () => string;
  exited: Promise<number | null>;
}

/** Starts `wharf platform` and waits for the line with its URL. */
async function startPlatform(args: string[]): Promise<RunningCli> {
  const platformArgs = ['platform', '--port', '0', '--edge-port', '0', ...args];
  const env = { ...process.env, ...(await storeEnv(platformArgs)) };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...platformArgs], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    const exited = new Promise<number | null>((done) => child.on('close', done));
    const timer = setTimeout(() => reject(new Error(`wharf platform did not start:\n${output}`)), 15_000);
    const onData = (d: Buffer) => {
      output += d.toString();
      const match = /API\s+(http:\/\/127\.0\.0\.1:\d+\/api\/v1)/.exec(output);
      if (match && output.includes('Press Ctrl+C')) {
        clearTimeout(timer);
        resolve({ child, api: match[1]!, output: () => output, exited });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`wharf platform exited with ${code}:\n${output}`));
    });
  });
}

beforeAll(() => {
  assertBuilt();
});

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('wharf platform', () => {
  it('starts on an empty data dir, writes the local account with mode 0600, serves it, and stops cleanly on SIGTERM', async () => {
    const dataDir = tempDir();
    const cli = await startPlatform(['--data-dir', dataDir]);
    expect(cli.output()).toContain('Local account created');
    // Its store: the data dir's SQLite file, or (WHARF_DATABASE_URL) the database the banner names
    // without its password.
    const database = await testDatabase(dataDir);
    expect(existsSync(join(dataDir, 'platform.db'))).toBe(database === null);
    if (database) {
      expect(cli.output()).toContain(`Database   ${describeLocation(database.url)} (PostgreSQL)`);
      expect(cli.output()).not.toContain(decodeURIComponent(new URL(database.url).password));
    }
    const file = join(dataDir, 'local-account.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const local = JSON.parse(readFileSync(file, 'utf8'));
    expect(local).toMatchObject({
      account_id: expect.stringMatching(/^acc_/),
      email: expect.any(String),
      api_key: expect.stringMatching(/^wk_/),
    });

    const account = await call(`${cli.api}/account`, { key: local.api_key });
    expect(account.status).toBe(200);
    expect(account.body).toMatchObject({ id: local.account_id, email_verified: true });
    const created = await call(`${cli.api}/projects`, {
      key: local.api_key,
      body: { name: 'Demo', subdomain: 'demo', repo_url: 'https://example.com/demo.git' },
    });
    expect(created.status).toBe(201);

    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
    expect(cli.output()).toContain('Stopped.');
  });

  it('with --no-local-repos refuses file:// repositories and takes the others', async () => {
    const dataDir = tempDir();
    const repo = tempDir();
    const cli = await startPlatform(['--data-dir', dataDir, '--no-local-repos']);
    const local = JSON.parse(readFileSync(join(dataDir, 'local-account.json'), 'utf8'));
    const refused = await call(`${cli.api}/projects`, {
      key: local.api_key,
      body: { name: 'Local', subdomain: 'local-repo', repo_url: `file://${repo}` },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual([
      { path: 'repo_url', message: expect.stringContaining('--no-local-repos') },
    ]);
    const remote = await call(`${cli.api}/projects`, {
      key: local.api_key,
      body: { name: 'Remote', subdomain: 'remote-repo', repo_url: 'https://example.com/remote.git' },
    });
    expect(remote.status).toBe(201);
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
  });

  it('keeps the local account, its key and its projects across a restart', async () => {
    const dataDir = tempDir();
    const first = await startPlatform(['--data-dir', dataDir]);
    const local = JSON.parse(readFileSync(join(dataDir, 'local-account.json'), 'utf8'));
    await call(`${first.api}/projects`, {
      key: local.api_key,
      body: { name: 'Keep', subdomain: 'keep', image: 'nginx:1.27' },
    });
    first.child.kill('SIGINT');
    expect(await first.exited).toBe(0);

    const second = await startPlatform(['--data-dir', dataDir]);
    expect(second.output()).not.toContain('Local account created');
    expect(JSON.parse(readFileSync(join(dataDir, 'local-account.json'), 'utf8'))).toEqual(local);
    const projects = await call<Array<{ subdomain: string }>>(`${second.api}/projects`, {
      key: local.api_key,
    });
    expect(projects.body.map((p) => p.subdomain)).toEqual(['keep']);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('uses --edge-port and --base-domain in the project URLs it hands out', async () => {
    const dataDir = tempDir();
    const edgePort = await freePort();
    const cli = await startPlatform([
      '--data-dir',
      dataDir,
      '--edge-port',
      String(edgePort),
      '--base-domain',
      'apps.test',
    ]);
    const { api_key } = JSON.parse(readFileSync(join(dataDir, 'local-account.json'), 'utf8'));
    const created = await call(`${cli.api}/projects`, {
      key: api_key,
      body: { name: 'U', subdomain: 'u1', image: 'nginx' },
    });
    expect(created.body.url).toBe(`http://u1.apps.test:${edgePort}`);
    cli.child.kill('SIGTERM');
    await cli.exited;
  });

  it('fails with exit code 1 and one readable line when the port is taken', async () => {
    const server: Server = createServer();
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const port = (server.address() as { port: number }).port;
    try {
      const result = await run([
        'platform',
        '--data-dir',
        tempDir(),
        '--port',
        String(port),
        '--edge-port',
        '0',
      ]);
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(new RegExp(`127\\.0\\.0\\.1:${port} is already in use`));
    } finally {
      server.close();
    }
  });
});

describe('wharf admin create-account', () => {
  it('creates an account while the platform runs, and its key works there at once', async () => {
    const dataDir = tempDir();
    const cli = await startPlatform(['--data-dir', dataDir]);
    const result = await run([
      'admin',
      'create-account',
      '--data-dir',
      dataDir,
      '--email',
      'Dev@Example.com',
      '--json',
    ]);
    expect(result.code).toBe(0);
    const created = JSON.parse(result.stdout);
    expect(created).toEqual({
      account_id: expect.stringMatching(/^acc_/),
      api_key: expect.stringMatching(/^wk_[A-Za-z0-9]{32}$/),
    });
    const account = await call(`${cli.api}/account`, { key: created.api_key });
    expect(account.body).toMatchObject({
      id: created.account_id,
      email: 'dev@example.com',
      email_verified: true,
    });

    const limited = await run([
      'admin',
      'create-account',
      '--data-dir',
      dataDir,
      '--email',
      'ops@example.com',
      '--unverified',
      '--scopes',
      'deploy,email',
      '--json',
    ]);
    const ops = JSON.parse(limited.stdout);
    expect((await call(`${cli.api}/account`, { key: ops.api_key })).body.email_verified).toBe(false);
    expect((await call(`${cli.api}/keys`, { key: ops.api_key })).status).toBe(403);
    expect((await call(`${cli.api}/projects`, { key: ops.api_key })).status).toBe(200);
    cli.child.kill('SIGTERM');
    await cli.exited;
  });

  it('prints the key in words without --json', async () => {
    const result = await run([
      'admin',
      'create-account',
      '--data-dir',
      tempDir(),
      '--email',
      'words@example.com',
    ]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Created account acc_\w+ \(words@example\.com, verified, plan free\)/);
    expect(result.stdout).toMatch(/^wk_[A-Za-z0-9]{32}$/m);
  });

  it('refuses a second account with the same email with exit code 1', async () => {
    const dataDir = tempDir();
    expect(
      (await run(['admin', 'create-account', '--data-dir', dataDir, '--email', 'twice@example.com'])).code,
    ).toBe(0);
    const again = await run([
      'admin',
      'create-account',
      '--data-dir',
      dataDir,
      '--email',
      'TWICE@example.com',
    ]);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe('wharf: an account with the email twice@example.com already exists');
  });
});

describe('wharf app', () => {
  it('serves the UI and the Bridge with an embedded local platform, and stops on SIGINT', async () => {
    const home = tempDir();
    const child = spawn(process.execPath, [bin, 'app', '--port', '0', '--data-dir', home], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, WHARF_PORT: '0', WHARF_EDGE_PORT: '0' },
    });
    children.push(child);
    let output = '';
    const exited = new Promise<number | null>((done) => child.on('close', done));
    const pageUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`wharf app did not start:\n${output}`)), 15_000);
      const onData = (d: Buffer) => {
        output += d.toString();
        const match = /Wharf app: (http:\/\/127\.0\.0\.1:\d+\/#token=\S+)/.exec(output);
        if (match && output.includes('Ctrl+C')) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
    });
    expect(output).toMatch(/Platform\s+http:\/\/127\.0\.0\.1:\d+ \(local, embedded in this process\)/);
    // Where apps and tunnels answer, on the edge port asked for (0: a free one).
    const edge =
      /Edge\s+http:\/\/127\.0\.0\.1:(\d+) \(apps and tunnels: http:\/\/<name>\.localhost:(\d+)\)/.exec(
        output,
      );
    expect(edge).not.toBeNull();
    expect(edge![1]).toBe(edge![2]);
    expect(Number(edge![1])).not.toBe(8788);
    const url = new URL(pageUrl);
    const token = url.hash.replace('#token=', '');
    const page = await fetch(url.origin + '/');
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>Wharf</title>');
    const response = await fetch(`${url.origin}/bridge/invoke/projects.create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-wharf-token': token },
      body: JSON.stringify({ name: 'From app', subdomain: 'from-app', image: 'nginx' }),
    });
    expect(await response.json()).toMatchObject({ ok: true, value: { subdomain: 'from-app' } });
    const settings = await fetch(`${url.origin}/bridge/invoke/settings.get`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-wharf-token': token },
      body: 'null',
    });
    expect(await settings.json()).toMatchObject({ ok: true, value: { mode: 'local', hasApiKey: true } });
    expect(readFileSync(join(home, 'platform', 'local-account.json'), 'utf8')).toContain('wk_');

    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(output).toContain('Stopped.');
  });

  it('refuses a --platform that is neither local nor an http(s) URL', async () => {
    const result = await run(['app', '--port', '0', '--data-dir', tempDir(), '--platform', 'ftp://x']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--platform must be "local" or an http\(s\) URL/);
  });
});

describe('finding the platform', () => {
  it('a command finds the local platform on the ports it took, and says when none runs', async () => {
    const home = tempDir();
    const cli = await startPlatform(['--data-dir', join(home, 'platform')]);
    const running = JSON.parse(readFileSync(join(home, 'platform', 'running.json'), 'utf8'));
    expect(statSync(join(home, 'platform', 'running.json')).mode & 0o777).toBe(0o600);
    expect(running).toMatchObject({
      origin: cli.api.replace('/api/v1', ''),
      edge_origin: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      pid: cli.child.pid,
    });
    // Neither 8787 nor a --platform: found through <home>/platform/running.json.
    const listed = await run(['projects'], { WHARF_HOME: home });
    expect(listed.stderr).toBe('');
    expect(listed.code).toBe(0);

    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
    expect(existsSync(join(home, 'platform', 'running.json'))).toBe(false);
    const gone = await run(['projects'], { WHARF_HOME: home });
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^wharf: /);
  });

  it.each([
    ['a port nothing listens on', 'http://127.0.0.1:9', /fetch refuses that port/],
    ['HTTPS where HTTP is served', 'https://127.0.0.1:PORT', /does not speak HTTPS on that port/],
  ])('says why a platform cannot be reached: %s', async (_label, url, reason) => {
    const home = tempDir();
    const cli = await startPlatform(['--data-dir', join(home, 'platform')]);
    const port = new URL(cli.api).port;
    const result = await run(
      ['projects', '--platform', url.replace('PORT', port), '--api-key', `wk_${'a'.repeat(32)}`],
      { WHARF_HOME: home },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^wharf: cannot reach the platform at https?:\/\/127\.0\.0\.1:\d+: /);
    expect(result.stderr).toMatch(reason);
    expect(result.stderr).not.toMatch(/fetch failed$/m);
  });
});

describe('usage', () => {
  it.each([
    [['admin', 'create-account', '--data-dir', '/tmp/x']],
    [['admin', 'create-account', '--email', 'not-an-email']],
    [['admin', 'create-account', '--email', 'a@b.c', '--scopes', 'deploy,root']],
    [['admin', 'create-account', '--email', 'a@b.c', '--plan', 'gold', '--data-dir', '/tmp/wharf-cli-never']],
    [['platform', '--port', 'eighty']],
    [['platform', '--port', '70000']],
    [['platform', '--no-such-flag']],
    [['no-such-command']],
    [[]],
  ])('exits with 2 and says what is wrong for %j', async (args) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr.length + result.stdout.length).toBeGreaterThan(0);
    // Every error line starts alike, whichever part of the command found it.
    if (result.stderr !== '') expect(result.stderr).toMatch(/^wharf: /);
  });

  it.each([
    [['app', '--api-port', 'eighty'], /^wharf: option '--api-port <port>' argument 'eighty' is invalid/],
    [['app', '--edge-port', '70000'], /^wharf: option '--edge-port <port>' argument '70000' is invalid/],
    [['projects', '--nope'], /^wharf: unknown option '--nope'/],
  ])('refuses %j in the words of every other error', async (args, message) => {
    const result = await run(args, { WHARF_HOME: tempDir() });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });

  it('describes email verification in its own words, not a section of a spec', async () => {
    const result = await run(['email', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).not.toMatch(/API\.md|SPEC\.md|§/);
    expect(result.stdout).toContain('verify email addresses');
  });

  it.each([
    [['--help']],
    [['platform', '--help']],
    [['admin', '--help']],
    [['admin', 'create-account', '--help']],
  ])('prints help and exits 0 for %j', async (args) => {
    const result = await run(args);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: wharf/);
  });

  it('prints its version', async () => {
    const result = await run(['--version']);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('runs as an installed command does: through its shebang, with the Node flags it names', async () => {
    // The kernel reads the shebang (`#!/usr/bin/env -S node <flags>`): a flag Node refuses, or a
    // shebang `env` cannot split, and the command would not start at all.
    expect(readFileSync(bin, 'utf8').split('\n', 1)[0]).toMatch(/^#!\/usr\/bin\/env -S node --/);
    const result = await runWharf(['--version'], { viaShebang: true });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
