// The supervisor: starts a release plan's services, tells the edge where each one is, restarts what
// crashes (with backoff, up to a limit), drains and stops what is replaced.
//
// An instance is one release running. Its services run in units: on the host runtimes one process
// group per service; on the container runtime one container for all of them. A unit that exits is a
// crash of every service in it, restarted together.
import { Agent } from 'node:http';
import { relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';
import type { PlatformConfig } from '../config.js';
import type { Build } from './build.js';
import { DeployError } from './build.js';
import { parseSupervisedLine, serviceLabel } from './dockerfile.js';
import type { ResourceLimits } from './cgroups.js';
import {
  type ContainerSpec,
  type ContainerUnit,
  PLATFORM_LABEL,
  PROJECT_LABEL,
  RELEASE_LABEL,
  type RegistryAuth,
  attach,
  ensureNetwork,
  registryAuth,
  runContainer,
  waitForHttp,
} from './drivers/docker.js';
import type { CommandDriver } from './drivers/host.js';
import {
  type Endpoint,
  NodeAddresses,
  ServiceWatcher,
  type OutputSink,
  type OutputStart,
  type ServiceUnit,
  createService,
  ensureOverlayNetwork,
  findService,
  followService,
  removeService,
  waitForTasks,
} from './drivers/swarm.js';
import { describeExit, hostEnv } from './host-plan.js';
import type { ReleasePlan, ReleaseService } from './plan.js';
import { type RunningProcess, freePort, waitForPort } from './process.js';
import { portIsFree } from './ports.js';
import type { ProjectLog } from './project-log.js';
import type { PlanResources } from './resources.js';

export interface LiveService {
  spec: ReleaseService;
  /** Where the edge reaches it on 127.0.0.1 (a container's published port); null for workers. */
  port: number | null;
  /**
   * The swarm runtime: where each running task answers (a node's address and the port published
   * there), kept fresh as Swarm restarts and moves them; requests take them in turn.
   */
  endpoints: Endpoint[] | null;
  /** The next of `endpoints` to take. */
  turn: number;
  up: boolean;
  /** Requests the edge is proxying to it right now. */
  inflight: number;
  agent: Agent;
}

interface Unit {
  services: LiveService[];
  process: RunningProcess | null;
}

export interface Instance {
  plan: ReleasePlan;
  services: LiveService[];
  units: Unit[];
  retiring: boolean;
}

/** What the supervisor needs to know of a project while it runs. */
export interface Supervised {
  id: string;
  log: ProjectLog;
  current: Instance | null;
  crashes: number;
  timers: Set<NodeJS.Timeout>;
}

/** Where the edge sends a request for one host of a project. */
export type EdgeTarget =
  | { kind: 'proxy'; host: string; port: number; agent: Agent; done(): void }
  | { kind: 'static'; root: string }
  | { kind: 'down'; status: 502 | 503; reason: string }
  | { kind: 'no-service'; reason: string };

const DRAIN_TIMEOUT_MS = 30_000;
const STABLE_AFTER_MS = 60_000;
const MAX_BACKOFF_MS = 30_000;

export interface SupervisorDeps {
  config: PlatformConfig;
  driver: CommandDriver;
  docker(): Promise<Docker>;
  platformId: string;
  /** Whether releases run as Swarm services (the swarm runtime) rather than containers of this engine. */
  swarm: boolean;
  /** What each project may use, from its account's plan (read at each start: a plan change applies). */
  resources: PlanResources;
  /** The serving instance went down for good: the runtime marks the project failed. */
  wentDown(project: Supervised, error: string): Promise<void>;
  closed(): boolean;
  /**
   * Where a project's requests go changed: a unit came up (on its ports) or went down, or a service's
   * tasks answer elsewhere now (routes.ts).
   */
  changed?(projectId: string): void;
  /**
   * The login an image source's project keeps for the registry `image` is in (its registry
   * credentials), or null: what a Swarm machine without the image pulls it with.
   */
  sourceAuth?(projectId: string, image: string): Promise<RegistryAuth | null>;
  /** A drained instance is about to stop: resolves once a front proxy sends its servers nothing more. */
  released?(servers: Endpoint[]): Promise<void>;
}

export class Supervisor {
  /** Set when a node of a cluster leaves: what its services say is another node's to copy. */
  private outputStopped = false;

  constructor(private readonly deps: SupervisorDeps) {}

  /** Stops copying services' output into project logs (a node of a cluster leaving). */
  stopOutput(): void {
    this.outputStopped = true;
  }

  /** Starts every service of a plan and waits until all are healthy. */
  async start(project: Supervised, plan: ReleasePlan, build: Build | null): Promise<Instance> {
    const instance = newInstance(plan);
    try {
      for (const live of instance.services) {
        if (live.spec.kind === 'static') {
          project.log.system(
            `serving ${relative(plan.dir, live.spec.staticRoot!) || '.'}/ as a static site`,
            live.spec.name,
          );
        }
      }
      await Promise.all(instance.units.map((unit) => this.launch(project, instance, unit, build)));
    } catch (error) {
      await this.stop(instance, { drain: false });
      throw error;
    }
    return instance;
  }

  /**
   * After a platform restart: follows the release's container if it kept running (no restart, no
   * build); null when there is none to follow, so the caller starts the plan anew.
   */
  async reattach(
    project: Supervised,
    plan: ReleasePlan,
    /**
     * `owner`: this node copies the output into the project log and removes a service that does not
     * answer; false for a node that only routes to it (another node deployed it).
     */
    options: { owner: boolean } = { owner: true },
  ): Promise<Instance | null> {
    // Static sites alone run nothing: a node that only routes to them serves their files at once.
    if (!options.owner && plan.services.every((s) => s.kind === 'static')) return newInstance(plan);
    if (plan.runs !== 'container') return null;
    if (this.deps.swarm) return this.reattachService(project, plan, options.owner);
    const docker = await this.deps.docker();
    const [found] = await docker.listContainers({
      filters: {
        label: [`${PLATFORM_LABEL}=${this.deps.platformId}`, `${RELEASE_LABEL}=${plan.id}`],
        status: ['running'],
      },
    });
    if (!found) return null;
    const instance = newInstance(plan);
    const unit = instance.units[0]!;
    const container = await attach(
      docker,
      found.Id,
      this.lineSink(project, plan),
      Math.floor(Date.now() / 1000),
    );
    unit.process = container;
    try {
      await this.healthy(project, unit, container, 10_000);
    } catch {
      await container.stop(2_000);
      return null;
    }
    for (const live of unit.services) live.up = true;
    return instance;
  }

  /** Watches the units of the serving instance: a crash restarts the unit with backoff. */
  supervise(project: Supervised, instance: Instance): void {
    for (const unit of instance.units) {
      if (unit.process) this.watch(project, instance, unit, unit.process);
    }
  }

  /**
   * The swarm runtime, for a release another node deployed: this node copies its service's output into
   * the project log from `start` (the node that did stopped). False if it runs no service.
   */
  async copyOutput(project: Supervised, instance: Instance, start: OutputStart): Promise<boolean> {
    const unit = instance.units.find((u) => u.process && 'copyOutput' in u.process);
    if (!unit) return false;
    await (unit.process as ServiceUnit).copyOutput(start, this.outputSink(project, instance.plan));
    return true;
  }

  /** Stops an instance's units: after its in-flight requests when draining. */
  async stop(instance: Instance, options: { drain: boolean }): Promise<void> {
    instance.retiring = true;
    if (options.drain) {
      const deadline = Date.now() + DRAIN_TIMEOUT_MS;
      await this.deps.released?.(instance.services.flatMap((live) => serversOf(live) ?? []));
      while (instance.services.some((s) => s.inflight > 0) && Date.now() < deadline) await sleep(25);
    }
    for (const live of instance.services) live.up = false;
    await Promise.all(
      instance.units.map(async (unit) => {
        const process = unit.process;
        unit.process = null;
        if (process) await process.stop();
      }),
    );
    for (const live of instance.services) live.agent.destroy();
  }

  /**
   * Platform shutdown: host processes stop; containers keep running, and the next start follows them
   * again (unless the platform is told to stop them too).
   */
  async leave(instance: Instance): Promise<void> {
    instance.retiring = true;
    await Promise.all(
      instance.units.map(async (unit) => {
        const process = unit.process;
        unit.process = null;
        // Containers and Swarm services keep running; host processes stop.
        const container = process && 'detach' in process;
        if (process && (!container || this.deps.config.stopContainersOnExit)) await process.stop();
        else if (process) (process as ContainerUnit).detach();
      }),
    );
    for (const live of instance.services) live.agent.destroy();
  }

  /**
   * Stops following an instance without stopping it: another node now decides over it (a node that
   * only routed to a release another node deployed).
   */
  forget(instance: Instance): void {
    instance.retiring = true;
    for (const unit of instance.units) {
      const process = unit.process;
      unit.process = null;
      if (process && 'detach' in process) (process as ServiceUnit).detach();
    }
    for (const live of instance.services) live.agent.destroy();
  }

  /**
   * The edge's question: where does a request for `service` (null: the main one) go? `stay`: where a
   * kept-alive connection went, taken again while it is still one of the service's endpoints.
   */
  target(instance: Instance, service: string | null, stay?: Endpoint): EdgeTarget {
    const live = serviceOf(instance, service);
    if (!live) {
      return {
        kind: 'no-service',
        reason: service === null ? 'the project has no web service' : `no service "${service}"`,
      };
    }
    if (live.spec.kind === 'worker') return { kind: 'no-service', reason: `"${service}" is a worker` };
    if (live.spec.kind === 'static') return { kind: 'static', root: live.spec.staticRoot! };
    const endpoint = live.endpoints ? nextEndpoint(live, stay) : live.port === null ? null : local(live.port);
    if (!live.up || endpoint === null) {
      return { kind: 'down', status: 502, reason: 'the app crashed and is being restarted' };
    }
    live.inflight += 1;
    let done = false;
    return {
      kind: 'proxy',
      host: endpoint.host,
      port: endpoint.port,
      agent: live.agent,
      done: () => {
        if (!done) live.inflight -= 1;
        done = true;
      },
    };
  }

  /**
   * Every address a request for `service` (null: the main one) may go to now, for a front proxy's
   * routing table; null when none is an app's (static, a worker, down): the Node edge answers those.
   */
  servers(instance: Instance, service: string | null): Endpoint[] | null {
    const live = serviceOf(instance, service);
    if (!live || live.spec.kind === 'worker' || live.spec.kind === 'static' || !live.up) return null;
    const servers = serversOf(live);
    return servers && servers.length > 0 ? servers : null;
  }

  private async launch(project: Supervised, instance: Instance, unit: Unit, build: Build | null) {
    if (instance.plan.runs !== 'container') await this.launchProcess(project, instance, unit, build);
    else if (this.deps.swarm) await this.launchService(project, instance, unit, build);
    else await this.launchContainer(project, instance, unit, build);
    for (const live of unit.services) live.up = true;
    this.deps.changed?.(project.id);
  }

  /** Host runtimes: one service as a process group, healthy once its own processes hold its port. */
  private async launchProcess(project: Supervised, instance: Instance, unit: Unit, build: Build | null) {
    const live = unit.services[0]!;
    const { spec } = live;
    const { log } = project;
    const label = spec.name ?? 'the app';
    const port = spec.kind === 'worker' ? null : (spec.fixedPort ?? (await freePort()));
    // The network is shared: a declared port someone else holds would hand them this app's traffic.
    if (spec.fixedPort !== null && !(await portIsFree(spec.fixedPort))) {
      throw new DeployError(
        `${spec.name ? `service ${spec.name}: ` : ''}port ${spec.fixedPort} is already in use on this machine (by another app or the platform): choose another port in the build config, or leave it to the platform`,
      );
    }
    live.port = port;
    const started = Date.now();
    const env = hostEnv(instance.plan.dir, spec.env, spec.path, port === null ? {} : { PORT: String(port) });
    log.system(`starting ${label}: ${spec.start}${port === null ? '' : ` (PORT=${port})`}`, spec.name);
    const { limits } = await this.deps.resources.forProject(project.id);
    await this.deps.driver.prepare(project.id, [], limits);
    const process = this.deps.driver.run({
      projectId: project.id,
      command: spec.start!,
      cwd: spec.cwd,
      env,
      workspace: `${instance.plan.dir}/..`,
      onLine: (_stream, line) => log.write('runtime', spec.name, line),
    });
    unit.process = process;
    build?.track(process);
    if (port === null) {
      await this.workerGrace(project, label, spec.name, process);
      return;
    }
    try {
      await waitForPort(port, {
        timeoutMs: this.deps.config.healthTimeoutMs,
        exited: process.exited,
        owner: () => process.pid,
      });
    } catch (error) {
      build?.check();
      throw new DeployError(`${spec.name ? `service ${spec.name}: ` : ''}${(error as Error).message}`);
    }
    log.system(`${label} is up on port ${port} (${seconds(started)})`, spec.name);
  }

  /** The container runtime (and image sources): one container on the project's network. */
  private async launchContainer(project: Supervised, instance: Instance, unit: Unit, build: Build | null) {
    const { plan } = instance;
    const docker = await this.deps.docker();
    const { labels, networkLabels } = this.labelsOf(project, plan);
    const network = `wharf-${project.id.toLowerCase()}`;
    await ensureNetwork(docker, network, networkLabels);
    const { limits } = await this.deps.resources.forProject(project.id);
    const ports = containerPorts(unit);
    const started = Date.now();
    project.log.system(
      `starting a container of ${plan.image}${ports.length > 0 ? ` (port${ports.length > 1 ? 's' : ''} ${ports.join(', ')} inside)` : ''}`,
    );
    build?.check();
    let container: ContainerUnit;
    try {
      container = await runContainer(
        docker,
        // A restart after a crash makes a new container: the name stays unique.
        containerSpec(plan, unit, {
          name: `wharf-${project.id}-${plan.id}-${Date.now().toString(36)}`.toLowerCase(),
          labels,
          network,
          limits,
        }),
        this.lineSink(project, plan),
      );
    } catch (error) {
      throw new DeployError(`the container did not start: ${(error as Error).message}`);
    }
    unit.process = container;
    build?.track(container);
    try {
      await this.healthy(project, unit, container, this.deps.config.healthTimeoutMs);
    } catch (error) {
      build?.check();
      throw new DeployError((error as Error).message);
    }
    project.log.system(`the container is up (${seconds(started)})`);
  }

  /**
   * The login the Swarm's machines pull `image` with: the platform's registry's for the images it
   * built, the project's own for an image source from a private registry.
   */
  private async pullAuth(
    projectId: string,
    image: string | null | undefined,
  ): Promise<RegistryAuth | undefined> {
    if (!image) return undefined;
    const registry = this.deps.config.registry;
    if (registry && image.startsWith(`${registry.host}/`)) return registryAuth(registry);
    return (await this.deps.sourceAuth?.(projectId, image)) ?? undefined;
  }

  /** The swarm runtime: the release as a Swarm service on the project's overlay network. */
  private async launchService(project: Supervised, instance: Instance, unit: Unit, build: Build | null) {
    const { plan } = instance;
    const docker = await this.deps.docker();
    const { labels, networkLabels } = this.labelsOf(project, plan);
    const network = swarmNetworkOf(project.id);
    await ensureOverlayNetwork(docker, network, networkLabels);
    const { limits } = await this.deps.resources.forProject(project.id);
    const ports = containerPorts(unit);
    const replicas = plan.replicas ?? 1;
    const started = Date.now();
    project.log.system(
      `starting a Swarm service of ${plan.image} (${replicas} task${replicas === 1 ? '' : 's'}${ports.length > 0 ? `, port${ports.length > 1 ? 's' : ''} ${ports.join(', ')} inside` : ''})`,
    );
    build?.check();
    let serviceId: string;
    try {
      serviceId = await createService(
        docker,
        {
          ...containerSpec(plan, unit, {
            name: `wharf-${plan.id}-${Date.now().toString(36)}`.toLowerCase().replace(/_/g, '-'),
            labels,
            network,
            limits,
          }),
          replicas,
          startPeriodMs: this.deps.config.healthTimeoutMs,
          restartDelayMs: this.deps.config.restartBackoffMs,
          auth: await this.pullAuth(project.id, plan.image),
        },
        (line) => project.log.system(line),
      );
    } catch (error) {
      throw new DeployError(`Swarm did not create the service: ${(error as Error).message}`);
    }
    const since = Math.floor(started / 1000);
    await this.followService(project, instance, unit, serviceId, since);
    try {
      const endpoints = await waitForTasks(docker, serviceId, {
        replicas,
        timeoutMs: this.deps.config.healthTimeoutMs + 30_000,
        nodes: this.watcher(docker).nodes,
        cancelled: () => build?.cancelled != null,
      });
      setEndpoints(unit, endpoints);
      await this.answering(unit, this.deps.config.healthTimeoutMs);
    } catch (error) {
      build?.check();
      throw new DeployError((error as Error).message);
    }
    project.log.system(
      `the service is up: ${replicas} task${replicas === 1 ? '' : 's'} running (${seconds(started)})`,
    );
  }

  /** After a platform restart: follows the release's service if it is still there and answers. */
  private async reattachService(
    project: Supervised,
    plan: ReleasePlan,
    owner: boolean,
  ): Promise<Instance | null> {
    const docker = await this.deps.docker();
    const serviceId = await findService(docker, this.deps.platformId, plan.id);
    if (serviceId === null) return null;
    const instance = newInstance(plan);
    const unit = instance.units[0];
    if (!unit) return null;
    await this.followService(
      project,
      instance,
      unit,
      serviceId,
      owner ? Math.floor(Date.now() / 1000) : null,
    );
    try {
      const endpoints = await waitForTasks(docker, serviceId, {
        replicas: 1,
        timeoutMs: 10_000,
        nodes: this.watcher(docker).nodes,
        cancelled: () => false,
      });
      setEndpoints(unit, endpoints);
      await this.answering(unit, 10_000);
    } catch {
      if (owner) await removeService(docker, serviceId);
      else (unit.process as ServiceUnit | null)?.detach();
      return null;
    }
    return instance;
  }

  private async followService(
    project: Supervised,
    instance: Instance,
    unit: Unit,
    serviceId: string,
    since: number | null,
  ): Promise<void> {
    const docker = await this.deps.docker();
    unit.process = await followService(docker, serviceId, {
      since,
      watcher: this.watcher(docker),
      onLine: this.outputSink(project, instance.plan),
      onEndpoints: (endpoints) => {
        const before = unit.services.map((s) => s.endpoints);
        setEndpoints(unit, endpoints);
        // A front proxy with its own routing table must hear of a task that moved, not only of one
        // that came up or went down.
        if (unit.services.some((s, i) => !sameEndpoints(s.endpoints, before[i] ?? null)))
          this.deps.changed?.(project.id);
      },
    });
  }

  /** Every task of every web service answers HTTP where the edge reaches it. */
  private async answering(unit: Unit, timeoutMs: number): Promise<void> {
    await Promise.all(
      unit.services.flatMap((live) =>
        (live.endpoints ?? []).map(async (endpoint) => {
          try {
            await waitForHttp(endpoint.port, {
              timeoutMs,
              exited: new Promise(() => undefined),
              host: endpoint.host,
            });
          } catch (error) {
            const name = live.spec.name ? `service ${live.spec.name}: ` : '';
            throw new Error(`${name}${(error as Error).message} (port ${live.spec.containerPort} inside)`);
          }
        }),
      ),
    );
  }

  /** What marks a release's container or service, and its project's network, as this platform's. */
  private labelsOf(project: Supervised, plan: ReleasePlan) {
    const networkLabels = { [PLATFORM_LABEL]: this.deps.platformId, [PROJECT_LABEL]: project.id };
    return { labels: { ...networkLabels, [RELEASE_LABEL]: plan.id }, networkLabels };
  }

  private swarmWatcher: ServiceWatcher | null = null;

  private watcher(docker: Docker): ServiceWatcher {
    this.swarmWatcher ??= new ServiceWatcher(docker, new NodeAddresses(docker), this.deps.platformId);
    return this.swarmWatcher;
  }

  /** Every web service of a container answers HTTP on its published port; workers stay up. */
  private async healthy(project: Supervised, unit: Unit, container: ContainerUnit, timeoutMs: number) {
    for (const live of unit.services) {
      const inside = live.spec.containerPort;
      if (typeof inside !== 'number') continue;
      const port = container.hostPorts.get(inside);
      if (!port) {
        // A container that is gone at once has no ports: say why it went.
        const exit = await Promise.race([container.exited, sleep(2_000).then(() => null)]);
        throw new Error(
          exit
            ? `the container ${describeExit(exit)} before its app answered (its output is above)`
            : `the engine published no port for ${inside}`,
        );
      }
      live.port = port;
    }
    const web = unit.services.filter((s) => s.port !== null);
    if (web.length === 0) {
      await this.workerGrace(project, 'the container', null, container);
      return;
    }
    await Promise.all(
      web.map(async (live) => {
        try {
          await waitForHttp(live.port!, { timeoutMs, exited: container.exited });
        } catch (error) {
          const name = live.spec.name ? `service ${live.spec.name}: ` : '';
          throw new Error(
            `${name}${(error as Error).message} (port ${live.spec.containerPort} inside, PORT is set to it)`,
          );
        }
        project.log.system(
          `${live.spec.name ?? 'the app'} answers on port ${live.spec.containerPort}`,
          live.spec.name,
        );
      }),
    );
  }

  private async workerGrace(
    project: Supervised,
    label: string,
    service: string | null,
    process: RunningProcess,
  ) {
    const grace = this.deps.config.workerGraceMs;
    const exit = await Promise.race([process.exited, sleep(grace).then(() => null)]);
    if (exit) throw new DeployError(`${label} ${describeExit(exit)} within its first ${grace / 1000} s`);
    project.log.system(`${label} is up (a worker, alive after ${grace / 1000} s)`, service);
  }

  /** A service's output into the project log, each line's timestamp marking how far the copy got. */
  private outputSink(project: Supervised, plan: ReleasePlan): OutputSink {
    const sink = this.lineSink(project, plan);
    return (line, at) => {
      if (this.outputStopped) return;
      sink(line);
      if (at !== null) project.log.mark(plan.id, at);
    };
  }

  /** A container's output into the project log, each line under its service. */
  private lineSink(project: Supervised, plan: ReleasePlan): (line: string) => void {
    const byLabel = new Map(plan.services.map((s) => [serviceLabel(s.name), s.name]));
    return (raw) => {
      const { label, line, supervisor } = parseSupervisedLine(raw);
      if (supervisor) project.log.system(line);
      else project.log.write('runtime', label === null ? null : (byLabel.get(label) ?? null), line);
    };
  }

  private watch(project: Supervised, instance: Instance, unit: Unit, process: RunningProcess) {
    void process.exited.then((exit) => {
      if (
        instance.retiring ||
        project.current !== instance ||
        unit.process !== process ||
        this.deps.closed()
      ) {
        return;
      }
      for (const live of unit.services) live.up = false;
      unit.process = null;
      this.deps.changed?.(project.id);
      // A crashed container is removed: its restart is a new one from the same image.
      void process.stop(1_000);
      const label =
        instance.plan.runs === 'container' ? 'the container' : (unit.services[0]?.spec.name ?? 'the app');
      const service = instance.plan.runs === 'container' ? null : (unit.services[0]?.spec.name ?? null);
      project.crashes += 1;
      const limit = this.deps.config.restartLimit;
      if (project.crashes > limit) {
        project.log.system(
          `${label} ${describeExit(exit)}; it crashed ${limit + 1} times in a row, so it stays down`,
          service,
        );
        project.current = null;
        void (async () => {
          await this.stop(instance, { drain: false });
          await this.deps.wentDown(
            project,
            `${label} kept crashing (${limit + 1} times in a row): see the runtime logs`,
          );
        })();
        return;
      }
      const delay = Math.min(this.deps.config.restartBackoffMs * 2 ** (project.crashes - 1), MAX_BACKOFF_MS);
      project.log.system(
        `${label} ${describeExit(exit)}; restarting in ${delay / 1000} s (attempt ${project.crashes} of ${limit})`,
        service,
      );
      this.later(project, delay, async () => {
        if (project.current !== instance || instance.retiring) return;
        try {
          await this.launch(project, instance, unit, null);
          project.log.system(`${label} is back up`, service);
          this.later(project, STABLE_AFTER_MS, async () => {
            if (unit.services.every((s) => s.up)) project.crashes = 0;
          });
        } catch (error) {
          project.log.system(`${label} did not come back: ${(error as Error).message}`, service);
          // A start that timed out is stopped; its exit then counts as the next crash.
          if (unit.process) void unit.process.stop(2_000);
        }
        if (unit.process) this.watch(project, instance, unit, unit.process);
      });
    });
  }

  private later(project: Supervised, ms: number, task: () => Promise<void>) {
    const timer = setTimeout(() => {
      project.timers.delete(timer);
      void task();
    }, ms);
    timer.unref();
    project.timers.add(timer);
  }
}

function newInstance(plan: ReleasePlan): Instance {
  const services: LiveService[] = plan.services.map((spec) => ({
    spec,
    port: null,
    endpoints: null,
    turn: 0,
    up: spec.kind === 'static',
    inflight: 0,
    agent: new Agent({ keepAlive: true, maxSockets: 256 }),
  }));
  const running = services.filter((s) => s.spec.kind !== 'static');
  const units: Unit[] =
    plan.runs === 'container'
      ? running.length > 0
        ? [{ services: running, process: null }]
        : []
      : running.map((live) => ({ services: [live], process: null }));
  return { plan, services, units, retiring: false };
}

/**
 * What answers at the project's own subdomain: the project-level app (SPEC §2.2's primary app, named
 * null); without one (a root_dir with no app to serve, or a plan stored before it ran), the service
 * named web, else the first web service.
 */
function mainService(services: LiveService[]): LiveService | undefined {
  return (
    services.find((s) => s.spec.name === null && s.spec.kind !== 'worker') ??
    services.find((s) => s.spec.name === 'web' && s.spec.kind !== 'worker') ??
    services.find((s) => s.spec.kind !== 'worker')
  );
}

function seconds(since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(1)} s`;
}

/** The project's overlay network on the swarm runtime. */
export function swarmNetworkOf(projectId: string): string {
  return `wharf-swarm-${projectId.toLowerCase()}`;
}

function containerPorts(unit: Unit): number[] {
  return unit.services.map((s) => s.spec.containerPort).filter((p): p is number => typeof p === 'number');
}

/** Where each web service of a service's unit answers now; a service is up while one task answers. */
function setEndpoints(unit: Unit, endpoints: Map<number, Endpoint[]>): void {
  for (const live of unit.services) {
    const inside = live.spec.containerPort;
    if (typeof inside !== 'number') continue;
    live.endpoints = endpoints.get(inside) ?? [];
    live.up = live.endpoints.length > 0;
  }
}

function nextEndpoint(live: LiveService, stay?: Endpoint): Endpoint | null {
  const endpoints = live.endpoints ?? [];
  if (endpoints.length === 0) return null;
  if (stay && endpoints.some((e) => e.host === stay.host && e.port === stay.port)) return stay;
  live.turn = (live.turn + 1) % endpoints.length;
  return endpoints[live.turn]!;
}

function local(port: number): Endpoint {
  return { host: '127.0.0.1', port };
}

/** The service a request for `service` (null: the main one) is for, if the instance has it. */
function serviceOf(instance: Instance, service: string | null): LiveService | undefined {
  return service === null
    ? mainService(instance.services)
    : instance.services.find((s) => s.spec.name === service);
}

/** Where a web service answers: its tasks' endpoints (swarm), or its port on this machine. */
function serversOf(live: LiveService): Endpoint[] | null {
  if (live.endpoints) return live.endpoints.map((endpoint) => ({ ...endpoint }));
  return live.port === null ? null : [local(live.port)];
}

function sameEndpoints(a: readonly Endpoint[] | null, b: readonly Endpoint[] | null): boolean {
  if (a === null || b === null) return a === b;
  const key = (list: readonly Endpoint[]) =>
    list
      .map((e) => `${e.host} ${e.port}`)
      .sort()
      .join(',');
  return a.length === b.length && key(a) === key(b);
}

/** What runs a container plan's unit: its image and command, its env, its ports inside, its limits. */
function containerSpec(
  plan: ReleasePlan,
  unit: Unit,
  how: { name: string; labels: Record<string, string>; network: string; limits: ResourceLimits },
): ContainerSpec {
  return {
    image: plan.image!,
    name: how.name,
    cmd: plan.cmd ?? null,
    workingDir: plan.workingDir ?? null,
    env: plan.env ?? unit.services[0]?.spec.env ?? {},
    ports: containerPorts(unit),
    labels: how.labels,
    network: how.network,
    memoryBytes: how.limits.memoryBytes,
    pids: how.limits.pids,
    cpus: how.limits.cpus,
  };
}
