// The release history of each project: every deploy attempt, what it ran and how it ended. The runtime
// writes it; GET /projects/:id/releases reads it; a rollback starts a kept release's plan again.
//
// The artifacts of the newest `keep` releases that served (their image, or their folder for the host
// runtimes) are kept for rollback; older ones are handed back to the runtime to delete. Rows outlive
// their artifacts, up to HISTORY_ROWS per project, so the history still says what ran.
import type { Release, ReleaseStatus } from '../../shared/api/projects.js';
import type { Store } from '../store/open.js';
import type { ReleasesTable } from '../store/schema.js';

const HISTORY_ROWS = 100;

export interface ReleaseStart {
  id: string;
  projectId: string;
  source: string;
  envVars: Record<string, string>;
}

export interface ReleaseEnd {
  status: Extract<ReleaseStatus, 'running' | 'failed' | 'cancelled'>;
  plan?: string | null;
  image?: string | null;
  commit?: string | null;
  error?: string | null;
}

export class ReleaseStore {
  constructor(private readonly db: Store) {}

  async begin(start: ReleaseStart): Promise<void> {
    await this.db
      .insertInto('releases')
      .values({
        id: start.id,
        project_id: start.projectId,
        status: 'building',
        source: start.source,
        commit: null,
        image: null,
        env_vars: JSON.stringify(start.envVars),
        plan: null,
        kept: 0,
        error: null,
        created_at: new Date().toISOString(),
        finished_at: null,
      })
      .execute();
  }

  async noteCommit(id: string, commit: string): Promise<void> {
    await this.db.updateTable('releases').set({ commit }).where('id', '=', id).execute();
  }

  /** What a release's build produced, known before it starts (so a failed start still names its image). */
  async built(id: string, built: { plan: string; image: string | null; commit: string | null }) {
    await this.db
      .updateTable('releases')
      .set({ plan: built.plan, image: built.image, commit: built.commit, kept: 1 })
      .where('id', '=', id)
      .execute();
  }

  async end(id: string, end: ReleaseEnd): Promise<void> {
    await this.db
      .updateTable('releases')
      .set({
        status: end.status,
        error: end.error ?? null,
        finished_at: new Date().toISOString(),
        ...(end.plan === undefined ? {} : { plan: end.plan }),
        ...(end.image === undefined ? {} : { image: end.image }),
        ...(end.commit === undefined ? {} : { commit: end.commit }),
      })
      .where('id', '=', id)
      .execute();
  }

  /** A rollback brings `id` back: it serves again, and whatever served before it is retired. */
  async serving(projectId: string, id: string): Promise<void> {
    await this.db
      .updateTable('releases')
      .set({ status: 'retired' })
      .where('project_id', '=', projectId)
      .where('status', '=', 'running')
      .where('id', '!=', id)
      .execute();
    await this.db.updateTable('releases').set({ status: 'running' }).where('id', '=', id).execute();
  }

  /** Nothing serves the project any more (stopped, or kept crashing). */
  async retireAll(projectId: string): Promise<void> {
    await this.db
      .updateTable('releases')
      .set({ status: 'retired' })
      .where('project_id', '=', projectId)
      .where('status', '=', 'running')
      .execute();
  }

  /**
   * Deploys that will never finish (a platform start: those its last stop interrupted; in a cluster,
   * those of `projectId` a dead node was running) end cancelled.
   */
  async cancelUnfinished(reason: string, projectId?: string): Promise<void> {
    let update = this.db
      .updateTable('releases')
      .set({ status: 'cancelled', error: reason, finished_at: new Date().toISOString() })
      .where('status', '=', 'building');
    if (projectId !== undefined) update = update.where('project_id', '=', projectId);
    await update.execute();
  }

  async row(projectId: string, id: string): Promise<ReleasesTable | undefined> {
    return this.db
      .selectFrom('releases')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  /** Newest first. `currentId`: the release serving the project now, if any. */
  async list(projectId: string, currentId: string | null): Promise<Release[]> {
    const rows = await this.db
      .selectFrom('releases')
      .selectAll()
      .where('project_id', '=', projectId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    return rows.map((row) => toRelease(row, currentId));
  }

  /**
   * Marks every served release beyond the newest `keep` (and the current one) as no longer kept, drops
   * history rows beyond HISTORY_ROWS, and returns the rows whose artifacts the runtime should delete.
   */
  async prune(projectId: string, keep: number, currentId: string | null): Promise<ReleasesTable[]> {
    const kept = await this.db
      .selectFrom('releases')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('kept', '=', 1)
      .where('status', '!=', 'building')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    const served = kept.filter((r) => r.status === 'running' || r.status === 'retired');
    const keepIds = new Set(served.slice(0, keep).map((r) => r.id));
    if (currentId) keepIds.add(currentId);
    // A release that never served is not a rollback target: its artifacts go at once.
    const drop = kept.filter((r) => !keepIds.has(r.id));
    if (drop.length > 0) {
      await this.db
        .updateTable('releases')
        .set({ kept: 0 })
        .where(
          'id',
          'in',
          drop.map((r) => r.id),
        )
        .execute();
    }
    const old = await this.db
      .selectFrom('releases')
      .select('id')
      .where('project_id', '=', projectId)
      .where('kept', '=', 0)
      .where('status', '!=', 'building')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .offset(HISTORY_ROWS)
      .limit(1_000)
      .execute();
    if (old.length > 0) {
      await this.db
        .deleteFrom('releases')
        .where(
          'id',
          'in',
          old.map((r) => r.id),
        )
        .execute();
    }
    return drop;
  }

  /** The ids of a project's releases that hold artifacts or are building (their images stay). */
  async liveIds(projectId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('releases')
      .select('id')
      .where('project_id', '=', projectId)
      .where((eb) => eb.or([eb('kept', '=', 1), eb('status', '=', 'building')]))
      .execute();
    return rows.map((row) => row.id);
  }

  /** Every release of a project still holding artifacts (for its deletion). */
  async keptOf(projectId: string): Promise<ReleasesTable[]> {
    return this.db
      .selectFrom('releases')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('kept', '=', 1)
      .execute();
  }
}

export function toRelease(row: ReleasesTable, currentId: string | null): Release {
  const current = row.id === currentId;
  return {
    id: row.id,
    project_id: row.project_id,
    status: row.status as ReleaseStatus,
    current,
    rollback_available:
      !current &&
      row.kept === 1 &&
      row.plan !== null &&
      (row.status === 'running' || row.status === 'retired'),
    source: row.source,
    commit: row.commit,
    image: row.image,
    env_vars: JSON.parse(row.env_vars) as Record<string, string>,
    error: row.error,
    created_at: row.created_at,
    finished_at: row.finished_at,
  };
}
