// The store on PostgreSQL (issue 20), what only PostgreSQL can get wrong: the schema migrates on an
// empty database, once when several nodes start together; 64-bit values (micro-dollars past 2^31) and
// counts come back as numbers; a race for a unique name is the same conflict as on SQLite; concurrent
// charges on one balance serialize instead of both spending it; the log's sequence keeps counting; and
// a bad URL or a wrong password says so without printing the password. Runs in the `postgres` project
// only (vitest.config.ts), on the server it started.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDatabaseUrl } from '../../src/cli/options.js';
import { createAccount } from '../../src/server/accounts/accounts.js';
import { Ledger } from '../../src/server/billing/ledger.js';
import { resolveConfig } from '../../src/server/config.js';
import { isUniqueViolation } from '../../src/server/store/errors.js';
import { describeLocation } from '../../src/server/store/location.js';
import { type Store, dialectOf, openStore } from '../../src/server/store/open.js';
import { assertBuilt, runWharf } from '../helpers/cli.js';
import { type TestDatabase, testDatabase } from '../helpers/test-store.js';

const dir = mkdtempSync(join(tmpdir(), 'wharf-pg-store-'));
const config = resolveConfig({ dataDir: dir });
let database: TestDatabase;
let db: Store;

beforeAll(async () => {
  database = (await testDatabase())!;
  db = await openStore(database.url);
});

