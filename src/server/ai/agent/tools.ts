// The agent's tools: what the app does with clicks, for the model to call. Every tool acts on the
// caller's account only (each lookup goes through ProjectService or the builder with the caller's
// account id, so another account's project is simply not found). Tools that start a deploy stream its
// progress as `build_log` / `build_status` events and wait for the outcome, up to a bound.
//
// Secrets stay out of the model's context: projects are shown with their env var names, never values.
import type { Tool, ToolSet } from 'ai';
import { z } from 'zod';
import { GENERATORS, type Generator } from '../../../shared/api/ai.js';
import { DnsLabel } from '../../../shared/api/common.js';
import {
  CreateProjectRequest,
  EnvVars,
  LIMITS,
  type Project,
  type ProjectStatus,
} from '../../../shared/api/projects.js';
import type { Ledger } from '../../billing/ledger.js';
import { ApiError, validationError } from '../../errors.js';
import type { LogStore, SequencedLine } from '../../projects/logs.js';
import type { ProjectService } from '../../projects/projects.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Store } from '../../store/open.js';
import type { AiBuilder } from '../builder.js';
import type { ResolvedEngine } from '../engines.js';
import { docsIndex } from './docs-search.js';
import type { EmitAgentEvent, StepRecorder } from './steps.js';

export interface AgentToolDeps {
  db: Store;
  ledger: Ledger;
  projects: ProjectService;
  runtime: Runtime;
  logs: LogStore;
  builder: AiBuilder;
  /** How long a tool that deploys waits for the outcome before answering "still building". */
  buildWaitMs: number;
}

export interface AgentToolContext {
  accountId: string;
  engine: ResolvedEngine;
  recorder: StepRecorder;
  emit: EmitAgentEvent;
  signal: AbortSignal;
}

/** Lines read_deploy_logs returns when the model does not say. */
const DEFAULT_LOG_LINES = 100;
/** Lines of the build log a deploying tool hands back to the model with its outcome. */
const OUTCOME_LOG_TAIL = 20;
/** A line of log is cut to this many characters in tool outputs (the model's context is precious). */
const LOG_LINE_CHARS = 400;

const ProjectId = z.string().describe('The project id, e.g. "prj_…", as list_projects shows it');
const GeneratorInput = z.enum(GENERATORS).describe(`The kind of app: ${GENERATORS.join(', ')}`);

