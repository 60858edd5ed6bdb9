// A throwaway PostgreSQL server for tests: initdb into a temporary folder, then `postgres` on 127.0.0.1
// and a free port, with password (SCRAM) authentication over TCP. PostgreSQL refuses to run as root, so
// when the tests run as root the server runs as `nobody`. stop() shuts it down and removes its files.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface TestPostgres {
  /** The superuser's URL: postgres://postgres:<password>@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** The bin/ folder of the newest installed PostgreSQL with initdb, or null when there is none. */
export function postgresBin(): string | null {
  const root = '/usr/lib/postgresql';
  let versions: string[] = [];
  try {
    versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  } catch {
    return null;
  }
  const version = versions.find((v) => existsSync(join(root, v, 'bin', 'initdb')));
  return version ? join(root, version, 'bin') : null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBin();
  if (!bin) throw new Error('PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb)');
  const asRoot = process.getuid?.() === 0;
  // As root: run PostgreSQL's programs as nobody.
  const command = (program: string, args: string[]): [string, string[]] =>
    asRoot
      ? ['setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', join(bin, program), ...args]]
      : [join(bin, program), args];

  const dir = mkdtempSync(join(tmpdir(), 'wharf-pg-'));
  chmodSync(dir, 0o755);
  const data = join(dir, 'data');
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const pwfile = join(dir, 'pwfile');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o644 });
  if (asRoot) execFileSync('chown', ['-R', 'nobody:nogroup', dir]);

  let child: ChildProcess | null = null;
  const stop = async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child!.once('exit', () => resolve()));
      child.kill('SIGINT'); // fast shutdown
      const timer = setTimeout(() => child?.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const [initdb, initArgs] = command('initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      '--pwfile',
      pwfile,
      '--auth-host=scram-sha-256',
      '--auth-local=trust',
      '--encoding=UTF8',
      '--locale=C',
      '--no-sync',
    ]);
    execFileSync(initdb, initArgs, { stdio: 'pipe', cwd: dir });
    const port = await freePort();
    const [postgres, args] = command('postgres', [
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
    ]);
    const output: string[] = [];
    child = spawn(postgres, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [child.stdout!, child.stderr!]) {
      stream.on('data', (chunk: Buffer) => {
        output.push(chunk.toString());
        if (output.length > 200) output.shift();
      });
    }
    const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`postgres exited: ${output.join('')}`);
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.query('SELECT 1');
        await client.end();
        break;
      } catch (error) {
        await client.end().catch(() => undefined);
        if (Date.now() > deadline) {
          throw new Error(
            `postgres did not accept connections: ${(error as Error).message}\n${output.join('')}`,
          );
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    return { url, port, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
