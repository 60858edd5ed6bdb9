// How a project's source reads in the UI.
import type { Project } from '../../../../shared/api/projects.js';

export function describeSource(project: Project): { kind: string; detail: string | null } {
  if (project.deploy_source === 'image') return { kind: 'Image', detail: project.image || null };
  if (project.deploy_source === 'upload') return { kind: 'Upload', detail: null };
  // The fields of other sources are empty strings (null in copies kept from older versions).
  const where = project.git_host_repo || project.repo_url || null;
  return { kind: 'Git', detail: project.branch ? `${where} · ${project.branch}` : where };
}

/**
 * What the project's last deploy came to, for the line under its name: never "deployed" for a deploy
 * that is still building or that failed (`last_deploy_at` is when the last deploy started).
 */
export function deployPhrase(
  project: Pick<Project, 'status' | 'last_deploy_at' | 'last_deploy_error'>,
  when: (iso: string) => string,
): string {
  const at = project.last_deploy_at;
  if (at === null) return project.status === 'building' ? 'first deploy under way' : 'not deployed yet';
  switch (project.status) {
    case 'building':
      return `deploy under way since ${when(at)}`;
    case 'failed':
      return `deploy of ${when(at)} failed`;
    case 'stopped':
      return `stopped; last deployed ${when(at)}`;
    case 'running':
      return project.last_deploy_error
        ? `deploy of ${when(at)} failed; the previous version serves`
        : `deployed ${when(at)}`;
    default:
      return 'not deployed yet';
  }
}

/** A running project whose last deploy failed (the previous version still serves). */
export function redeployFailed(project: Pick<Project, 'status' | 'last_deploy_error'>): boolean {
  return project.status === 'running' && Boolean(project.last_deploy_error);
}