export function createAgentTools(deps: AgentToolDeps, ctx: AgentToolContext): ToolSet {
  const { accountId, recorder } = ctx;
  const { projects, logs, builder } = deps;

  /** A tool whose calls are recorded as steps; `run` may throw, the step then has status error. */
  function agentTool<S extends z.ZodType>(
    name: string,
    description: string,
    inputSchema: S,
    run: (input: z.infer<S>) => Promise<unknown>,
  ) {
    // What the SDK's tool() helper returns, written out: that helper would load the SDK with this file.
    const made: Tool<z.infer<S>, unknown> = {
      description,
      inputSchema,
      execute: (input: z.infer<S>, { toolCallId }) => recorder.run(toolCallId, name, input, () => run(input)),
    };
    return made;
  }

  /** Where a project's log is now: what a deploy writes after this is its progress. */
  const logPosition = async (projectId: string) => (await logs.read(projectId, { limit: 1 }))[0]?.seq ?? 0;
  const outcome = (projectId: string, afterSeq: number) => followDeploy(deps, ctx, projectId, afterSeq);

  return {
    list_projects: agentTool(
      'list_projects',
      "Lists the user's projects, newest first: id, name, subdomain, status, url, source.",
      z.object({}),
      async () => (await projects.list(accountId)).map(projectSummary),
    ),

    get_project: agentTool(
      'get_project',
      'One project in detail (source, env var names, build config, status, last deploy error) with its last 20 log lines.',
      z.object({ project_id: ProjectId }),
      async ({ project_id }) => {
        const project = await projects.get(accountId, project_id);
        const tail = await logs.read(project.id, { limit: 20 });
        return { ...projectDetail(project), recent_logs: tail.map(formatLine) };
      },
    ),

    read_deploy_logs: agentTool(
      'read_deploy_logs',
      "A project's last N log lines (build, runtime and system), oldest first; optionally only one stream or service.",
      z.object({
        project_id: ProjectId,
        lines: z
          .number()
          .int()
          .min(1)
          .max(LIMITS.logLines)
          .optional()
          .describe(`How many lines (default ${DEFAULT_LOG_LINES})`),
        stream: z.enum(['build', 'runtime', 'system']).optional().describe('Only this stream'),
        service: z.string().optional().describe('Only the lines of this service (multi-service projects)'),
      }),
      async ({ project_id, lines, stream, service }) => {
        const project = await projects.row(accountId, project_id);
        const wanted = lines ?? DEFAULT_LOG_LINES;
        const filtered = stream !== undefined || service !== undefined;
        // Filtering happens after reading, so read what the store keeps when a filter is given.
        const read = await logs.read(project.id, { limit: filtered ? 5_000 : wanted });
        const kept = read
          .filter(
            (l) =>
              (stream === undefined || l.stream === stream) &&
              (service === undefined || l.service === service),
          )
          .slice(-wanted);
        return { project_id: project.id, status: project.status, lines: kept.map(formatLine) };
      },
    ),

    account_status: agentTool(
      'account_status',
      "The user's account: email, plan, balance (allowance and top-up, in USD), recent usage by kind, and the AI engine this chat uses.",
      z.object({}),
      async () => accountStatus(deps, ctx),
    ),

    build_app: agentTool(
      'build_app',
      'Builds a new app from a description and deploys it at <subdomain>; waits for it to run (or fail) and returns the outcome. ' +
        "With use_template: true it is made from Wharf's built-in template for the kind of app (no AI generation: faster and free). " +
        'Answers needs_setup when the app needs secrets or a database first (then use set_env_vars / create_database).',
      z.object({
        generator: GeneratorInput,
        prompt: z.string().min(1).max(4000).describe("What the app is and does, in the user's words"),
        subdomain: DnsLabel.describe('Where it will run: a lowercase DNS label, free on the platform'),
        use_template: z
          .boolean()
          .optional()
          .describe('Build from the built-in template instead of generating with AI'),
      }),
      async ({ generator, prompt, subdomain, use_template }) =>
        startBuild(deps, ctx, { generator, prompt, subdomain }, use_template === true),
    ),

    edit_app: agentTool(
      'edit_app',
      'Changes an app the AI builder made, following an instruction; redeploys it (with self-repair) and returns the outcome and the changed files.',
      z.object({
        project_id: ProjectId,
        instruction: z.string().min(1).max(4000).describe('What to change'),
      }),
      async ({ project_id, instruction }) => {
        await projects.row(accountId, project_id);
        const from = await logPosition(project_id);
        const started = await builder.edit({ accountId }, { project_id, instruction });
        return { changed_files: started.changed_files, ...(await outcome(started.project.id, from)) };
      },
    ),

    deploy: agentTool(
      'deploy',
      "Deploys a new project, either from a git repository URL (repo_url, optional branch) or from one of Wharf's built-in templates (template, filled from prompt). " +
        'Waits for it to run (or fail) and returns the outcome.',
      z.object({
        subdomain: DnsLabel.describe('Where it will run: a lowercase DNS label, free on the platform'),
        repo_url: z.string().optional().describe('A git repository URL (https://… or git@…)'),
        branch: z.string().optional().describe('The branch of repo_url (default main)'),
        name: z.string().min(1).max(64).optional().describe('The project name (default: the subdomain)'),
        template: GeneratorInput.optional().describe('A built-in template instead of a repository'),
        prompt: z.string().max(4000).optional().describe('For a template: what the app is about'),
      }),
      async (input) => {
        if ((input.repo_url === undefined) === (input.template === undefined)) {
          throw validationError([{ path: 'repo_url', message: 'give exactly one of repo_url and template' }]);
        }
        if (input.template !== undefined) {
          const prompt = input.prompt?.trim() || input.name || `A ${input.template} app`;
          return startBuild(
            deps,
            ctx,
            { generator: input.template, prompt, subdomain: input.subdomain },
            true,
          );
        }
        const body = CreateProjectRequest.parse({
          name: input.name ?? input.subdomain,
          subdomain: input.subdomain,
          repo_url: input.repo_url,
          ...(input.branch === undefined ? {} : { branch: input.branch }),
        });
        const created = await projects.create(accountId, body);
        await deps.runtime.deploy(accountId, created.id);
        return outcome(created.id, 0);
      },
    ),

    set_env_vars: agentTool(
      'set_env_vars',
      'Sets environment variables of a project (merged with the ones it has; unset removes names). Takes effect on the next deploy; redeploy: true deploys now.',
      z.object({
        project_id: ProjectId,
        env: z.record(z.string(), z.string()).optional().describe('Names and values to set'),
        unset: z.array(z.string()).optional().describe('Names to remove'),
        redeploy: z.boolean().optional(),
      }),
      async ({ project_id, env, unset, redeploy }) => {
        const project = await projects.get(accountId, project_id);
        const next: Record<string, string> = { ...project.env_vars, ...env };
        for (const name of unset ?? []) delete next[name];
        const parsed = EnvVars.safeParse(next);
        if (!parsed.success) throw parsed.error;
        const updated = await projects.setEnvVars(accountId, project.id, parsed.data);
        const result = { project_id: updated.id, env_var_names: Object.keys(updated.env_vars).sort() };
        if (!redeploy) return { ...result, note: 'takes effect on the next deploy' };
        const from = await logPosition(updated.id);
        const isAi = await builder.isAiProject(accountId, updated.id);
        if (isAi) await builder.deploy({ accountId }, { project_id: updated.id, env: {} });
        else await deps.runtime.deploy(accountId, updated.id);
        return { ...result, ...(await outcome(updated.id, from)) };
      },
    ),

    create_database: agentTool(
      'create_database',
      'Creates a PostgreSQL database for a project, sets its DATABASE_URL and redeploys it; returns the outcome. ' +
        'Also what an app built with needs_setup asking for a database needs (pass its other secrets in env).',
      z.object({
        project_id: ProjectId,
        env: z.record(z.string(), z.string()).optional().describe('Other env vars to set at the same time'),
      }),
      async ({ project_id, env }) => {
        const parsed = EnvVars.safeParse(env ?? {});
        if (!parsed.success) throw parsed.error;
        await projects.row(accountId, project_id);
        const from = await logPosition(project_id);
        const started = await builder.deploy(
          { accountId },
          { project_id, env: parsed.data, database: 'postgres' },
        );
        return {
          database: 'postgres',
          env_var_set: 'DATABASE_URL',
          ...(await outcome(started.project.id, from)),
        };
      },
    ),

    search_docs: agentTool(
      'search_docs',
      "Searches Wharf's documentation (README and the API contract) and returns the 3 best matching sections.",
      z.object({ query: z.string().min(1).max(500).describe('What to look for, in a few words') }),
      async ({ query }) => {
        const hits = docsIndex().search(query, { limit: 3 });
        if (hits.length === 0)
          return { results: [], note: 'nothing in the documentation matches these words' };
        return { results: hits.map(({ source, heading, text }) => ({ source, heading, text })) };
      },
    ),
  };
}

