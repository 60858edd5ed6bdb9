// Which store the tests use: SQLite files, as the platform does by default, or, with
// WHARF_TEST_STORE=postgres (the `postgres` project of vitest.config.ts), a PostgreSQL database of its
// own for each store a test opens, on the one server the project started for the run
// (postgres-global.ts).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Insertable } from 'kysely';
import pg from 'pg';
import { inject } from 'vitest';
import { createAccount } from '../../src/server/accounts/accounts.js';
import { type Store, openStore } from '../../src/server/store/open.js';
import type { ProjectsTable } from '../../src/server/store/schema.js';

export const TEST_STORE: 'sqlite' | 'postgres' =
  process.env.WHARF_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

let databases = 0;
/** The database of each data dir a test named: a platform started again on it finds its store. */
const byDataDir = new Map<string, TestDatabase>();

export interface TestDatabase {
  /** postgres://…/<a database of its own> */
  url: string;
  /** Drops the database (its connections first). */
  drop(): Promise<void>;
}

/**
 * A fresh, empty PostgreSQL database when the tests run on PostgreSQL; null on SQLite. With `dataDir`
 * (a data dir the test made and keeps), the same database each time it is asked for, as a SQLite store
 * in that dir would be: it is left for the server's teardown rather than dropped at a platform's close.
 */
export async function testDatabase(dataDir?: string): Promise<TestDatabase | null> {
  if (TEST_STORE !== 'postgres') return null;
  const known = dataDir === undefined ? undefined : byDataDir.get(dataDir);
  if (known) return known;
  const database = await newDatabase();
  if (dataDir === undefined) return database;
  const kept = { url: database.url, drop: async () => undefined };
  byDataDir.set(dataDir, kept);
  return kept;
}

async function newDatabase(): Promise<TestDatabase> {
  const adminUrl = inject('postgresUrl');
  databases += 1;
  const name = `wharf_test_${process.pid}_${databases}`;
  await admin(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** Where a test that opens the store itself opens it: `<dir>/platform.db`, or a fresh database. */
export async function testStoreLocation(dir: string): Promise<{ location: string; drop(): Promise<void> }> {
  const database = await testDatabase();
  if (database) return { location: database.url, drop: database.drop };
  return { location: join(dir, 'platform.db'), drop: async () => undefined };
}

async function admin(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/**
 * A project of a new account written straight to `db` (for the suites below the API); `tag` names both
 * (unique per store). Resolves with the project's id.
 */
export async function insertTestProject(
  db: Store,
  tag: string,
  values: Partial<Insertable<ProjectsTable>> = {},
): Promise<string> {
  const { accountId } = await createAccount(db, {
    email: `${tag}@example.test`,
    verified: true,
    plan: 'free',
    scopes: ['full'],
  });
  const now = new Date().toISOString();
  const projectId = `prj_${tag.replace(/[^a-z0-9]/gi, '')}`;
  await db
    .insertInto('projects')
    .values({
      id: projectId,
      account_id: accountId,
      name: tag,
      subdomain: tag.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
      deploy_source: 'upload',
      repo_url: null,
      repo_url_secret: null,
      git_host_repo: null,
      branch: null,
      image: null,
      env_vars: '{}',
      build_config: '{}',
      status: 'created',
      created_at: now,
      updated_at: now,
      last_deploy_at: null,
      release: null,
      last_deploy_error: null,
      registry_auth_secret: null,
      ...values,
    })
    .execute();
  return projectId;
}

/**
 * `db` counting the reads made through it (Kysely's plugin hook): for tests of how often a component
 * looks at the store. `reads()` is the count so far.
 */
export function countingReads(db: Store): { db: Store; reads(): number } {
  let reads = 0;
  const counted = db.withPlugin({
    transformQuery: (args) => {
      if (args.node.kind === 'SelectQueryNode') reads++;
      return args.node;
    },
    transformResult: async (args) => args.result,
  });
  return { db: counted, reads: () => reads };
}

/**
 * Everything a platform's store holds, as bytes, to look for what must never be stored plainly: the
 * SQLite files of `dataDir` (the database and its write-ahead log), or on PostgreSQL every row of every
 * table of its database (`databaseUrl`, else the one kept for `dataDir`), binary columns as they are.
 */
export async function storeBytes(dataDir: string, databaseUrl: string | null = null): Promise<Buffer> {
  const url = databaseUrl ?? byDataDir.get(dataDir)?.url ?? null;
  if (url === null) {
    return Buffer.concat(
      ['platform.db', 'platform.db-wal', 'platform.db-shm']
        .map((name) => join(dataDir, name))
        .filter((file) => existsSync(file))
        .map((file) => readFileSync(file)),
    );
  }
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const tables = await client.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables
       WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
    );
    const parts: Buffer[] = [];
    for (const { name } of tables.rows) {
      const rows = await client.query(`SELECT * FROM "${name}"`);
      for (const row of rows.rows as Array<Record<string, unknown>>) {
        for (const value of Object.values(row)) {
          if (value === null || value === undefined) continue;
          if (Buffer.isBuffer(value)) parts.push(value);
          else if (typeof value === 'object') parts.push(Buffer.from(JSON.stringify(value)));
          else parts.push(Buffer.from(String(value)));
        }
      }
    }
    return Buffer.concat(parts);
  } finally {
    await client.end();
  }
}

/**
 * Runs `read` on the store a platform of `dataDir` keeps (running or not): its SQLite file, or the
 * PostgreSQL database kept for that dir.
 */
export async function withKeptStore<T>(dataDir: string, read: (db: Store) => Promise<T>): Promise<T> {
  const db = await openStore(byDataDir.get(dataDir)?.url ?? join(dataDir, 'platform.db'));
  try {
    return await read(db);
  } finally {
    await db.destroy();
  }
}
