// What the host and container plans share: the folder of each service of the build config, which
// app answers at the project's subdomain when root_dir has none, a Procfile's worker, a static site.
import { statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { BuildConfig, ServiceConfig } from '../../shared/api/projects.js';
import type { ProjectsTable } from '../store/schema.js';
import { DeployError } from './build.js';
import type { ReleasePlan, ReleaseService } from './plan.js';
import type { ProjectLog } from './project-log.js';

export function hostStatic(
  releaseId: string,
  dir: string,
  root: string,
  env: Record<string, string>,
  image: string | null = null,
): ReleasePlan {
  return {
    id: releaseId,
    dir,
    runs: 'host',
    image,
    services: [
      {
        name: null,
        kind: 'static',
        cwd: dir,
        start: null,
        staticRoot: root,
        image: null,
        fixedPort: null,
        env,
        path: [],
      },
    ],
  };
}

/**
 * The folder of a service: its root_dir, a directory of the repository (SPEC §2.2: "several
 * directories of one repository"), else the project's root_dir. A root_dir that names no folder of
 * the repository but one inside the project's root_dir (how configs were read before) is taken there.
 */
export function serviceFolder(dir: string, base: string, service: ServiceConfig, log: ProjectLog): string {
  const field = `services.${service.name}.root_dir`;
  if (!service.root_dir) return base;
  const fromRepository = resolve(dir, service.root_dir);
  if (isDirectory(fromRepository)) return fromRepository;
  const nested = resolve(base, service.root_dir);
  if (nested !== fromRepository && isDirectory(nested)) {
    log.build(
      `${field} "${service.root_dir}" is not a folder of the repository; using ${relative(dir, nested)} (inside root_dir) instead`,
      service.name,
    );
    return nested;
  }
  throw new DeployError(`${field} "${service.root_dir}" is not a folder in the source`);
}

/** Whether `path` is `folder` or inside it. */
export function isWithin(folder: string, path: string): boolean {
  const rel = relative(folder, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * A project whose root_dir holds no app to serve (no start_cmd, nothing detected that serves HTTP)
 * answers at its subdomain as it did before the primary app: from its `web` service, else its first
 * web one. Says so in one log line, and returns that service (it takes port_override).
 */
export function fallbackPrimary(
  config: BuildConfig,
  row: ProjectsTable,
  log: ProjectLog,
): ServiceConfig | undefined {
  const fallback =
    config.services.find((s) => s.name === 'web' && s.kind !== 'worker') ??
    config.services.find((s) => s.kind !== 'worker');
  const where = config.root_dir === '.' ? 'the root folder' : `root_dir "${config.root_dir}"`;
  log.build(
    fallback
      ? `no app to serve in ${where} (no start_cmd, none detected): ${row.subdomain} is served by the service ${fallback.name}${(config.port_override ?? null) !== null && fallback.port === null ? `, on port_override ${config.port_override}` : ''}`
      : `no app to serve in ${where} (no start_cmd, none detected), and no web service: ${row.subdomain} serves nothing`,
  );
  return fallback;
}

/** A Procfile's `worker:` runs as a service named `worker`, unless the build config has one of that name. */
export function procfileWorkerFits(config: BuildConfig, log: ProjectLog): boolean {
  if (!config.services.some((s) => s.name === 'worker')) return true;
  log.build('the Procfile’s worker process is not started: a service of the build config is named worker');
  return false;
}

export function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

export function isVenv(dir: string): boolean {
  return isDirectory(join(dir, '.venv', 'bin'));
}

export function assertDirectory(path: string, releaseDir: string, field: string): void {
  if (!isDirectory(path)) {
    throw new DeployError(`${field} "${relative(releaseDir, path)}" is not a folder in the source`);
  }
}

/** The `worker:` process of a Procfile, as a service of its own named `worker`. */
export function procfileWorker(
  cwd: string,
  start: string,
  env: Record<string, string>,
  path: string[],
): ReleaseService {
  return {
    name: 'worker',
    kind: 'worker',
    cwd,
    start,
    staticRoot: null,
    image: null,
    fixedPort: null,
    env,
    path,
  };
}
