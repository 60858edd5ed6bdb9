// The runtime: turns a project into running code and keeps it running. This file is the facade the
// API, the edge and the AI builder talk to; the work is in its parts:
//
// - attempt.ts   one deploy or rollback, start to end (zero-downtime switch, failure keeps the old one);
// - plan.ts      from a source to a release plan (host install/build, or an image per release);
// - supervisor.ts starts a plan's services, restarts what crashes, drains and stops what is replaced;
// - project-log.ts each project's bounded log; releases.ts the release history; status.ts the only
//   place a project's status changes.
//
// Desired state is persisted with the project: a platform restart follows containers that kept
// running, and starts host releases again without a build.
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, readdirSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as delay } from 'node:timers/promises';
import type Docker from 'dockerode';
import type { PlatformConfig } from '../config.js';
import { ApiError } from '../errors.js';
import { accountLimits } from '../limits.js';
import type { LogStore } from '../projects/logs.js';
import { type ProjectService, registryOf } from '../projects/projects.js';
import { RegistryJanitor } from './registry-api.js';
import { hasChunks, readChunks } from '../store/chunks.js';
import type { Store } from '../store/open.js';
import type { Database, ProjectsTable } from '../store/schema.js';
import type { Transaction } from 'kysely';
import { type AttemptDeps, type ProjectState, deploy, latestUpload, rollback } from './attempt.js';
import { Build, DeployError } from './build.js';
import type { Cluster } from '../cluster/cluster.js';
import type { ChosenDriver } from './drivers/choose.js';
import {
  ImageJanitor,
  PROJECT_LABEL,
  RELEASE_LABEL,
  connectDocker,
  listContainers,
  removeContainer,
  removeIdleNetworks,
  removeNetwork,
} from './drivers/docker.js';
import { Planner, type ReleasePlan, normalizePlan } from './plan.js';
import { isDirectory } from './plan-services.js';
import { ProjectLog } from './project-log.js';
import { ReleaseFiles, rebase, staticRoots } from './release-files.js';
import type { SharedRepos } from '../ai/shared-repos.js';
import { ReleaseStore } from './releases.js';
import { RouteEvents } from './routes.js';
import { PlanResources } from './resources.js';
import { transition } from './status.js';
import { type EdgeTarget, type Instance, Supervisor, swarmNetworkOf } from './supervisor.js';
import { type Endpoint, listServices, removeService, removeStraySecrets, sinceOf } from './drivers/swarm.js';

export type { EdgeTarget } from './supervisor.js';
export type { ReleasePlan } from './plan.js';

export class Runtime {
  private readonly states = new Map<string, ProjectState>();
  private closed = false;
  private readonly files: ReleaseFiles;
  /** In a cluster: the releases whose service output this node copies (release → project). */
  private readonly copying = new Map<string, string>();
  /** In a cluster: how far each copied output got, stored with its lines (see ProjectLog.mark). */
  private readonly outputMarks:
    ((trx: Transaction<Database>, marks: Map<string, string>) => Promise<void>) | null = null;
  /** Releases another node built whose static files this node copied (release → project). */
  private readonly copied = new Map<string, string>();
  readonly releases: ReleaseStore;
  /** Where requests go changed (a version serving, a service back up, a project stopped): routes.ts. */
  readonly routes = new RouteEvents();
  /** Marks this platform's containers, images and networks on a shared engine (from its data folder). */
  readonly platformId: string;
  private readonly planner: Planner;
  private readonly supervisor: Supervisor;
  private readonly attempts: AttemptDeps;
  private engine: Docker | null;
  private readonly images: ImageJanitor;
  /** The registry's copies of built images whose releases are gone (swarm runtime with --registry). */
  readonly registryImages: RegistryJanitor | null;
  /** Asks the registry again for what it missed (sweepRegistry), every `registrySweepMs`. */
  private readonly registrySweeps: NodeJS.Timeout | null = null;
  private readonly warn: (message: string) => void;

