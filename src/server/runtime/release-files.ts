// The files a release serves itself (its static sites), kept in the database for the other nodes of a
// cluster: the edge serves a static site from disk, and the node that built it is only one of many.
// The deploying node stores them (a gzipped tar in chunks) before the release serves; every other node
// copies them into its own release folder before routing to it, one chunk in memory at a time.
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import { once } from 'node:events';
import * as tar from 'tar';
import type { Store } from '../store/open.js';
import type { ReleasePlan } from './plan.js';
import { isDirectory } from './plan-services.js';

/** Bytes per stored row: a few rows for a typical site, and never much of one in memory. */
const CHUNK_BYTES = 512 * 1024;

/** The folders of a plan's static sites, relative to its release folder (`.` for the folder itself). */
export function staticRoots(plan: ReleasePlan): string[] {
  const roots = new Set<string>();
  for (const service of plan.services) {
    if (service.kind !== 'static' || service.staticRoot === null) continue;
    const root = relative(plan.dir, service.staticRoot) || '.';
    // Written by our own planner inside the release folder; anything else is not ours to copy.
    if (root === '..' || root.startsWith('../') || isAbsolute(root)) {
      throw new Error(`static root ${service.staticRoot} is outside release ${plan.id}`);
    }
    roots.add(root);
  }
  return [...roots];
}

/** The plan with its static sites served from `dir` (the same release's folder on this node). */
export function rebase(plan: ReleasePlan, dir: string): ReleasePlan {
  const moved = (path: string) => join(dir, relative(plan.dir, path));
  return {
    ...plan,
    dir,
    services: plan.services.map((service) =>
      service.kind === 'static' && service.staticRoot !== null
        ? { ...service, cwd: dir, staticRoot: moved(service.staticRoot) }
        : service,
    ),
  };
}

export class ReleaseFiles {
  constructor(private readonly db: Store) {}

  /** Stores the static sites of a built release; resolves with the bytes stored (0: it has none). */
  async save(plan: ReleasePlan): Promise<number> {
    const roots = staticRoots(plan);
    if (roots.length === 0) return 0;
    await this.drop([plan.id]);
    // Links are stored as links (not followed): the edge refuses those that leave the site, here as there.
    const packed = tar.create({ gzip: true, cwd: plan.dir, portable: true }, roots);
    let seq = 0;
    let bytes = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const flush = async () => {
      if (pendingBytes === 0) return;
      const data = Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      await this.db.insertInto('release_files').values({ release_id: plan.id, seq, data }).execute();
      seq++;
      bytes += data.length;
    };
    for await (const chunk of packed as AsyncIterable<Buffer>) {
      pending.push(chunk);
      pendingBytes += chunk.length;
      if (pendingBytes >= CHUNK_BYTES) await flush();
    }
    await flush();
    return bytes;
  }

  /**
   * Makes `dir` hold the release's stored files (nothing to do when it exists); false when none are
   * stored (a release built before its node joined a cluster).
   */
  async copyTo(releaseId: string, dir: string): Promise<boolean> {
    if (isDirectory(dir)) return true;
    const first = await this.chunk(releaseId, 0);
    if (!first) return false;
    const part = `${dir}.part-${randomBytes(6).toString('hex')}`;
    await mkdir(part, { recursive: true });
    try {
      const extract = tar.extract({ cwd: part, strict: true });
      const done = new Promise<void>((resolve, reject) => {
        extract.on('close', resolve);
        extract.on('error', reject);
      });
      let data: Buffer | undefined = first;
      for (let seq = 1; data; seq++) {
        if (!extract.write(data)) await Promise.race([once(extract, 'drain'), done]);
        data = await this.chunk(releaseId, seq);
      }
      extract.end();
      await done;
      await rename(part, dir).catch(async (error: NodeJS.ErrnoException) => {
        // Another copy (a second view of the same release) finished first: its folder serves.
        if (!isDirectory(dir)) throw error;
        await rm(part, { recursive: true, force: true });
      });
      return true;
    } catch (error) {
      await rm(part, { recursive: true, force: true });
      throw error;
    }
  }

  /** Forgets the stored files of releases that are gone. */
  async drop(releaseIds: string[]): Promise<void> {
    if (releaseIds.length === 0) return;
    await this.db.deleteFrom('release_files').where('release_id', 'in', releaseIds).execute();
  }

  private async chunk(releaseId: string, seq: number): Promise<Buffer | undefined> {
    const row = await this.db
      .selectFrom('release_files')
      .select('data')
      .where('release_id', '=', releaseId)
      .where('seq', '=', seq)
      .executeTakeFirst();
    return row ? Buffer.from(row.data) : undefined;
  }
}
