// The release plan: from a fetched source to what the supervisor starts, and what a restart or a
// rollback starts again without a build (stored as JSON with the project and with each release).
//
// Host runtimes (sandbox, process) install and build in the release folder and start each service as
// a process group. The container runtime builds one image per release (`wharf/<project>:<release>`)
// from the source's own Dockerfile or one written from detection, and runs all of the project's
// services in one container. Image sources run in a container on any runtime.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createWriteStream, statSync } from 'node:fs';
import type Docker from 'dockerode';
import { type BuildConfig, LIMITS, type ServiceConfig } from '../../shared/api/projects.js';
import type { PlatformConfig } from '../config.js';
import type { ProjectsTable } from '../store/schema.js';
import type { Build } from './build.js';
import { DeployError } from './build.js';
import {
  BUILT_STATIC_ROOTS,
  type Detection,
  type Language,
  detect,
  readProcfile,
  shellQuote,
  staticRootAfterBuild,
} from './detect.js';
import { type BuildStep, generateDockerfile, inApp, serviceLabel, supervisorScript } from './dockerfile.js';
import {
  PLATFORM_LABEL,
  PROJECT_LABEL,
  type ImageJanitor,
  type RegistryAuth,
  buildImage,
  imageExists,
  pullImage,
} from './drivers/docker.js';
import type { CommandDriver } from './drivers/host.js';
import type { ProcessExit } from './process.js';
import type { ProjectLog } from './project-log.js';
import type { PlanResources } from './resources.js';
import { extractUpload } from './sources.js';

export interface ReleasePlan {
  id: string;
  /** The release folder on this machine: the source (host runtimes), static files. */
  dir: string;
  /** Processes on this machine, or one container. Plans stored before containers: host. */
  runs?: 'host' | 'container';
  /** Container plans: the image. */
  image?: string | null;
  /** Container plans: the command (null: the image's own) and its folder (null: the image's). */
  cmd?: string[] | null;
  workingDir?: string | null;
  /** Container plans: the container's environment (a supervisor sets each service's own on top). */
  env?: Record<string, string>;
  services: ReleaseService[];
}

export interface ReleaseService {
  /** Null for a project without `services` in its build config: one service, the app itself. */
  name: string | null;
  /** `image`: plans stored before containers, for an image source (now a container plan). */
  kind: 'web' | 'worker' | 'static' | 'image';
  /** Its folder: on this machine, or inside the container. */
  cwd: string;
  start: string | null;
  /** For static sites: the folder served (on this machine). */
  staticRoot: string | null;
  image: string | null;
  /** Host plans: the port the build config fixes, else null (a free one at each start). */
  fixedPort: number | null;
  /** Container plans: its port inside the container. */
  containerPort?: number | null;
  /** The project's env vars with the service's overrides, as they were at deploy time. */
  env: Record<string, string>;
  /** Folders put first on PATH (a Python virtualenv's bin/). */
  path: string[];
}

/** Plans stored before containers ran an image source as a service of kind `image`. */
export function normalizePlan(plan: ReleasePlan): ReleasePlan {
  const legacy = plan.services.find((s) => s.kind === 'image');
  if (!legacy || plan.runs === 'container') return plan;
  return {
    ...plan,
    runs: 'container',
    image: legacy.image,
    cmd: null,
    workingDir: null,
    services: [{ ...legacy, kind: 'web', containerPort: legacy.containerPort ?? 3000 }],
  };
}

const BUILD_STEP_TIMEOUT_MS = 20 * 60_000;
const LOST_LAYER = /unknown parent image ID|unable to find image|No such image/i;
const DEFAULT_CONTAINER_PORT = 3000;
/** The tar of a built site (files and their headers), at most what an upload may unpack to. */
const BUILT_SITE_MAX_BYTES = LIMITS.uploadUnpackedBytes + 16 * 1024 * 1024;

/** Passes bytes through, failing with a DeployError once more than `max` went by. */
export function capBytes(max: number, what: string): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (seen > max) done(new DeployError(`${what} is larger than ${Math.floor(max / 1024 / 1024)} MiB`));
      else done(null, chunk);
    },
  });
}

export interface PlanContext {
  row: ProjectsTable;
  releaseId: string;
  dir: string;
  build: Build;
  log: ProjectLog;
}

export interface PlannerDeps {
  config: PlatformConfig;
  /** The runtime chosen: `container` builds images; the others install and build on the host. */
  kind: 'container' | 'sandbox' | 'process';
  driver: CommandDriver;
  /** The engine, or a DeployError saying why there is none. */
  docker(): Promise<Docker>;
  /** The label that marks this platform's containers and images. */
  platformId: string;
  /** Removes images between builds, never during one. */
  images: ImageJanitor;
  /** An image source's registry login, if one is saved. */
  registryAuth(row: ProjectsTable): RegistryAuth | null;
  /** What a project may use, from its account's plan: its image builds get the same memory and CPU. */
  resources: PlanResources;
}

