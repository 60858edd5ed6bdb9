// Deterministic fixes of an app's own files (Node and Python), after a failed build or start: a
// missing dependency (package.json, requirements.txt), a missing start script (or Procfile), an app
// that does not listen on $PORT. The JSON helpers here serve the container fixes too.
import { builtinModules } from 'node:module';
import type { FixResult } from './fixes.js';
import type { FileSet } from './types.js';

/** Import names whose PyPI package is named differently. */
const PYTHON_PACKAGES: Record<string, string> = {
  yaml: 'PyYAML',
  PIL: 'Pillow',
  cv2: 'opencv-python-headless',
  sklearn: 'scikit-learn',
  bs4: 'beautifulsoup4',
  dotenv: 'python-dotenv',
  jwt: 'PyJWT',
  psycopg2: 'psycopg2-binary',
  dateutil: 'python-dateutil',
  telegram: 'python-telegram-bot',
  discord: 'discord.py',
  nacl: 'PyNaCl',
  Crypto: 'pycryptodome',
  OpenSSL: 'pyOpenSSL',
  MySQLdb: 'mysqlclient',
  attr: 'attrs',
  fitz: 'PyMuPDF',
  docx: 'python-docx',
  pptx: 'python-pptx',
  magic: 'python-magic',
  serial: 'pyserial',
  slugify: 'python-slugify',
  multipart: 'python-multipart',
  jose: 'python-jose',
  websocket: 'websocket-client',
  google: 'protobuf',
  dns: 'dnspython',
  gi: 'PyGObject',
  skimage: 'scikit-image',
  distutils: 'setuptools',
  pkg_resources: 'setuptools',
};

const NODE_BUILTINS = new Set(builtinModules.flatMap((name) => [name, name.split('/')[0]!]));

// ---- (a) missing dependencies ------------------------------------------------------------------

/** "lodash/fp" → "lodash", "@scope/pkg/sub" → "@scope/pkg"; null for paths and built-ins. */
function packageName(specifier: string): string | null {
  if (/^(\.|\/|file:|data:|node:)/.test(specifier) || /^[A-Za-z]:[\\/]/.test(specifier)) return null;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
  if (!/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i.test(name) || NODE_BUILTINS.has(name)) return null;
  return name;
}

export function missingNodeModules(files: FileSet, log: string): FixResult | null {
  const raw = files['package.json'];
  if (raw === undefined) return null;
  const names = new Set<string>();
  for (const m of log.matchAll(/Cannot find (?:module|package) '([^']+)'/g)) {
    const name = packageName(m[1]!);
    // A file of the project itself (a missing build output) is not a dependency.
    if (name && !isLocalNodeModule(files, name)) names.add(name);
  }
  if (names.size === 0) return null;
  const pkg = parseJson(raw);
  if (!pkg) return null;
  const deps = { ...(asRecord(pkg.dependencies) ?? {}) };
  const devDeps = asRecord(pkg.devDependencies) ?? {};
  const added = [...names].filter((name) => !(name in deps) && !(name in devDeps)).sort();
  // Listed only in devDependencies: the production install skipped it; move it to dependencies.
  const moved = [...names].filter((name) => !(name in deps) && name in devDeps).sort();
  if (added.length === 0 && moved.length === 0) return null;
  for (const name of added) deps[name] = 'latest';
  for (const name of moved) deps[name] = devDeps[name]!;
  const next: Record<string, unknown> = { ...pkg, dependencies: sortKeys(deps) };
  if (moved.length) {
    next.devDependencies = Object.fromEntries(
      Object.entries(devDeps).filter(([name]) => !moved.includes(name)),
    );
  }
  const fixes = [
    ...added.map((name) => `added the missing dependency "${name}" to package.json`),
    ...moved.map((name) => `moved "${name}" from devDependencies to dependencies in package.json`),
  ];
  return { files: { ...files, 'package.json': stringifyLike(raw, next) }, fixes };
}

