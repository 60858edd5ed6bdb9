// Which SQL a store speaks: the few places where SQLite and PostgreSQL differ ask.
import { PostgresAdapter, type QueryExecutorProvider, sql } from 'kysely';

/** A Kysely of any schema, or a transaction of one: all that telling its dialect needs. */
interface HasExecutor {
  getExecutor(): { readonly adapter: object };
}

export type StoreDialect = 'sqlite' | 'postgres';

/**
 * Whether a transaction's reads must lock the rows they will write (SELECT … FOR UPDATE). On SQLite a
 * transaction runs alone (one connection, and its first write takes the database's lock); PostgreSQL
 * runs them side by side, so two charges reading one balance would both spend it.
 */
export function locksRows(db: HasExecutor): boolean {
  return dialectOf(db) === 'postgres';
}

/** The dialect of a store, a migration's Kysely, or a transaction of either. */
export function dialectOf(db: HasExecutor): StoreDialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/**
 * Holds an advisory lock on one account's `what` (tunnels, streams, certificate orders) until the
 * transaction ends, so that a count and the write it admits are one step across the nodes sharing a
 * PostgreSQL store. On SQLite it does nothing: a transaction that writes holds the database's lock.
 */
export async function lockAccount(
  trx: QueryExecutorProvider,
  what: 'tunnels' | 'streams' | 'certificate orders',
  accountId: string,
): Promise<void> {
  if (!locksRows(trx)) return;
  await sql`select pg_advisory_xact_lock(hashtextextended(${`wharf ${what} ${accountId}`}, 0))`.execute(trx);
}
