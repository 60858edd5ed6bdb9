// The operator's plans through the CLI: `wharf platform` and `wharf admin` read the same plans file
// (the data dir's plans.json, or --plans), print what each plan gives a project, refuse a bad file
// with one readable line, and `wharf admin set-plan` moves an account to another plan.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, runWharf, storeEnv, wharfBin, wharfEnv } from '../helpers/cli.js';
import { describeLocation } from '../../src/server/store/location.js';
import { call } from '../helpers/platform.js';
import { testDatabase } from '../helpers/test-store.js';

const dirs: string[] = [];
const children: ChildProcess[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wharf-cli-plans-'));
  dirs.push(dir);
  return dir;
}

const PLANS = {
  default_plan: 'hobby',
  plans: {
    hobby: { allowance_usd: 2, memory_mib: 192, cpus: 0.5, pids: 128 },
    team: { allowance_usd: 40, memory_mib: 1024, cpus: 2 },
  },
};

/** A data dir with the plans above in its plans.json. */
function dataDirWithPlans(): string {
  const dataDir = tempDir();
  writeFileSync(join(dataDir, 'plans.json'), JSON.stringify(PLANS));
  return dataDir;
}

/** Starts `wharf platform` and waits until it says it is ready; resolves with its API URL and output. */
async function startPlatform(args: string[]): Promise<{ api: string; output: string; child: ChildProcess }> {
  const platformArgs = ['platform', '--port', '0', '--edge-port', '0', '--runtime', 'sandbox', ...args];
  const env = wharfEnv({ home: tempDir(), env: await storeEnv(platformArgs) });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [wharfBin, ...platformArgs], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    const timer = setTimeout(() => reject(new Error(`wharf platform did not start:\n${output}`)), 20_000);
    const onData = (d: Buffer) => {
      output += d.toString();
      const match = /API\s+(http:\/\/127\.0\.0\.1:\d+\/api\/v1)/.exec(output);
      if (match && output.includes('Press Ctrl+C')) {
        clearTimeout(timer);
        resolve({ api: match[1]!, output, child });
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

beforeAll(() => assertBuilt());
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('plans through the CLI', () => {
  it('wharf platform and wharf admin agree on the data dir’s plans; set-plan moves an account', async () => {
    const dataDir = dataDirWithPlans();
    const cli = await startPlatform(['--data-dir', dataDir]);
    expect(cli.output).toContain(`Plans      from ${join(dataDir, 'plans.json')}; new accounts: hobby`);
    expect(cli.output).toContain('hobby: $2 a month; each project 192 MiB memory, 0.5 CPU, 128 processes');
    // team leaves processes to --sandbox-pids (1024 by default).
    expect(cli.output).toContain('team: $40 a month; each project 1024 MiB memory, 2 CPU, 1024 processes');

    const created = await runWharf([
      'admin',
      'create-account',
      '--data-dir',
      dataDir,
      '--email',
      'p@example.com',
      '--json',
    ]);
    expect(created.code).toBe(0);
    const { account_id, api_key } = JSON.parse(created.stdout) as { account_id: string; api_key: string };
    expect((await call<{ plan: string }>(`${cli.api}/account`, { key: api_key })).body.plan).toBe('hobby');

    const moved = await runWharf([
      'admin',
      'set-plan',
      '--data-dir',
      dataDir,
      '--account',
      account_id,
      '--plan',
      'team',
      '--json',
    ]);
    expect(moved.code).toBe(0);
    expect(JSON.parse(moved.stdout)).toEqual({ account_id, plan: 'team', previous_plan: 'hobby' });
    expect((await call<{ plan: string }>(`${cli.api}/account`, { key: api_key })).body.plan).toBe('team');

    const words = await runWharf([
      'admin',
      'set-plan',
      '--data-dir',
      dataDir,
      '--account',
      account_id,
      '--plan',
      'hobby',
    ]);
    expect(words.stdout).toContain(`${account_id} is now on plan hobby (was team)`);
    expect(words.stdout).toContain(
      'each project: 192 MiB memory, 0.5 CPU, 128 processes, from its next start',
    );
  }, 60_000);

  it('takes --plans before the data dir’s file', async () => {
    const dataDir = dataDirWithPlans();
    const other = join(tempDir(), 'other.json');
    writeFileSync(other, JSON.stringify({ plans: { only: { allowance_usd: 0 } } }));
    const created = await runWharf([
      'admin',
      'create-account',
      '--data-dir',
      dataDir,
      '--plans',
      other,
      '--email',
      'o@example.com',
    ]);
    expect(created.code).toBe(0);
    expect(created.stdout).toContain('plan only');
    const refused = await runWharf([
      'admin',
      'create-account',
      '--data-dir',
      dataDir,
      '--plans',
      other,
      '--email',
      'h@example.com',
      '--plan',
      'hobby',
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('unknown plan "hobby"; plans: only');
  });

  it('refuses an unknown plan or account in set-plan, changing nothing', async () => {
    const dataDir = dataDirWithPlans();
    const created = await runWharf([
      'admin',
      'create-account',
      '--data-dir',
      dataDir,
      '--email',
      'u@example.com',
      '--json',
    ]);
    const { account_id } = JSON.parse(created.stdout) as { account_id: string };
    const gold = await runWharf([
      'admin',
      'set-plan',
      '--data-dir',
      dataDir,
      '--account',
      account_id,
      '--plan',
      'gold',
    ]);
    expect(gold.code).toBe(2);
    expect(gold.stderr).toContain('unknown plan "gold"; plans: hobby, team');
    const nobody = await runWharf([
      'admin',
      'set-plan',
      '--data-dir',
      dataDir,
      '--account',
      'acc_nobody',
      '--plan',
      'team',
    ]);
    expect(nobody.code).toBe(1);
    // The store is named: its data dir, or its database without the password.
    const database = await testDatabase(dataDir);
    const store = database ? describeLocation(database.url) : dataDir;
    expect(nobody.stderr.trim()).toBe(`wharf: there is no account acc_nobody in ${store}`);
    if (database) expect(nobody.stderr).not.toContain(decodeURIComponent(new URL(database.url).password));
    const malformed = await runWharf([
      'admin',
      'set-plan',
      '--data-dir',
      dataDir,
      '--account',
      'bob',
      '--plan',
      'team',
    ]);
    expect(malformed.code).toBe(2);
  });

  it.each([
    ['a file that is not JSON', '{ "plans": ', /is not JSON/],
    [
      'a default that is not a plan',
      JSON.stringify({ default_plan: 'x', plans: { a: { allowance_usd: 1 } } }),
      /default_plan: "x" is not one of the plans/,
    ],
    [
      'a negative memory',
      JSON.stringify({ plans: { a: { allowance_usd: 1, memory_mib: -1 } } }),
      /plans\.a\.memory_mib/,
    ],
  ])('wharf platform refuses %s in one readable line, before listening', async (_what, text, message) => {
    const bad = join(tempDir(), 'plans.json');
    writeFileSync(bad, text);
    const result = await runWharf(
      ['platform', '--port', '0', '--edge-port', '0', '--data-dir', tempDir(), '--plans', bad],
      {
        home: tempDir(),
      },
    );
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).not.toContain('listening');
  });

  it('wharf platform says a named plans file is missing', async () => {
    const result = await runWharf(
      [
        'platform',
        '--port',
        '0',
        '--edge-port',
        '0',
        '--data-dir',
        tempDir(),
        '--plans',
        '/nonexistent/plans.json',
      ],
      {
        home: tempDir(),
      },
    );
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      'wharf: cannot read the plans file /nonexistent/plans.json: there is no such file',
    );
  });
});
