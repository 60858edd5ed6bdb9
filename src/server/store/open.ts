// Opens the platform's store, migrated to the latest schema: Kysely over better-sqlite3 in WAL mode (a
// file, the default), or over PostgreSQL (`pg`) when given a postgres:// URL, which several platform
// nodes can share. The queries and migrations are the same for both; the few places where the two SQL
// dialects differ ask `dialectOf` (dialect.ts).
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  Kysely,
  type KyselyPlugin,
  type MigrationProvider,
  Migrator,
  OperationNodeTransformer,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  PostgresDialect,
  type PrimitiveValueListNode,
  type QueryId,
  type QueryResult,
  type RootOperationNode,
  SqliteDialect,
  type UnknownRow,
  type ValueNode,
} from 'kysely';
import type pg from 'pg';
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
function typeParsers(types: typeof pg.types): pg.CustomTypesConfig {
  const getTypeParser = (oid: number, format?: 'text' | 'binary'): ((value: string) => unknown) => {
    if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
    return types.getTypeParser(oid, format ?? 'text');
  };
  return { getTypeParser } as pg.CustomTypesConfig;
}

/**
 * `location` is a file path, `:memory:` for a throwaway SQLite database, or a postgres:// URL (the
 * database must exist; its schema is migrated here, under PostgreSQL's migration lock, so nodes starting
 * together migrate once).
 */
export async function openStore(location: string): Promise<Store> {
  const db = isPostgresUrl(location) ? await openPostgres(location) : openSqlite(location);
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

/** pg is loaded only for a PostgreSQL store: a platform on SQLite never needs it. */
async function openPostgres(url: string): Promise<Store> {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    types: typeParsers(pg.types),
  });
  // An idle connection the server dropped (a restart, a failover) is replaced at the next query; its
  // error must not end the process.
  pool.on('error', () => undefined);
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }), plugins: [new NulFreeText()] });
}

const NUL = '\u0000';
const withoutNul = (value: unknown): unknown =>
  typeof value === 'string' && value.includes(NUL) ? value.replaceAll(NUL, '\ufffd') : value;

/** Shows a NUL in a string parameter as U+FFFD: PostgreSQL refuses text with NUL, SQLite keeps it. */
class NulFreeValues extends OperationNodeTransformer {
  protected override transformValue(node: ValueNode, queryId?: QueryId): ValueNode {
    const value = withoutNul(node.value);
    const transformed = super.transformValue(node, queryId);
    return value === node.value ? transformed : { ...transformed, value };
  }

  protected override transformPrimitiveValueList(
    node: PrimitiveValueListNode,
    queryId?: QueryId,
  ): PrimitiveValueListNode {
    const transformed = super.transformPrimitiveValueList(node, queryId);
    return transformed.values.some((v) => withoutNul(v) !== v)
      ? { ...transformed, values: transformed.values.map(withoutNul) }
      : transformed;
  }
}

/**
 * On PostgreSQL, text a tenant controls (an app's output line, a request path) that holds a NUL is
 * stored with U+FFFD in its place instead of failing the write: nothing a tenant sends may stop its
 * logs or the platform's bookkeeping. The API refuses NUL in what it is sent (errors.ts) before this.
 */
class NulFreeText implements KyselyPlugin {
  private readonly values = new NulFreeValues();

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return this.values.transformNode(args.node);
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}
