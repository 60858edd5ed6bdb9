// The plan on the container runtime: one image per release (`wharf/<project>:<release>`), built from
// the source's own Dockerfile or one written from the build config and detection, and how the
// project's services run in one container (under a supervisor when there are several).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type Docker from 'dockerode';
import type { BuildConfig } from '../../shared/api/projects.js';
import { DeployError } from './build.js';
import { copyBuiltSite } from './built-site.js';
import { type Detection, type Language, detect, readProcfile, shellQuote } from './detect.js';
import { type BuildStep, generateDockerfile, inApp, serviceLabel, supervisorScript } from './dockerfile.js';
import { PLATFORM_LABEL, PROJECT_LABEL, buildImage } from './drivers/docker.js';
import type { PlanContext, PlannerDeps, ReleasePlan, ReleaseService } from './plan.js';
import {
  assertDirectory,
  fallbackPrimary,
  hostStatic,
  isWithin,
  procfileWorkerFits,
  serviceFolder,
} from './plan-services.js';

const LOST_LAYER = /unknown parent image ID|unable to find image|No such image/i;
/** A service's port inside the container when nothing declares one (and an image source's). */
export const DEFAULT_CONTAINER_PORT = 3000;

/** The image tag of a release: `wharf/<project>:<release>`. */
export function imageTag(projectId: string, releaseId: string): string {
  return `wharf/${projectId.toLowerCase()}:${releaseId}`;
}

/**
 * The container runtime: the source's own Dockerfile (in root_dir), or one written from the build
 * config and detection; then the image, then how its services run in one container.
 *
 * As on the host runtimes, the project-level app is the primary one, at the project's subdomain,
 * and each service of the build config runs beside it in the same container (under a supervisor).
 */
