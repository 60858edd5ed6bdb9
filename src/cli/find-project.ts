// `<project>` on the command line: a project id (`prj_…`), a subdomain, or a name. Names need not be
// unique, so a word that fits more than one project is refused rather than guessed, and a word that
// fits none is answered with the projects it is closest to.
import type { Project } from '../shared/api/index.js';
import type { PlatformClient } from '../core/api-client/platform-client.js';

export class ProjectNotFoundError extends Error {}

/** The one project `query` names among `projects`; throws ProjectNotFoundError with suggestions. */
export function findProject(projects: Project[], query: string): Project {
  const byId = projects.find((p) => p.id === query);
  if (byId) return byId;
  const exact = projects.filter((p) => p.subdomain === query || p.name === query);
  if (exact.length === 1) return exact[0]!;
  if (exact.length > 1) throw ambiguous(query, exact);
  const folded = query.toLowerCase();
  const loose = projects.filter((p) => p.subdomain === folded || p.name.toLowerCase() === folded);
  if (loose.length === 1) return loose[0]!;
  if (loose.length > 1) throw ambiguous(query, loose);
  throw unknown(query, projects);
}

/** Lists the account's projects and picks the one `query` names. */
export async function resolveProject(client: PlatformClient, query: string): Promise<Project> {
  const { projects } = await client.listProjects();
  return findProject(projects, query);
}

/** How a project is named in messages: its subdomain (unique, and a valid `<project>`), and its name. */
export function describe(project: Project): string {
  return project.name === project.subdomain ? project.subdomain : `${project.subdomain} ("${project.name}")`;
}

function ambiguous(query: string, matches: Project[]): ProjectNotFoundError {
  const list = matches.map((p) => `${describe(p)} ${p.id}`).join(', ');
  return new ProjectNotFoundError(
    `"${query}" fits ${matches.length} projects: ${list}; name one by its subdomain or id`,
  );
}

function unknown(query: string, projects: Project[]): ProjectNotFoundError {
  if (projects.length === 0)
    return new ProjectNotFoundError(`no project "${query}": the account has none yet`);
  const close = closeMatches(query, projects);
  if (close.length > 0) {
    return new ProjectNotFoundError(`no project "${query}"; did you mean ${close.map(describe).join(', ')}?`);
  }
  const shown = projects.slice(0, 8).map(describe).join(', ');
  const more = projects.length > 8 ? ` and ${projects.length - 8} more (wharf projects)` : '';
  return new ProjectNotFoundError(`no project "${query}"; the projects are ${shown}${more}`);
}

/** Projects whose name or subdomain contains the query, or is a few typos away from it; best first. */
export function closeMatches(query: string, projects: Project[], max = 5): Project[] {
  const q = query.toLowerCase();
  const scored: Array<{ project: Project; score: number }> = [];
  for (const project of projects) {
    const candidates = [project.subdomain, project.name.toLowerCase()];
    let best = Infinity;
    for (const candidate of candidates) {
      // What the user typed is part of the project's word: as good as one typo; the other way round: two.
      if (candidate.includes(q)) best = Math.min(best, 1);
      else if (candidate.length >= 3 && q.includes(candidate)) best = Math.min(best, 2);
      const distance = editDistance(q, candidate);
      if (distance <= Math.max(2, Math.floor(q.length / 3))) best = Math.min(best, distance);
    }
    if (best < Infinity) scored.push({ project, score: best });
  }
  return scored
    .sort((a, b) => a.score - b.score || a.project.subdomain.localeCompare(b.project.subdomain))
    .slice(0, max)
    .map((s) => s.project);
}

/** Levenshtein distance. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}