  constructor(
    private readonly db: Store,
    private readonly config: PlatformConfig,
    private readonly projects: ProjectService,
    private readonly logs: LogStore,
    private readonly chosen: ChosenDriver,
    private readonly cluster: Cluster,
    /** In a cluster, the AI builder's repositories as the nodes share them. */
    sharedRepos: SharedRepos | null = null,
    /** What the platform's operator should know of (its log): the registry refusing deletes. */
    warn: (message: string) => void = () => {},
  ) {
    this.releases = new ReleaseStore(db);
    this.files = new ReleaseFiles(db);
    if (cluster.clustered && chosen.kind === 'swarm') {
      this.outputMarks = async (trx, marks) => {
        for (const [releaseId, at] of marks)
          await trx
            .updateTable('release_output_copiers')
            .set({ copied_until: at })
            .where('release_id', '=', releaseId)
            .where('node_id', '=', cluster.nodeId)
            .execute();
      };
    }
    this.engine = chosen.docker;
    // The nodes of a cluster share their Swarm's services: they share the id (from the shared secret).
    this.platformId = createHash('sha256')
      .update(cluster.clustered ? `wharf platform ${config.secret ?? ''}` : realDir(config.dataDir))
      .digest('hex')
      .slice(0, 16);
    cluster.on((event) => {
      if (event.kind === 'serving') void this.view(event.projectId, event.releaseId);
      if (event.kind === 'deploy-started' && event.node !== cluster.nodeId) {
        const state = this.states.get(event.projectId);
        state?.build?.cancel('a newer deploy started on another node');
        if (state) state.build = null;
      }
      if (event.kind === 'project-deleted' && event.node !== cluster.nodeId)
        this.dropDeleted(event.projectId);
    });
    const docker = () => this.docker();
    const resources = new PlanResources(db, config);
    this.images = new ImageJanitor(docker);
    this.warn = warn;
    this.registryImages =
      chosen.kind === 'swarm' && config.registry ? new RegistryJanitor(config.registry, warn) : null;
    if (this.registryImages) {
      this.registrySweeps = setInterval(() => {
        this.sweepRegistry('behind').catch((error: unknown) =>
          this.warn(`sweeping the registry again failed: ${String(error)}`),
        );
      }, config.registrySweepMs);
      this.registrySweeps.unref();
    }
    const commands = chosen.driver ?? {
      kind: 'process' as const,
      prepare: async () => {},
      run: () => {
        throw new DeployError('this runtime runs no commands on the host');
      },
      forget: () => {},
    };
    this.planner = new Planner({
      config,
      kind: chosen.kind,
      driver: commands,
      docker,
      platformId: this.platformId,
      images: this.images,
      registryAuth: (row) => projects.registryAuth(row),
      resources,
    });
    this.supervisor = new Supervisor({
      config,
      driver: commands,
      docker,
      platformId: this.platformId,
      swarm: chosen.kind === 'swarm',
      resources,
      closed: () => this.closed,
      changed: (projectId) => this.routes.changed(projectId),
      released: (servers) => this.routes.released(servers),
      sourceAuth: async (projectId, image) => {
        const row = await db
          .selectFrom('projects')
          .select(['id', 'image', 'registry_auth_secret'])
          .where('id', '=', projectId)
          .executeTakeFirst();
        // Kept for the project's registry: a rollback to an older tag of it pulls with it too.
        if (!row?.image || registryOf(row.image) !== registryOf(image)) return null;
        return projects.registryAuth(row);
      },
      wentDown: async (project, error) => {
        await project.log.flush();
        await this.releases.retireAll(project.id);
        await transition(this.projects, project.id, { type: 'went-down', error });
      },
    });
    this.attempts = {
      db,
      config,
      projects,
      releases: this.releases,
      planner: this.planner,
      supervisor: this.supervisor,
      driver: chosen.driver,
      resources,
      limitsApply: chosen.limits,
      appDir: (id) => this.appDir(id),
      prune: (id, current) => this.prune(id, current),
      share: (plan) => (cluster.clustered ? this.files.save(plan) : Promise.resolve(0)),
      here: (id, plan) => this.here(id, plan),
      uploadArchive: (id, upload) => this.uploadArchive(id, upload),
      aiSource: async (id) => {
        if (!sharedRepos) return null;
        const repo = sharedRepos.repo(id);
        // Brought up to the shared head (nothing to do when this node made it), then cloned as any git
        // source. A newer change swapping the copy during the clone starts a deploy that ends this one.
        try {
          return (await repo.exclusive(async () => repo.head())) === null ? null : repo.url;
        } catch (error) {
          throw new DeployError(
            `the AI project's repository cannot be read here: ${(error as Error).message}`,
          );
        }
      },
    };
  }

  /** How tenant code runs here: `container`, `swarm`, `sandbox` or `process`. */
  get kind(): ChosenDriver['kind'] {
    return this.chosen.kind;
  }

  /** Starts a deploy and answers at once: the project is `building` until it runs or fails. */
  async deploy(accountId: string, projectId: string) {
    // Another account's project is not found before any limit is looked at.
    await this.projects.row(accountId, projectId);
    const limits = accountLimits(this.config);
    await limits.assertBuildSlot(this.db, accountId, projectId);
    try {
      return await this.startDeploy(accountId, projectId);
    } finally {
      limits.releaseBuildSlot(projectId);
    }
  }

  private async startDeploy(accountId: string, projectId: string) {
    const row = await this.projects.row(accountId, projectId);
    const unsafe = await this.unsafeForAccounts();
    if (unsafe) throw new ApiError('unavailable', unsafe);
    if (row.deploy_source === 'upload' && !(await latestUpload(this.db, projectId))) {
      throw new ApiError(
        'upload_required',
        `project ${row.name} deploys from an upload and none was sent yet: POST the source archive to /projects/${projectId}/upload first`,
      );
    }
    const build = await this.beginBuild(projectId, 'a newer deploy started');
    void deploy(this.attempts, this.state(projectId), build, row);
    return this.projects.get(accountId, projectId);
  }

