// Detection: what to run for a directory whose build config leaves commands empty. Each finding comes
// with the reason, because the first lines of a build log say what was detected and why.
//
// Order: a Procfile names the start command outright; then Node (package.json), Python
// (requirements.txt, pyproject.toml or a common entry file), and last a static site (index.html at the
// root, in public/ or in dist/). A Node app with a build step and no start command may turn into a
// static site once built: staticRootAfterBuild looks again then.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export type Language = 'node' | 'python' | 'static' | 'unknown';

export interface Detection {
  language: Language;
  install: string | null;
  build: string | null;
  /** The start command of the `web` process, null when nothing was found (or it is a static site). */
  start: string | null;
  /** The `worker:` line of a Procfile, if any. */
  worker: string | null;
  /** For static sites: the directory served, relative to the detected dir. */
  staticRoot: string | null;
  /** Python apps run from a virtualenv in `.venv`: its bin/ goes first on PATH. */
  venv: boolean;
  /** One line per finding, for the build log. */
  reasons: string[];
}

const PYTHON_ENTRIES = ['app.py', 'main.py', 'server.py', 'wsgi.py', 'run.py'];
const STATIC_ROOTS = ['.', 'public', 'dist'];
/** Where a build may write a static site, in this order. */
export const BUILT_STATIC_ROOTS = ['dist', 'build', 'out', 'public'];

export function detect(dir: string): Detection {
  const found: Detection = {
    language: 'unknown',
    install: null,
    build: null,
    start: null,
    worker: null,
    staticRoot: null,
    venv: false,
    reasons: [],
  };
  const procfile = readProcfile(dir);
  if (procfile.web ?? procfile.worker) {
    found.start = procfile.web ?? null;
    found.worker = procfile.worker ?? null;
    found.reasons.push(
      `Procfile: ${[procfile.web && 'web', procfile.worker && 'worker'].filter(Boolean).join(' and ')} process found`,
    );
  }
  if (isFile(join(dir, 'package.json'))) detectNode(dir, found);
  else if (
    isFile(join(dir, 'requirements.txt')) ||
    isFile(join(dir, 'pyproject.toml')) ||
    PYTHON_ENTRIES.some((f) => isFile(join(dir, f)))
  )
    detectPython(dir, found);
  else {
    const root = STATIC_ROOTS.find((r) => isFile(join(dir, r, 'index.html')));
    if (root !== undefined && !found.start) {
      found.language = 'static';
      found.staticRoot = root;
      found.reasons.push(
        `static site: ${root === '.' ? 'index.html' : `${root}/index.html`} found, served by the built-in static server`,
      );
    }
  }
  return found;
}

/** After a build: the folder holding index.html a Node build produced, if any. */
export function staticRootAfterBuild(dir: string): string | null {
  return BUILT_STATIC_ROOTS.find((r) => isFile(join(dir, r, 'index.html'))) ?? null;
}

interface PackageJson {
  packageManager?: unknown;
  main?: unknown;
  scripts?: Record<string, unknown>;
  dependencies?: Record<string, unknown>;
  devDependencies?: Record<string, unknown>;
  optionalDependencies?: Record<string, unknown>;
}

