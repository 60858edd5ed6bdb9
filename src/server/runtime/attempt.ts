// One deploy attempt, from start to end: a deploy (fetch the source, plan and build a new release) or
// a rollback (a kept release's plan, no build). Either way the release starts beside the serving one,
// the edge switches once it is healthy, the old one drains and stops; a failure leaves whatever
// served serving. The project's status and the release history follow each step.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { PlatformConfig } from '../config.js';
import { ApiError } from '../errors.js';
import { newId } from '../ids.js';
import type { ProjectService } from '../projects/projects.js';
import { maskUrlsIn, refusedRepoTarget, refusedRepoUrl } from '../projects/repo-url.js';
import type { Store } from '../store/open.js';
import type { ProjectsTable } from '../store/schema.js';
import type { Build } from './build.js';
import { CancelledError, DeployError } from './build.js';
import type { ResourceLimits } from './cgroups.js';
import type { CommandDriver } from './drivers/host.js';
import type { Planner, ReleasePlan } from './plan.js';
import { formatBytes } from '../limits.js';
import { isDirectory } from './plan-services.js';
import type { ProjectLog } from './project-log.js';
import type { ReleaseStore } from './releases.js';
import { type PlanResources, describeLimits } from './resources.js';
import { SourceError, cloneRepository, extractUpload, headCommit } from './sources.js';
import { transition } from './status.js';
import type { Instance, Supervised, Supervisor } from './supervisor.js';

export interface ProjectState extends Supervised {
  build: Build | null;
}

export interface AttemptDeps {
  db: Store;
  config: PlatformConfig;
  projects: ProjectService;
  releases: ReleaseStore;
  planner: Planner;
  supervisor: Supervisor;
  /** The host runtimes' driver (null on the container runtime). */
  driver: CommandDriver | null;
  /** What each project may use, from its account's plan. */
  resources: PlanResources;
  /** Whether this runtime enforces those limits (containers, the sandbox with control groups). */
  limitsApply: boolean;
  appDir(projectId: string): string;
  /**
   * Marks the releases beyond the kept ones as gone (no rollback can pick them any more) and returns
   * what deletes their artifacts, to run once nothing serves from them.
   */
  prune(projectId: string, currentId: string): Promise<() => void>;
  /** Stores a built release's static files for the other nodes of a cluster; the bytes stored. */
  share(plan: ReleasePlan): Promise<number>;
  /** Where an upload's archive is on this node (a cluster: copied here from the database). */
  uploadArchive(projectId: string, upload: { id: string; path: string }): Promise<string>;
  /** The plan as this node runs it (a cluster: another node's release files copied here). */
  here(projectId: string, plan: ReleasePlan): Promise<ReleasePlan>;
  /**
   * In a cluster, the URL of this node's up-to-date copy of an AI project's repository (its repo_url
   * names the copy of the node that built it); null for any other project, and on a single node.
   */
  aiSource(projectId: string): Promise<string | null>;
}

interface How {
  releaseId: string;
  begin: string;
  /** A new release row (a deploy), or null to start a recorded one again (a rollback). */
  record: { source: string; envVars: Record<string, string> } | null;
  /** `limits`: what the project may use, for the commands it prepares. */
  plan(limits: ResourceLimits): Promise<ReleasePlan>;
  /** Deletes what a failed or cancelled deploy produced. */
  discard(): void;
  /** Once the release serves (a rollback: its env vars become the project's again). */
  served?(): Promise<void>;
}

/** A deploy: the source fetched into a new release folder, then planned and built. */
export async function deploy(deps: AttemptDeps, state: ProjectState, build: Build, row: ProjectsTable) {
  const releaseId = newId('rel');
  const dir = join(deps.appDir(row.id), releaseId);
  const upload = row.deploy_source === 'upload' ? await latestUpload(deps.db, row.id) : undefined;
  const source = upload ? `upload ${upload.id}` : describeSource(row, deps.config);
  return run(deps, state, build, row, {
    releaseId,
    begin: `deploy ${releaseId} started (source: ${source})`,
    record: { source, envVars: JSON.parse(row.env_vars) as Record<string, string> },
    plan: async (limits) => {
      await fetchSource(deps, row, dir, build, state.log);
      build.check();
      const commit = row.deploy_source === 'git' ? await headCommit(dir) : null;
      // Known before the build: a release whose build fails still says what it built.
      if (commit) await deps.releases.noteCommit(releaseId, commit);
      if (deps.driver) {
        const home = join(deps.appDir(row.id), 'home');
        mkdirSync(home, { recursive: true });
        await deps.driver.prepare(row.id, [dir, home], limits);
      }
      const plan = await deps.planner.plan({ row, releaseId, dir, build, log: state.log });
      await deps.releases.built(releaseId, { plan: JSON.stringify(plan), image: plan.image ?? null, commit });
      const shared = await deps.share(plan);
      if (shared > 0) state.log.system(`static files stored for the other nodes (${formatBytes(shared)})`);
      return plan;
    },
    discard: () => rmSync(dir, { recursive: true, force: true }),
  });
}

