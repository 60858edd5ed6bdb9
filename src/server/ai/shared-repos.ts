// The AI builder's repositories in a cluster. Each node keeps its own copy under `<dataDir>/ai-repos`,
// and the database holds the shared one: a git bundle of `main` in chunks (ai_repo_chunks) with its
// head (ai_projects.repo_head). Before a node changes or deploys an AI project its copy is brought up
// to the shared head; after a change, the new history is stored. A change is stored only on top of the
// head it started from (compare-and-set, in the same transaction as the bundle): when two nodes change
// one project at once, the later is refused with 409 and the earlier is kept whole.
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, readdirSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { formatBytes } from '../limits.js';
import { ApiError } from '../errors.js';
import { TooManyBytes, readChunks, storeChunks } from '../store/chunks.js';
import type { Store } from '../store/open.js';
import { AiRepo, type RepoShare } from './git.js';

/** The most a project's history may take in the database (generated apps are text, and small). */
const MAX_SHARED_BYTES = 64 * 1024 * 1024;
/** Reads of the shared repository that another node's change may overlap, before giving up. */
const PULL_ATTEMPTS = 3;

export class SharedRepos implements RepoShare {
  constructor(
    private readonly db: Store,
    private readonly dataDir: string,
  ) {}

  /** The repository of `projectId` on this node, kept in step with the cluster's. */
  repo(projectId: string): AiRepo {
    return AiRepo.at(this.dataDir, projectId, this);
  }

  async pull(projectId: string, repo: AiRepo): Promise<string | null> {
    const shared = await this.sharedHead(projectId);
    const local = await repo.head();
    if (shared === undefined) return local; // not an AI project (or deleted): nothing to share
    if (shared === null) {
      // Built before this platform ran as a cluster, on a node that has not shared it yet (it does at
      // its next start, or its next change of the project).
      if (local === null) {
        throw new ApiError(
          'unavailable',
          `the repository of AI project ${projectId} is still only on the node that built it: it is shared once that node runs again`,
        );
      }
      return null;
    }
    if (local === shared) return shared;
    let lastError: unknown = null;
    for (let attempt = 1; attempt <= PULL_ATTEMPTS; attempt++) {
      const file = await this.tempFile('pull');
      try {
        await pipeline(
          Readable.from(readChunks(this.db, 'ai_repo_chunks', projectId)),
          createWriteStream(file, { mode: 0o600 }),
        );
        const head = await repo.replaceFrom(file);
        // The chunks are read one row at a time: a change stored meanwhile may have mixed two bundles
        // (git refuses those) or given a newer one. Kept only when it is what the database says now.
        if (head === (await this.sharedHead(projectId))) return head;
      } catch (error) {
        lastError = error;
      } finally {
        rmSync(file, { force: true });
      }
    }
    throw new ApiError(
      'conflict',
      `AI project ${projectId} kept changing through other nodes while this one read it: try again${
        lastError ? ` (${(lastError as Error).message})` : ''
      }`,
    );
  }

  async push(projectId: string, repo: AiRepo, base: string | null): Promise<void> {
    const head = await repo.head();
    if (head === null) return;
    const file = await this.tempFile('push');
    try {
      await repo.bundle(file);
      await this.db.transaction().execute(async (trx) => {
        const update = trx
          .updateTable('ai_projects')
          .set({ repo_head: head })
          .where('project_id', '=', projectId);
        const moved = await (
          base === null ? update.where('repo_head', 'is', null) : update.where('repo_head', '=', base)
        ).executeTakeFirst();
        if (Number(moved.numUpdatedRows) === 0) {
          const row = await trx
            .selectFrom('ai_projects')
            .select('project_id')
            .where('project_id', '=', projectId)
            .executeTakeFirst();
          if (!row) return; // deleted meanwhile: nothing to keep
          throw new ApiError(
            'conflict',
            `AI project ${projectId} was changed through another node meanwhile, so this change was not kept: try again`,
          );
        }
        try {
          await storeChunks(trx, 'ai_repo_chunks', projectId, createReadStream(file), MAX_SHARED_BYTES);
        } catch (error) {
          if (!(error instanceof TooManyBytes)) throw error;
          throw new ApiError(
            'payload_too_large',
            `the history of AI project ${projectId} is over ${formatBytes(MAX_SHARED_BYTES)}: a cluster keeps it in the database, and takes no more`,
          );
        }
      });
    } finally {
      rmSync(file, { force: true });
    }
  }

  /**
   * Shares the repositories this node holds that the cluster does not have yet (built before it ran as
   * a cluster, or before `migrate-store`); resolves with how many. Run once at start.
   */
  async shareLocal(): Promise<number> {
    let names: string[];
    try {
      names = readdirSync(join(this.dataDir, 'ai-repos'));
    } catch {
      return 0;
    }
    let shared = 0;
    for (const name of names) {
      if (name.startsWith('.') || (await this.sharedHead(name)) !== null) continue;
      const repo = AiRepo.at(this.dataDir, name);
      try {
        await repo.exclusive(async () => {
          if ((await repo.head()) === null) return;
          await this.push(name, repo, null);
          shared++;
        });
      } catch (error) {
        // Another node shared it first: theirs is kept, and this copy follows it at the next change.
        if (!(error instanceof ApiError && error.code === 'conflict')) throw error;
      }
    }
    return shared;
  }

  /** The shared head; null when none is shared yet, undefined when no AI project has this id. */
  private async sharedHead(projectId: string): Promise<string | null | undefined> {
    const row = await this.db
      .selectFrom('ai_projects')
      .select('repo_head')
      .where('project_id', '=', projectId)
      .executeTakeFirst();
    return row ? row.repo_head : undefined;
  }

  private async tempFile(what: string): Promise<string> {
    const dir = join(this.dataDir, 'ai-repos');
    await mkdir(dir, { recursive: true });
    return join(dir, `.new-${what}-${randomBytes(9).toString('base64url')}.bundle`);
  }
}