  /** The project's releases, newest first. */
  async listReleases(accountId: string, projectId: string) {
    const row = await this.projects.row(accountId, projectId);
    return this.releases.list(projectId, servingId(row));
  }

  /**
   * Starts a kept release again without a build (its image or files, its env vars, which become the
   * project's again), like a deploy: the project is `building` until it serves, and the current
   * version keeps serving until then, or if it fails.
   */
  async rollback(accountId: string, projectId: string, releaseId: string) {
    const row = await this.projects.row(accountId, projectId);
    const target = await this.releases.row(projectId, releaseId);
    if (!target) throw new ApiError('not_found', `release ${releaseId} was not found in this project`);
    if (target.id === servingId(row)) {
      throw new ApiError('conflict', `release ${releaseId} is the one serving the project already`);
    }
    if (target.status !== 'running' && target.status !== 'retired') {
      throw new ApiError(
        'conflict',
        `release ${releaseId} never served (its deploy ${target.status === 'building' ? 'is still running' : target.status}): roll back to one that did`,
      );
    }
    if (target.kept !== 1 || target.plan === null) {
      throw new ApiError(
        'conflict',
        `release ${releaseId} is no longer kept (the platform keeps the last ${this.config.keepReleases} releases that served)`,
      );
    }
    const unsafe = await this.unsafeForAccounts();
    if (unsafe) throw new ApiError('unavailable', unsafe);
    const limits = accountLimits(this.config);
    await limits.assertBuildSlot(this.db, accountId, projectId);
    try {
      const build = await this.beginBuild(projectId, 'a rollback started');
      const plan = normalizePlan(JSON.parse(target.plan) as ReleasePlan);
      // The env vars it was deployed with become the project's once it serves (a failed rollback
      // leaves those of the version that keeps serving).
      const env = JSON.parse(target.env_vars) as Record<string, string>;
      void rollback(this.attempts, this.state(projectId), build, row, plan, async () => {
        await this.projects.setEnvVars(accountId, projectId, env);
      });
      return await this.projects.get(accountId, projectId);
    } finally {
      limits.releaseBuildSlot(projectId);
    }
  }

  /** Cancels whatever deploy runs and marks the project `building` for a new one. */
  private async beginBuild(projectId: string, reason: string): Promise<Build> {
    const state = this.state(projectId);
    state.build?.cancel(reason);
    const build = new Build();
    state.build = build;
    state.crashes = 0;
    await transition(this.projects, projectId, { type: 'deploy-started' });
    // A deploy of the project through another node gives way to this one, as one here would.
    this.cluster.publish({ kind: 'deploy-started', projectId, node: this.cluster.nodeId });
    if (this.cluster.clustered) await this.recordDeploy(projectId, build);
    return build;
  }

  /** In a cluster: which node runs the project's deploy, until it ends (see reapOrphanedDeploys). */
  private async recordDeploy(projectId: string, build: Build): Promise<void> {
    const row = {
      project_id: projectId,
      build_id: randomBytes(9).toString('base64url'),
      node_id: this.cluster.nodeId,
      started_at: new Date().toISOString(),
    };
    await this.db
      .insertInto('project_deploys')
      .values(row)
      .onConflict((oc) =>
        oc.column('project_id').doUpdateSet({
          build_id: row.build_id,
          node_id: row.node_id,
          started_at: row.started_at,
        }),
      )
      .execute();
    void build.finished.then(() =>
      this.db
        .deleteFrom('project_deploys')
        .where('project_id', '=', projectId)
        .where('build_id', '=', row.build_id)
        .execute()
        .catch(() => undefined),
    );
  }

  /**
   * The deploys that nodes no longer alive were running end (a cluster's singleton job): their
   * releases are cancelled and their projects leave `building` (which holds a build slot), serving
   * what served before if anything did. Resolves with how many it ended.
   */
  async reapOrphanedDeploys(): Promise<number> {
    const live = [...(await this.cluster.liveNodes()).keys()];
    const orphans = await this.db
      .selectFrom('project_deploys')
      .selectAll()
      .where('node_id', 'not in', live)
      .execute();
    let ended = 0;
    for (const orphan of orphans) {
      const taken = await this.db
        .deleteFrom('project_deploys')
        .where('project_id', '=', orphan.project_id)
        .where('build_id', '=', orphan.build_id)
        .executeTakeFirst();
      if (Number(taken.numDeletedRows) === 0) continue;
      const reason = `the node running it (${orphan.node_id}) stopped`;
      await this.releases.cancelUnfinished(reason, orphan.project_id);
      const row = await this.db
        .selectFrom('projects')
        .select(['status', 'release'])
        .where('id', '=', orphan.project_id)
        .executeTakeFirst();
      if (row?.status !== 'building') continue;
      const log = this.state(orphan.project_id).log;
      log.system(`deploy cancelled: ${reason}`);
      if (row.release !== null) log.system('the previous version keeps serving');
      await log.flush();
      await transition(this.projects, orphan.project_id, {
        type: 'deploy-failed',
        error: `the deploy was cancelled: ${reason}; deploy again`,
        serving: row.release !== null,
      });
      ended++;
    }
    return ended;
  }

