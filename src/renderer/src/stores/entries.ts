// Entries a store keeps per id (a project's detail, its releases, a domain's verification…): one entry
// patched, starting from the empty entry when there is none yet.
export function patchEntry<T extends object>(
  entries: Record<string, T>,
  id: string,
  empty: T,
  patch: Partial<T>,
): Record<string, T> {
  return { ...entries, [id]: { ...empty, ...entries[id], ...patch } };
}
