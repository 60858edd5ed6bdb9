#!/usr/bin/env node
// `npm start`: the desktop app when an Electron binary is available, else the same UI in a browser.
//
// - Electron: WHARF_ELECTRON_PATH, or the binary of the `electron` package when it was downloaded.
//   Builds out/ with electron-vite, makes sure better-sqlite3 has a build for Electron's ABI in
//   out/node_modules (which the main bundle finds before node_modules, so the Node build the tests use
//   stays untouched), then runs Electron on out/main/index.js with the remaining arguments.
// - Otherwise: says so in one line and runs `node bin/wharf.js app` with the remaining arguments.
// Either way the child runs with the Node flags `wharf` runs with (scripts/node-flags.mjs), signals are
// forwarded to it, and its exit code becomes ours.
//
// `node scripts/start.mjs --build-only` does the Electron preparation and exits (the smoke test uses it).
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { wharfNodeFlags } from './node-flags.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const require = createRequire(join(root, 'package.json'));

const args = process.argv.slice(2);
const buildOnly = args[0] === '--build-only';
if (buildOnly) args.shift();

/** The Electron binary to use, or null when none is installed. */
function findElectron() {
  const given = process.env.WHARF_ELECTRON_PATH;
  if (given) {
    if (existsSync(given)) return given;
    console.error(`wharf: WHARF_ELECTRON_PATH names ${given}, which does not exist`);
    process.exit(1);
  }
  try {
    // The package exports the binary's path, and throws when the binary was never downloaded.
    const path = require('electron');
    return typeof path === 'string' && existsSync(path) ? path : null;
  } catch {
    return null;
  }
}

/** Runs a child with our stdio, forwarding signals; resolves to its exit code (128+n for a signal). */
function run(command, commandArgs, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, commandArgs, { stdio: 'inherit', ...options });
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
    const forward = (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    };
    for (const signal of signals) process.on(signal, forward);
    const done = (code) => {
      for (const signal of signals) process.off(signal, forward);
      resolve(code);
    };
    child.once('error', (error) => {
      console.error(`wharf: could not run ${command}: ${error.message}`);
      done(1);
    });
    child.once('exit', (code, signal) => {
      done(code ?? 128 + (constants.signals[signal] ?? 1));
    });
  });
}

/** The version of the Electron binary (it may not be the `electron` package's, with WHARF_ELECTRON_PATH). */
function electronVersion(binary) {
  const asNode = spawnSync(binary, ['-p', 'process.versions.electron'], {
    encoding: 'utf8',
    env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
  });
  const plain = () => spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout?.trim().replace(/^v/, '');
  const version = asNode.stdout?.trim() || plain();
  if (!version || !/^\d+\.\d+\.\d+/.test(version)) {
    throw new Error(`could not tell the Electron version of ${binary}`);
  }
  return version;
}

/** A build of better-sqlite3 for this Electron in out/node_modules, made once per Electron version. */
function prepareNativeModules(binary) {
  const version = electronVersion(binary);
  const source = dirname(require.resolve('better-sqlite3/package.json'));
  const { version: moduleVersion } = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8'));
  const target = join(root, 'out', 'node_modules', 'better-sqlite3');
  const stampFile = join(target, '.wharf-electron-build');
  const stamp = `electron ${version} ${process.platform}-${process.arch} better-sqlite3 ${moduleVersion}\n`;
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) return;

  console.log(`wharf: building better-sqlite3 ${moduleVersion} for Electron ${version}…`);
  rmSync(target, { recursive: true, force: true });
  cpSync(source, target, {
    recursive: true,
    filter: (path) =>
      !path.startsWith(join(source, 'build')) && !path.startsWith(join(source, 'node_modules')),
  });
  const prebuilt = spawnSync(
    process.execPath,
    [
      require.resolve('prebuild-install/bin.js'),
      '--runtime',
      'electron',
      '--target',
      version,
      '--arch',
      process.arch,
    ],
    { cwd: target, stdio: 'inherit' },
  );
  if (prebuilt.status !== 0) {
    const compiled = spawnSync(
      process.execPath,
      [
        require.resolve('node-gyp/bin/node-gyp.js'),
        'rebuild',
        '--release',
        '--runtime=electron',
        `--target=${version}`,
        `--arch=${process.arch}`,
        '--dist-url=https://electronjs.org/headers',
      ],
      { cwd: target, stdio: 'inherit' },
    );
    if (compiled.status !== 0) {
      throw new Error(
        `could not build better-sqlite3 for Electron ${version}: no prebuilt binary could be fetched and compiling failed (both need the network once: github.com for prebuilt binaries, electronjs.org for headers)`,
      );
    }
  }
  writeFileSync(stampFile, stamp);
}

async function startElectron(binary) {
  const { build } = await import('electron-vite');
  await build({ root, configFile: join(root, 'electron.vite.config.ts') });
  prepareNativeModules(binary);
  if (buildOnly) return 0;
  const env = { ...process.env };
  delete env.ELECTRON_RUN_AS_NODE;
  // The main process hosts the Engine and the embedded platform: V8 takes its flags for that process
  // only from the command line.
  const jsFlags = `--js-flags=${wharfNodeFlags().join(' ')}`;
  return run(binary, [jsFlags, join(root, 'out', 'main', 'index.js'), ...args], { cwd: root, env });
}

async function startBrowserApp() {
  console.log(
    'wharf: no Electron binary is installed (set WHARF_ELECTRON_PATH to use one), so this runs the browser mode instead: wharf app',
  );
  return run(process.execPath, [...wharfNodeFlags(), join(root, 'bin', 'wharf.js'), 'app', ...args], {
    cwd: root,
  });
}

const electron = findElectron();
let code;
try {
  if (electron) code = await startElectron(electron);
  else if (buildOnly) {
    console.error('wharf: --build-only needs an Electron binary: set WHARF_ELECTRON_PATH');
    code = 1;
  } else code = await startBrowserApp();
} catch (error) {
  console.error(`wharf: ${error instanceof Error ? error.message : String(error)}`);
  code = 1;
}
process.exit(code);