  /** Cancels any deploy, stops every process of the project and frees its ports. */
  async stop(accountId: string, projectId: string) {
    await this.projects.row(accountId, projectId);
    const state = this.state(projectId);
    await this.halt(state, 'the project was stopped');
    await transition(this.projects, projectId, { type: 'stopped' });
    await this.releases.retireAll(projectId);
    state.log.system('stopped');
    await state.log.flush();
    return this.projects.get(accountId, projectId);
  }

  /** Before a project is deleted: stop everything and remove its releases, images and network. */
  async remove(projectId: string): Promise<void> {
    const state = this.states.get(projectId);
    if (state) {
      const build = state.build;
      await this.halt(state, 'the project was deleted');
      // A cancelled deploy may still be cloning into the folder about to be removed: let it wind down.
      if (build) await Promise.race([build.finished, delay(15_000, undefined, { ref: false })]);
      await state.log.flush();
      this.states.delete(projectId);
    }
    const releases = await this.releases.keptOf(projectId);
    const images = releases.flatMap((r) => this.builtTags(r.image));
    await this.emptyRegistry(projectId);
    const engine = this.chosen.kind === 'container' || this.chosen.kind === 'swarm';
    if (images.length > 0 || engine) {
      const docker = await this.docker().catch(() => null);
      for (const image of images) this.images.remove(image);
      await this.images.idle();
      if (docker) {
        await removeNetwork(docker, `wharf-${projectId.toLowerCase()}`);
        if (this.chosen.kind === 'swarm') await removeNetwork(docker, swarmNetworkOf(projectId));
      }
    }
    rmSync(this.appDir(projectId), { recursive: true, force: true, maxRetries: 5 });
    this.chosen.driver?.forget(projectId);
    this.cluster.publish({ kind: 'project-deleted', projectId, node: this.cluster.nodeId });
  }

  /**
   * Another node deleted the project: this one stops routing to it (without touching its service, which
   * the deleting node removes) and removes its own copies of the project's files.
   */
  private dropDeleted(projectId: string): void {
    const state = this.states.get(projectId);
    if (state) {
      for (const timer of state.timers) clearTimeout(timer);
      const current = state.current;
      this.viewing.add(projectId);
      try {
        state.current = null;
      } finally {
        this.viewing.delete(projectId);
      }
      if (current) this.supervisor.forget(current);
      this.states.delete(projectId);
    }
    for (const [releaseId, project] of this.copied) if (project === projectId) this.copied.delete(releaseId);
    rmSync(this.appDir(projectId), { recursive: true, force: true, maxRetries: 5 });
    rmSync(join(this.config.dataDir, 'uploads', projectId), { recursive: true, force: true });
  }

  /**
   * After a platform start: run again what was running (or being deployed) when it stopped, but the
   * projects in `except` (the AI builder deploys those through its loop).
   */
  async restore(options: { except?: ReadonlySet<string>; rows?: ProjectsTable[] } = {}): Promise<void> {
    const rows = options.rows ?? (await this.prepareRestore());
    this.sweepRegistry('every project').catch((error: unknown) =>
      this.warn(`sweeping the registry failed: ${String(error)}`),
    );
    killOrphans(join(this.config.dataDir, 'apps'));
    await this.removeStrayContainers(rows);
    const unsafe = await this.unsafeForAccounts();
    if (unsafe) {
      for (const row of rows) {
        const state = this.state(row.id);
        state.log.system(`not started again: ${unsafe}`);
        await state.log.flush();
        await transition(this.projects, row.id, { type: 'went-down', error: unsafe });
      }
      return;
    }
    await Promise.all(rows.filter((row) => !options.except?.has(row.id)).map((row) => this.restoreOne(row)));
  }

  /**
   * Before the platform answers: the deploys the last stop interrupted are marked cancelled (they never
   * finish; their projects deploy anew in restore()), and the projects restore() is about are read, so
   * that a deploy started meanwhile is not taken for an interrupted one. In a cluster, other nodes may
   * be deploying right now: no deploy is marked, and only what runs is looked at.
   */
  async prepareRestore(): Promise<ProjectsTable[]> {
    const clustered = this.cluster.clustered;
    if (!clustered) await this.releases.cancelUnfinished('the platform stopped during this deploy');
    return this.db
      .selectFrom('projects')
      .selectAll()
      .where('status', 'in', clustered ? ['running'] : ['running', 'building'])
      .execute();
  }

