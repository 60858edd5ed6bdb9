// How a project's source reads in the UI.
import type { Project } from '../../../../shared/api/projects.js';

export function describeSource(project: Project): { kind: string; detail: string | null } {
  if (project.deploy_source === 'image') return { kind: 'Image', detail: project.image || null };
  if (project.deploy_source === 'upload') return { kind: 'Upload', detail: null };
  // The fields of other sources are empty strings (null in copies kept from older versions).
  const where = project.git_host_repo || project.repo_url || null;
  return { kind: 'Git', detail: project.branch ? `${where} · ${project.branch}` : where };
}
