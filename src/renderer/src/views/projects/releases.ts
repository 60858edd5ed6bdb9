// How a release reads in the Releases section: where its code came from, and what rolling back to it
// would change in the env vars, as plain data the view only renders.

/**
 * Where a release's code came from, for its row: `upload upl_…` reads as the archive it was (releases
 * recorded before uploads were named say `the latest upload`).
 */
export function sourceLabel(source: string): { text: string; mono: boolean } {
  const upload = /^upload (upl_[A-Za-z0-9]+)$/.exec(source);
  if (upload) return { text: `Uploaded archive ${upload[1]}`, mono: false };
  if (source === 'the latest upload') return { text: 'An uploaded archive', mono: false };
  return { text: source, mono: true };
}

export interface EnvChanges {
  /** Names the release has and the project has not. */
  added: string[];
  /** Names the project has and the release has not. */
  removed: string[];
  /** Names both have, with another value. */
  changed: string[];
}

/**
 * What the project's env vars would go through if the release's replaced them: names only, sorted (the
 * values may be secrets, and are not shown). Own keys only: `constructor` is a name like any other.
 */
export function envChanges(project: Record<string, string>, release: Record<string, string>): EnvChanges {
  const names = [...new Set([...Object.keys(project), ...Object.keys(release)])].sort();
  const inProject = (name: string) => Object.hasOwn(project, name);
  const inRelease = (name: string) => Object.hasOwn(release, name);
  return {
    added: names.filter((n) => !inProject(n)),
    removed: names.filter((n) => !inRelease(n)),
    changed: names.filter((n) => inProject(n) && inRelease(n) && project[n] !== release[n]),
  };
}
