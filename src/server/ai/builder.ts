// The AI builder of API.md §8: from a prompt to a deployed app. A build generates the app (with the
// account's engine, or offline from our templates when there is none; either way with a Dockerfile FROM
// the platform's base images, which the container runtime builds as it is), commits it to the project's own
// repository at `<dataDir>/ai-repos/<projectId>`, creates a git project cloning it over file://, and
// either answers `needs_setup` (secrets or a database to supply through `POST /ai/deploy`) or starts the
// deploy loop of repair.ts in the background. Edits regenerate files through the model and go through
// the same loop. Every model call is admitted (rate limit, balance) and metered by AiEngines. A build
// asked `offline` (the agent's template builds) uses the templates even when an engine is there, and
// calls no model at all, repairs included. When a project is deleted, its repository goes with it.
import { readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type {
  AiBuildRequest,
  AiBuildResponse,
  AiDeployRequest,
  AiEditRequest,
  Generator,
} from '../../shared/api/ai.js';
import type { Project, ProjectStatus } from '../../shared/api/projects.js';
import { LIMITS } from '../../shared/limits.js';
import { RESERVED_SUBDOMAINS } from '../../shared/dns-label.js';
import type { Caller } from '../auth/authenticate.js';
import type { Ledger } from '../billing/ledger.js';
import { ApiError, notFound, validationError } from '../errors.js';
import { newId, randomBase62 } from '../ids.js';
import { type ResolvedEngine, type TokenUsage, assertEmailVerified } from './engines.js';
import { editApp, generateApp } from './generators/index.js';
import type { AppNeeds } from './generators/types.js';
import { AiRepo } from './git.js';
import type { AppDatabases } from './postgres.js';
import type { SharedRepos } from './shared-repos.js';
import { type BuildListener, DeployLoops, type DeployLoopsDeps } from './repair.js';

export type { BuildEvent, BuildListener } from './repair.js';

export interface AiBuilderDeps extends DeployLoopsDeps {
  ledger: Ledger;
  databases: AppDatabases;
  /** In a cluster, where the nodes share the repositories; null on a single node. */
  sharedRepos: SharedRepos | null;
}

/** Who asks: the authenticated caller (only its account matters here). */
export type BuilderCaller = Pick<Caller, 'accountId'>;

export interface BuildOptions {
  /**
   * Generate from the built-in templates even when the account has an engine: no engine is resolved,
   * admitted or metered, and the deploy loop repairs with deterministic fixes only.
   */
  offline?: boolean;
}

export type AiDeployResult = { status: 'building'; project: Project; url: string };
export type AiEditResult = { status: 'building'; project: Project; changed_files: string[] };

const NO_ENGINE_FOR_EDIT =
  'an edit needs an AI engine and none is available: save your own key (PUT /account/ai-key, or Settings in the app), or start the platform with --ai-provider and WHARF_AI_KEY';

export class AiBuilder {
  private readonly loops: DeployLoops;

  constructor(private readonly deps: AiBuilderDeps) {
    this.loops = new DeployLoops(deps);
    deps.projects.onDelete((projectId) => this.forget(projectId));
  }

  /** POST /ai/build: generate, commit, create the project, then `needs_setup` or deploy. */
  async build(
    caller: BuilderCaller,
    req: AiBuildRequest,
    options: BuildOptions = {},
  ): Promise<AiBuildResponse> {
    const { db, config, engines, projects } = this.deps;
    const { accountId } = caller;
    await assertEmailVerified(db, accountId);
    const engine = options.offline ? null : await engines.resolve(accountId, req.engine);
    // Before any model call: the subdomain must be one the project can take.
    await this.assertSubdomainFree(req.subdomain);
    if (engine) await engines.admit(accountId, engine);
    const app = await generateApp({
      generator: req.generator,
      prompt: req.prompt,
      subdomain: req.subdomain,
      model: engine,
      images: config.images,
      onUsage: (usage) =>
        this.meter(accountId, engine, usage, `AI build (${req.generator}) of ${req.subdomain}`),
    });

    // The repository is made first, in a folder of its own, then moved where the project id says.
    const staging = new AiRepo(join(config.dataDir, 'ai-repos', `.new-${randomBase62(12)}`));
    let created: Project | null = null;
    try {
      await staging.init();
      await staging.commitFiles(app.files, `Generate ${req.generator} app: ${oneLine(app.summary, 200)}`);
      created = await projects.create(
        accountId,
        {
          name: app.title?.trim() ? oneLine(app.title, 64) : projectName(req.prompt, req.subdomain),
          subdomain: req.subdomain,
          repo_url: staging.url,
          branch: 'main',
        },
        { ownRepo: true },
      );
      const repo = this.repo(created.id);
      renameSync(staging.dir, repo.dir);
      await db.transaction().execute(async (trx) => {
        await trx.updateTable('projects').set({ repo_url: repo.url }).where('id', '=', created!.id).execute();
        await trx
          .insertInto('ai_projects')
          .values({
            project_id: created!.id,
            account_id: accountId,
            generator: req.generator,
            needs: JSON.stringify(app.needs),
            created_at: new Date().toISOString(),
          })
          .execute();
      });
      await this.deps.sharedRepos?.push(created.id, repo, null);
      // repo_url moved: the account's cached list is stale.
      projects.forgetList(accountId);
      await this.note(
        created.id,
        `Generated a ${req.generator} app: ${app.summary} (${describeEngine(engine)})`,
      );
      created = await projects.get(accountId, created.id);
      if (app.needs.env.length > 0 || app.needs.database !== null) {
        await this.note(created.id, `Needs setup before it can run: ${describeNeeds(app.needs)}`);
        return { status: 'needs_setup', project: created, needs: app.needs };
      }
      const project = await this.loops.start({ accountId, projectId: created.id, engine, repo });
      return { status: 'building', project, url: project.url };
    } catch (error) {
      staging.remove();
      if (created && !(await this.exists(created.id))) this.repo(created.id).remove();
      throw error;
    }
  }

  /** POST /ai/deploy: supply env vars (merged) and a database, then deploy through the loop. */
  async deploy(caller: BuilderCaller, req: AiDeployRequest): Promise<AiDeployResult> {
    const { db, projects } = this.deps;
    const { accountId } = caller;
    await assertEmailVerified(db, accountId);
    const row = await projects.row(accountId, req.project_id);
    const ai = await this.aiProject(accountId, row.id);
    const env = { ...(JSON.parse(row.env_vars) as Record<string, string>), ...req.env };
    const database = req.database ?? null;
    if (ai) assertNeedsMet(ai.needs, env, database);
    if (Object.keys(env).length > LIMITS.envVars) {
      throw validationError([
        {
          path: 'env',
          message: `would make ${Object.keys(env).length} variables: at most ${LIMITS.envVars}`,
        },
      ]);
    }
    if (database === 'postgres') {
      env.DATABASE_URL = await this.deps.databases.provision(row.id);
      await this.note(row.id, 'Created a PostgreSQL database for the app: DATABASE_URL is set');
    }
    await projects.setEnvVars(accountId, row.id, env);
    const project = await this.loops.start({
      accountId,
      projectId: row.id,
      engine: ai ? await this.repairEngine(accountId) : null,
      repo: ai ? this.repo(row.id) : null,
    });
    return { status: 'building', project, url: project.url };
  }

  /** POST /ai/edit: the model rewrites what the instruction asks, one commit, then the deploy loop. */
  async edit(caller: BuilderCaller, req: AiEditRequest): Promise<AiEditResult> {
    const { db, config, engines } = this.deps;
    const { accountId } = caller;
    await assertEmailVerified(db, accountId);
    const ai = await this.aiProject(accountId, req.project_id);
    if (!ai) throw notFound(`AI project ${req.project_id}`);
    const engine = await engines.resolve(accountId);
    if (!engine) throw new ApiError('unavailable', NO_ENGINE_FOR_EDIT);
    const repo = this.repo(req.project_id);
    // A repair still running would commit over the edit: it ends here.
    this.loops.cancel(req.project_id);
    const summary = oneLine(req.instruction.split('\n')[0] ?? '', 120);
    const changed = await repo.exclusive(async () => {
      await engines.admit(accountId, engine);
      const edited = await editApp({
        files: await repo.readHead(),
        instruction: req.instruction,
        model: engine,
        images: config.images,
        onUsage: (usage) => this.meter(accountId, engine, usage, `AI edit of ${req.project_id}`),
      });
      await repo.commitFiles(edited.files, `Edit: ${summary}`);
      return edited.changed;
    });
    await this.note(
      req.project_id,
      `Edit: ${summary} (${changed.length > 0 ? `changed ${changed.join(', ')}` : 'no file changed'})`,
    );
    const project = await this.loops.start({ accountId, projectId: req.project_id, engine, repo });
    return { status: 'building', project, changed_files: changed };
  }

  /** Build log lines and status changes of the project while its deploy loop runs. */
  watch(projectId: string, listener: BuildListener): () => void {
    return this.loops.watch(projectId, listener);
  }

  /** Resolves with the project's status once its deploy loop (repairs included) has ended. */
  waitForOutcome(projectId: string): Promise<ProjectStatus> {
    return this.loops.waitForOutcome(projectId);
  }

  /** Whether a project is one the AI builder made (and so can be edited), for this account. */
  async isAiProject(accountId: string, projectId: string): Promise<boolean> {
    return (await this.aiProject(accountId, projectId)) !== null;
  }

  /**
   * Repositories left behind are removed: the staging folder of a build cut short, the repository of a
   * project deleted while its cleanup could not finish. Run once at start.
   */
  async sweep(): Promise<void> {
    const root = join(this.deps.config.dataDir, 'ai-repos');
    let names: string[];
    try {
      names = readdirSync(root);
    } catch {
      return;
    }
    for (const name of names) {
      if (name.startsWith('.new-') || !(await this.exists(name))) {
        rmSync(join(root, name), { recursive: true, force: true });
      }
    }
  }

  /** AI projects whose deploy the last stop of the platform cut short (they were `building`). */
  async interrupted(): Promise<Array<{ projectId: string; accountId: string }>> {
    const rows = await this.deps.db
      .selectFrom('ai_projects')
      .innerJoin('projects', 'projects.id', 'ai_projects.project_id')
      .select(['ai_projects.project_id', 'ai_projects.account_id'])
      .where('projects.status', '=', 'building')
      .execute();
    return rows.map((row) => ({ projectId: row.project_id, accountId: row.account_id }));
  }

  /**
   * Deploys `interrupted` projects again through their deploy loop, self-repair included (the runtime's
   * restore would deploy them once, without it). Run once at start; rejects with what failed.
   */
  async resume(interrupted: Array<{ projectId: string; accountId: string }>): Promise<void> {
    const failed: Error[] = [];
    for (const { projectId, accountId } of interrupted) {
      try {
        await this.note(
          projectId,
          'platform restarted: the last deploy was interrupted, deploying again (with self-repair)',
        );
        await this.loops.start({
          accountId,
          projectId,
          engine: await this.repairEngine(accountId),
          repo: this.repo(projectId),
        });
      } catch (error) {
        failed.push(error as Error);
      }
    }
    if (failed.length > 0) throw new AggregateError(failed, 'resuming interrupted AI deploys failed');
  }

  /** Stops the background loops (before the runtime closes). */
  close(): Promise<void> {
    return this.loops.close();
  }

  /**
   * A deleted project's AI leftovers (its ai_projects row went with the project's, by the foreign
   * key): the deploy loop ends, the repository is removed and its database dropped. A repair or edit writing to the
   * repository at this moment would put files back, so it is removed again once that writer is done.
   */
  private forget(projectId: string): void {
    this.deps.databases.forget(projectId);
    this.dropCopy(projectId);
  }

  /**
   * A project deleted through another node of the cluster: this node's loop for it ends and its copy
   * of the repository goes (the deleting node drops the rest).
   */
  dropCopy(projectId: string): void {
    this.loops.cancel(projectId);
    // Not the shared one: it would bring the repository back from the database first.
    const repo = AiRepo.at(this.deps.config.dataDir, projectId);
    repo.remove();
    repo.exclusive(async () => repo.remove()).catch(() => undefined); // removed already, best effort
  }

  /** The project's repository on this node (in a cluster, kept in step with the shared one). */
  private repo(projectId: string): AiRepo {
    return this.deps.sharedRepos?.repo(projectId) ?? AiRepo.at(this.deps.config.dataDir, projectId);
  }

  private async assertSubdomainFree(subdomain: string): Promise<void> {
    if (RESERVED_SUBDOMAINS.has(subdomain)) {
      throw validationError([{ path: 'subdomain', message: `"${subdomain}" is reserved for the platform` }]);
    }
    const taken = await this.deps.db
      .selectFrom('project_hosts')
      .select('project_id')
      .where('label', '=', subdomain)
      .executeTakeFirst();
    if (taken) throw new ApiError('conflict', `the subdomain "${subdomain}" is taken`);
  }

  private async aiProject(
    accountId: string,
    projectId: string,
  ): Promise<{ needs: AppNeeds; generator: Generator } | null> {
    const row = await this.deps.db
      .selectFrom('ai_projects')
      .select(['needs', 'generator'])
      .where('project_id', '=', projectId)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row ? { needs: JSON.parse(row.needs) as AppNeeds, generator: row.generator as Generator } : null;
  }

  private async exists(projectId: string): Promise<boolean> {
    const row = await this.deps.db
      .selectFrom('projects')
      .select('id')
      .where('id', '=', projectId)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** The engine repairs of a deploy may use: the account's default one, if any (never an error). */
  private async repairEngine(accountId: string): Promise<ResolvedEngine | null> {
    return this.deps.engines.resolve(accountId).catch(() => null);
  }

  private async meter(
    accountId: string,
    engine: ResolvedEngine | null,
    usage: TokenUsage,
    description: string,
  ): Promise<void> {
    if (!engine) return;
    await this.deps.engines.meter(accountId, engine, usage, description, `ai-usage:${newId('use')}`);
  }

  private async note(projectId: string, line: string): Promise<void> {
    await this.deps.logs.append(projectId, [{ stream: 'system', service: null, line }]);
  }
}

/** 422 when a needed env var is still unset, or the needed database is neither asked for nor given. */
function assertNeedsMet(needs: AppNeeds, env: Record<string, string>, database: 'postgres' | null): void {
  const errors = needs.env
    .filter((need) => (env[need.name] ?? '') === '')
    .map((need) => ({ path: `env.${need.name}`, message: `is required: ${need.description}` }));
  if (needs.database === 'postgres' && database !== 'postgres' && !env.DATABASE_URL) {
    errors.push({
      path: 'database',
      message:
        'is required: the app needs a PostgreSQL database; send "postgres" (or your own DATABASE_URL in env)',
    });
  }
  if (errors.length > 0) throw validationError(errors);
}

function describeNeeds(needs: AppNeeds): string {
  const parts = needs.env.map((n) => `${n.name} (${n.description})`);
  if (needs.database)
    parts.push(`a ${needs.database === 'postgres' ? 'PostgreSQL' : needs.database} database`);
  return parts.join(', ');
}

function describeEngine(engine: ResolvedEngine | null): string {
  if (!engine) return 'offline: from the built-in templates';
  return `${engine.kind === 'own_key' ? 'your own key' : 'the included engine'}, ${engine.provider} ${engine.modelId}`;
}

/** A project name from the prompt: its first line, at most 64 characters, cut at a word. */
export function projectName(prompt: string, fallback: string): string {
  const line = oneLine(prompt.split('\n').find((l) => l.trim() !== '') ?? '', 1000);
  if (line === '') return fallback;
  if (line.length <= 64) return line;
  const cut = line.slice(0, 63);
  const space = cut.lastIndexOf(' ');
  return `${space > 30 ? cut.slice(0, space) : cut}…`;
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