async function startBuild(
  deps: AgentToolDeps,
  ctx: AgentToolContext,
  req: { generator: Generator; prompt: string; subdomain: string },
  fromTemplate: boolean,
): Promise<Record<string, unknown>> {
  // A template build calls no model, whatever engine this chat uses.
  const started = await deps.builder.build(
    { accountId: ctx.accountId },
    { ...req, engine: fromTemplate ? undefined : ctx.engine.kind },
    { offline: fromTemplate },
  );
  if (started.status === 'needs_setup') {
    return {
      status: 'needs_setup',
      project_id: started.project.id,
      url: started.project.url,
      needs: started.needs,
      note: 'set the env vars (set_env_vars with redeploy: true) or create the database (create_database), then it deploys',
    };
  }
  return followDeploy(deps, ctx, started.project.id, 0);
}

/**
 * Streams a deploy's progress and waits for its outcome (bounded): the project's log lines written
 * after `afterSeq` as build_log events (a backlog first, so lines written before the tool subscribed
 * are not lost), build_status on each change; the final status, URL, error and last log lines as the
 * tool's output.
 */
async function followDeploy(
  deps: AgentToolDeps,
  ctx: AgentToolContext,
  projectId: string,
  afterSeq: number,
): Promise<Record<string, unknown>> {
  const { emit, signal, accountId } = ctx;
  const { builder } = deps;
  let lastStatus: ProjectStatus | null = null;
  const status = (next: ProjectStatus) => {
    if (next === lastStatus) return;
    lastStatus = next;
    emit({ event: 'build_status', data: { project_id: projectId, status: next } });
  };
  let lastSeq = afterSeq;
  const sendLines = (lines: SequencedLine[]) => {
    for (const l of lines) {
      if (l.seq <= lastSeq) continue;
      lastSeq = l.seq;
      emit({ event: 'build_log', data: { project_id: projectId, line: l.line } });
    }
  };
  let live = false;
  const pending: SequencedLine[] = [];
  const unfollow = deps.logs.follow(projectId, (lines) => {
    if (live) sendLines(lines);
    else pending.push(...lines);
  });
  // AI projects report status changes through their deploy loop (repairs included).
  const unwatch = (await builder.isAiProject(accountId, projectId))
    ? builder.watch(projectId, (event) => {
        if (event.type === 'status') status(event.status);
      })
    : () => undefined;
  const stopWatching = () => {
    unfollow();
    unwatch();
  };
  try {
    status((await deps.projects.get(accountId, projectId)).status);
    sendLines(await deps.logs.read(projectId, { limit: LIMITS.logLines }));
    sendLines(pending);
    live = true;
  } catch (error) {
    stopWatching();
    throw error;
  }

  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    const waited = await Promise.race([
      // Caught here: it may still reject (the project deleted) after a timeout or an abort won the race.
      builder.waitForOutcome(projectId).then(
        (s) => ({ kind: 'done' as const, status: s }),
        (error: unknown) => ({ kind: 'failed' as const, error }),
      ),
      new Promise<{ kind: 'timeout' }>((resolve) => {
        timer = setTimeout(() => resolve({ kind: 'timeout' }), deps.buildWaitMs);
      }),
      new Promise<{ kind: 'aborted' }>((resolve) => {
        onAbort = () => resolve({ kind: 'aborted' });
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
    if (waited.kind === 'aborted')
      throw new ApiError('unavailable', 'the run was stopped while the deploy went on');
    if (waited.kind === 'failed') throw waited.error;
    const project = await deps.projects.get(accountId, projectId);
    status(project.status);
    const tail = await deps.logs.read(projectId, { limit: OUTCOME_LOG_TAIL });
    return {
      project_id: projectId,
      status: project.status,
      url: project.url,
      ...(waited.kind === 'timeout'
        ? {
            note: `still ${project.status} after ${Math.round(deps.buildWaitMs / 1000)} s: check again with get_project`,
          }
        : {}),
      ...(project.last_deploy_error ? { last_deploy_error: project.last_deploy_error } : {}),
      log_tail: tail.map(formatLine),
    };
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
    stopWatching();
  }
}

async function accountStatus(deps: AgentToolDeps, ctx: AgentToolContext): Promise<unknown> {
  const row = await deps.db
    .selectFrom('accounts')
    .select(['email', 'email_verified', 'plan'])
    .where('id', '=', ctx.accountId)
    .executeTakeFirst();
  if (!row) throw new ApiError('not_found', 'the account was not found');
  const [balance, usage, projectCount] = await Promise.all([
    deps.ledger.balance(ctx.accountId),
    deps.ledger.usage(ctx.accountId, 200),
    deps.projects.list(ctx.accountId).then((list) => list.length),
  ]);
  const byKind = new Map<string, { entries: number; amount_usd: number }>();
  for (const entry of usage) {
    const total = byKind.get(entry.kind) ?? { entries: 0, amount_usd: 0 };
    total.entries += 1;
    total.amount_usd = Math.round((total.amount_usd + entry.amount_usd) * 1e6) / 1e6;
    byKind.set(entry.kind, total);
  }
  return {
    email: row.email,
    email_verified: row.email_verified === 1,
    plan: row.plan,
    balance,
    projects: projectCount,
    usage_by_kind: Object.fromEntries(byKind),
    recent_usage: usage
      .slice(0, 5)
      .map(({ at, kind, amount_usd, description }) => ({ at, kind, amount_usd, description })),
    ai_engine: { engine: ctx.engine.kind, provider: ctx.engine.provider, model: ctx.engine.modelId },
  };
}

function projectSummary(p: Project) {
  return {
    id: p.id,
    name: p.name,
    subdomain: p.subdomain,
    status: p.status,
    url: p.url,
    source: p.deploy_source,
    updated_at: p.updated_at,
  };
}

function projectDetail(p: Project) {
  const { env_vars, ...rest } = p;
  return { ...rest, env_var_names: Object.keys(env_vars).sort() };
}

function formatLine(l: { ts: string; stream: string; service: string | null; line: string }): string {
  const line = l.line.length > LOG_LINE_CHARS ? `${l.line.slice(0, LOG_LINE_CHARS)}…` : l.line;
  return `${l.ts} [${l.stream}${l.service ? `:${l.service}` : ''}] ${line}`;
}
