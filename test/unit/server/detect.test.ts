// Detection on real folders: what a directory's files make the runtime install, build and start, and
// the reasons it writes to the build log. Pure: no process is started.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { detect, shellQuote, staticRootAfterBuild } from '../../../src/server/runtime/detect.js';
import { type Files, writeFiles } from '../../helpers/deploy.js';

const root = mkdtempSync(join(tmpdir(), 'wharf-detect-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let count = 0;
/** A fresh folder holding `files`. */
function folder(files: Files): string {
  count += 1;
  const dir = join(root, `case-${count}`);
  writeFiles(dir, { ...files, '.keep': '' });
  return dir;
}

const pkg = (value: Record<string, unknown>) => JSON.stringify({ name: 'x', private: true, ...value });

describe('detect: nothing recognisable', () => {
  it('finds nothing in an empty folder and says nothing', () => {
    expect(detect(folder({}))).toEqual({
      language: 'unknown',
      install: null,
      build: null,
      start: null,
      worker: null,
      staticRoot: null,
      venv: false,
      reasons: [],
    });
  });

  it('ignores a README or a lone script it cannot run', () => {
    const found = detect(folder({ 'README.md': '# hi', 'run.sh': 'echo hi' }));
    expect(found.language).toBe('unknown');
    expect(found.start).toBeNull();
  });
});

describe('detect: Node', () => {
  it('uses the start script, and installs nothing when there are no dependencies', () => {
    const found = detect(folder({ 'package.json': pkg({ scripts: { start: 'node server.js' } }) }));
    expect(found.language).toBe('node');
    expect(found.install).toBeNull();
    expect(found.build).toBeNull();
    expect(found.start).toBe('npm run start');
    expect(found.staticRoot).toBeNull();
    expect(found.venv).toBe(false);
    expect(found.reasons).toEqual([
      'Node.js: package.json found; package manager npm (no lockfile, the default)',
      'no dependencies in package.json: nothing to install',
      'start: the "start" script (node server.js)',
    ]);
  });

  it.each([
    ['no lockfile', {}, 'npm install', 'npm'],
    ['package-lock.json', { 'package-lock.json': '{}' }, 'npm ci', 'npm'],
    ['npm-shrinkwrap.json', { 'npm-shrinkwrap.json': '{}' }, 'npm ci', 'npm'],
    ['pnpm-lock.yaml', { 'pnpm-lock.yaml': '' }, 'corepack pnpm install --frozen-lockfile', 'pnpm'],
    ['yarn.lock', { 'yarn.lock': '' }, 'corepack yarn install --frozen-lockfile', 'yarn'],
  ])('with dependencies and %s installs with %s', (_label, lockfiles, install, manager) => {
    const found = detect(
      folder({
        'package.json': pkg({ dependencies: { left: '1' }, scripts: { start: 'node .', build: 'tsc' } }),
        ...lockfiles,
      }),
    );
    expect(found.install).toBe(install);
    expect(found.reasons).toContain(`install: ${install}`);
    expect(found.build).toBe(manager === 'npm' ? 'npm run build' : `corepack ${manager} run build`);
    expect(found.start).toBe(manager === 'npm' ? 'npm run start' : `corepack ${manager} run start`);
  });

  it('counts devDependencies and optionalDependencies as dependencies', () => {
    expect(detect(folder({ 'package.json': pkg({ devDependencies: { a: '1' } }) })).install).toBe(
      'npm install',
    );
    expect(detect(folder({ 'package.json': pkg({ optionalDependencies: { a: '1' } }) })).install).toBe(
      'npm install',
    );
  });

  it('prefers "packageManager" over the lockfiles, and says why', () => {
    const found = detect(
      folder({
        'package.json': pkg({ packageManager: 'pnpm@9.1.0', dependencies: { a: '1' } }),
        'package-lock.json': '{}',
      }),
    );
    expect(found.install).toBe('corepack pnpm install');
    expect(found.reasons[0]).toBe(
      'Node.js: package.json found; package manager pnpm ("packageManager": "pnpm@9.1.0")',
    );
  });

  it('ignores an unknown "packageManager" and falls back to the lockfiles', () => {
    const found = detect(
      folder({
        'package.json': pkg({ packageManager: 'bun@1.1.0', dependencies: { a: '1' } }),
        'yarn.lock': '',
      }),
    );
    expect(found.install).toBe('corepack yarn install --frozen-lockfile');
  });

  it('with several lockfiles, pnpm wins over yarn, yarn over npm', () => {
    const deps = { 'package.json': pkg({ dependencies: { a: '1' } }) };
    expect(detect(folder({ ...deps, 'package-lock.json': '{}', 'yarn.lock': '' })).install).toMatch(/yarn/);
    expect(detect(folder({ ...deps, 'yarn.lock': '', 'pnpm-lock.yaml': '' })).install).toMatch(/pnpm/);
  });

  it('without a start script runs "main" when that file exists, quoted for the shell', () => {
    const found = detect(folder({ 'package.json': pkg({ main: 'src/my app.js' }), 'src/my app.js': '' }));
    expect(found.start).toBe("node 'src/my app.js'");
    expect(found.reasons).toContain(
      'start: node src/my app.js (the "main" of package.json; there is no "start" script)',
    );
  });

  it('falls back from a missing "main" to index.js', () => {
    const found = detect(folder({ 'package.json': pkg({ main: 'gone.js' }), 'index.js': '' }));
    expect(found.start).toBe('node index.js');
  });

  it('with no start, no build and an index.html is a static site (root or public/)', () => {
    const atRoot = detect(folder({ 'package.json': pkg({}), 'index.html': '<h1>hi</h1>' }));
    expect(atRoot).toMatchObject({ language: 'static', start: null, staticRoot: '.' });
    const inPublic = detect(folder({ 'package.json': pkg({}), 'public/index.html': '' }));
    expect(inPublic).toMatchObject({ language: 'static', staticRoot: 'public' });
  });

  it('with a build script and no start command leaves the static root to after the build', () => {
    const dir = folder({ 'package.json': pkg({ scripts: { build: 'vite build' } }), 'index.html': '' });
    const found = detect(dir);
    expect(found).toMatchObject({ language: 'node', build: 'npm run build', start: null, staticRoot: null });
    expect(staticRootAfterBuild(dir)).toBeNull();
    writeFiles(dir, { 'dist/index.html': '<p>built</p>' });
    expect(staticRootAfterBuild(dir)).toBe('dist');
  });

  it('after a build looks in dist/, build/, out/ then public/', () => {
    expect(staticRootAfterBuild(folder({ 'out/index.html': '', 'public/index.html': '' }))).toBe('out');
    expect(staticRootAfterBuild(folder({ 'build/index.html': '', 'out/index.html': '' }))).toBe('build');
    expect(staticRootAfterBuild(folder({ 'public/index.html': '' }))).toBe('public');
    expect(staticRootAfterBuild(folder({ 'index.html': '' }))).toBeNull();
  });

  it('reports an unreadable package.json instead of throwing', () => {
    const found = detect(folder({ 'package.json': '{ not json' }));
    expect(found.language).toBe('node');
    expect(found.start).toBeNull();
    expect(found.reasons).toHaveLength(1);
    expect(found.reasons[0]).toMatch(/^Node\.js: package\.json found but unreadable \(/);
  });

  it('package.json wins over requirements.txt', () => {
    const found = detect(
      folder({ 'package.json': pkg({ scripts: { start: 'node x' } }), 'requirements.txt': 'flask' }),
    );
    expect(found.language).toBe('node');
    expect(found.venv).toBe(false);
  });
});

describe('detect: Python', () => {
  it('installs requirements.txt into .venv and runs app.py', () => {
    const found = detect(folder({ 'requirements.txt': '', 'app.py': 'print(1)' }));
    expect(found).toMatchObject({
      language: 'python',
      install: 'python3 -m venv .venv && .venv/bin/pip install -r requirements.txt',
      build: null,
      start: 'python app.py',
      venv: true,
      staticRoot: null,
    });
    expect(found.reasons).toEqual([
      'Python: requirements.txt found; installing into a virtualenv (.venv)',
      'start: python app.py (first of app.py, main.py, server.py, wsgi.py, run.py found)',
    ]);
  });

  it('installs a pyproject.toml project', () => {
    const found = detect(folder({ 'pyproject.toml': '[project]\nname="x"\n', 'main.py': '' }));
    expect(found.install).toBe('python3 -m venv .venv && .venv/bin/pip install .');
    expect(found.start).toBe('python main.py');
  });

  it('recognises a bare entry file, first of the known names', () => {
    const found = detect(folder({ 'server.py': '', 'run.py': '', 'main.py': '' }));
    expect(found.language).toBe('python');
    expect(found.install).toBe('python3 -m venv .venv');
    expect(found.start).toBe('python main.py');
  });

  it('with requirements.txt and no entry file has no start command', () => {
    const found = detect(folder({ 'requirements.txt': 'gunicorn' }));
    expect(found.language).toBe('python');
    expect(found.start).toBeNull();
  });
});

describe('detect: Procfile', () => {
  it('names the start command and the worker, before any language default', () => {
    const found = detect(
      folder({
        Procfile: 'web: node web.js --port $PORT\r\nworker:   node jobs.js\r\nrelease: node migrate.js\r\n',
        'package.json': pkg({ scripts: { start: 'node other.js' }, dependencies: { a: '1' } }),
      }),
    );
    expect(found.start).toBe('node web.js --port $PORT');
    expect(found.worker).toBe('node jobs.js');
    expect(found.install).toBe('npm install');
    expect(found.reasons[0]).toBe('Procfile: web and worker process found');
    expect(found.reasons.some((r) => r.startsWith('start:'))).toBe(false);
  });

  it('with only a worker line still takes the start command from the language', () => {
    const found = detect(
      folder({ Procfile: 'worker: node jobs.js\n', 'package.json': pkg({ scripts: { start: 'node s' } }) }),
    );
    expect(found.worker).toBe('node jobs.js');
    expect(found.start).toBe('npm run start');
    expect(found.reasons[0]).toBe('Procfile: worker process found');
  });

  it('a web process in a static folder is not a static site', () => {
    const found = detect(folder({ Procfile: 'web: ./serve\n', 'index.html': '' }));
    expect(found.start).toBe('./serve');
    expect(found.staticRoot).toBeNull();
  });

  it('a Python app keeps the Procfile command', () => {
    const found = detect(
      folder({ Procfile: 'web: gunicorn app:app\n', 'requirements.txt': '', 'app.py': '' }),
    );
    expect(found.start).toBe('gunicorn app:app');
    expect(found.venv).toBe(true);
  });
});

describe('detect: static sites', () => {
  it.each([
    ['index.html', '.', 'index.html'],
    ['public/index.html', 'public', 'public/index.html'],
    ['dist/index.html', 'dist', 'dist/index.html'],
  ])('serves %s', (file, staticRoot, said) => {
    const found = detect(folder({ [file]: '<h1>hi</h1>', 'style.css': 'h1{}' }));
    expect(found).toMatchObject({ language: 'static', start: null, install: null, build: null, staticRoot });
    expect(found.reasons).toEqual([`static site: ${said} found, served by the built-in static server`]);
  });

  it('the root wins over public/ and dist/', () => {
    expect(detect(folder({ 'dist/index.html': '', 'index.html': '' })).staticRoot).toBe('.');
  });

  it('an index.html deeper down is not a site', () => {
    expect(detect(folder({ 'docs/site/index.html': '' })).language).toBe('unknown');
  });
});

describe('shellQuote', () => {
  it('leaves plain words alone and quotes the rest', () => {
    expect(shellQuote('dist/server.js')).toBe('dist/server.js');
    expect(shellQuote('a b')).toBe("'a b'");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
    expect(shellQuote('$(rm -rf /)')).toBe("'$(rm -rf /)'");
  });
});
