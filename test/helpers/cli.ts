// Runs the built `wharf` (bin/wharf.js) as a user would: a child process, its output collected, killed
// when it outlives its time.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { testDatabase } from './test-store.js';

const root = join(import.meta.dirname, '..', '..');
export const wharfBin = join(root, 'bin', 'wharf.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Throws when dist/ is missing, naming the command that builds it. */
export function assertBuilt(): void {
  if (!existsSync(join(root, 'dist', 'cli.js'))) {
    throw new Error('dist/ is missing: run `npm run build` first (npm test does)');
  }
}

/**
 * The environment of a `wharf` run: this process's plus `env`; with `home`, WHARF_HOME is that and the
 * developer's WHARF_PLATFORM_URL, WHARF_API_KEY, WHARF_PORT and WHARF_DATA_DIR are left out.
 */
export function wharfEnv(options: { home?: string; env?: Record<string, string> }): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (options.home !== undefined) {
    for (const name of ['WHARF_PLATFORM_URL', 'WHARF_API_KEY', 'WHARF_PORT', 'WHARF_DATA_DIR'])
      delete env[name];
    env.WHARF_HOME = options.home;
  }
  return Object.assign(env, options.env);
}

/**
 * The store's environment of `wharf platform` or `wharf admin` on `--data-dir D` (in `args`): on
 * PostgreSQL (WHARF_TEST_STORE) WHARF_DATABASE_URL, D's own database, the same each time D is named, as
 * its SQLite file would be; nothing on SQLite, for any other command, or where the test names a
 * database (`--database-url` in `args`, WHARF_DATABASE_URL in `env`).
 */
export async function storeEnv(
  args: string[],
  env: Record<string, string> = {},
): Promise<Record<string, string>> {
  const at = args.indexOf('--data-dir');
  if (!['platform', 'admin'].includes(args[0] ?? '') || at === -1 || args[at + 1] === undefined) return {};
  // The test names the store itself.
  if (args.includes('--database-url') || env.WHARF_DATABASE_URL !== undefined) return {};
  const database = await testDatabase(args[at + 1]);
  return database ? { WHARF_DATABASE_URL: database.url } : {};
}

/**
 * `wharf <args>` with `env` (default: this process's) and the store's (storeEnv), killed after
 * `timeoutMs`. `home` sets WHARF_HOME, and then the developer's WHARF_PLATFORM_URL, WHARF_API_KEY and
 * WHARF_PORT are left out. `viaShebang`: bin/wharf.js is run itself, as an installed command is (the
 * kernel reads its shebang, Node flags and all), rather than by this process's `node`.
 */
export async function runWharf(
  args: string[],
  options: { home?: string; env?: Record<string, string>; timeoutMs?: number; viaShebang?: boolean } = {},
): Promise<CliResult> {
  const env = wharfEnv({ ...options, env: { ...(await storeEnv(args, options.env)), ...options.env } });
  const [command, argv] = options.viaShebang ? [wharfBin, args] : [process.execPath, [wharfBin, ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
