// `wharf admin migrate-store` (issue 20): a single-node platform's SQLite store moved into an empty
// PostgreSQL database, and the platform started again on it with the same data dir answers as before:
// the same key, projects, domain, balance; the log's sequence goes on. Into a database that holds rows,
// from a file that is not there, or to a URL that is not PostgreSQL, it refuses and changes nothing.
// Runs in the `postgres` project only (vitest.config.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/server/billing/ledger.js';
import { assertBuilt, runWharf } from '../helpers/cli.js';
import { createProject } from '../helpers/deploy.js';
import { call, startPlatform } from '../helpers/platform.js';
import { type TestDatabase, testDatabase } from '../helpers/test-store.js';

const dataDir = mkdtempSync(join(tmpdir(), 'wharf-migrate-'));
let target: TestDatabase;

beforeAll(async () => {
  assertBuilt();
  target = (await testDatabase())!;
});

afterAll(async () => {
  await target?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

const migrate = (from: string, to: string) =>
  runWharf(['admin', 'migrate-store', '--from', from, '--to', to]);

describe('wharf admin migrate-store', () => {
  it('moves a platform from SQLite to PostgreSQL, and it answers there as it did', async () => {
    // On SQLite, with some of everything.
    const before = await startPlatform({ dataDir, databaseUrl: null });
    const edgePortBefore = before.edgePort;
    let expected: { projects: unknown; domains: unknown; keys: unknown; account: unknown; maxSeq: number };
    try {
      const project = await createProject(before, {
        name: 'Moved',
        subdomain: 'moved',
        deploy_source: 'upload',
        build_config: { start_cmd: 'node server.js' },
      });
      expect(
        (await call(`${before.api}/domains`, { key: before.key, body: { domain: 'moved.example.com' } }))
          .status,
      ).toBe(201);
      expect(
        (
          await call(`${before.api}/keys`, {
            key: before.key,
            body: { name: 'ci', scopes: ['deploy'] },
          })
        ).status,
      ).toBe(201);
      await new Ledger(before.platform.db, before.platform.config).topUp({
        accountId: before.accountId,
        micros: 12_500_000,
        description: 'before the move',
      });
      for (const line of ['first', 'second']) {
        await before.platform.db
          .insertInto('project_logs')
          .values({
            project_id: project.id,
            ts: new Date().toISOString(),
            stream: 'system',
            service: null,
            line,
          })
          .execute();
      }
      const read = async (path: string) => (await call(`${before.api}${path}`, { key: before.key })).body;
      const top = await before.platform.db
        .selectFrom('project_logs')
        .select((eb) => eb.fn.max('seq').as('seq'))
        .executeTakeFirstOrThrow();
      expected = {
        projects: await read('/projects'),
        domains: await read('/domains'),
        keys: await read('/keys'),
        account: await read('/account'),
        maxSeq: Number(top.seq),
      };
    } finally {
      await before.close();
    }

    const moved = await migrate(join(dataDir, 'platform.db'), target.url);
    expect(moved.stderr).toBe('');
    expect(moved.code).toBe(0);
    expect(moved.stdout).toMatch(/^ {2}accounts +1$/m);
    expect(moved.stdout).toMatch(/^ {2}ledger_entries +2$/m);
    expect(moved.stdout).toMatch(/^Copied \d+ rows from .*platform\.db to postgres:\/\/postgres:\*\*\*@/m);
    expect(moved.stdout).not.toContain(new URL(target.url).password);

    // On PostgreSQL, the same data dir (its secret, its local account's key).
    // On the same edge port: project URLs carry it.
    const after = await startPlatform({ dataDir, databaseUrl: target.url, edgePort: edgePortBefore });
    try {
      const read = async (path: string) => (await call(`${after.api}${path}`, { key: after.key })).body;
      expect(await read('/projects')).toEqual(expected.projects);
      expect(await read('/domains')).toEqual(expected.domains);
      // The key's last use moves on as it is used: the rest is as it was.
      const unused = (keys: unknown) =>
        (keys as Array<Record<string, unknown>>).map(({ last_used_at: _used, ...key }) => key);
      expect(unused(await read('/keys'))).toEqual(unused(expected.keys));
      expect(await read('/account')).toEqual(expected.account);
      const [row] = await after.platform.db
        .insertInto('project_logs')
        .values({
          project_id: (expected.projects as Array<{ id: string }>)[0]!.id,
          ts: new Date().toISOString(),
          stream: 'system',
          service: null,
          line: 'after the move',
        })
        .returning('seq')
        .execute();
      expect(row!.seq).toBeGreaterThan(expected.maxSeq);
    } finally {
      await after.close();
    }
  });

  it('refuses a database that holds rows, a file that is not there and a URL that is not PostgreSQL', async () => {
    // `target` holds the first test's rows now.
    const again = await migrate(join(dataDir, 'platform.db'), target.url);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /the target database already holds rows \(accounts: 1, .*\); migrate into an empty database/,
    );
    expect(again.stderr).not.toContain(new URL(target.url).password);

    const missing = await runWharf([
      'admin',
      'migrate-store',
      '--from',
      join(dataDir, 'nope.db'),
      '--to',
      target.url,
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe(`wharf: there is no platform database at ${join(dataDir, 'nope.db')}`);

    const notPostgres = await runWharf([
      'admin',
      'migrate-store',
      '--from',
      join(dataDir, 'platform.db'),
      '--to',
      'mysql://root:hunter2@127.0.0.1/wharf',
    ]);
    expect(notPostgres.code).toBe(2);
    expect(notPostgres.stderr).toMatch(/^wharf: a database URL must be a postgres:\/\/ URL/);
    expect(notPostgres.stderr).not.toContain('hunter2');
  });
});
