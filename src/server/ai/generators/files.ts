// File sets: the checks every generated or edited set passes before it reaches a repository (paths that
// stay inside the project, sane sizes), what changed between two sets, and the slice of a set that fits
// in a model's prompt.
import type { FileSet } from './types.js';

export const MAX_FILES = 200;
export const MAX_TOTAL_BYTES = 1024 * 1024;
const MAX_PATH_LENGTH = 300;

/** Throws a clear Error for the first path that could escape the project or is not a plain file path. */
export function assertSafePath(path: string): void {
  if (path.length === 0) throw new Error('a file path is empty');
  if (path.length > MAX_PATH_LENGTH) throw new Error(`the file path "${path.slice(0, 60)}…" is too long`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\\]/.test(path)) {
    throw new Error(`the file path ${JSON.stringify(path)} has a backslash or a control character`);
  }
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) {
    throw new Error(`the file path "${path}" is absolute: paths must be relative to the project`);
  }
  const parts = path.split('/');
  if (parts.some((part) => part === '..')) {
    throw new Error(`the file path "${path}" leaves the project ("..")`);
  }
  if (parts.some((part) => part === '' || part === '.')) {
    throw new Error(`the file path "${path}" has an empty or "." segment`);
  }
  if (parts[0] === '.git' || parts.includes('node_modules')) {
    throw new Error(`the file path "${path}" is inside .git or node_modules`);
  }
}

/** Checks every path and the limits (≤ 200 files, ≤ 1 MiB in all); returns the set unchanged. */
export function validateFileSet(files: FileSet): FileSet {
  const paths = Object.keys(files);
  if (paths.length === 0) throw new Error('the app has no files');
  if (paths.length > MAX_FILES) {
    throw new Error(`the app has ${paths.length} files: at most ${MAX_FILES} are allowed`);
  }
  let total = 0;
  for (const path of paths) {
    assertSafePath(path);
    total += Buffer.byteLength(files[path]!, 'utf8');
  }
  if (total > MAX_TOTAL_BYTES) {
    throw new Error(`the app's files weigh ${total} bytes: at most ${MAX_TOTAL_BYTES} (1 MiB) are allowed`);
  }
  return files;
}

/** A list of `{ path, content }` (a model's answer) as a set; a path given twice is an error. */
export function fileSetFromList(list: Array<{ path: string; content: string }>): FileSet {
  const files: FileSet = {};
  for (const { path, content } of list) {
    const clean = path.startsWith('./') ? path.slice(2) : path;
    assertSafePath(clean);
    if (Object.hasOwn(files, clean)) throw new Error(`the file "${clean}" is given twice`);
    files[clean] = content;
  }
  return files;
}

/** Paths added, modified or deleted from `before` to `after`, sorted. */
export function changedPaths(before: FileSet, after: FileSet): string[] {
  const paths = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...paths].filter((path) => before[path] !== after[path]).sort();
}

const SKIPPED_IN_PROMPTS = [/(^|\/)package-lock\.json$/, /(^|\/)yarn\.lock$/, /(^|\/)pnpm-lock\.yaml$/];

/**
 * The files a model sees, within `budget` characters: small source files first in full, then what
 * fits; the rest are listed by name only, so the model knows they exist and leaves them alone.
 */
export function filesForPrompt(files: FileSet, budget = 120_000): { shown: FileSet; omitted: string[] } {
  const shown: FileSet = {};
  const omitted: string[] = [];
  let used = 0;
  const paths = Object.keys(files).sort((a, b) => files[a]!.length - files[b]!.length || a.localeCompare(b));
  for (const path of paths) {
    const content = files[path]!;
    if (SKIPPED_IN_PROMPTS.some((re) => re.test(path)) || used + content.length > budget) {
      omitted.push(path);
      continue;
    }
    shown[path] = content;
    used += content.length;
  }
  return { shown, omitted: omitted.sort() };
}