function isLocalNodeModule(files: FileSet, name: string): boolean {
  return ['.js', '.mjs', '.cjs', '.ts', '/index.js', '/index.ts'].some((ext) => `${name}${ext}` in files);
}

export function missingPythonModules(files: FileSet, log: string): FixResult | null {
  const modules = new Set<string>();
  for (const m of log.matchAll(/(?:ModuleNotFoundError|ImportError): No module named '([^']+)'/g)) {
    const top = m[1]!.split('.')[0]!;
    if (!isLocalPythonModule(files, top)) modules.add(top);
  }
  if (modules.size === 0) return null;
  const raw = files['requirements.txt'] ?? '';
  const listed = new Set(
    raw
      .split(/\r?\n/)
      .map((line) => normalizePyName(line.replace(/#.*/, '').split(/[<>=!~;[\s]/)[0]!))
      .filter(Boolean),
  );
  const packages = [...modules].map((module) => PYTHON_PACKAGES[module] ?? module);
  const added = [...new Set(packages)].filter((name) => !listed.has(normalizePyName(name))).sort();
  if (added.length === 0) return null;
  const text = raw && !raw.endsWith('\n') ? `${raw}\n` : raw;
  return {
    files: { ...files, 'requirements.txt': `${text}${added.join('\n')}\n` },
    fixes: added.map((name) => `added the missing package "${name}" to requirements.txt`),
  };
}

function isLocalPythonModule(files: FileSet, module: string): boolean {
  return Object.keys(files).some(
    (path) => path === `${module}.py` || path.startsWith(`${module}/`) || path.endsWith(`/${module}.py`),
  );
}

const normalizePyName = (name: string) =>
  name
    .trim()
    .toLowerCase()
    .replace(/[-_.]+/g, '-');

// ---- (b) missing start script ------------------------------------------------------------------

const START_SYMPTOMS = /Missing script: "?start"?|no start command|npm (?:ERR!|error) missing script: start/i;
const NODE_ENTRIES = [
  'server.js',
  'index.js',
  'app.js',
  'main.js',
  'src/server.js',
  'src/index.js',
  'src/app.js',
];
export const PYTHON_ENTRY_GUESSES = ['bot.py', 'server.py', 'main.py', 'app.py', 'run.py', 'worker.py'];

export function missingStartScript(files: FileSet, log: string): FixResult | null {
  if (!START_SYMPTOMS.test(log)) return null;
  const raw = files['package.json'];
  if (raw !== undefined) {
    const pkg = parseJson(raw);
    if (!pkg) return null;
    const scripts = asRecord(pkg.scripts) ?? {};
    if (typeof scripts.start === 'string') return null;
    const entry = nodeEntry(files, pkg);
    if (!entry) return null;
    const next = { ...pkg, scripts: { ...scripts, start: `node ${entry}` } };
    return {
      files: { ...files, 'package.json': stringifyLike(raw, next) },
      fixes: [`added the start script "node ${entry}" to package.json`],
    };
  }
  // A Python app whose entry file is not one the runtime guesses: a Procfile names it.
  if ('Procfile' in files) return null;
  const entry = PYTHON_ENTRY_GUESSES.find(
    (f) => f in files && /__name__\s*==\s*["']__main__["']/.test(files[f]!),
  );
  if (!entry) return null;
  const kind = entry === 'worker.py' ? 'worker' : 'web';
  return {
    files: { ...files, Procfile: `${kind}: python3 ${entry}\n` },
    fixes: [`added a Procfile that starts "python3 ${entry}"`],
  };
}

export function nodeEntry(files: FileSet, pkg: Record<string, unknown>): string | null {
  if (typeof pkg.main === 'string') {
    const main = pkg.main.replace(/^\.\//, '');
    if (main in files) return main;
    // A TypeScript project's main points at its build output, which is not in the sources.
    if (typeof asRecord(pkg.scripts)?.build === 'string' && /\.(c|m)?js$/.test(main)) return main;
  }
  const built = typeof asRecord(pkg.scripts)?.build === 'string' ? typeScriptEntry(files) : null;
  return built ?? NODE_ENTRIES.find((f) => f in files) ?? null;
}

/** src/index.ts built by tsc with an outDir → dist/index.js. */
function typeScriptEntry(files: FileSet): string | null {
  const source = ['src/server.ts', 'src/index.ts', 'src/main.ts', 'src/app.ts', 'server.ts', 'index.ts'].find(
    (f) => f in files,
  );
  if (!source) return null;
  const tsconfig = parseJson(stripJsonComments(files['tsconfig.json'] ?? '{}'));
  const options = asRecord(tsconfig?.compilerOptions) ?? {};
  const outDir =
    typeof options.outDir === 'string' ? options.outDir.replace(/^\.\//, '').replace(/\/$/, '') : null;
  if (!outDir) return null;
  const rootDir =
    typeof options.rootDir === 'string'
      ? options.rootDir.replace(/^\.\//, '').replace(/\/$/, '')
      : source.includes('/')
        ? 'src'
        : '';
  const relative = rootDir && source.startsWith(`${rootDir}/`) ? source.slice(rootDir.length + 1) : source;
  return `${outDir}/${relative.replace(/\.ts$/, '.js')}`;
}

// ---- (c) not binding $PORT ---------------------------------------------------------------------

// The container runtime's own: "nothing answered HTTP on its port within 60 s".
const PORT_SYMPTOMS =
  /nothing listened on port|before it listened on port|nothing answered HTTP on its port|EADDRINUSE|health ?check|(?:listening|running|started|serving)\b[^\n]*?(?:port\s*|:)(\d{2,5})\b/i;

const JS_FILE = /\.(?:c|m)?[jt]sx?$/;

export function notBindingPort(files: FileSet, log: string): FixResult | null {
  if (!PORT_SYMPTOMS.test(log)) return null;
  const next: FileSet = { ...files };
  const fixes: string[] = [];
  for (const [path, content] of Object.entries(files)) {
    if (path.includes('node_modules/') || path.startsWith('dist/')) continue;
    let changed: string | null = null;
    if (JS_FILE.test(path)) changed = fixJsPort(content);
    else if (path.endsWith('.py')) changed = fixPythonPort(content);
    else if (path === 'Procfile') changed = fixProcfilePort(content);
    else if (path === 'package.json') changed = fixScriptsPort(content);
    if (changed !== null && changed !== content) {
      next[path] = changed;
      fixes.push(`${path}: listen on $PORT (on all interfaces) instead of a fixed port`);
    }
  }
  return fixes.length ? { files: next, fixes } : null;
}

/** Ports of databases and caches: a literal with one of these is a client setting, not the app's port. */
const SERVICE_PORTS = new Set(['5432', '3306', '6379', '27017', '11211', '9200', '5672']);

export function fixJsPort(source: string): string {
  const env = (port: string) => `Number(process.env.PORT || ${port})`;
  const keep = (match: string, port: string, replaced: string) =>
    SERVICE_PORTS.has(port) ? match : replaced;
  return (
    source
      // 'localhost' may resolve to ::1 only, and in a container the published port reaches the
      // container's own interface, never its loopback: all interfaces.
      .replace(/(\.listen\((?:[^()\n]|\([^()\n]*\))*?,\s*)['"](?:localhost|127\.0\.0\.1)['"]/g, "$1'0.0.0.0'")
      // .listen(3000 …)
      .replace(/\.listen\(\s*(\d{2,5})\s*(?=[,)])/g, (m, port: string) =>
        keep(m, port, `.listen(${env(port)}`),
      )
      // .listen({ port: 3000 }) / fastify.listen({ port: 3000, host: 'localhost' })
      .replace(/(\bport\s*:\s*)(\d{2,5})\b/g, (m, key: string, port: string) =>
        keep(m, port, `${key}${env(port)}`),
      )
      // const PORT = 3000 / let port = 8080
      .replace(/(\b(?:const|let|var)\s+(?:PORT|port)\s*=\s*)(\d{2,5})\b/g, (m, decl: string, port: string) =>
        keep(m, port, `${decl}${env(port)}`),
      )
      .replace(/(\bhost\s*:\s*)['"](?:localhost|127\.0\.0\.1)['"]/g, "$1'0.0.0.0'")
  );
}

export function fixPythonPort(source: string): string {
  const env = (port: string) => `int(os.environ.get("PORT", "${port}"))`;
  let out = source
    // app.run(port=5000) / uvicorn.run(app, port=8000) / web.run_app(app, port=8080)
    .replace(/(\bport\s*=\s*)(\d{2,5})\b/g, (m, key: string, port: string) =>
      SERVICE_PORTS.has(port) ? m : `${key}${env(port)}`,
    )
    // PORT = 8000
    .replace(/^(\s*PORT\s*=\s*)(\d{2,5})\s*$/gm, (_m, key: string, port: string) => `${key}${env(port)}`)
    // HTTPServer(("", 8000), …) / ("localhost", 8000)
    .replace(
      /\(\s*(['"])(?:|localhost|127\.0\.0\.1|0\.0\.0\.0)\1\s*,\s*(\d{2,5})\s*\)/g,
      (_m, _q: string, port: string) => `("0.0.0.0", ${env(port)})`,
    )
    .replace(/(\bhost\s*=\s*)['"](?:localhost|127\.0\.0\.1)['"]/g, '$1"0.0.0.0"');
  if (out !== source && !/^\s*import\s+os\b|^\s*import\s+[\w, ]*\bos\b/m.test(out)) {
    // After a leading docstring, shebang and __future__ imports, so those stay first.
    const lines = out.split('\n');
    let at = 0;
    if (lines[0]?.startsWith('#!')) at = 1;
    const rest = lines.slice(at).join('\n');
    const doc = /^\s*(?:"""[\s\S]*?"""|'''[\s\S]*?''')\s*\n/.exec(rest);
    if (doc) at += doc[0].split('\n').length - 1;
    while (lines[at]?.startsWith('from __future__')) at += 1;
    lines.splice(at, 0, 'import os');
    out = lines.join('\n');
  }
  return out;
}

function fixProcfilePort(source: string): string {
  return source
    .replace(/(--port[ =])(\d{2,5})\b/g, '$1$PORT')
    .replace(/((?:-b|--bind)[ =](?:0\.0\.0\.0|127\.0\.0\.1|localhost)?:)(\d{2,5})\b/g, '$1$PORT')
    .replace(/((?:-p)[ =])(\d{2,5})\b/g, '$1$PORT');
}

function fixScriptsPort(raw: string): string {
  const pkg = parseJson(raw);
  const scripts = asRecord(pkg?.scripts);
  if (!pkg || !scripts || typeof scripts.start !== 'string') return raw;
  const start = fixProcfilePort(scripts.start);
  return start === scripts.start ? raw : stringifyLike(raw, { ...pkg, scripts: { ...scripts, start } });
}

// ---- helpers -----------------------------------------------------------------------------------

export function parseJson(raw: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(raw);
    return asRecord(value);
  } catch {
    return null;
  }
}

export function asRecord(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

function sortKeys(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}

/** JSON with the indentation of the file it replaces. */
function stringifyLike(original: string, value: unknown): string {
  const indent = /\n([ \t]+)"/.exec(original)?.[1] ?? '  ';
  return `${JSON.stringify(value, null, indent)}\n`;
}

function stripJsonComments(raw: string): string {
  return raw
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '')
    .replace(/,(\s*[}\]])/g, '$1');
}
