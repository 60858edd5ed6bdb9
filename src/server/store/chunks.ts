// Files kept in the database for the nodes of a cluster (a release's static sites, an upload, an AI
// project's repository): the bytes in numbered rows of at most CHUNK_BYTES, written in order and read
// back one row at a time, so that neither side ever holds more than a chunk of a file in memory.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.js';

/** A few rows for a typical site or upload, and never much of one in memory. */
export const CHUNK_BYTES = 512 * 1024;

/** The tables of chunks, and the column naming what each chunk belongs to. */
const OWNER_COLUMN = {
  release_files: 'release_id',
  upload_chunks: 'upload_id',
  ai_repo_chunks: 'project_id',
} as const;
export type ChunkTable = keyof typeof OWNER_COLUMN;

type Db = Kysely<Database> | Transaction<Database>;

/** A file over the most a table of chunks takes for one owner. */
export class TooManyBytes extends Error {}

/**
 * Stores `source` as `owner`'s chunks (after any it had); resolves with the bytes stored. Past
 * `maxBytes`, throws TooManyBytes with what it stored removed.
 */
export async function storeChunks(
  db: Db,
  table: ChunkTable,
  owner: string,
  source: AsyncIterable<Buffer>,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<number> {
  const column = OWNER_COLUMN[table];
  await db.deleteFrom(table).where(column, '=', owner).execute();
  let seq = 0;
  let bytes = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = async () => {
    if (pendingBytes === 0) return;
    const data = Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    // The owner column differs per table; the row is the same shape in each.
    await db
      .insertInto(table)
      .values({ [column]: owner, seq, data } as never)
      .execute();
    seq++;
    bytes += data.length;
  };
  for await (const chunk of source) {
    if (bytes + pendingBytes + chunk.length > maxBytes) {
      await db.deleteFrom(table).where(column, '=', owner).execute();
      throw new TooManyBytes(`over ${maxBytes} bytes`);
    }
    pending.push(chunk);
    pendingBytes += chunk.length;
    if (pendingBytes >= CHUNK_BYTES) await flush();
  }
  await flush();
  return bytes;
}

/** `owner`'s chunks in order, one row read at a time; nothing when none are stored. */
export async function* readChunks(db: Db, table: ChunkTable, owner: string): AsyncGenerator<Buffer> {
  const column = OWNER_COLUMN[table];
  for (let seq = 0; ; seq++) {
    const row = await db
      .selectFrom(table)
      .select('data')
      .where(column, '=', owner)
      .where('seq', '=', seq)
      .executeTakeFirst();
    if (!row) return;
    yield Buffer.from(row.data);
  }
}

/** Whether `owner` has chunks stored. */
export async function hasChunks(db: Db, table: ChunkTable, owner: string): Promise<boolean> {
  const row = await db
    .selectFrom(table)
    .select('seq')
    .where(OWNER_COLUMN[table], '=', owner)
    .where('seq', '=', 0)
    .executeTakeFirst();
  return row !== undefined;
}

/** Forgets the chunks of these owners. */
export async function dropChunks(db: Db, table: ChunkTable, owners: string[]): Promise<void> {
  if (owners.length === 0) return;
  await db.deleteFrom(table).where(OWNER_COLUMN[table], 'in', owners).execute();
}