/** A rollback: a kept release's plan started again, without a build. */
export function rollback(
  deps: AttemptDeps,
  state: ProjectState,
  build: Build,
  row: ProjectsTable,
  plan: ReleasePlan,
  served: () => Promise<void>,
) {
  return run(deps, state, build, row, {
    releaseId: plan.id,
    begin: `rollback to release ${plan.id} started: no build, ${plan.runs === 'container' ? `its image ${plan.image}` : 'its files'} and env vars as they were`,
    record: null,
    plan: async (limits) => {
      if (plan.runs !== 'container' && !isDirectory(plan.dir)) {
        throw new DeployError(`the files of release ${plan.id} are gone`);
      }
      if (deps.driver) await deps.driver.prepare(row.id, [], limits);
      return deps.here(row.id, plan);
    },
    discard: () => undefined,
    served,
  });
}

async function run(deps: AttemptDeps, state: ProjectState, build: Build, row: ProjectsTable, how: How) {
  const { log } = state;
  const { releaseId } = how;
  const started = Date.now();
  log.system(how.begin);
  let instance: Instance | null = null;
  try {
    if (how.record) await deps.releases.begin({ id: releaseId, projectId: row.id, ...how.record });
    const resources = await deps.resources.forAccount(row.account_id);
    // Image sources run as containers on every runtime.
    if (deps.limitsApply || row.deploy_source === 'image') {
      log.system(`resources of plan ${resources.plan}: ${describeLimits(resources.limits)}`);
    }
    const plan = await how.plan(resources.limits);
    build.check();
    const previous = state.current;
    if (previous && plan.services.some((s) => s.fixedPort !== null)) {
      log.system(
        'a service has a fixed port, so the running version stops before the new one starts (no zero-downtime switch)',
      );
      state.current = null;
      await deps.supervisor.stop(previous, { drain: true });
    }
    instance = await deps.supervisor.start(state, plan, build);
    build.check();
    state.current = instance;
    state.build = null;
    deps.supervisor.supervise(state, instance);
    // The log says so before the status does: whoever sees `running` finds the whole log.
    log.system(
      `running at ${deps.projects.toProject(row).url} (${how.record ? 'deployed' : 'rolled back'} in ${seconds(started)})`,
    );
    await log.flush();
    if (how.record) await deps.releases.end(releaseId, { status: 'running' });
    await deps.releases.serving(row.id, releaseId);
    await how.served?.();
    // Releases beyond the kept ones stop being rollback targets before the project says `running`;
    // their files and images go once the old version has drained.
    const deleteDropped = await deps.prune(row.id, releaseId);
    await transition(deps.projects, row.id, { type: 'served', release: JSON.stringify(plan) });
    if (previous && state.current === instance) await deps.supervisor.stop(previous, { drain: true });
    deleteDropped();
  } catch (error) {
    if (instance && state.current !== instance) await deps.supervisor.stop(instance, { drain: false });
    const cancelled = error instanceof CancelledError || build.cancelled !== null;
    if (how.record) {
      how.discard();
      await deps.releases
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
    await transition(deps.projects, row.id, { type: 'deploy-failed', error: message, serving });
  } finally {
    build.end();
  }
}

async function fetchSource(
  deps: AttemptDeps,
  row: ProjectsTable,
  dir: string,
  build: Build,
  log: ProjectLog,
): Promise<void> {
  const { config } = deps;
  const started = Date.now();
  mkdirSync(join(dir, '..'), { recursive: true });
  if (row.deploy_source === 'git') {
    // repo_url is stored masked (https://***@host/…): only the clone itself gets the credentials.
    const hostUrl = `${config.gitHostUrl}/${row.git_host_repo}`;
    const shown = maskUrlsIn(row.repo_url ?? hostUrl);
    const branch = row.branch ?? 'main';
    const aiSource = await deps.aiSource(row.id);
    // Checked again at each clone: the platform may have been restarted with local repositories off.
    // (The git host is the operator's own setting, so it may be a file:// URL; the AI builder's
    // repository is the platform's own.)
    const refused = row.repo_url === null || aiSource ? null : refusedRepoUrl(config, row.repo_url, row.id);
    if (refused) throw new DeployError(`the repository ${shown} ${refused}`);
    const url = aiSource ?? (row.repo_url === null ? hostUrl : deps.projects.cloneUrl(row));
    const target = row.repo_url === null || aiSource ? null : await refusedRepoTarget(config, url);
    if (target) throw new DeployError(`the repository ${shown} ${target}`);
    log.build(`cloning ${shown} (branch ${branch})`);
    try {
      await cloneRepository({
        url,
        branch,
        dest: dir,
        onLine: (line) => log.build(line),
        noRedirects: !config.localRepos,
      });
    } catch (error) {
      throw new DeployError(maskUrlsIn((error as Error).message));
    }
    log.build(`cloned in ${seconds(started)}`);
  } else if (row.deploy_source === 'upload') {
    const upload = await latestUpload(deps.db, row.id);
    if (!upload) throw new DeployError('the project has no upload: upload the source archive first');
    build.check();
    try {
      const archive = await deps.uploadArchive(row.id, upload);
      await extractUpload({ archive, dest: dir, onLine: (line) => log.build(line) });
    } catch (error) {
      if (error instanceof SourceError) throw new DeployError(error.message);
      throw error;
    }
  } else {
    mkdirSync(dir, { recursive: true });
  }
}

export function latestUpload(db: Store, projectId: string) {
  return db
    .selectFrom('uploads')
    .select(['id', 'path'])
    .where('project_id', '=', projectId)
    .executeTakeFirst();
}

export function describeSource(row: ProjectsTable, config: PlatformConfig): string {
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

function seconds(since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(1)} s`;
}
