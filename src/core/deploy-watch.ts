// Deploy following: the deploy state of each project last seen on the current platform, and the deploys
// that ended between two looks at a project (a `deploy-finished` event each). The Engine shows it every
// project the platform answers with; polling speeds up while one of them builds.
import type { Project } from '../shared/api/index.js';
import type { DeployFinishedEvent, DeployOutcome } from '../shared/bridge.js';

/** What tells whether a deploy ended between two looks at a project. */
export type DeployState = Pick<Project, 'status' | 'last_deploy_at' | 'last_deploy_error'>;

/**
 * Whether a project seen as `before`, then as `after`, finished a deploy, and how. `building` ending
 * in `running` or `failed` is the usual case; a whole deploy that happened between two looks shows as
 * a new `last_deploy_at`, or as `last_deploy_error` appearing. A redeploy that failed while the previous
 * version keeps serving stays `running` with `last_deploy_error` set: that is a failed deploy.
 */
export function deployOutcome(before: DeployState, after: DeployState): DeployOutcome | null {
  if (after.status !== 'running' && after.status !== 'failed') return null;
  const outcome: DeployOutcome =
    after.status === 'failed' || after.last_deploy_error !== null ? 'failed' : 'running';
  if (before.status === 'building') return outcome;
  if (after.last_deploy_at !== null && after.last_deploy_at !== before.last_deploy_at) return outcome;
  if (before.last_deploy_error === null && after.last_deploy_error !== null) return 'failed';
  return null;
}

export class DeployWatch {
  private readonly seen = new Map<string, DeployState>();

  /**
   * Remembers the projects' deploy state and answers each deploy that ended since the last look.
   * `complete` when `projects` is the whole list (projects missing from it are forgotten).
   */
  observe(projects: readonly Project[], complete: boolean): DeployFinishedEvent[] {
    const finished: DeployFinishedEvent[] = [];
    for (const project of projects) {
      const before = this.seen.get(project.id);
      this.seen.set(project.id, {
        status: project.status,
        last_deploy_at: project.last_deploy_at,
        last_deploy_error: project.last_deploy_error,
      });
      const outcome = before ? deployOutcome(before, project) : null;
      if (outcome) finished.push({ project, outcome });
    }
    if (complete) {
      const ids = new Set(projects.map((p) => p.id));
      for (const id of this.seen.keys()) if (!ids.has(id)) this.seen.delete(id);
    }
    return finished;
  }

  /** Whether a project seen last was building (the Engine then looks again sooner). */
  get building(): boolean {
    return [...this.seen.values()].some((state) => state.status === 'building');
  }

  forget(id: string): void {
    this.seen.delete(id);
  }

  /** Another platform: nothing seen on the old one means anything on the new one. */
  clear(): void {
    this.seen.clear();
  }
}
