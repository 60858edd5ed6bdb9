// A project's status changes here only, through one table: each event names the statuses it may
// leave and the one it enters, and the store applies it only from those (a deploy that ends after the
// project was stopped does not bring `running` back).
import type { ProjectStatus } from '../../shared/api/projects.js';
import type { ProjectService } from '../projects/projects.js';
import type { ProjectsTable } from '../store/schema.js';

export type StatusEvent =
  /** A deploy, rollback or restart-time redeploy began. */
  | { type: 'deploy-started' }
  /** The new release serves (`release`: its plan as JSON). */
  | { type: 'served'; release: string }
  /** A deploy failed; `serving`: whether the previous release keeps serving. */
  | { type: 'deploy-failed'; error: string; serving: boolean }
  /** The serving release went down for good (it kept crashing, or could not start again). */
  | { type: 'went-down'; error: string }
  | { type: 'stopped' }
  /** An AI project waits for its setup (a database…) before its first deploy. */
  | { type: 'needs-setup' };

const ANY: readonly ProjectStatus[] = ['created', 'building', 'running', 'failed', 'stopped'];

/** Event → the statuses it may leave → the status it enters. */
export const TRANSITIONS: Record<StatusEvent['type'], { from: readonly ProjectStatus[]; to: ProjectStatus }> =
  {
    'deploy-started': { from: ANY, to: 'building' },
    served: { from: ['building'], to: 'running' },
    'deploy-failed': { from: ['building'], to: 'failed' },
    'went-down': { from: ['running', 'building'], to: 'failed' },
    stopped: { from: ANY, to: 'stopped' },
    'needs-setup': { from: ['created', 'failed', 'stopped'], to: 'created' },
  };

type Patch = Partial<Pick<ProjectsTable, 'status' | 'release' | 'last_deploy_at' | 'last_deploy_error'>>;

/** The row fields an event writes besides the status. */
function patchFor(event: StatusEvent): Patch {
  const { to } = TRANSITIONS[event.type];
  switch (event.type) {
    case 'deploy-started':
      return { status: to, last_deploy_at: new Date().toISOString(), last_deploy_error: null };
    case 'served':
      return { status: to, release: event.release, last_deploy_error: null };
    case 'deploy-failed':
      // A failed redeploy leaves the old release serving: the project stays `running`, and says why.
      return event.serving
        ? {
            status: 'running',
            last_deploy_error: `the new version failed (${event.error}); the previous version keeps serving`,
          }
        : { status: to, last_deploy_error: event.error };
    case 'went-down':
      return { status: to, release: null, last_deploy_error: event.error };
    case 'stopped':
      return { status: to, release: null };
    case 'needs-setup':
      return { status: to };
  }
}

/** Applies `event` to the project; false when its status was not one the event may leave. */
export function transition(
  projects: ProjectService,
  projectId: string,
  event: StatusEvent,
): Promise<boolean> {
  return projects.setRuntimeState(projectId, patchFor(event), TRANSITIONS[event.type].from);
}
