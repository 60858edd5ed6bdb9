// The release plan: from a fetched source to what the supervisor starts, and what a restart or a
// rollback starts again without a build (stored as JSON with the project and with each release).
//
// Host runtimes (sandbox, process) install and build in the release folder and start each service as
// a process group. The container runtime builds one image per release (`wharf/<project>:<release>`)
// from the source's own Dockerfile or one written from detection, and runs all of the project's
// services in one container. Image sources run in a container on any runtime. Each has its file:
// host-plan.ts, container-plan.ts (built-site.ts copies a static site out), image-plan.ts.
import type Docker from 'dockerode';
import type { PlatformConfig } from '../config.js';
import type { BuildConfig } from '../../shared/api/projects.js';
import type { ProjectsTable } from '../store/schema.js';
import { type Build, DeployError } from './build.js';
import { containerPlan, imageTag } from './container-plan.js';
import { type ImageJanitor, type RegistryAuth, pushImage, registryAuth } from './drivers/docker.js';
import type { CommandDriver } from './drivers/host.js';
import { hostPlan } from './host-plan.js';
import { imagePlan } from './image-plan.js';
import type { ProjectLog } from './project-log.js';
import type { PlanResources } from './resources.js';

export interface ReleasePlan {
  id: string;
  /** The release folder on this machine: the source (host runtimes), static files. */
  dir: string;
  /** Processes on this machine, or one container. Plans stored before containers: host. */
  runs?: 'host' | 'container';
  /** The tasks of its service on the swarm runtime (the build config's replicas; 1 when absent). */
  replicas?: number;
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
  kind: 'container' | 'swarm' | 'sandbox' | 'process';
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
    return imageTag(projectId, releaseId);
  }

  async plan(ctx: PlanContext): Promise<ReleasePlan> {
    const plan = await this.pushed(ctx, await this.planOf(ctx));
    const replicas = (JSON.parse(ctx.row.build_config) as Partial<BuildConfig>).replicas ?? 1;
    if (this.deps.kind === 'swarm') plan.replicas = replicas;
    else if (replicas > 1) {
      ctx.log.system(
        `replicas: ${replicas} applies on the swarm runtime; this platform runs apps with the ${this.deps.kind} runtime, one instance each`,
      );
    }
    return plan;
  }

  /**
   * The swarm runtime with a registry: an image built here goes there, and the plan runs it from there
   * (every machine of the Swarm pulls it). Image sources are run from their own registry as they are.
   */
  private async pushed(ctx: PlanContext, plan: ReleasePlan): Promise<ReleasePlan> {
    const registry = this.deps.config.registry;
    if (this.deps.kind !== 'swarm' || registry === null || plan.runs !== 'container') return plan;
    const built = plan.image;
    if (!built?.startsWith('wharf/')) return plan;
    const target = `${registry.host}/${built}`;
    const started = Date.now();
    ctx.log.build(`pushing the image to ${registry.host}`);
    try {
      await pushImage(
        await this.deps.docker(),
        built,
        target,
        (line) => ctx.log.build(line),
        registryAuth(registry),
      );
    } catch (error) {
      throw new DeployError(`could not push the image to ${registry.host}: ${(error as Error).message}`);
    }
    ctx.build.check();
    ctx.log.build(`pushed ${target} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return {
      ...plan,
      image: target,
      services: plan.services.map((s) => (s.image === built ? { ...s, image: target } : s)),
    };
  }

  private planOf(ctx: PlanContext): Promise<ReleasePlan> {
    if (ctx.row.deploy_source === 'image') return imagePlan(this.deps, ctx);
    if (this.deps.kind === 'container' || this.deps.kind === 'swarm') return containerPlan(this.deps, ctx);
    return hostPlan(this.deps, ctx);
  }
}