function detectNode(dir: string, found: Detection): void {
  found.language = 'node';
  let pkg: PackageJson;
  try {
    pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as PackageJson;
  } catch (error) {
    found.reasons.push(`Node.js: package.json found but unreadable (${(error as Error).message})`);
    return;
  }
  const { manager, why } = packageManager(dir, pkg);
  found.reasons.push(`Node.js: package.json found; package manager ${manager} (${why})`);

  const dependencyCount =
    Object.keys(pkg.dependencies ?? {}).length +
    Object.keys(pkg.devDependencies ?? {}).length +
    Object.keys(pkg.optionalDependencies ?? {}).length;
  if (dependencyCount === 0) {
    found.reasons.push('no dependencies in package.json: nothing to install');
  } else {
    const lockfile = LOCKFILES[manager].some((f) => isFile(join(dir, f)));
    found.install = installCommand(manager, lockfile);
    found.reasons.push(`install: ${found.install}`);
  }
  const scripts = pkg.scripts ?? {};
  if (typeof scripts.build === 'string') {
    found.build = `${run(manager)} build`;
    found.reasons.push(`build: the "build" script (${found.build})`);
  }
  if (found.start) return;
  if (typeof scripts.start === 'string') {
    found.start = `${run(manager)} start`;
    found.reasons.push(`start: the "start" script (${scripts.start})`);
  } else if (typeof pkg.main === 'string' && isFile(join(dir, pkg.main))) {
    found.start = `node ${shellQuote(pkg.main)}`;
    found.reasons.push(`start: node ${pkg.main} (the "main" of package.json; there is no "start" script)`);
  } else if (isFile(join(dir, 'index.js'))) {
    found.start = 'node index.js';
    found.reasons.push('start: node index.js (no "start" script or "main" in package.json)');
  } else if (!found.build) {
    const root = STATIC_ROOTS.find((r) => isFile(join(dir, r, 'index.html')));
    if (root !== undefined) {
      found.language = 'static';
      found.staticRoot = root;
      found.reasons.push(`static site: no start command, ${join(root, 'index.html')} found`);
    }
  }
}

type Manager = 'npm' | 'pnpm' | 'yarn';
const LOCKFILES: Record<Manager, string[]> = {
  npm: ['package-lock.json', 'npm-shrinkwrap.json'],
  pnpm: ['pnpm-lock.yaml'],
  yarn: ['yarn.lock'],
};

function packageManager(dir: string, pkg: PackageJson): { manager: Manager; why: string } {
  if (typeof pkg.packageManager === 'string') {
    const name = pkg.packageManager.split('@')[0];
    if (name === 'npm' || name === 'pnpm' || name === 'yarn')
      return { manager: name, why: `"packageManager": "${pkg.packageManager}"` };
  }
  for (const manager of ['pnpm', 'yarn', 'npm'] as const) {
    const lockfile = LOCKFILES[manager].find((f) => isFile(join(dir, f)));
    if (lockfile) return { manager, why: `${lockfile} found` };
  }
  return { manager: 'npm', why: 'no lockfile, the default' };
}

function installCommand(manager: Manager, lockfile: boolean): string {
  switch (manager) {
    case 'npm':
      return lockfile ? 'npm ci' : 'npm install';
    case 'pnpm':
      return lockfile ? 'corepack pnpm install --frozen-lockfile' : 'corepack pnpm install';
    case 'yarn':
      return lockfile ? 'corepack yarn install --frozen-lockfile' : 'corepack yarn install';
  }
}

function run(manager: Manager): string {
  return manager === 'npm' ? 'npm run' : `corepack ${manager} run`;
}

function detectPython(dir: string, found: Detection): void {
  found.language = 'python';
  found.venv = true;
  if (isFile(join(dir, 'requirements.txt'))) {
    found.install = 'python3 -m venv .venv && .venv/bin/pip install -r requirements.txt';
    found.reasons.push('Python: requirements.txt found; installing into a virtualenv (.venv)');
  } else if (isFile(join(dir, 'pyproject.toml'))) {
    found.install = 'python3 -m venv .venv && .venv/bin/pip install .';
    found.reasons.push('Python: pyproject.toml found; installing the project into a virtualenv (.venv)');
  } else {
    found.install = 'python3 -m venv .venv';
    found.reasons.push('Python: no requirements.txt or pyproject.toml; a bare virtualenv (.venv)');
  }
  if (found.start) return;
  const entry = PYTHON_ENTRIES.find((f) => isFile(join(dir, f)));
  if (entry) {
    found.start = `python ${entry}`;
    found.reasons.push(`start: python ${entry} (first of ${PYTHON_ENTRIES.join(', ')} found)`);
  }
}

export function readProcfile(dir: string): { web?: string; worker?: string } {
  const file = join(dir, 'Procfile');
  if (!isFile(file)) return {};
  const processes: { web?: string; worker?: string } = {};
  for (const line of readFileSync(file, 'utf8').split(/\r?\n/)) {
    const match = /^(web|worker)\s*:\s*(.+)$/.exec(line.trim());
    if (match) processes[match[1] as 'web' | 'worker'] = match[2]!.trim();
  }
  return processes;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}
