// Files kept in the store in chunks (store/chunks.ts: a release's static sites and uploads, for the
// nodes of a cluster): written in order in rows of at most CHUNK_BYTES and read back the same, one row
// at a time; past the most a caller allows, refused with nothing left behind; gone with their owner.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStore } from '../../src/server/runtime/releases.js';
import {
  CHUNK_BYTES,
  TooManyBytes,
  dropChunks,
  hasChunks,
  readChunks,
  storeChunks,
} from '../../src/server/store/chunks.js';
import { type Store, openStore } from '../../src/server/store/open.js';
import { insertTestProject, testStoreLocation } from '../helpers/test-store.js';

const dir = mkdtempSync(join(tmpdir(), 'wharf-chunks-'));
let db: Store;
let drop: () => Promise<void>;
let release = 0;

beforeAll(async () => {
  const location = await testStoreLocation(dir);
  drop = location.drop;
  db = await openStore(location.location);
});

afterAll(async () => {
  await db?.destroy();
  await drop?.();
  rmSync(dir, { recursive: true, force: true });
});

/** A release of a new project of a new account: what release_files rows belong to. */
async function newRelease(): Promise<string> {
  const n = ++release;
  const projectId = await insertTestProject(db, `chunks${n}`);
  const id = `rel_chunks${n}`;
  await new ReleaseStore(db).begin({ id, projectId, source: 'test', envVars: {} });
  return id;
}

async function* pieces(bytes: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function readAll(owner: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of readChunks(db, 'release_files', owner)) parts.push(part);
  return Buffer.concat(parts);
}

describe('files in chunks', () => {
  it('stores a file in rows of at most a chunk and reads it back the same', async () => {
    const owner = await newRelease();
    const file = randomBytes(CHUNK_BYTES * 2 + 12_345);
    expect(await storeChunks(db, 'release_files', owner, pieces(file, 64 * 1024))).toBe(file.length);
    const rows = await db
      .selectFrom('release_files')
      .select(['seq', 'data'])
      .where('release_id', '=', owner)
      .execute();
    expect(rows.map((r) => r.seq).sort()).toEqual([0, 1, 2]);
    for (const row of rows) expect(row.data.length).toBeLessThanOrEqual(CHUNK_BYTES + 64 * 1024);
    expect((await readAll(owner)).equals(file)).toBe(true);
    expect(await hasChunks(db, 'release_files', owner)).toBe(true);

    // Stored again: the new file replaces the old one.
    const smaller = randomBytes(1000);
    await storeChunks(db, 'release_files', owner, pieces(smaller, 300));
    expect((await readAll(owner)).equals(smaller)).toBe(true);
  });

  it('refuses a file over the most allowed, and leaves nothing of it', async () => {
    const owner = await newRelease();
    const file = randomBytes(CHUNK_BYTES * 3);
    await expect(
      storeChunks(db, 'release_files', owner, pieces(file, 64 * 1024), CHUNK_BYTES * 2),
    ).rejects.toBeInstanceOf(TooManyBytes);
    expect(await hasChunks(db, 'release_files', owner)).toBe(false);
    expect(await readAll(owner)).toHaveLength(0);
  });

  it('forgets them when dropped, and with their release', async () => {
    const kept = await newRelease();
    const dropped = await newRelease();
    for (const owner of [kept, dropped])
      await storeChunks(db, 'release_files', owner, pieces(randomBytes(10), 10));
    await dropChunks(db, 'release_files', [dropped]);
    expect(await hasChunks(db, 'release_files', dropped)).toBe(false);
    expect(await hasChunks(db, 'release_files', kept)).toBe(true);
    await db.deleteFrom('releases').where('id', '=', kept).execute();
    expect(await hasChunks(db, 'release_files', kept)).toBe(false);
  });
});
