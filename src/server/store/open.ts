// Opens the platform's store, migrated to the latest schema: Kysely over better-sqlite3 in WAL mode (a
// file, the default), or over PostgreSQL (`pg`) when given a postgres:// URL, which several platform
// nodes can share. The queries and migrations are the same for both; the few places where the two SQL
// dialects differ ask `dialectOf` (dialect.ts).
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, type MigrationProvider, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { describeLocation, isPostgresUrl, withoutPasswords } from './location.js';
import { migrations } from './migrations.js';
import type { Database } from './schema.js';

export { type StoreDialect, dialectOf } from './dialect.js';

export type Store = Kysely<Database>;

/**
 * PostgreSQL's 64-bit integers (bigint columns, count(*)) and numerics (sum of bigints) come from `pg`
 * as strings; the store's values (micro-dollars, byte sizes, counts) are integers well within 2^53, and
 * the code reads them as numbers, as better-sqlite3 gives them.
 */
const INT8_OID = 20;
const NUMERIC_OID = 1700;
function getTypeParser(oid: number, format?: 'text' | 'binary'): (value: string) => unknown {
  if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
  return pg.types.getTypeParser(oid, format ?? 'text');
}

/**
 * `location` is a file path, `:memory:` for a throwaway SQLite database, or a postgres:// URL (the
 * database must exist; its schema is migrated here, under PostgreSQL's migration lock, so nodes starting
 * together migrate once).
 */
export async function openStore(location: string): Promise<Store> {
  const db = isPostgresUrl(location) ? openPostgres(location) : openSqlite(location);
  const provider: MigrationProvider = { getMigrations: async () => migrations };
  let outcome;
  try {
    outcome = await new Migrator({ db, provider }).migrateToLatest();
  } catch (error) {
    outcome = { error, results: undefined };
  }
  if (outcome.error) {
    await db.destroy();
    const failed = outcome.results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(
      `could not migrate the database ${describeLocation(location)}${failed ? ` (migration ${failed})` : ''}: ${withoutPasswords(outcome.error instanceof Error ? outcome.error.message : String(outcome.error))}`,
    );
  }
  return db;
}

function openSqlite(file: string): Store {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  // Another process (`wharf admin …`) may write while the platform runs: wait for its lock.
  sqlite.pragma('busy_timeout = 5000');
  return new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
}

function openPostgres(url: string): Store {
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    types: { getTypeParser } as pg.CustomTypesConfig,
  });
  // An idle connection the server dropped (a restart, a failover) is replaced at the next query; its
  // error must not end the process.
  pool.on('error', () => undefined);
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
