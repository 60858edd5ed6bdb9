// The runtime: turns a project into running processes and keeps them running.
//
// A deploy fetches the source into a fresh release folder, detects what the build config leaves empty,
// installs and builds, then starts every service beside whatever version is serving. Only once all of
// them are healthy does the edge switch to the new release; the old one stops after its in-flight
// requests finish, so a redeploy loses no request, and a failed one leaves the old version serving.
// Crashed services restart with backoff up to a limit. The serving release is persisted with the
// project, so a platform restart starts it again without rebuilding.
import { mkdirSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { Agent } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { join, relative, resolve } from 'node:path';
import type Docker from 'dockerode';
import type { BuildConfig, LogLine } from '../../shared/api/projects.js';
import type { PlatformConfig } from '../config.js';
import { ApiError } from '../errors.js';
import { newId } from '../ids.js';
import { accountLimits } from '../limits.js';
import type { LogStore } from '../projects/logs.js';
import type { ProjectService } from '../projects/projects.js';
import type { Store } from '../store/open.js';
import type { ProjectsTable } from '../store/schema.js';
import { detect, staticRootAfterBuild } from './detect.js';
import { connectDocker, pullImage, runContainer } from './drivers/docker.js';
import type { CommandDriver } from './drivers/host.js';
import { type ProcessExit, type RunningProcess, freePort, waitForPort } from './process.js';
import { portIsFree } from './ports.js';
import { maskUrlsIn, refusedRepoTarget, refusedRepoUrl } from '../projects/repo-url.js';
import { ReleaseStore } from './releases.js';
import { SourceError, cloneRepository, extractUpload, headCommit } from './sources.js';

/**
 * What a deploy produced and what a restart or a rollback needs to run it again without a build: stored
 * as JSON with the project (the serving one) and with each release.
 */
export interface ReleasePlan {
  id: string;
  dir: string;
  services: ReleaseService[];
}

export interface ReleaseService {
  /** Null for a project without `services` in its build config: one service, the app itself. */
  name: string | null;
  kind: 'web' | 'worker' | 'static' | 'image';
  cwd: string;
  start: string | null;
  /** For static sites: the folder served. */
  staticRoot: string | null;
  image: string | null;
  fixedPort: number | null;
  /** An image's port inside its container (the build config's port_override), else its PORT. */
  containerPort?: number | null;
  /** The project's env vars with the service's overrides, as they were at deploy time. */
  env: Record<string, string>;
  /** Folders put first on PATH (a Python virtualenv's bin/). */
  path: string[];
}

interface LiveService {
  spec: ReleaseService;
  port: number | null;
  process: RunningProcess | null;
  up: boolean;
  /** Requests the edge is proxying to it right now. */
  inflight: number;
  agent: Agent;
}

interface Instance {
  release: ReleasePlan;
  services: LiveService[];
  retiring: boolean;
}

interface ProjectState {
  id: string;
  current: Instance | null;
  build: Build | null;
  crashes: number;
  timers: Set<NodeJS.Timeout>;
  log: ProjectLog;
}

/** Where the edge sends a request for one host of a project. */
export type EdgeTarget =
  | { kind: 'proxy'; port: number; agent: Agent; done(): void }
  | { kind: 'static'; root: string }
  | { kind: 'down'; status: 502 | 503; reason: string }
  | { kind: 'no-service'; reason: string };

const BUILD_STEP_TIMEOUT_MS = 20 * 60_000;
const DRAIN_TIMEOUT_MS = 30_000;
const STABLE_AFTER_MS = 60_000;
const MAX_BACKOFF_MS = 30_000;

class DeployError extends Error {}
class CancelledError extends Error {}

/** A deploy in progress: what it started, so a newer deploy (or a stop) can cancel it. */
class Build {
  cancelled: string | null = null;
  private readonly processes = new Set<RunningProcess>();
  private settle!: () => void;
  /** Resolves once the deploy has stopped touching its release folder (done, failed or cancelled). */
  readonly finished = new Promise<void>((resolve) => (this.settle = resolve));

  end(): void {
    this.settle();
  }

  track(process: RunningProcess): void {
    if (this.cancelled) {
      void process.stop(2_000);
      return;
    }
    this.processes.add(process);
    void process.exited.then(() => this.processes.delete(process));
  }

  cancel(reason: string): void {
    this.cancelled = reason;
    for (const process of this.processes) void process.stop(2_000);
  }

  check(): void {
    if (this.cancelled) throw new CancelledError(this.cancelled);
  }
}

/**
 * A project's log lines waiting for the store, at most (in bytes and in lines: the store keeps the
 * last 5,000 lines anyway), and the pace at which they are stored (a burst, then lines per second):
 * a flood beyond is dropped and counted, so one tenant's output cannot keep the platform busy.
 */
const LOG_BACKLOG_BYTES = 4 * 1024 * 1024;
const LOG_BACKLOG_LINES = 2_000;
const LOG_BURST_LINES = 5_000;
const LOG_LINES_PER_SECOND = 1_000;

/**
 * A project's log lines on their way to the store: batched, in order, and bounded. Each line is at most
 * 16 KiB (lines.ts); an app writing faster than the store keeps up loses lines (the log says how many)
 * instead of growing the platform's memory.
 */
class ProjectLog {
  private pending: Array<Omit<LogLine, 'ts'> & { ts: string }> = [];
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  /** Bytes and lines written and not yet stored (pending or in a batch being stored). */
  private backlog = 0;
  private backlogLines = 0;
  private dropped = 0;
  private allowance = LOG_BURST_LINES;
  private refilledAt = Date.now();

  constructor(
    private readonly logs: LogStore,
    private readonly projectId: string,
  ) {}

  write(stream: LogLine['stream'], service: string | null, line: string): void {
    const now = Date.now();
    this.allowance = Math.min(
      LOG_BURST_LINES,
      this.allowance + ((now - this.refilledAt) / 1000) * LOG_LINES_PER_SECOND,
    );
    this.refilledAt = now;
    const full =
      this.allowance < 1 ||
      this.backlog + line.length > LOG_BACKLOG_BYTES ||
      this.backlogLines >= LOG_BACKLOG_LINES;
    if (full && stream !== 'system') {
      this.dropped += 1;
      return;
    }
    if (this.dropped > 0) {
      const note = `(${this.dropped} lines dropped: output came faster than the log keeps, ${LOG_LINES_PER_SECOND} lines a second)`;
      this.dropped = 0;
      this.push('system', service, note);
    }
    this.push(stream, service, line);
  }

  system(line: string, service: string | null = null): void {
    this.write('system', service, line);
  }

  build(line: string, service: string | null = null): void {
    this.write('build', service, line);
  }

  /** Resolves once every line written so far is stored. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = [];
    if (batch.length > 0) {
      const bytes = batch.reduce((sum, l) => sum + l.line.length, 0);
      this.chain = this.chain
        .then(() => this.logs.append(this.projectId, batch))
        // The project was deleted meanwhile: its lines have nowhere to go.
        .then(
          () => undefined,
          () => undefined,
        )
        .finally(() => {
          this.backlog -= bytes;
          this.backlogLines -= batch.length;
        });
    }
    return this.chain;
  }

  private push(stream: LogLine['stream'], service: string | null, line: string): void {
    this.allowance -= 1;
    this.backlog += line.length;
    this.backlogLines += 1;
    this.pending.push({ ts: new Date().toISOString(), stream, service, line });
    if (this.pending.length >= 500) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), 50);
  }
}

export class Runtime {
  private readonly states = new Map<string, ProjectState>();
  private closed = false;
  readonly releases: ReleaseStore;

  constructor(
    private readonly db: Store,
    private readonly config: PlatformConfig,
    private readonly projects: ProjectService,
    private readonly logs: LogStore,
    private readonly driver: CommandDriver,
  ) {
    this.releases = new ReleaseStore(db);
  }

  /** How tenant code runs here: `sandbox` or `process`. */
  get kind(): CommandDriver['kind'] {
    return this.driver.kind;
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
    if (row.deploy_source === 'upload') {
      const upload = await this.latestUpload(projectId);
      if (!upload) {
        throw new ApiError(
          'upload_required',
          `project ${row.name} deploys from an upload and none was sent yet: POST the source archive to /projects/${projectId}/upload first`,
        );
      }
    }
    const build = await this.beginBuild(projectId, 'a newer deploy started');
    void this.runDeploy(this.state(projectId), build, row);
    return this.projects.get(accountId, projectId);
  }

  /** The project's releases, newest first. */
  async listReleases(accountId: string, projectId: string) {
    const row = await this.projects.row(accountId, projectId);
    return this.releases.list(projectId, this.servingId(row));
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
    const current = this.servingId(row);
    if (target.id === current) {
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
    await this.projects.setEnvVars(
      accountId,
      projectId,
      JSON.parse(target.env_vars) as Record<string, string>,
    );
    const build = await this.beginBuild(projectId, 'a rollback started');
    const plan = JSON.parse(target.plan) as ReleasePlan;
    void this.runRollback(this.state(projectId), build, row, plan);
    return this.projects.get(accountId, projectId);
  }

  /** Cancels whatever deploy runs and marks the project `building` for a new one. */
  private async beginBuild(projectId: string, reason: string): Promise<Build> {
    const state = this.state(projectId);
    state.build?.cancel(reason);
    const build = new Build();
    state.build = build;
    state.crashes = 0;
    await this.projects.setRuntimeState(projectId, {
      status: 'building',
      last_deploy_at: new Date().toISOString(),
      last_deploy_error: null,
    });
    return build;
  }

  private servingId(row: ProjectsTable): string | null {
    return row.release ? (JSON.parse(row.release) as ReleasePlan).id : null;
  }

  /** Cancels any deploy, stops every process of the project and frees its ports. */
  async stop(accountId: string, projectId: string) {
    await this.projects.row(accountId, projectId);
    const state = this.state(projectId);
    await this.halt(state, 'the project was stopped');
    await this.projects.setRuntimeState(projectId, { status: 'stopped', release: null });
    await this.releases.retireAll(projectId);
    state.log.system('stopped');
    await state.log.flush();
    return this.projects.get(accountId, projectId);
  }

  /** Before a project is deleted: stop everything and remove its releases. */
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
    rmSync(this.appDir(projectId), { recursive: true, force: true, maxRetries: 5 });
    this.driver.forget(projectId);
  }

  /**
   * After a platform start: run again what was running (or being deployed) when it stopped, but the
   * projects in `except` (the AI builder deploys those through its loop).
   */
  async restore(options: { except?: ReadonlySet<string> } = {}): Promise<void> {
    killOrphans(join(this.config.dataDir, 'apps'));
    // Deploys the last stop interrupted never finish; their projects deploy anew below.
    await this.releases.cancelUnfinished('the platform stopped during this deploy');
    const rows = await this.db
      .selectFrom('projects')
      .selectAll()
      .where('status', 'in', ['running', 'building'])
      .execute();
    const unsafe = await this.unsafeForAccounts();
    if (unsafe) {
      for (const row of rows) {
        const state = this.state(row.id);
        state.log.system(`not started again: ${unsafe}`);
        await state.log.flush();
        await this.projects.setRuntimeState(row.id, { status: 'failed', last_deploy_error: unsafe });
      }
      return;
    }
    await Promise.all(rows.filter((row) => !options.except?.has(row.id)).map((row) => this.restoreOne(row)));
  }

  /** Platform shutdown: stop every app but keep the desired state, so the next start restores it. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      [...this.states.values()].map(async (state) => {
        for (const timer of state.timers) clearTimeout(timer);
        state.build?.cancel('the platform is shutting down');
        const current = state.current;
        state.current = null;
        if (current) await this.stopInstance(current, { drain: false });
        await state.log.flush();
      }),
    );
  }

  /** The edge's question: where does a request for `service` (null: the main one) of a project go? */
  target(projectId: string, service: string | null): EdgeTarget | null {
    const instance = this.states.get(projectId)?.current;
    if (!instance) return null;
    const live =
      service === null
        ? mainService(instance.services)
        : instance.services.find((s) => s.spec.name === service);
    if (!live) {
      return {
        kind: 'no-service',
        reason: service === null ? 'the project has no web service' : `no service "${service}"`,
      };
    }
    if (live.spec.kind === 'worker') return { kind: 'no-service', reason: `"${service}" is a worker` };
    if (live.spec.kind === 'static') return { kind: 'static', root: live.spec.staticRoot! };
    if (!live.up || live.port === null) {
      return { kind: 'down', status: 502, reason: 'the app crashed and is being restarted' };
    }
    live.inflight += 1;
    let done = false;
    return {
      kind: 'proxy',
      port: live.port,
      agent: live.agent,
      done: () => {
        if (!done) live.inflight -= 1;
        done = true;
      },
    };
  }

  /**
   * Why apps may not run here, or null: the process runtime runs tenant code as the platform's own
   * user, so it serves a platform of one account only.
   */
  private async unsafeForAccounts(): Promise<string | null> {
    if (this.driver.kind !== 'process') return null;
    const { n } = await this.db
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    if (Number(n) <= 1) return null;
    return `this platform runs apps with the process runtime, as its own user, which is safe for one account only and it has ${n}: install bubblewrap (apt-get install bubblewrap) and start it with --runtime sandbox (or auto)`;
  }

  private state(projectId: string): ProjectState {
    let state = this.states.get(projectId);
    if (!state) {
      state = {
        id: projectId,
        current: null,
        build: null,
        crashes: 0,
        timers: new Set(),
        log: new ProjectLog(this.logs, projectId),
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
    if (current) await this.stopInstance(current, { drain: false });
  }

  private async runDeploy(state: ProjectState, build: Build, row: ProjectsTable): Promise<void> {
    const releaseId = newId('rel');
    const dir = join(this.appDir(row.id), releaseId);
    const env = JSON.parse(row.env_vars) as Record<string, string>;
    const source = describeSource(row, this.config);
    await this.attempt(state, build, row, {
      releaseId,
      begin: `deploy ${releaseId} started (source: ${source})`,
      record: { source, envVars: env },
      plan: async () => {
        await this.fetchSource(row, dir, build, state.log);
        build.check();
        const commit = row.deploy_source === 'git' ? await headCommit(dir) : null;
        const home = join(this.appDir(row.id), 'home');
        mkdirSync(home, { recursive: true });
        await this.driver.prepare(row.id, [dir, home]);
        const plan = await this.prepare(row, releaseId, dir, build, state.log);
        await this.releases.built(releaseId, { plan: JSON.stringify(plan), image: null, commit });
        return plan;
      },
      discard: () => rmSync(dir, { recursive: true, force: true }),
    });
  }

  private async runRollback(state: ProjectState, build: Build, row: ProjectsTable, plan: ReleasePlan) {
    await this.attempt(state, build, row, {
      releaseId: plan.id,
      begin: `rollback to release ${plan.id} started: no build, its files and env vars as they were`,
      record: null,
      plan: async () => {
        if (!isDirectory(plan.dir)) throw new DeployError(`the files of release ${plan.id} are gone`);
        await this.driver.prepare(row.id, []);
        return plan;
      },
      discard: () => undefined,
    });
  }

  /**
   * One deploy or rollback: plan the release, start it beside the serving one, switch the edge once it
   * is healthy, then retire the old one. A failure leaves whatever served serving.
   */
  private async attempt(
    state: ProjectState,
    build: Build,
    row: ProjectsTable,
    how: {
      releaseId: string;
      begin: string;
      /** A new release row (a deploy), or null to start a recorded one again (a rollback). */
      record: { source: string; envVars: Record<string, string> } | null;
      plan(): Promise<ReleasePlan>;
      /** Deletes what a failed or cancelled attempt produced. */
      discard(): void;
    },
  ): Promise<void> {
    const { log } = state;
    const { releaseId } = how;
    const started = Date.now();
    log.system(how.begin);
    let instance: Instance | null = null;
    try {
      if (how.record) await this.releases.begin({ id: releaseId, projectId: row.id, ...how.record });
      const plan = await how.plan();
      build.check();
      const previous = state.current;
      if (previous && plan.services.some((s) => s.fixedPort !== null)) {
        log.system(
          'a service has a fixed port, so the running version stops before the new one starts (no zero-downtime switch)',
        );
        state.current = null;
        await this.stopInstance(previous, { drain: true });
      }
      instance = await this.startInstance(state, plan, build);
      build.check();
      state.current = instance;
      state.build = null;
      this.supervise(state, instance);
      // The log says so before the status does: whoever sees `running` finds the whole log.
      log.system(
        `running at ${this.projects.toProject(row).url} (${how.record ? 'deployed' : 'rolled back'} in ${seconds(started)})`,
      );
      await log.flush();
      if (how.record) await this.releases.end(releaseId, { status: 'running' });
      await this.releases.serving(row.id, releaseId);
      await this.projects.setRuntimeState(row.id, {
        status: 'running',
        release: JSON.stringify(plan),
        last_deploy_error: null,
      });
      if (previous && state.current === instance) await this.stopInstance(previous, { drain: true });
      await this.pruneReleases(row.id, releaseId);
    } catch (error) {
      if (instance && state.current !== instance) await this.stopInstance(instance, { drain: false });
      const cancelled = error instanceof CancelledError || build.cancelled;
      if (how.record) {
        how.discard();
        await this.releases
          .end(releaseId, {
            status: cancelled ? 'cancelled' : 'failed',
            error: cancelled ? (build.cancelled ?? (error as Error).message) : describeError(error),
          })
          .catch(() => undefined); // the project (and its releases) was deleted meanwhile
      }
      if (cancelled) {
        log.system(
          `${how.record ? 'deploy' : 'rollback to'} ${releaseId} cancelled: ${build.cancelled ?? (error as Error).message}`,
        );
        await log.flush();
        return;
      }
      const message = describeError(error);
      state.build = null;
      const serving = state.current !== null;
      log.system(`${how.record ? 'deploy' : 'rollback'} failed: ${message}`);
      if (serving) log.system('the previous version keeps serving');
      await log.flush();
      await this.projects.setRuntimeState(row.id, {
        status: serving ? 'running' : 'failed',
        last_deploy_error: serving
          ? `the new version failed (${message}); the previous version keeps serving`
          : message,
      });
    } finally {
      build.end();
    }
  }

  /** Deletes the files of releases beyond the newest `keepReleases` that served. */
  private async pruneReleases(projectId: string, currentId: string): Promise<void> {
    const dropped = await this.releases.prune(projectId, this.config.keepReleases, currentId);
    for (const release of dropped) {
      rmSync(join(this.appDir(projectId), release.id), { recursive: true, force: true });
    }
  }

  private async fetchSource(row: ProjectsTable, dir: string, build: Build, log: ProjectLog) {
    const started = Date.now();
    mkdirSync(join(dir, '..'), { recursive: true });
    if (row.deploy_source === 'git') {
      // repo_url is stored masked (https://***@host/…): only the clone itself gets the credentials.
      const hostUrl = `${this.config.gitHostUrl}/${row.git_host_repo}`;
      const shown = maskUrlsIn(row.repo_url ?? hostUrl);
      const branch = row.branch ?? 'main';
      // Checked again at each clone: the platform may have been restarted with local repositories off.
      // (The git host is the operator's own setting, so it may be a file:// URL.)
      const refused = row.repo_url === null ? null : refusedRepoUrl(this.config, row.repo_url, row.id);
      if (refused) throw new DeployError(`the repository ${shown} ${refused}`);
      const url = row.repo_url === null ? hostUrl : this.projects.cloneUrl(row);
      const target = row.repo_url === null ? null : await refusedRepoTarget(this.config, url);
      if (target) throw new DeployError(`the repository ${shown} ${target}`);
      log.build(`cloning ${shown} (branch ${branch})`);
      try {
        await cloneRepository({
          url,
          branch,
          dest: dir,
          onLine: (line) => log.build(line),
          noRedirects: !this.config.localRepos,
        });
      } catch (error) {
        throw new DeployError(maskUrlsIn((error as Error).message));
      }
      log.build(`cloned in ${seconds(started)}`);
    } else if (row.deploy_source === 'upload') {
      const upload = await this.latestUpload(row.id);
      if (!upload) throw new DeployError('the project has no upload: upload the source archive first');
      build.check();
      try {
        await extractUpload({ archive: upload.path, dest: dir, onLine: (line) => log.build(line) });
      } catch (error) {
        if (error instanceof SourceError) throw new DeployError(error.message);
        throw error;
      }
    } else {
      mkdirSync(dir, { recursive: true });
    }
  }

  /** Detection, install and build: everything before the services start. */
  private async prepare(
    row: ProjectsTable,
    releaseId: string,
    dir: string,
    build: Build,
    log: ProjectLog,
  ): Promise<ReleasePlan> {
    const env = JSON.parse(row.env_vars) as Record<string, string>;
    if (row.deploy_source === 'image') {
      return {
        id: releaseId,
        dir,
        services: [
          {
            name: null,
            kind: 'image',
            cwd: dir,
            start: null,
            staticRoot: null,
            image: row.image,
            fixedPort: null,
            containerPort: (JSON.parse(row.build_config) as BuildConfig).port_override ?? null,
            env,
            path: [],
          },
        ],
      };
    }
    const config = JSON.parse(row.build_config) as BuildConfig;
    const base = resolve(dir, config.root_dir);
    assertDirectory(base, dir, 'root_dir');

    const services: ReleaseService[] = [];
    if (config.services.length === 0) {
      const detection = config.install_cmd && config.build_cmd && config.start_cmd ? null : detect(base);
      detection?.reasons.forEach((reason) => log.build(`detected ${reason}`));
      const install = config.install_cmd ?? detection?.install ?? null;
      const buildCmd = config.build_cmd ?? detection?.build ?? null;
      const path = detection?.venv ? [join(base, '.venv', 'bin')] : [];
      await this.step(build, log, 'install', install, base, dir, {
        projectId: row.id,
        env,
        path,
        service: null,
      });
      await this.step(build, log, 'build', buildCmd, base, dir, {
        projectId: row.id,
        env,
        path,
        service: null,
      });
      const start = config.start_cmd ?? detection?.start ?? null;
      let staticRoot = start ? null : (detection?.staticRoot ?? null);
      if (!start && !staticRoot && buildCmd) {
        staticRoot = staticRootAfterBuild(base);
        if (staticRoot) log.build(`detected static site: the build wrote ${staticRoot}/index.html`);
      }
      // A Procfile's `worker:` process runs beside the web one (or alone: a project that only works).
      const worker = config.start_cmd ? null : (detection?.worker ?? null);
      if (!start && !staticRoot && worker) {
        services.push(procfileWorker(base, worker, env, path));
        return { id: releaseId, dir, services };
      }
      if (!start && !staticRoot) {
        throw new DeployError(
          'no start command: set start_cmd in the build config, or add a "start" script to package.json, a Procfile with a web process, an app.py/main.py, or an index.html',
        );
      }
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
      if (worker) services.push(procfileWorker(base, worker, env, path));
    } else {
      // Top-level commands run once in root_dir; each service then installs and builds its own folder
      // (detected once per folder when its commands are empty).
      await this.step(build, log, 'install', config.install_cmd, base, dir, {
        projectId: row.id,
        env,
        path: [],
        service: null,
      });
      await this.step(build, log, 'build', config.build_cmd, base, dir, {
        projectId: row.id,
        env,
        path: [],
        service: null,
      });
      const prepared = new Set<string>();
      if (config.install_cmd || config.build_cmd) prepared.add(base);
      // The primary app (the one at the project's own subdomain) keeps the project's port_override
      // when it declares no port of its own.
      const primary =
        config.services.find((s) => s.name === 'web' && s.kind !== 'worker') ??
        config.services.find((s) => s.kind !== 'worker');
      for (const service of config.services) {
        const cwd = service.root_dir ? resolve(base, service.root_dir) : base;
        assertDirectory(cwd, dir, `services.${service.name}.root_dir`);
        const serviceEnv = { ...env, ...service.env_overrides };
        const first = !prepared.has(cwd);
        prepared.add(cwd);
        const detection = first && (!service.install_cmd || !service.build_cmd) ? detect(cwd) : null;
        detection?.reasons
          .filter((r) => !r.startsWith('start:'))
          .forEach((reason) => log.build(`detected ${reason}`, service.name));
        const path =
          detection?.venv || (service.install_cmd === null && isVenv(cwd)) ? [join(cwd, '.venv', 'bin')] : [];
        const opts = { projectId: row.id, env: serviceEnv, path, service: service.name };
        await this.step(
          build,
          log,
          'install',
          service.install_cmd ?? detection?.install ?? null,
          cwd,
          dir,
          opts,
        );
        await this.step(build, log, 'build', service.build_cmd ?? detection?.build ?? null, cwd, dir, opts);
        services.push({
          name: service.name,
          kind: service.kind,
          cwd,
          start: service.start_cmd,
          staticRoot: null,
          image: null,
          fixedPort: service.port ?? (service === primary ? (config.port_override ?? null) : null),
          env: serviceEnv,
          path,
        });
      }
    }
    return { id: releaseId, dir, services };
  }

  /** Runs one install or build command to completion; non-zero exit fails the deploy. */
  private async step(
    build: Build,
    log: ProjectLog,
    label: 'install' | 'build',
    command: string | null,
    cwd: string,
    dir: string,
    options: { projectId: string; env: Record<string, string>; path: string[]; service: string | null },
  ): Promise<void> {
    if (!command) return;
    build.check();
    const started = Date.now();
    const where = relative(dir, cwd) || '.';
    log.build(`$ ${command}${where === '.' ? '' : `   (in ${where})`}`, options.service);
    const process = this.driver.run({
      projectId: options.projectId,
      command,
      cwd,
      env: this.processEnv(dir, options.env, options.path, { CI: 'true' }),
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
    log.build(`${label} done in ${seconds(started)}`, options.service);
  }

  /** Starts every service of a release and waits until all are healthy. */
  private async startInstance(state: ProjectState, release: ReleasePlan, build: Build | null) {
    const instance: Instance = {
      release,
      services: release.services.map((spec) => ({
        spec,
        port: null,
        process: null,
        up: spec.kind === 'static',
        inflight: 0,
        agent: new Agent({ keepAlive: true, maxSockets: 256 }),
      })),
      retiring: false,
    };
    try {
      await Promise.all(
        instance.services.map(async (live) => {
          if (live.spec.kind === 'static') {
            state.log.system(
              `serving ${relative(release.dir, live.spec.staticRoot!) || '.'}/ as a static site`,
              live.spec.name,
            );
            return;
          }
          await this.launch(state, instance, live, build);
        }),
      );
    } catch (error) {
      await this.stopInstance(instance, { drain: false });
      throw error;
    }
    return instance;
  }

  /** Starts one service process and waits for it to be healthy. */
  private async launch(state: ProjectState, instance: Instance, live: LiveService, build: Build | null) {
    const { spec } = live;
    const { log } = state;
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
    const env = this.processEnv(
      instance.release.dir,
      spec.env,
      spec.path,
      port === null ? {} : { PORT: String(port) },
    );
    let process: RunningProcess;
    if (spec.kind === 'image') {
      const docker = await this.docker();
      log.build(`pulling ${spec.image}`);
      await pullImage(docker, spec.image!, (line) => log.build(line)).catch((error: Error) => {
        throw new DeployError(`could not pull ${spec.image}: ${error.message}`);
      });
      build?.check();
      process = await runContainer(docker, {
        image: spec.image!,
        name: `wharf-${state.id}-${instance.release.id}`.toLowerCase(),
        port: port!,
        containerPort: spec.containerPort ?? port!,
        env: spec.env,
        onLine: (_stream, line) => log.write('runtime', spec.name, line),
      });
    } else {
      log.system(`starting ${label}: ${spec.start}${port === null ? '' : ` (PORT=${port})`}`, spec.name);
      await this.driver.prepare(state.id, []);
      process = this.driver.run({
        projectId: state.id,
        command: spec.start!,
        cwd: spec.cwd,
        env,
        workspace: join(instance.release.dir, '..'),
        onLine: (_stream, line) => log.write('runtime', spec.name, line),
      });
    }
    live.process = process;
    build?.track(process);
    if (port === null) {
      const grace = this.config.workerGraceMs;
      const exit = await Promise.race([process.exited, sleep(grace).then(() => null)]);
      if (exit) {
        throw new DeployError(`${label} ${describeExit(exit)} within its first ${grace / 1000} s`);
      }
      log.system(`${label} is up (a worker, alive after ${grace / 1000} s)`, spec.name);
    } else {
      try {
        await waitForPort(port, {
          timeoutMs: this.config.healthTimeoutMs,
          exited: process.exited,
          // A container's port is held by the engine's proxy, not by a process of ours.
          ...(spec.kind === 'image' ? {} : { owner: process.pid }),
        });
      } catch (error) {
        build?.check();
        throw new DeployError(`${spec.name ? `service ${spec.name}: ` : ''}${(error as Error).message}`);
      }
      log.system(`${label} is up on port ${port} (${seconds(started)})`, spec.name);
    }
    live.up = true;
  }

  private async docker(): Promise<Docker> {
    const connected = await connectDocker();
    if ('reason' in connected) throw new DeployError(connected.reason);
    return connected.docker;
  }

  /** Watches the processes of the serving instance: a crash restarts the service with backoff. */
  private supervise(state: ProjectState, instance: Instance): void {
    for (const live of instance.services) {
      if (live.process) this.watch(state, instance, live, live.process);
    }
  }

  private watch(state: ProjectState, instance: Instance, live: LiveService, process: RunningProcess) {
    void process.exited.then((exit) => {
      if (instance.retiring || state.current !== instance || live.process !== process || this.closed) return;
      live.up = false;
      live.process = null;
      const label = live.spec.name ?? 'the app';
      state.crashes += 1;
      const limit = this.config.restartLimit;
      if (state.crashes > limit) {
        state.log.system(
          `${label} ${describeExit(exit)}; it crashed ${limit + 1} times in a row, so it stays down`,
          live.spec.name,
        );
        state.current = null;
        void (async () => {
          await this.stopInstance(instance, { drain: false });
          await state.log.flush();
          await this.projects.setRuntimeState(state.id, {
            status: 'failed',
            last_deploy_error: `${label} kept crashing (${limit + 1} times in a row): see the runtime logs`,
          });
        })();
        return;
      }
      const delay = Math.min(this.config.restartBackoffMs * 2 ** (state.crashes - 1), MAX_BACKOFF_MS);
      state.log.system(
        `${label} ${describeExit(exit)}; restarting in ${delay / 1000} s (attempt ${state.crashes} of ${limit})`,
        live.spec.name,
      );
      this.later(state, delay, async () => {
        if (state.current !== instance || instance.retiring) return;
        try {
          await this.launch(state, instance, live, null);
          state.log.system(`${label} is back up`, live.spec.name);
          this.later(state, STABLE_AFTER_MS, async () => {
            if (live.up) state.crashes = 0;
          });
        } catch (error) {
          state.log.system(`${label} did not come back: ${(error as Error).message}`, live.spec.name);
          // A start that timed out is stopped; its exit then counts as the next crash.
          if (live.process) void live.process.stop(2_000);
        }
        if (live.process) this.watch(state, instance, live, live.process);
      });
    });
  }

  private later(state: ProjectState, ms: number, task: () => Promise<void>) {
    const timer = setTimeout(() => {
      state.timers.delete(timer);
      void task();
    }, ms);
    timer.unref();
    state.timers.add(timer);
  }

  /**
   * Stops an instance's processes: after its in-flight requests when draining. Its files stay for a
   * rollback until pruneReleases removes them.
   */
  private async stopInstance(instance: Instance, options: { drain: boolean }) {
    instance.retiring = true;
    if (options.drain) {
      const deadline = Date.now() + DRAIN_TIMEOUT_MS;
      while (instance.services.some((s) => s.inflight > 0) && Date.now() < deadline) await sleep(25);
    }
    await Promise.all(
      instance.services.map(async (live) => {
        live.up = false;
        const process = live.process;
        live.process = null;
        if (process) await process.stop();
        live.agent.destroy();
      }),
    );
  }

  private async restoreOne(row: ProjectsTable): Promise<void> {
    const state = this.state(row.id);
    const release = row.release ? (JSON.parse(row.release) as ReleasePlan) : null;
    if (row.status === 'running' && release && isDirectory(release.dir)) {
      state.log.system(`platform restarted: starting release ${release.id} again`);
      try {
        const instance = await this.startInstance(state, release, null);
        if (this.closed) {
          await this.stopInstance(instance, { drain: false });
          return;
        }
        state.current = instance;
        this.supervise(state, instance);
        state.log.system(`running at ${this.projects.toProject(row).url}`);
        await state.log.flush();
        return;
      } catch (error) {
        state.log.system(
          `release ${release.id} did not start again: ${(error as Error).message}; deploying anew`,
        );
      }
    } else {
      state.log.system('platform restarted: the last deploy was interrupted, deploying again');
    }
    const build = new Build();
    state.build = build;
    await this.projects.setRuntimeState(row.id, { status: 'building' });
    await this.runDeploy(state, build, row);
  }

  private async latestUpload(projectId: string) {
    return this.db
      .selectFrom('uploads')
      .select(['id', 'path'])
      .where('project_id', '=', projectId)
      .executeTakeFirst();
  }

  /**
   * The environment of an app's command: a small base (never the platform's own variables), the
   * project's env vars, then what the runtime sets.
   */
  private processEnv(
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
}

function mainService(services: LiveService[]): LiveService | undefined {
  return (
    services.find((s) => s.spec.name === null) ??
    services.find((s) => s.spec.name === 'web' && s.spec.kind !== 'worker') ??
    services.find((s) => s.spec.kind !== 'worker')
  );
}

function describeSource(row: ProjectsTable, config: PlatformConfig): string {
  switch (row.deploy_source) {
    case 'git':
      return `git ${maskUrlsIn(row.repo_url ?? `${config.gitHostUrl}/${row.git_host_repo}`)} ${row.branch ?? 'main'}`;
    case 'upload':
      return 'the latest upload';
    default:
      return `image ${row.image}`;
  }
}

function describeError(error: unknown): string {
  return error instanceof DeployError || error instanceof ApiError
    ? error.message
    : `internal error: ${(error as Error).message}`;
}

function describeExit(exit: ProcessExit): string {
  return exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
}

function seconds(since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(1)} s`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function isDirectory(path: string): boolean {
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
