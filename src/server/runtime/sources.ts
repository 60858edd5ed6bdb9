// Getting a project's source into a fresh workspace before a build: a shallow git clone of one branch,
// or the stored upload archive extracted. Output goes to the deploy's build log line by line.
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { extract, list } from 'tar';

export type LineSink = (line: string) => void;

export class SourceError extends Error {}

/** `git clone --depth 1 --branch <branch>` of `url` into `dest` (which must not exist yet). */
export async function cloneRepository(options: {
  url: string;
  branch: string;
  dest: string;
  onLine: LineSink;
  timeoutMs?: number;
}): Promise<void> {
  const args = [
    'clone',
    '--depth',
    '1',
    '--single-branch',
    '--branch',
    options.branch,
    '--',
    options.url,
    options.dest,
  ];
  const child = spawn('git', args, {
    // Never stop to ask for credentials: a private repository fails with git's own message instead.
    env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '/bin/false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      options.onLine(line);
      tail.push(line);
      if (tail.length > 20) tail.shift();
    });
  }
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 5 * 60_000);
  const code = await new Promise<number | null>((resolve) => {
    child.once('close', (exitCode) => resolve(exitCode));
    child.once('error', (error) => {
      tail.push(error.message);
      resolve(127);
    });
  });
  clearTimeout(timer);
  if (code !== 0) {
    // git's errors (a repository may bring several: "does not appear to be a git repository", then
    // "Could not read from remote repository"), the first being the most specific; else its last words.
    const errors = tail.filter((l) => /^(fatal|error):/i.test(l.trim()));
    const reason =
      (errors.length > 0 ? errors.map((l) => l.trim()).join(' ') : undefined) ??
      tail.filter((l) => /fatal|error|not found|could not/i.test(l)).at(-1) ??
      tail.at(-1) ??
      `exit code ${code}`;
    throw new SourceError(`git clone of ${options.url} (branch ${options.branch}) failed: ${reason}`);
  }
}

/**
 * Extracts a stored upload (already checked when it was received) into `dest`. An archive holding one
 * top-level folder and nothing else (as `tar czf app.tar.gz app/` makes) is unpacked from inside it.
 */
export async function extractUpload(options: {
  archive: string;
  dest: string;
  onLine: LineSink;
}): Promise<void> {
  const tops = new Set<string>();
  let onlyFolders = true;
  await list({
    file: options.archive,
    onReadEntry: (entry) => {
      const segments = entry.path.replace(/^\.\//, '').split('/').filter(Boolean);
      if (segments.length === 0) return;
      tops.add(segments[0]!);
      // A top-level entry that is not a directory means the files sit at the root.
      if (segments.length === 1 && entry.type !== 'Directory') onlyFolders = false;
    },
  });
  const [folder] = tops;
  const strip = tops.size === 1 && onlyFolders ? 1 : 0;
  mkdirSync(options.dest, { recursive: true });
  await extract({ file: options.archive, cwd: options.dest, strict: true, strip });
  const entries = readdirSync(options.dest).length;
  options.onLine(
    `extracted the upload${strip ? ` from its folder ${folder}/` : ''}: ${entries} entries at the top level`,
  );
}