afterAll(async () => {
  await db?.destroy();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function account(email: string): Promise<string> {
  return (await createAccount(db, { email, verified: true, plan: 'free', scopes: ['full'] })).accountId;
}

describe('the store on PostgreSQL', () => {
  it('migrates an empty database, and once when several nodes open it together', async () => {
    expect(dialectOf(db)).toBe('postgres');
    const fresh = (await testDatabase())!;
    try {
      const nodes = await Promise.all([1, 2, 3].map(() => openStore(fresh.url)));
      const applied = await nodes[0]!
        .selectFrom('kysely_migration' as never)
        .select('name' as never)
        .execute();
      const names = (applied as Array<{ name: string }>).map((row) => row.name);
      expect(names.length).toBeGreaterThan(10);
      expect(new Set(names).size).toBe(names.length);
      await Promise.all(nodes.map((node) => node.destroy()));
      // Opened again: nothing left to migrate, nothing migrated twice.
      const again = await openStore(fresh.url);
      await again.destroy();
    } finally {
      await fresh.drop();
    }
  });

  it('keeps 64-bit amounts and gives numbers back, as SQLite does', async () => {
    const accountId = await account('big@example.com');
    const ledger = new Ledger(db, config);
    // $5,000 of top-up: 5e9 micro-dollars, past a 32-bit integer.
    await ledger.topUp({ accountId, micros: 5_000_000_000, description: 'a large top-up' });
    const row = await db
      .selectFrom('balances')
      .selectAll()
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(row.topup_micros).toBe(5_000_000_000);
    expect(typeof row.allowance_micros).toBe('number');
    const { n } = await db
      .selectFrom('ledger_entries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(n).toBe(2); // the month's allowance, and the top-up
    const { total } = await db
      .selectFrom('ledger_entries')
      .select((eb) => eb.fn.sum<number>('amount_micros').as('total'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(total).toBe(5_000_000_000 + row.allowance_micros);
  });

  it('says a race for a unique name is a unique violation', async () => {
    // What the loser of a race meets: the row went in between its check and its insert.
    const row = {
      email: 'taken@example.com',
      email_verified: 1,
      plan: 'free',
      created_at: new Date().toISOString(),
    };
    await db
      .insertInto('accounts')
      .values({ id: 'acc_pg_1', ...row })
      .execute();
    const error = await db
      .insertInto('accounts')
      .values({ id: 'acc_pg_2', ...row })
      .execute()
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(isUniqueViolation(error)).toBe(true);
    expect(isUniqueViolation(new Error('something else'))).toBe(false);
  });

  it('serializes charges on one balance: concurrent ones never spend more than there is', async () => {
    const accountId = await account('race@example.com');
    const ledger = new Ledger(db, config);
    const available = await ledger.availableMicros(accountId);
    const each = Math.floor(available / 4) + 1; // four fit only three times
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        ledger.charge({
          accountId,
          micros: each,
          kind: 'test',
          description: `charge ${i}`,
          idempotencyKey: `race-${i}`,
        }),
      ),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(3);
    const left = await ledger.availableMicros(accountId);
    expect(left).toBe(available - 3 * each);
    expect(left).toBeGreaterThanOrEqual(0);
  });

  it('numbers log lines in order across inserts', async () => {
    const accountId = await account('logs@example.com');
    const now = new Date().toISOString();
    await db
      .insertInto('projects')
      .values({
        id: 'prj_pg',
        account_id: accountId,
        name: 'P',
        subdomain: 'pg-logs',
        deploy_source: 'upload',
        env_vars: '{}',
        build_config: '{}',
        status: 'stopped',
        created_at: now,
        updated_at: now,
      })
      .execute();
    const seqs: number[] = [];
    for (const line of ['one', 'two', 'three']) {
      const [row] = await db
        .insertInto('project_logs')
        .values({ project_id: 'prj_pg', ts: now, stream: 'stdout', service: null, line })
        .returning('seq')
        .execute();
      seqs.push(row!.seq);
    }
    expect(seqs.every((seq) => typeof seq === 'number')).toBe(true);
    expect(seqs[1]! - seqs[0]!).toBe(1);
    expect(seqs[2]! - seqs[1]!).toBe(1);
  });

  it('stores text with a NUL (PostgreSQL refuses it) with U+FFFD in its place, in values, lists and raw SQL', async () => {
    const now = new Date().toISOString();
    await db
      .insertInto('project_logs')
      .values([
        { project_id: 'prj_pg', ts: now, stream: 'stdout', service: null, line: 'nul\u0000one' },
        { project_id: 'prj_pg', ts: now, stream: 'stdout', service: null, line: 'nul\u0000two' },
      ])
      .execute();
    const rows = await db
      .selectFrom('project_logs')
      .select('line')
      .where('line', 'in', ['nul\u0000one', 'nul\u0000two'])
      .orderBy('seq')
      .execute();
    expect(rows.map((r) => r.line)).toEqual(['nul\ufffdone', 'nul\ufffdtwo']);
    const looked = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM project_logs WHERE line = ${'nul\u0000one'}`.execute(db);
    expect(looked.rows[0]!.n).toBe(1);
    // A lookup by an id with a NUL finds nothing, rather than failing.
    expect(await db.selectFrom('projects').select('id').where('id', '=', 'prj\u0000').execute()).toEqual([]);
  });

  it('refuses a wrong password or a missing database with the reason, never the password', async () => {
    const wrong = new URL(database.url);
    wrong.password = 'not-the-password-3f9a';
    const error = await openStore(wrong.toString()).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/could not migrate the database postgres:\/\/postgres:\*\*\*@/);
    expect(error?.message).toMatch(/password authentication failed/);
    expect(error?.message).not.toContain('not-the-password-3f9a');

    const missing = new URL(database.url);
    missing.pathname = '/no_such_database';
    const gone = await openStore(missing.toString()).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(gone?.message).toMatch(/no_such_database" does not exist/);
    expect(describeLocation(missing.toString())).not.toContain(new URL(database.url).password);
  });

  it('lets `wharf platform` exit when it fails after opening the database (the pool is closed)', async () => {
    assertBuilt();
    const data = mkdtempSync(join(tmpdir(), 'wharf-pg-fail-'));
    try {
      // The secret file cannot be read: the start fails once the store is open.
      mkdirSync(join(data, 'secret'));
      const started = Date.now();
      const result = await runWharf(
        ['platform', '--data-dir', data, '--database-url', database.url, '--port', '0', '--edge-port', '0'],
        { timeoutMs: 20_000 },
      );
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toMatch(/EISDIR/);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });
});

describe('--database-url', () => {
  it('takes a postgres:// or postgresql:// URL with a host and a database', () => {
    expect(parseDatabaseUrl('postgres://u:p@127.0.0.1:5432/wharf')).toBe(
      'postgres://u:p@127.0.0.1:5432/wharf',
    );
    expect(parseDatabaseUrl('postgresql://db.internal/wharf')).toBe('postgresql://db.internal/wharf');
  });

  it('refuses anything else with a reason that does not repeat the value', () => {
    for (const bad of [
      'platform.db',
      'mysql://u:secret@host/db',
      'postgres://u:secret@host',
      'postgres://u:secret@host/',
    ]) {
      let message = '';
      try {
        parseDatabaseUrl(bad);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/must/);
      expect(message).not.toContain('secret');
    }
  });
});
