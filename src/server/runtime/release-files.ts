// The files a release serves itself (its static sites), kept in the database for the other nodes of a
// cluster: the edge serves a static site from disk, and the node that built it is only one of many.
// The deploying node stores them (a gzipped tar in chunks) before the release serves; every other node
// copies them into its own release folder before routing to it, one chunk in memory at a time.
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { formatBytes } from '../limits.js';
import { TooManyBytes, dropChunks, hasChunks, readChunks, storeChunks } from '../store/chunks.js';
import type { Store } from '../store/open.js';
import type { ReleasePlan } from './plan.js';
import { DeployError } from './build.js';
import { isDirectory } from './plan-services.js';

/** The most of a release's static files (gzipped) a cluster keeps in its database. */
const MAX_STORED_BYTES = 1024 * 1024 * 1024;

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
    const tar = await import('tar');
    // Links are stored as links (not followed): the edge refuses those that leave the site, here as there.
    const packed = tar.create({ gzip: true, cwd: plan.dir, portable: true }, roots);
    try {
      return await storeChunks(
        this.db,
        'release_files',
        plan.id,
        packed as AsyncIterable<Buffer>,
        MAX_STORED_BYTES,
      );
    } catch (error) {
      if (!(error instanceof TooManyBytes)) throw error;
      packed.destroy();
      throw new DeployError(
        `the static files are over ${formatBytes(MAX_STORED_BYTES)} compressed: a cluster keeps them in the database for its other nodes, and takes no more`,
      );
    }
  }

  /**
   * Makes `dir` hold the release's stored files (nothing to do when it exists); false when none are
   * stored (a release built before its node joined a cluster).
   */
  async copyTo(releaseId: string, dir: string): Promise<boolean> {
    if (isDirectory(dir)) return true;
    if (!(await hasChunks(this.db, 'release_files', releaseId))) return false;
    const tar = await import('tar');
    const part = `${dir}.part-${randomBytes(6).toString('hex')}`;
    await mkdir(part, { recursive: true });
    try {
      await pipeline(
        Readable.from(readChunks(this.db, 'release_files', releaseId)),
        tar.extract({ cwd: part, strict: true }),
      );
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
  drop(releaseIds: string[]): Promise<void> {
    return dropChunks(this.db, 'release_files', releaseIds);
  }
}
