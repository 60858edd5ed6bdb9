// The Mirror: the Engine's local SQLite (better-sqlite3, WAL) that keeps what the app has seen, so it
// can be shown offline. Rows are filed under the platform origin and account they came from, so a
// switch of platform or key never shows another account's data. Schema versions use user_version.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import type { Project } from '../../shared/api/projects.js';
import {
  CAPTURES_FIFO_MERGES,
  CAPTURES_MIGRATION,
  CaptureStore,
  type CaptureStoreOptions,
  migrateCapturesToSpecFields,
} from './captures.js';

/** SQL, or a step that needs code (rows rewritten one by one); each runs inside the migration's transaction. */
const MIGRATIONS: Array<string | ((db: SQLite.Database) => void)> = [
  `CREATE TABLE projects (
     platform TEXT NOT NULL,
     account_id TEXT NOT NULL,
     id TEXT NOT NULL,
     json TEXT NOT NULL,
     PRIMARY KEY (platform, account_id, id)
   );
   CREATE TABLE snapshots (
     platform TEXT NOT NULL,
     account_id TEXT NOT NULL,
     kind TEXT NOT NULL,
     fetched_at TEXT NOT NULL,
     PRIMARY KEY (platform, account_id, kind)
   );
   CREATE TABLE accounts (
     platform TEXT NOT NULL PRIMARY KEY,
     account_id TEXT NOT NULL
   );`,
  // 2: the traffic history of the tunnels (captures.ts).
  CAPTURES_MIGRATION,
  // 3: stored exchanges in SPEC.md §2.4's fields (captures.ts).
  migrateCapturesToSpecFields,
  // 4: the search index merges away evicted rows a whole segment at a time (captures-schema.ts).
  CAPTURES_FIFO_MERGES,
];

export interface MirrorScope {
  platform: string;
  accountId: string;
}

export interface CachedProjects {
  projects: Project[];
  fetchedAt: string | null;
}

export interface MirrorOptions {
  /** The traffic history's size bound and batching. */
  captures?: CaptureStoreOptions;
}

export class Mirror {
  private readonly db: SQLite.Database;
  private store: CaptureStore | null = null;

  /** `file` is a path, or `:memory:`. */
  constructor(
    file: string,
    private readonly options: MirrorOptions = {},
  ) {
    if (file !== ':memory:') {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      // Captured traffic holds cookies and tokens: the file (and its -wal and -shm, which SQLite
      // creates with the same mode) is for this user only.
      if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600));
      else {
        try {
          chmodSync(file, 0o600);
        } catch {
          // not ours to change (another user's file opened read-write): leave it
        }
      }
    }
    this.db = new SQLite(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.migrate();
  }

  /**
   * The traffic history of the tunnels, made on first use: the Engine's Mirror leaves it to the
   * history's writer thread (history-thread.ts), which opens the file again for it.
   */
  get captures(): CaptureStore {
    return (this.store ??= new CaptureStore(this.db, this.options.captures));
  }

  private migrate(): void {
    // IMMEDIATE: two processes opening a new file at once must not both run a migration.
    this.db
      .transaction(() => {
        const version = this.db.pragma('user_version', { simple: true }) as number;
        for (let i = version; i < MIGRATIONS.length; i++) {
          const step = MIGRATIONS[i]!;
          if (typeof step === 'string') this.db.exec(step);
          else step(this.db);
          this.db.pragma(`user_version = ${i + 1}`);
        }
      })
      .immediate();
  }

  /** `PRAGMA integrity_check`: `ok`, or what is wrong with the file. */
  integrityCheck(): string {
    const rows = this.db.pragma('integrity_check') as Array<{ integrity_check: string }>;
    return rows.map((r) => r.integrity_check).join('\n');
  }

  /** The account last seen on a platform, so cached data can be shown before the platform answers. */
  lastAccount(platform: string): string | null {
    const row = this.db.prepare('SELECT account_id FROM accounts WHERE platform = ?').get(platform) as
      { account_id: string } | undefined;
    return row?.account_id ?? null;
  }

  rememberAccount(platform: string, accountId: string): void {
    this.db
      .prepare(
        'INSERT INTO accounts (platform, account_id) VALUES (?, ?) ON CONFLICT (platform) DO UPDATE SET account_id = excluded.account_id',
      )
      .run(platform, accountId);
  }

  /** Replaces the cached list with a fresh one from the platform. */
  replaceProjects(scope: MirrorScope, projects: Project[], fetchedAt: string): void {
    this.db.transaction(() => {
      this.db
        .prepare('DELETE FROM projects WHERE platform = ? AND account_id = ?')
        .run(scope.platform, scope.accountId);
      const insert = this.db.prepare(
        'INSERT INTO projects (platform, account_id, id, json) VALUES (?, ?, ?, ?)',
      );
      for (const project of projects)
        insert.run(scope.platform, scope.accountId, project.id, JSON.stringify(project));
      this.touch(scope, 'projects', fetchedAt);
    })();
  }

  upsertProject(scope: MirrorScope, project: Project): void {
    this.db
      .prepare(
        'INSERT INTO projects (platform, account_id, id, json) VALUES (?, ?, ?, ?) ON CONFLICT (platform, account_id, id) DO UPDATE SET json = excluded.json',
      )
      .run(scope.platform, scope.accountId, project.id, JSON.stringify(project));
  }

  removeProject(scope: MirrorScope, id: string): void {
    this.db
      .prepare('DELETE FROM projects WHERE platform = ? AND account_id = ? AND id = ?')
      .run(scope.platform, scope.accountId, id);
  }

  /** The cached projects, newest first (ids sort by creation time). */
  projects(scope: MirrorScope): CachedProjects {
    const rows = this.db
      .prepare('SELECT json FROM projects WHERE platform = ? AND account_id = ? ORDER BY id DESC')
      .all(scope.platform, scope.accountId) as Array<{ json: string }>;
    return {
      projects: rows.map((r) => JSON.parse(r.json) as Project),
      fetchedAt: this.fetchedAt(scope, 'projects'),
    };
  }

  project(scope: MirrorScope, id: string): Project | null {
    const row = this.db
      .prepare('SELECT json FROM projects WHERE platform = ? AND account_id = ? AND id = ?')
      .get(scope.platform, scope.accountId, id) as { json: string } | undefined;
    return row ? (JSON.parse(row.json) as Project) : null;
  }

  fetchedAt(scope: MirrorScope, kind: string): string | null {
    const row = this.db
      .prepare('SELECT fetched_at FROM snapshots WHERE platform = ? AND account_id = ? AND kind = ?')
      .get(scope.platform, scope.accountId, kind) as { fetched_at: string } | undefined;
    return row?.fetched_at ?? null;
  }

  private touch(scope: MirrorScope, kind: string, fetchedAt: string): void {
    this.db
      .prepare(
        'INSERT INTO snapshots (platform, account_id, kind, fetched_at) VALUES (?, ?, ?, ?) ON CONFLICT (platform, account_id, kind) DO UPDATE SET fetched_at = excluded.fetched_at',
      )
      .run(scope.platform, scope.accountId, kind, fetchedAt);
  }

  close(): void {
    this.store?.close();
    this.db.close();
  }
}
