// Moves a single-node platform's store (SQLite) into a PostgreSQL database (`wharf admin
// migrate-store`): every table's rows, as they are, in one transaction on the target, parents before the
// rows that refer to them; the target must be empty, and each table's count is checked after. Sealed
// values (keys, repository and registry credentials, ACME and certificate keys) are copied sealed: the
// nodes on the new database must use the same server secret.
import { type Kysely, sql } from 'kysely';
import { dialectOf } from './dialect.js';
import type { Database } from './schema.js';

/** Every table, parents first (the foreign keys point up this list). */
export const TABLE_ORDER = [
  'accounts',
  'api_keys',
  'projects',
  'project_hosts',
  'uploads',
  'upload_chunks',
  'project_logs',
  'releases',
  'project_deploys',
  'release_output_copiers',
  'release_files',
  'tunnel_subdomains',
  'ledger_entries',
  'balances',
  'email_daily_counts',
  'domains',
  'domain_challenges',
  'ai_keys',
  'ai_projects',
  'ai_repo_chunks',
  'app_databases',
  'sandbox_users',
  'idempotency_keys',
  'acme_accounts',
  'acme_challenges',
  'tls_certificates',
  'cluster_nodes',
  'tunnel_holders',
  'registry_leftovers',
  'certificate_orders',
  'account_streams',
] as const satisfies ReadonlyArray<keyof Database>;

// Every table of the schema is in the list: a table added to schema.ts and not here fails to compile.
type Missing = Exclude<keyof Database, (typeof TABLE_ORDER)[number]>;
const everyTableListed: Missing extends never ? true : Missing = true;
void everyTableListed;

/** Rows per INSERT: well under PostgreSQL's 65,535 parameters for the widest table. */
const BATCH_ROWS = 500;

/** The name the source's rowid is read under (no table has a column of that name). */
const ROWID = '__wharf_rowid';

export type CopyCounts = Record<(typeof TABLE_ORDER)[number], number>;

export class StoreNotEmpty extends Error {}

/**
 * Copies every row of `from` (a SQLite store) into `to`, which must be migrated and hold no rows;
 * resolves with how many rows each table has (checked on the target). `progress` is told each table as
 * it is done.
 */
export async function copyStore(
  from: Kysely<Database>,
  to: Kysely<Database>,
  progress: (table: string, rows: number) => void = () => undefined,
): Promise<CopyCounts> {
  if (dialectOf(from) !== 'sqlite') throw new Error('the store to copy from must be a SQLite file');
  const held = await countRows(to);
  const nonEmpty = TABLE_ORDER.filter((table) => held[table] > 0);
  if (nonEmpty.length > 0) {
    throw new StoreNotEmpty(
      `the target database already holds rows (${nonEmpty.map((t) => `${t}: ${held[t]}`).join(', ')}); migrate into an empty database`,
    );
  }
  const source = await countRows(from);
  await to.transaction().execute(async (trx) => {
    for (const table of TABLE_ORDER) {
      // Read a page at a time in rowid order (SQLite's own key of every table): a long log is never
      // whole in memory, and no row is read twice or skipped.
      let offset = 0;
      let after = 0;
      for (;;) {
        const page = await from
          .selectFrom(table)
          .selectAll()
          .select(sql<number>`rowid`.as(ROWID))
          .where(sql<number>`rowid`, '>', after)
          .orderBy(sql`rowid`)
          .limit(BATCH_ROWS)
          .execute();
        if (page.length === 0) break;
        after = (page.at(-1) as unknown as Record<string, number>)[ROWID]!;
        const rows = page.map((row) => {
          const { [ROWID]: _rowid, ...columns } = row as Record<string, unknown>;
          return columns;
        });
        await trx
          .insertInto(table)
          .values(rows as never)
          .execute();
        offset += rows.length;
      }
      progress(table, offset);
    }
    // The log's sequence goes on after the highest line copied.
    if (dialectOf(trx) === 'postgres') {
      await sql`select setval(pg_get_serial_sequence('project_logs', 'seq'), coalesce((select max(seq) from project_logs), 0) + 1, false)`.execute(
        trx,
      );
    }
  });
  const copied = await countRows(to);
  const short = TABLE_ORDER.filter((table) => copied[table] !== source[table]);
  if (short.length > 0) {
    throw new Error(
      `the copy does not match: ${short.map((t) => `${t} ${copied[t]} of ${source[t]}`).join(', ')}`,
    );
  }
  return copied;
}

async function countRows(db: Kysely<Database>): Promise<CopyCounts> {
  const counts = {} as CopyCounts;
  for (const table of TABLE_ORDER) {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    counts[table] = Number(row.n);
  }
  return counts;
}