  /**
   * Platform shutdown: host processes stop, containers keep serving (unless stopContainersOnExit);
   * the desired state stays, so the next start restores it.
   */
  /**
   * A node of a cluster leaving: it stops copying its services' output and stores what it copied, with
   * where it got to, before the others take it for gone and take the copying over from there (no line
   * twice, none lost). Called before the node leaves the cluster.
   */
  async stopOutput(): Promise<void> {
    if (!this.cluster.clustered || this.chosen.kind !== 'swarm') return;
    this.supervisor.stopOutput();
    await Promise.all([...this.states.values()].map((state) => state.log.flush()));
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.registrySweeps) clearInterval(this.registrySweeps);
    await Promise.all(
      [...this.states.values()].map(async (state) => {
        for (const timer of state.timers) clearTimeout(timer);
        state.build?.cancel('the platform is shutting down');
        const current = state.current;
        state.current = null;
        // A node of a cluster leaves the services to the others, whatever it was told to stop.
        if (current && this.cluster.clustered) this.supervisor.forget(current);
        else if (current) await this.supervisor.leave(current);
        await state.log.flush();
      }),
    );
    await this.images.idle();
    // Deletes under way finish, within a bound: a registry that hangs does not hold the shutdown.
    if (this.registryImages)
      await Promise.race([this.registryImages.idle(), delay(5_000, undefined, { ref: false })]);
    // With its containers gone, the platform's project networks go too (the engine has few of them).
    if (this.config.stopContainersOnExit && this.engine)
      await removeIdleNetworks(this.engine, this.platformId).catch(() => undefined);
  }

  /**
   * The edge's question: where does a request for `service` (null: the main one) of a project go?
   * `stay`: where a kept-alive connection went, kept while the app still answers there.
   */
  target(projectId: string, service: string | null, stay?: Endpoint): EdgeTarget | null {
    const instance = this.states.get(projectId)?.current;
    return instance ? this.supervisor.target(instance, service, stay) : null;
  }

  /**
   * Every address a request for `service` (null: the main one) of a project may go to now, or null
   * when the Node edge answers it (static, a worker, stopped, down): a front proxy's routing table.
   */
  servers(projectId: string, service: string | null): Endpoint[] | null {
    const instance = this.states.get(projectId)?.current;
    return instance ? this.supervisor.servers(instance, service) : null;
  }

  /**
   * Why apps may not run here, or null: the process runtime runs tenant code as the platform's own
   * user, so it serves a platform of one account only.
   */
  private async unsafeForAccounts(): Promise<string | null> {
    if (this.chosen.kind !== 'process') return null;
    const { n } = await this.db
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    if (Number(n) <= 1) return null;
    return `this platform runs apps with the process runtime, as its own user, which is safe for one account only and it has ${n}: start Docker or Podman (--runtime container), or install bubblewrap (apt-get install bubblewrap) for --runtime sandbox`;
  }

  private async docker(): Promise<Docker> {
    if (this.engine) return this.engine;
    const connected = await connectDocker();
    if ('reason' in connected) {
      throw new DeployError(`${connected.reason}: image sources need a Docker-compatible engine`);
    }
    this.engine = connected.docker;
    return connected.docker;
  }

  /**
   * Another node switched what serves a project (a deploy, a rollback, a stop, a crash loop): this node
   * routes to the new release's service too, without following its log or deciding over it (the swarm
   * runtime, where every node reaches every service). Ignored while this node deploys the project.
   */
  private async view(projectId: string, releaseId: string | null): Promise<void> {
    if (this.chosen.kind !== 'swarm' || this.closed) return;
    const state = this.state(projectId);
    if (state.build || state.current?.plan.id === releaseId) return;
    let next: ProjectState['current'] = null;
    if (releaseId !== null) {
      // What fails here leaves this node routing to what it did: said in the platform's log, since
      // this node answers the project's host with "Not running" meanwhile.
      const failed = (what: string) => (error: unknown) => {
        this.cluster.onError(error as Error, `${what} (release ${releaseId} of ${projectId})`);
        return null;
      };
      const release = await this.releases
        .row(projectId, releaseId)
        .catch(failed('reading a release to serve'));
      if (!release?.plan) return;
      const plan = await this.here(projectId, normalizePlan(JSON.parse(release.plan) as ReleasePlan)).catch(
        failed('copying a release’s files to this node'),
      );
      if (!plan) return;
      next = await this.supervisor
        .reattach(state, plan, { owner: false })
        .catch(failed('routing to the service of another node’s deploy'));
      if (!next || this.closed) return;
    }
    const previous = state.current;
    this.viewing.add(projectId);
    try {
      state.current = next;
    } finally {
      this.viewing.delete(projectId);
    }
    if (previous) {
      this.supervisor.forget(previous);
      this.dropCopy(projectId, previous.plan.id);
      if (this.copying.has(previous.plan.id)) this.stopCopying(previous.plan.id);
    }
  }

  /**
   * This node switched what serves a project (a deploy, a rollback, a stop): in a cluster on the swarm
   * runtime it copies the new release's service output, and says so in the database, for another node
   * to take the copying over should this one die. A node shutting down leaves its rows for that.
   */
  private servingSwitched(projectId: string, before: Instance | null, after: Instance | null): void {
    if (!this.cluster.clustered || this.chosen.kind !== 'swarm' || this.closed) return;
    if (before) this.stopCopying(before.plan.id);
    if (after && after.units.length > 0) {
      const row = {
        release_id: after.plan.id,
        project_id: projectId,
        node_id: this.cluster.nodeId,
        // Everything before now was copied by this node, alive until now.
        since_at: new Date().toISOString(),
        copied_until: null,
      };
      this.copying.set(row.release_id, projectId);
      this.db
        .insertInto('release_output_copiers')
        .values(row)
        .onConflict((oc) =>
          oc
            .column('release_id')
            .doUpdateSet({ node_id: row.node_id, since_at: row.since_at, copied_until: null }),
        )
        .execute()
        .catch(() => undefined);
    }
  }

  private stopCopying(releaseId: string): void {
    this.copying.delete(releaseId);
    this.db
      .deleteFrom('release_output_copiers')
      .where('release_id', '=', releaseId)
      .where('node_id', '=', this.cluster.nodeId)
      .execute()
      .catch(() => undefined);
  }

  /**
   * The output copying of nodes no longer alive (a cluster's singleton job, on a node that routes to
   * every serving release): taken over from the last line they wrote they had copied. Rows of releases
   * that no longer serve go. Resolves with how many it took over.
   */
  async takeOverOutputs(): Promise<number> {
    if (this.chosen.kind !== 'swarm') return 0;
    const live = [...(await this.cluster.liveNodes()).keys()];
    const orphans = await this.db
      .selectFrom('release_output_copiers')
      .selectAll()
      .where('node_id', 'not in', live)
      .execute();
    let taken = 0;
    for (const orphan of orphans) {
      const state = this.states.get(orphan.project_id);
      const current = state?.current;
      if (!state || !current || current.plan.id !== orphan.release_id) {
        const release = await this.releases.row(orphan.project_id, orphan.release_id);
        if (release?.status !== 'running')
          await this.db
            .deleteFrom('release_output_copiers')
            .where('release_id', '=', orphan.release_id)
            .where('node_id', '=', orphan.node_id)
            .execute();
        continue;
      }
      const claimed = await this.db
        .updateTable('release_output_copiers')
        .set({ node_id: this.cluster.nodeId })
        .where('release_id', '=', orphan.release_id)
        .where('node_id', '=', orphan.node_id)
        .executeTakeFirst();
      if (Number(claimed.numUpdatedRows) === 0) continue;
      const start = orphan.copied_until
        ? { since: sinceOf(orphan.copied_until), after: orphan.copied_until }
        : { since: sinceOf(orphan.since_at) };
      if (!(await this.supervisor.copyOutput(state, current, start))) continue;
      this.copying.set(orphan.release_id, orphan.project_id);
      state.log.system(
        `the node copying this release's output (${orphan.node_id}) stopped: ${this.cluster.nodeId} copies it from here`,
      );
      taken++;
    }
    return taken;
  }

  /**
   * The plan as this node runs it: in a cluster, a release another node built serves its static sites
   * from a copy of its stored files in this node's own release folder.
   */
  private async here(projectId: string, plan: ReleasePlan): Promise<ReleasePlan> {
    if (!this.cluster.clustered || staticRoots(plan).length === 0) return plan;
    const dir = join(this.appDir(projectId), plan.id);
    if (resolve(plan.dir) === resolve(dir)) return plan;
    if (!(await this.files.copyTo(plan.id, dir))) {
      throw new DeployError(
        `the static files of release ${plan.id} are not in the database (built before its node joined a cluster?): deploy it again`,
      );
    }
    this.copied.set(plan.id, projectId);
    return rebase(plan, dir);
  }

  /**
   * An upload's archive on this node: where it was received, or (in a cluster, received by another
   * node) copied from the database into this node's uploads folder, in place of older copies.
   */
  private async uploadArchive(projectId: string, upload: { id: string; path: string }): Promise<string> {
    const dir = join(this.config.dataDir, 'uploads', projectId);
    const local = join(dir, `${upload.id}.tar.gz`);
    if (existsSync(local)) return local;
    if (!this.cluster.clustered) return upload.path;
    if (!(await hasChunks(this.db, 'upload_chunks', upload.id))) {
      throw new DeployError(
        `upload ${upload.id} is on the disk of the node that received it and not in the database (received before its node joined a cluster?): upload it again`,
      );
    }
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const part = `${local}.part-${randomBytes(6).toString('hex')}`;
    try {
      await pipeline(Readable.from(readChunks(this.db, 'upload_chunks', upload.id)), createWriteStream(part));
      await rename(part, local);
    } catch (error) {
      await rm(part, { force: true });
      throw error;
    }
    return local;
  }

  /** Removes this node's copy of another node's release files once nothing here serves from it. */
  private dropCopy(projectId: string, releaseId: string): void {
    if (!this.copied.delete(releaseId)) return;
    rmSync(join(this.appDir(projectId), releaseId), { recursive: true, force: true });
  }

  /**
   * At a node's start in a cluster: routes to what serves each running project (its release's
   * service), as the other nodes do.
   */
  async viewAll(): Promise<void> {
    const rows = await this.db.selectFrom('projects').selectAll().where('status', '=', 'running').execute();
    await Promise.all(rows.map((row) => this.view(row.id, servingId(row))));
  }

  private readonly viewing = new Set<string>();

  private state(projectId: string): ProjectState {
    let state = this.states.get(projectId);
    if (!state) {
      let current: ProjectState['current'] = null;
      const routes = this.routes;
      const cluster = this.cluster;
      const switched = (id: string, before: Instance | null, after: Instance | null) =>
        this.servingSwitched(id, before, after);
      const viewing = this.viewing;
      state = {
        id: projectId,
        // Whoever switches the serving version (a deploy, a stop, a restore, a crash loop) says so.
        get current() {
          return current;
        },
        set current(instance) {
          const before = current;
          const changed = instance !== current;
          current = instance;
          if (changed) routes.changed(projectId);
          // The other nodes route to what serves now (a view of it is no news to them).
          if (changed && !viewing.has(projectId)) {
            cluster.publish({ kind: 'serving', projectId, releaseId: instance?.plan.id ?? null });
            switched(projectId, before, instance);
          }
        },
        build: null,
        crashes: 0,
        timers: new Set(),
        log: new ProjectLog(this.logs, projectId, this.outputMarks),
      };
      this.states.set(projectId, state);
    }
    return state;
  }

  private appDir(projectId: string): string {
    return join(this.config.dataDir, 'apps', projectId);
  }

  private async halt(state: ProjectState, reason: string): Promise<void> {
    for (const timer of state.timers) clearTimeout(timer);
    state.timers.clear();
    state.build?.cancel(reason);
    state.build = null;
    const current = state.current;
    state.current = null;
    if (current) await this.supervisor.stop(current, { drain: false });
  }

  /**
   * Deletes the registry's images of releases that went while their deletes could not be made (the
   * registry was down, the platform stopped first), and every image of the deleted projects noted in
   * registry_leftovers whose repositories a delete could not empty. At a start (where restore runs)
   * every project's repository is read; while the platform runs, every `registrySweepMs`, only those
   * of the projects whose deletes the registry did not answer since (takeBehind), and nothing is asked
   * while nothing is behind.
   */
  private async sweepRegistry(scope: 'every project' | 'behind'): Promise<void> {
    const janitor = this.registryImages;
    if (!janitor || this.closed) return;
    const noted = (await this.db.selectFrom('registry_leftovers').select('project_id').execute()).map(
      (row) => row.project_id,
    );
    if (scope === 'behind' && !janitor.isBehind() && noted.length === 0) return;
    const projects = new Set(
      (await this.db.selectFrom('projects').select('id').execute()).map((project) => project.id),
    );
    const live = scope === 'behind' ? janitor.takeBehind().filter((id) => projects.has(id)) : [...projects];
    // A row of a project that is still there (its delete failed after it was noted) stays for later.
    const deleted = noted.filter((id) => !projects.has(id));
    const sweeps = await Promise.allSettled([
      live.length > 0 ? janitor.sweep(live, (id) => this.releases.liveIds(id)) : null,
      deleted.length > 0
        ? janitor.sweep(deleted, async () => []).then((emptied) => this.forgetLeftovers(emptied))
        : null,
    ]);
    const failed = sweeps.find((sweep) => sweep.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * Deletes every image of a project being deleted from the platform's registry, in the background; it
   * is noted first, so that a later sweep empties its repository if this cannot (the registry is down,
   * the platform stops first): sweepRegistry, while it runs and at its next start.
   */
  private async emptyRegistry(projectId: string): Promise<void> {
    const janitor = this.registryImages;
    if (!janitor) return;
    await this.db
      .insertInto('registry_leftovers')
      .values({ project_id: projectId, deleted_at: new Date().toISOString() })
      .onConflict((c) => c.doNothing())
      .execute();
    janitor
      .sweep([projectId], async () => [])
      .then((swept) => this.forgetLeftovers(swept))
      .catch((error: unknown) => this.warn(`emptying the registry of ${projectId} failed: ${String(error)}`));
  }

  private async forgetLeftovers(emptied: ReadonlySet<string>): Promise<void> {
    if (emptied.size === 0) return;
    await this.db
      .deleteFrom('registry_leftovers')
      .where('project_id', 'in', [...emptied])
      .execute();
  }

  /** Marks releases beyond the newest `keepReleases` that served as gone; returns what deletes them. */
  private async prune(projectId: string, currentId: string): Promise<() => void> {
    const dropped = await this.releases.prune(projectId, this.config.keepReleases, currentId);
    await this.files.drop(dropped.map((release) => release.id));
    const kept = this.registryImages && dropped.length > 0 ? await this.releases.keptOf(projectId) : [];
    return () => {
      this.registryImages?.drop(
        projectId,
        dropped.map((release) => release.image),
        kept.map((release) => release.image),
      );
      for (const release of dropped) {
        rmSync(join(this.appDir(projectId), release.id), { recursive: true, force: true });
        for (const image of this.builtTags(release.image)) this.images.remove(image);
      }
    };
  }

  /**
   * The local tags of an image this platform built (`wharf/…`, and its registry's name for it when
   * pushed); none for an image source's. The registry's copy is deleted by registryImages.
   */
  private builtTags(image: string | null): string[] {
    if (!image) return [];
    if (image.startsWith('wharf/')) return [image];
    const host = this.config.registry?.host;
    return host && image.startsWith(`${host}/wharf/`) ? [image, image.slice(host.length + 1)] : [];
  }

  /**
   * Containers (and Swarm services) of this platform that belong to no serving release (a crash left
   * them): removed.
   */
  private async removeStrayContainers(rows: ProjectsTable[]): Promise<void> {
    const docker = this.engine;
    if (!docker) return;
    const serving = new Set(rows.map((row) => servingId(row)).filter((id): id is string => id !== null));
    if (this.chosen.kind === 'swarm') {
      const services = await listServices(docker, this.platformId).catch(() => []);
      const labelled = services.map((service) => service.Spec?.Labels?.[RELEASE_LABEL] ?? '');
      // In a cluster, other nodes deploy and switch releases meanwhile (a release is `running` a moment
      // before the project names it): only services of releases that ended, or that no row knows, go.
      const ended = this.cluster.clustered
        ? await this.endedReleases(labelled.filter((id) => id !== '' && !serving.has(id)))
        : null;
      const kept: string[] = [];
      for (const [i, service] of services.entries()) {
        const release = labelled[i]!;
        const stray = !release || (!serving.has(release) && (ended === null || ended.has(release)));
        if (stray) await removeService(docker, service.ID);
        else kept.push(service.Spec?.Name ?? '');
      }
      await removeStraySecrets(docker, this.platformId, kept).catch(() => undefined);
      return;
    }
    const containers = await listContainers(docker, this.platformId).catch(() => []);
    for (const container of containers) {
      const release = container.Labels[RELEASE_LABEL];
      const project = container.Labels[PROJECT_LABEL];
      const running = container.State === 'running';
      if (!project || !release || !serving.has(release) || !running)
        await removeContainer(docker, container.Id);
    }
  }

  /** Of these releases, those that ended (failed, cancelled, retired) or that no row knows. */
  private async endedReleases(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db
      .selectFrom('releases')
      .select(['id', 'status'])
      .where('id', 'in', ids)
      .execute();
    const live = new Set(
      rows.filter((row) => row.status === 'building' || row.status === 'running').map((r) => r.id),
    );
    return new Set(ids.filter((id) => !live.has(id)));
  }

  private async restoreOne(row: ProjectsTable): Promise<void> {
    const state = this.state(row.id);
    const stored = row.release ? normalizePlan(JSON.parse(row.release) as ReleasePlan) : null;
    // In a cluster, the service runs and this node routes to it already (viewAll): nothing to start.
    if (stored && state.current?.plan.id === stored.id) return;
    const startable = stored && (stored.runs === 'container' || isDirectory(stored.dir));
    if (row.status === 'running' && stored && startable) {
      try {
        const local = await this.here(row.id, stored);
        const followed = await this.supervisor.reattach(state, local).catch(() => null);
        if (followed)
          state.log.system(
            `platform restarted: release ${stored.id} kept running in its ${this.chosen.kind === 'swarm' ? 'Swarm service' : 'container'}`,
          );
        else state.log.system(`platform restarted: starting release ${stored.id} again`);
        const instance = followed ?? (await this.supervisor.start(state, local, null));
        if (this.closed) {
          await this.supervisor.leave(instance);
          return;
        }
        state.current = instance;
        this.supervisor.supervise(state, instance);
        state.log.system(`running at ${this.projects.toProject(row).url}`);
        await state.log.flush();
        return;
      } catch (error) {
        state.log.system(
          `release ${stored.id} did not start again: ${(error as Error).message}; deploying anew`,
        );
      }
    } else {
      state.log.system('platform restarted: the last deploy was interrupted, deploying again');
    }
    const build = await this.beginBuild(row.id, 'the platform restarted');
    await deploy(this.attempts, state, build, row);
  }
}

function servingId(row: ProjectsTable): string | null {
  return row.release ? (JSON.parse(row.release) as ReleasePlan).id : null;
}

function realDir(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * Apps left running by a platform that died without stopping them (their process groups outlive it):
 * on Linux, every process whose working folder is inside this platform's apps folder.
 */
function killOrphans(appsDir: string): void {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (cwd.startsWith(`${appsDir}/`)) process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone already, or not ours to look at
    }
  }
}
