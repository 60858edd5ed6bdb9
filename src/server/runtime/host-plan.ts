// The plan on the host runtimes (sandbox, process): the source installed and built in the release
// folder, one command at a time, and each service started later as a process group from it.
import { mkdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { BuildConfig } from '../../shared/api/projects.js';
import type { Build } from './build.js';
import { DeployError } from './build.js';
import { detect, staticRootAfterBuild } from './detect.js';
import type { CommandDriver } from './drivers/host.js';
import type { PlanContext, PlannerDeps, ReleasePlan, ReleaseService } from './plan.js';
import {
  assertDirectory,
  fallbackPrimary,
  isVenv,
  procfileWorker,
  procfileWorkerFits,
  serviceFolder,
} from './plan-services.js';
import type { ProcessExit } from './process.js';
import type { ProjectLog } from './project-log.js';

const BUILD_STEP_TIMEOUT_MS = 20 * 60_000;

/**
 * Host runtimes: install and build in the release folder; services started as processes later.
 *
 * The project-level app (root_dir, the top-level commands, detection for what they leave empty,
 * port_override) is the primary app, served at the project's subdomain (SPEC §2.2). Each service of
 * the build config runs in addition, in its own folder, at `<subdomain>-<name>`.
 */
export async function hostPlan(
  deps: PlannerDeps,
  { row, releaseId, dir, build, log }: PlanContext,
): Promise<ReleasePlan> {
  const env = JSON.parse(row.env_vars) as Record<string, string>;
  const config = JSON.parse(row.build_config) as BuildConfig;
  const base = resolve(dir, config.root_dir);
  assertDirectory(base, dir, 'root_dir');
  const multi = config.services.length > 0;
  const folders = config.services.map((service) => serviceFolder(dir, base, service, log));
  const step = (label: 'install' | 'build', command: string | null, cwd: string, opts: StepOptions) =>
    runStep(deps.driver, build, log, label, command, cwd, dir, { ...opts, projectId: row.id });

  const services: ReleaseService[] = [];
  const detection = config.install_cmd && config.build_cmd && config.start_cmd ? null : detect(base);
  detection?.reasons.forEach((reason) => log.build(`detected ${reason}`));
  const install = config.install_cmd ?? detection?.install ?? null;
  const buildCmd = config.build_cmd ?? detection?.build ?? null;
  const path = detection?.venv ? [join(base, '.venv', 'bin')] : [];
  await step('install', install, base, { env, path, service: null });
  await step('build', buildCmd, base, { env, path, service: null });
  const start = config.start_cmd ?? detection?.start ?? null;
  let staticRoot = start ? null : (detection?.staticRoot ?? null);
  if (!start && !staticRoot && buildCmd) {
    staticRoot = staticRootAfterBuild(base);
    if (staticRoot) log.build(`detected static site: the build wrote ${staticRoot}/index.html`);
  }
  // A Procfile's `worker:` process runs beside the web one (or alone: a project that only works).
  const worker = config.start_cmd ? null : (detection?.worker ?? null);
  if (start || staticRoot) {
    services.push({
      name: null,
      kind: start ? 'web' : 'static',
      cwd: base,
      start,
      staticRoot: staticRoot ? resolve(base, staticRoot) : null,
      image: null,
      fixedPort: start ? (config.port_override ?? null) : null,
      env,
      path,
    });
  } else if (!worker && !multi) {
    throw new DeployError(
      'no start command: set start_cmd in the build config, or add a "start" script to package.json, a Procfile with a web process, an app.py/main.py, or an index.html',
    );
  }
  if (worker && procfileWorkerFits(config, log)) services.push(procfileWorker(base, worker, env, path));
  if (!multi) return { id: releaseId, dir, runs: 'host', services };

  // Without an app of its own in root_dir, a project answers at its subdomain as it did before the
  // primary app: from its `web` service (else its first web one), which takes port_override.
  const fallback = start || staticRoot ? null : fallbackPrimary(config, row, log);
  // Each service installs and builds its own folder (detected once per folder when its commands are
  // empty; root_dir counts as done once the project-level app installed or built there).
  const prepared = new Set<string>();
  if (install || buildCmd) prepared.add(base);
  for (const [i, service] of config.services.entries()) {
    const cwd = folders[i]!;
    const serviceEnv = { ...env, ...service.env_overrides };
    const first = !prepared.has(cwd);
    prepared.add(cwd);
    const found = first && (!service.install_cmd || !service.build_cmd) ? detect(cwd) : null;
    found?.reasons
      .filter((r) => !r.startsWith('start:'))
      .forEach((reason) => log.build(`detected ${reason}`, service.name));
    const servicePath =
      found?.venv || (service.install_cmd === null && isVenv(cwd)) ? [join(cwd, '.venv', 'bin')] : [];
    const opts = { env: serviceEnv, path: servicePath, service: service.name };
    await step('install', service.install_cmd ?? found?.install ?? null, cwd, opts);
    await step('build', service.build_cmd ?? found?.build ?? null, cwd, opts);
    services.push({
      name: service.name,
      kind: service.kind,
      cwd,
      start: service.start_cmd,
      staticRoot: null,
      image: null,
      fixedPort: service.port ?? (service === fallback ? (config.port_override ?? null) : null),
      env: serviceEnv,
      path: servicePath,
    });
  }
  return { id: releaseId, dir, runs: 'host', services };
}

/** Runs one install or build command to completion; non-zero exit fails the deploy. */
async function runStep(
  driver: CommandDriver,
  build: Build,
  log: ProjectLog,
  label: 'install' | 'build',
  command: string | null,
  cwd: string,
  dir: string,
  options: StepOptions & { projectId: string },
): Promise<void> {
  if (!command) return;
  build.check();
  const started = Date.now();
  const where = relative(dir, cwd) || '.';
  log.build(`$ ${command}${where === '.' ? '' : `   (in ${where})`}`, options.service);
  const process = driver.run({
    projectId: options.projectId,
    command,
    cwd,
    env: hostEnv(dir, options.env, options.path, { CI: 'true' }),
    workspace: join(dir, '..'),
    onLine: (_stream, line) => log.build(line, options.service),
  });
  build.track(process);
  const timer = setTimeout(() => void process.stop(2_000), BUILD_STEP_TIMEOUT_MS);
  const exit = await process.exited;
  clearTimeout(timer);
  build.check();
  if (exit.code !== 0) {
    throw new DeployError(`${label} failed: \`${command}\` ${describeExit(exit)}`);
  }
  log.build(`${label} done in ${((Date.now() - started) / 1000).toFixed(1)} s`, options.service);
}

interface StepOptions {
  env: Record<string, string>;
  path: string[];
  service: string | null;
}

/**
 * The environment of an app's command on this machine: a small base (never the platform's own
 * variables), the project's env vars, then what the runtime sets.
 */
export function hostEnv(
  releaseDir: string,
  env: Record<string, string>,
  path: string[],
  extra: Record<string, string>,
): Record<string, string> {
  // The project's own home (caches, dotfiles), never the operator's.
  const home = join(releaseDir, '..', 'home');
  mkdirSync(home, { recursive: true });
  const base: Record<string, string> = {
    PATH: [...path, process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'].join(':'),
    HOME: home,
    LANG: process.env.LANG ?? 'C.UTF-8',
    HOST: '127.0.0.1',
  };
  return { ...base, ...env, ...extra, PATH: base.PATH! };
}

export function describeExit(exit: ProcessExit): string {
  return exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
}
