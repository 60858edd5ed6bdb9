// Migration 0008_domain_ownership on a store made by the migrations before it: domains verified by their
// CNAME alone go back to pending (nothing proved whose they were), several accounts may then hold the
// same name pending, and at most one row per name can be verified.
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, sql, type MigrationProvider } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrations } from '../../../../src/server/store/migrations.js';
import type { Database } from '../../../../src/server/store/schema.js';

let db: Kysely<Database> | undefined;

afterEach(async () => {
  await db?.destroy();
  db = undefined;
});

async function storeAt(name: string): Promise<{ db: Kysely<Database>; migrator: Migrator }> {
  const sqlite = new SQLite(':memory:');
  sqlite.pragma('foreign_keys = ON');
  db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  const provider: MigrationProvider = { getMigrations: async () => migrations };
  const migrator = new Migrator({ db, provider });
  const { error } = await migrator.migrateTo(name);
  if (error) throw error;
  return { db, migrator };
}

async function addAccount(store: Kysely<Database>, id: string): Promise<void> {
  // The columns of 0001, whatever later migrations add to the row type.
  await sql`INSERT INTO accounts (id, email, email_verified, plan, created_at)
    VALUES (${id}, ${`${id}@example.com`}, 1, 'free', '2025-01-01T00:00:00.000Z')`.execute(store);
}

const row = (id: string, account: string, domain: string, verified: number) => ({
  id,
  account_id: account,
  domain,
  project_id: null,
  verified,
  created_at: '2025-01-01T00:00:00.000Z',
  verified_at: verified ? '2025-01-02T00:00:00.000Z' : null,
  checked_at: '2025-01-02T00:00:00.000Z',
  check_detail: verified ? 'CNAME points to cname.localhost' : 'no CNAME, A or AAAA records',
  check_attempts: 3,
  next_check_at: null,
});

describe('migration 0008_domain_ownership', () => {
  it('puts domains verified by a CNAME alone back to pending, keeping the rest of the row', async () => {
    const store = await storeAt('0007_app_databases');
    await addAccount(store.db, 'acc_a');
    await store.db
      .insertInto('domains')
      .values(row('dom_1', 'acc_a', 'shop.example.com', 1))
      .execute();
    await store.db
      .insertInto('domains')
      .values(row('dom_2', 'acc_a', 'www.example.com', 0))
      .execute();
    const { error } = await store.migrator.migrateToLatest();
    expect(error).toBeUndefined();
    const rows = await store.db.selectFrom('domains').selectAll().orderBy('id').execute();
    // Later migrations add columns (hsts, 0014): the rows keep every value they had.
    expect(rows).toEqual([
      {
        ...row('dom_1', 'acc_a', 'shop.example.com', 0),
        verified_at: null,
        check_detail:
          'verified before the TXT ownership record was required: add the TXT record, then verify again',
        hsts: 0,
      },
      { ...row('dom_2', 'acc_a', 'www.example.com', 0), hsts: 0 },
    ]);
  });

  it('lets several accounts hold a name pending, one row per account, and one verified at most', async () => {
    const store = await storeAt('0008_domain_ownership');
    await addAccount(store.db, 'acc_a');
    await addAccount(store.db, 'acc_b');
    await store.db
      .insertInto('domains')
      .values(row('dom_a', 'acc_a', 'shop.example.com', 0))
      .execute();
    await store.db
      .insertInto('domains')
      .values(row('dom_b', 'acc_b', 'shop.example.com', 0))
      .execute();
    await expect(
      store.db
        .insertInto('domains')
        .values(row('dom_a2', 'acc_a', 'shop.example.com', 0))
        .execute(),
    ).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_UNIQUE' });
    await store.db.updateTable('domains').set({ verified: 1 }).where('id', '=', 'dom_a').execute();
    await expect(
      store.db.updateTable('domains').set({ verified: 1 }).where('id', '=', 'dom_b').execute(),
    ).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_UNIQUE' });
  });
});