export async function containerPlan(deps: PlannerDeps, ctx: PlanContext): Promise<ReleasePlan> {
  const { row, releaseId, dir, build, log } = ctx;
  const env = JSON.parse(row.env_vars) as Record<string, string>;
  const config = JSON.parse(row.build_config) as BuildConfig;
  const base = resolve(dir, config.root_dir);
  assertDirectory(base, dir, 'root_dir');
  const ownDockerfile = existsSync(join(base, 'Dockerfile'));
  const multi = config.services.length > 0;
  const folders = config.services.map((service) => serviceFolder(dir, base, service, log));

  // The build context: root_dir, or the whole source when a service's folder lies outside it. The
  // source's own Dockerfile builds from root_dir, so its services must lie there.
  const outside = config.services.findIndex((_, i) => !isWithin(base, folders[i]!));
  if (outside >= 0 && ownDockerfile) {
    const service = config.services[outside]!;
    throw new DeployError(
      `services.${service.name}.root_dir "${service.root_dir}" is outside root_dir "${config.root_dir}", where the Dockerfile builds from: move the Dockerfile, or the service, so that the service is inside`,
    );
  }
  const context = outside >= 0 ? dir : base;
  /** A folder of the source as a path in the build context (`.` for the context itself). */
  const inContext = (folder: string) => relative(context, folder) || '.';

  // What runs, where: the project-level app (and a Procfile's worker), then the services.
  interface Planned {
    name: string | null;
    kind: 'web' | 'worker';
    /** Folder in the build context. */
    dir: string;
    /** Null: the image's own command (a Dockerfile of the source, without start_cmd). */
    start: string | null;
    port: number | null;
    env: Record<string, string>;
    path: string[];
    /** Its folder inside the container when not the build context's `dir` (the image's own). */
    cwd?: string;
  }
  const planned: Planned[] = [];
  const steps: BuildStep[] = [];
  const languages: Language[] = [];
  let staticSite: { root: string | null; afterBuild: boolean } | null = null;

  const root = inContext(base);
  const detection: Detection | null =
    ownDockerfile || (config.install_cmd && config.build_cmd && config.start_cmd) ? null : detect(base);
  detection?.reasons.forEach((reason) => log.build(`detected ${reason}`));
  if (detection) languages.push(detection.language);
  const install = config.install_cmd ?? detection?.install ?? null;
  const buildCmd = config.build_cmd ?? detection?.build ?? null;
  steps.push({ dir: root, install, build: buildCmd });
  const start = config.start_cmd ?? detection?.start ?? null;
  const path = detection?.venv ? [inApp(`${root}/.venv/bin`)] : [];
  const worker = config.start_cmd ? null : (detection?.worker ?? null);
  // An image that only works (its Procfile names a `worker:` and no `web:`) serves no port.
  const procfile = ownDockerfile && !start ? readProcfile(base) : {};
  if (ownDockerfile && !start && procfile.worker && !procfile.web) {
    log.build('the Procfile names a worker and no web process: the image’s command runs as a worker');
    planned.push({ name: null, kind: 'worker', dir: root, start: null, port: null, env, path });
  } else if (start || ownDockerfile) {
    planned.push({
      name: null,
      kind: 'web',
      dir: root,
      start,
      port: config.port_override ?? null,
      env,
      path,
    });
  } else if (!worker) {
    if (detection?.staticRoot && !buildCmd) staticSite = { root: detection.staticRoot, afterBuild: false };
    else if (buildCmd) staticSite = { root: null, afterBuild: true };
    else if (!multi) {
      throw new DeployError(
        'no start command: set start_cmd in the build config, or add a Dockerfile, a "start" script to package.json, a Procfile with a web process, an app.py/main.py, or an index.html',
      );
    }
  }
  if (worker && procfileWorkerFits(config, log)) {
    planned.push({ name: 'worker', kind: 'worker', dir: root, start: worker, port: null, env, path });
  }

  // A static site that needs no build is served as it is: no image (unless services need one).
  if (staticSite && !staticSite.afterBuild && !multi) {
    log.build('a static site without a build: served by the edge from the release, no image needed');
    return hostStatic(releaseId, dir, resolve(base, staticSite.root!), env);
  }

  const prepared = new Set<string>(install || buildCmd ? [root] : []);
  for (const [i, service] of config.services.entries()) {
    const folder = inContext(folders[i]!);
    const first = !prepared.has(folder);
    prepared.add(folder);
    const found =
      !ownDockerfile && first && (!service.install_cmd || !service.build_cmd) ? detect(folders[i]!) : null;
    found?.reasons
      .filter((r) => !r.startsWith('start:'))
      .forEach((reason) => log.build(`detected ${reason}`, service.name));
    if (found) languages.push(found.language);
    const serviceInstall = service.install_cmd ?? found?.install ?? null;
    const serviceBuild = service.build_cmd ?? found?.build ?? null;
    if (!ownDockerfile && (serviceInstall || serviceBuild)) {
      steps.push({ dir: folder, install: serviceInstall, build: serviceBuild });
    }
    planned.push({
      name: service.name,
      kind: service.kind,
      dir: folder,
      start: service.start_cmd,
      port: service.kind === 'worker' ? null : service.port,
      env: { ...env, ...service.env_overrides },
      path: found?.venv ? [inApp(`${folder}/.venv/bin`)] : [],
    });
  }

  const docker = await deps.docker();
  const tag = imageTag(row.id, releaseId);
  const ownership = { [PLATFORM_LABEL]: deps.platformId, [PROJECT_LABEL]: row.id };
  let dockerfile = 'Dockerfile';
  if (ownDockerfile) {
    log.build('building the image from the source’s own Dockerfile');
  } else {
    const language = languages.find((l) => l === 'node' || l === 'python') ?? 'node';
    const from = language === 'python' ? deps.config.images.python : deps.config.images.node;
    if (new Set(languages.filter((l) => l === 'node' || l === 'python')).size > 1) {
      log.build(
        `services of several languages: the image is built FROM ${from} (add a Dockerfile to choose)`,
      );
    }
    dockerfile = '.wharf/Dockerfile';
    mkdirSync(join(context, '.wharf'), { recursive: true });
    writeFileSync(
      join(context, dockerfile),
      generateDockerfile({
        base: from,
        steps,
        path: planned.flatMap((p) => p.path).slice(0, 1),
        labels: ownership,
      }),
    );
    if (!existsSync(join(context, '.dockerignore'))) writeFileSync(join(context, '.dockerignore'), '.git\n');
    log.build(`building the image FROM ${from} (a Dockerfile written from the build config and detection)`);
  }
  build.check();
  const started = Date.now();
  const { limits } = await deps.resources.forAccount(row.account_id);
  const build1 = () =>
    buildImage(docker, {
      context,
      dockerfile,
      tag,
      // Each label the engine adds is a build step of its own, after the source's: a generated
      // Dockerfile has them first. The release is in the tag.
      labels: ownDockerfile ? ownership : {},
      memoryBytes: limits.memoryBytes,
      cpus: limits.cpus,
      onLine: (line) => log.build(line),
      signal: build.signal,
    });
  try {
    await deps.images.whileBuilding(async () => {
      try {
        await build1();
      } catch (error) {
        // Another client of the engine removed a cached layer this build was reusing: once more.
        if (!LOST_LAYER.test((error as Error).message)) throw error;
        build.check();
        log.build(
          'the engine lost a cached layer during the build (another image was removed): building again',
        );
        await build1();
      }
    });
  } catch (error) {
    build.check();
    throw new DeployError(`image build failed: ${(error as Error).message}`);
  }
  build.check();
  log.build(`image ${tag} built in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  // A static site as the project-level app: served by the edge from the release folder (copied out
  // of the image when its build wrote it).
  let staticRoot: string | null = null;
  if (staticSite?.afterBuild) {
    staticRoot = await copyBuiltSite(docker, deps.platformId, tag, dir, log, multi ? root : null);
    if (!multi) return hostStatic(releaseId, dir, staticRoot!, env, tag);
  } else if (staticSite) {
    staticRoot = resolve(base, staticSite.root!);
    log.build(`a static site in ${root === '.' ? 'the root' : root}/: served by the edge from the release`);
  }

  // The source's own Dockerfile: the project-level app runs in the image's working folder, and with
  // services beside it (under the supervisor) without start_cmd, as the image's own command.
  const image = ownDockerfile ? await imageSettings(docker, tag) : null;
  if (image && multi) {
    const own = planned.find((p) => p.name === null);
    if (own) {
      own.cwd = image.workingDir;
      own.start ??= image.command;
      if (own.start === null) {
        log.build('the image of the Dockerfile has no command (CMD or ENTRYPOINT): only the services run');
        planned.splice(planned.indexOf(own), 1);
      }
    }
  }
  // Without an app of its own in root_dir, a project answers at its subdomain as it did before the
  // primary app: from its `web` service (else its first web one), which takes port_override.
  if (multi && staticRoot === null && !planned.some((p) => p.name === null && p.kind === 'web')) {
    const fallback = fallbackPrimary(config, row, log);
    const chosen = planned.find((p) => p.name === fallback?.name);
    if (chosen && chosen.port === null) chosen.port = config.port_override ?? null;
  }

  // Ports inside the container: as declared, else from 3000 up, never one another service declared.
  const declared = new Set(planned.map((p) => p.port).filter((p): p is number => p !== null));
  const imagePort = image?.exposedPort ?? null;
  let next = DEFAULT_CONTAINER_PORT;
  const portOf = (p: Planned): number | null => {
    if (p.kind === 'worker') return null;
    if (p.port !== null) return p.port;
    if (p.name === null && imagePort !== null && !declared.has(imagePort)) {
      declared.add(imagePort);
      return imagePort;
    }
    while (declared.has(next)) next += 1;
    declared.add(next);
    return next;
  };
  const services: ReleaseService[] = planned.map((p) => {
    const containerPort = portOf(p);
    return {
      name: p.name,
      kind: p.kind,
      cwd: p.cwd ?? inApp(p.dir),
      start: p.start,
      staticRoot: null,
      image: tag,
      fixedPort: null,
      containerPort,
      env: containerPort === null ? p.env : { ...p.env, PORT: String(containerPort) },
      path: p.path,
    };
  });
  const single = services.length === 1 ? services[0]! : null;
  let cmd: string[] | null;
  if (single) {
    // One process: the image's own command (a Dockerfile without start_cmd), else the start command.
    cmd = single.start ? ['/bin/sh', '-c', single.start] : null;
  } else {
    cmd = [
      '/bin/sh',
      '-c',
      supervisorScript(
        services.map((s) => ({
          label: serviceLabel(s.name),
          cwd: s.cwd,
          start: s.start!,
          env: serviceOnly(s.env, env),
          path: s.path,
        })),
      ),
    ];
  }
  if (staticRoot !== null) {
    services.unshift({
      name: null,
      kind: 'static',
      cwd: dir,
      start: null,
      staticRoot,
      image: null,
      fixedPort: null,
      env,
      path: [],
    });
  }
  return {
    id: releaseId,
    dir,
    runs: 'container',
    image: tag,
    cmd,
    workingDir: single && single.start && !ownDockerfile ? single.cwd : null,
    env: single ? single.env : env,
    services,
  };
}

/** The variables a service sets beyond the project's own (its overrides and PORT). */
function serviceOnly(env: Record<string, string>, project: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([k, v]) => project[k] !== v));
}

/**
 * What an image of the source's own Dockerfile runs: its working folder, its command (ENTRYPOINT and
 * CMD as one shell command; null when it has none) and the first port it EXPOSEs.
 */
async function imageSettings(
  docker: Docker,
  image: string,
): Promise<{ workingDir: string; command: string | null; exposedPort: number | null }> {
  let info: Awaited<ReturnType<Docker.Image['inspect']>>;
  try {
    info = await docker.getImage(image).inspect();
  } catch {
    return { workingDir: '/', command: null, exposedPort: null };
  }
  const words = (value: string | string[] | null | undefined): string[] =>
    value === null || value === undefined ? [] : typeof value === 'string' ? [value] : value;
  const argv = [...words(info.Config?.Entrypoint), ...words(info.Config?.Cmd)];
  const exposed = Object.keys(info.Config?.ExposedPorts ?? {})
    .filter((key) => key.endsWith('/tcp'))
    .map((key) => Number(key.split('/')[0]))
    .sort((a, b) => a - b)[0];
  return {
    workingDir: info.Config?.WorkingDir || '/',
    command: argv.length > 0 ? `exec ${argv.map(shellQuote).join(' ')}` : null,
    exposedPort: exposed ?? null,
  };
}