export class Planner {
  constructor(private readonly deps: PlannerDeps) {}

  /** The image tag of a release: `wharf/<project>:<release>`. */
  static imageTag(projectId: string, releaseId: string): string {
    return `wharf/${projectId.toLowerCase()}:${releaseId}`;
  }

  async plan(ctx: PlanContext): Promise<ReleasePlan> {
    if (ctx.row.deploy_source === 'image') return this.imagePlan(ctx);
    if (this.deps.kind === 'container') return this.containerPlan(ctx);
    return this.hostPlan(ctx);
  }

  /** An image source: pulled (progress in the log), then run as it is. */
  private async imagePlan({ row, releaseId, dir, build, log }: PlanContext): Promise<ReleasePlan> {
    const docker = await this.deps.docker();
    const image = row.image!;
    log.build(`pulling ${image}`);
    try {
      const auth = this.deps.registryAuth(row);
      if (auth) log.build(`as ${auth.username} at ${auth.serveraddress}`);
      await pullImage(docker, image, (line) => log.build(line), auth ?? undefined);
    } catch (error) {
      // An image only this engine has (built or loaded here) needs no pull.
      if (!(await imageExists(docker, image))) {
        throw new DeployError(`could not pull ${image}: ${(error as Error).message}`);
      }
      log.build(`${image} is not in a registry this engine reaches; using the local image`);
    }
    build.check();
    const config = JSON.parse(row.build_config) as BuildConfig;
    const port = config.port_override ?? (await exposedPort(docker, image)) ?? DEFAULT_CONTAINER_PORT;
    mkdirSync(dir, { recursive: true });
    return {
      id: releaseId,
      dir,
      runs: 'container',
      image,
      cmd: null,
      workingDir: null,
      env: { ...(JSON.parse(row.env_vars) as Record<string, string>), PORT: String(port) },
      services: [
        {
          name: null,
          kind: 'web',
          cwd: '',
          start: null,
          staticRoot: null,
          image,
          fixedPort: null,
          containerPort: port,
          env: { ...(JSON.parse(row.env_vars) as Record<string, string>), PORT: String(port) },
          path: [],
        },
      ],
    };
  }

  /**
   * The container runtime: the source's own Dockerfile (in root_dir), or one written from the build
   * config and detection; then the image, then how its services run in one container.
   *
   * As on the host runtimes, the project-level app is the primary one, at the project's subdomain,
   * and each service of the build config runs beside it in the same container (under a supervisor).
   */
  private async containerPlan(ctx: PlanContext): Promise<ReleasePlan> {
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

    const docker = await this.deps.docker();
    const tag = Planner.imageTag(row.id, releaseId);
    const ownership = { [PLATFORM_LABEL]: this.deps.platformId, [PROJECT_LABEL]: row.id };
    let dockerfile = 'Dockerfile';
    if (ownDockerfile) {
      log.build('building the image from the source’s own Dockerfile');
    } else {
      const language = languages.find((l) => l === 'node' || l === 'python') ?? 'node';
      const from = language === 'python' ? this.deps.config.images.python : this.deps.config.images.node;
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
      if (!existsSync(join(context, '.dockerignore')))
        writeFileSync(join(context, '.dockerignore'), '.git\n');
      log.build(`building the image FROM ${from} (a Dockerfile written from the build config and detection)`);
    }
    build.check();
    const started = Date.now();
    const { limits } = await this.deps.resources.forAccount(row.account_id);
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
      await this.deps.images.whileBuilding(async () => {
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
      staticRoot = await this.copyBuiltSite(docker, tag, dir, log, multi ? root : null);
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

  /**
   * A site built inside the image: its files copied out to the release folder, where the edge serves
   * them. A single app: all of /app, and no site fails the deploy. The primary app beside services
   * (`folder`, its root_dir in the image): only the folders a build writes a site to, each copied
   * when it is there, so that the services' folders stay in the image; null when there is no site.
   */
  private async copyBuiltSite(
    docker: Docker,
    tag: string,
    dir: string,
    log: ProjectLog,
    folder: string | null,
  ): Promise<string | null> {
    const container = await docker.createContainer({
      Image: tag,
      Cmd: ['true'],
      Labels: { [PLATFORM_LABEL]: this.deps.platformId },
    });
    const out = join(dir, '.wharf-built');
    const copy = async (path: string, dest: string) => {
      const archive = join(tmpdir(), `wharf-site-${container.id.slice(0, 12)}.tar`);
      try {
        // The image is the tenant's: what it holds is copied out no bigger than an upload may unpack to.
        await pipeline(
          (await container.getArchive({ path })) as NodeJS.ReadableStream,
          capBytes(BUILT_SITE_MAX_BYTES, 'the built site'),
          createWriteStream(archive),
        );
        // The same checks as an upload: no link may lead out of the release.
        await extractUpload({ archive, dest, onLine: () => undefined });
      } finally {
        rmSync(archive, { force: true });
      }
    };
    try {
      if (folder === null) await copy('/app', out);
      else {
        for (const candidate of BUILT_STATIC_ROOTS) {
          try {
            await copy(`${inApp(folder)}/${candidate}`, join(out, candidate));
          } catch (error) {
            if ((error as { statusCode?: number }).statusCode === 404) continue;
            throw error;
          }
          if (staticRootAfterBuild(out) === candidate) break;
        }
      }
    } finally {
      await container.remove({ force: true }).catch(() => undefined);
    }
    const root = staticRootAfterBuild(out);
    if (!root) {
      if (folder !== null) return null;
      throw new DeployError(
        'no start command, and the build wrote no index.html (in dist/, build/, out/ or public/): set start_cmd, or add a Dockerfile',
      );
    }
    log.build(`detected static site: the build wrote ${root}/index.html; served by the edge`);
    return resolve(out, root);
  }

  /**
   * Host runtimes: install and build in the release folder; services started as processes later.
   *
   * The project-level app (root_dir, the top-level commands, detection for what they leave empty,
   * port_override) is the primary app, served at the project's subdomain (SPEC §2.2). Each service of
   * the build config runs in addition, in its own folder, at `<subdomain>-<name>`.
   */
  private async hostPlan({ row, releaseId, dir, build, log }: PlanContext): Promise<ReleasePlan> {
    const env = JSON.parse(row.env_vars) as Record<string, string>;
    const config = JSON.parse(row.build_config) as BuildConfig;
    const base = resolve(dir, config.root_dir);
    assertDirectory(base, dir, 'root_dir');
    const multi = config.services.length > 0;
    const folders = config.services.map((service) => serviceFolder(dir, base, service, log));
    const step = (label: 'install' | 'build', command: string | null, cwd: string, opts: StepOptions) =>
      this.step(build, log, label, command, cwd, dir, { ...opts, projectId: row.id });

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
  private async step(
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
    const process = this.deps.driver.run({
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
}

interface StepOptions {
  env: Record<string, string>;
  path: string[];
  service: string | null;
}

function hostStatic(
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

/** The variables a service sets beyond the project's own (its overrides and PORT). */
function serviceOnly(env: Record<string, string>, project: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([k, v]) => project[k] !== v));
}

/**
 * The folder of a service: its root_dir, a directory of the repository (SPEC §2.2: "several
 * directories of one repository"), else the project's root_dir. A root_dir that names no folder of
 * the repository but one inside the project's root_dir (how configs were read before) is taken there.
 */
function serviceFolder(dir: string, base: string, service: ServiceConfig, log: ProjectLog): string {
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
function isWithin(folder: string, path: string): boolean {
  const rel = relative(folder, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * A project whose root_dir holds no app to serve (no start_cmd, nothing detected that serves HTTP)
 * answers at its subdomain as it did before the primary app: from its `web` service, else its first
 * web one. Says so in one log line, and returns that service (it takes port_override).
 */
function fallbackPrimary(
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
function procfileWorkerFits(config: BuildConfig, log: ProjectLog): boolean {
  if (!config.services.some((s) => s.name === 'worker')) return true;
  log.build('the Procfile’s worker process is not started: a service of the build config is named worker');
  return false;
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

/** The first port an image declares with EXPOSE, if any. */
async function exposedPort(docker: Docker, image: string): Promise<number | null> {
  try {
    const info = await docker.getImage(image).inspect();
    const first = Object.keys(info.Config?.ExposedPorts ?? {})
      .filter((key) => key.endsWith('/tcp'))
      .map((key) => Number(key.split('/')[0]))
      .sort((a, b) => a - b)[0];
    return first ?? null;
  } catch {
    return null;
  }
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

export function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function isVenv(dir: string): boolean {
  return isDirectory(join(dir, '.venv', 'bin'));
}

function assertDirectory(path: string, releaseDir: string, field: string): void {
  if (!isDirectory(path)) {
    throw new DeployError(`${field} "${relative(releaseDir, path)}" is not a folder in the source`);
  }
}

/** The `worker:` process of a Procfile, as a service of its own named `worker`. */
function procfileWorker(
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
