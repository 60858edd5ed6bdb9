// The deploy loop of AI projects: deploy through the runtime, wait for the outcome, and on a failure
// repair the app and try again. Deterministic fixes come first (a missing dependency or start script,
// an app not listening on $PORT, a Dockerfile FROM an image the engine cannot pull…); otherwise the
// last log lines go to the model (for a failed image build, from the failing step's first line on).
// Each repair is a commit in the project's repository, at most 3 attempts in all, and the loop stops
// early when an attempt fails with the same error as the one before (a fix that did not help will not
// help twice). What it does is written to the project's log, where users and the agent read it.
//
// Listeners (the agent's stream) get the project's log lines and status changes while a loop runs;
// waitForOutcome resolves once the loop, or the one that replaced it, has ended.
import type { LogLine, ProjectStatus } from '../../shared/api/projects.js';
import type { PlatformConfig } from '../config.js';
import { ApiError } from '../errors.js';
import { newId } from '../ids.js';
import type { LogStore } from '../projects/logs.js';
import type { ProjectService } from '../projects/projects.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Store } from '../store/open.js';
import type { AiEngines, ResolvedEngine, TokenUsage } from './engines.js';
import { IMAGE_BUILD_FAILED, buildStepOf, deterministicFixes, repairApp } from './generators/index.js';
import type { AiRepo } from './git.js';

/** Deploys in one loop, the first included: the generated (or edited) app and two repairs. */
export const MAX_ATTEMPTS = 3;
/** Log lines of a failed attempt handed to the fixes and the model. */
export const LOG_TAIL_LINES = 60;
/**
 * A failed image build's tail reaches back to the failing step's `Step N/M : RUN …` line, so the
 * command is shown with all it printed, up to this many lines.
 */
export const IMAGE_BUILD_TAIL_LINES = 200;
const POLL_MS = 150;
const CLOSE_WAIT_MS = 5_000;

export type BuildEvent = { type: 'log'; line: string } | { type: 'status'; status: ProjectStatus };
export type BuildListener = (event: BuildEvent) => void;

export interface DeployJob {
  accountId: string;
  projectId: string;
  /** The engine repairs may use; null: deterministic fixes only. */
  engine: ResolvedEngine | null;
  /** The AI project's repository; null for another project (deployed and watched, never repaired). */
  repo: AiRepo | null;
}

export interface DeployLoopsDeps {
  db: Store;
  config: PlatformConfig;
  projects: ProjectService;
  runtime: Runtime;
  logs: LogStore;
  engines: AiEngines;
}

class Loop {
  cancelled = false;
  done!: Promise<ProjectStatus>;
  constructor(readonly job: DeployJob) {}
}

class Cancelled extends Error {}

interface Outcome {
  status: ProjectStatus;
  /** Null when the deploy succeeded. */
  error: string | null;
}

export class DeployLoops {
  private readonly loops = new Map<string, Loop>();
  private readonly listeners = new Map<string, Set<BuildListener>>();
  private closed = false;

  constructor(private readonly deps: DeployLoopsDeps) {}

  /**
   * Starts the loop for a project (ending the one running for it, if any): the first deploy is started
   * before this resolves, so the project it returns is `building`; the rest goes on in the background.
   */
  async start(job: DeployJob) {
    if (this.closed) throw new ApiError('unavailable', 'the platform is shutting down');
    this.cancel(job.projectId);
    const loop = new Loop(job);
    this.loops.set(job.projectId, loop);
    let project;
    let since: number;
    try {
      since = await this.lastSeq(job.projectId);
      project = await this.deployOnce(loop);
    } catch (error) {
      this.loops.delete(job.projectId);
      throw error;
    }
    loop.done = this.run(loop, since).finally(() => {
      if (this.loops.get(job.projectId) === loop) this.loops.delete(job.projectId);
    });
    return project;
  }

  /** Ends the project's loop, if one runs (the runtime's deploy in progress goes on). */
  cancel(projectId: string): void {
    const running = this.loops.get(projectId);
    if (running) running.cancelled = true;
    this.loops.delete(projectId);
  }

  watch(projectId: string, listener: BuildListener): () => void {
    let set = this.listeners.get(projectId);
    if (!set) this.listeners.set(projectId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(projectId) === set) this.listeners.delete(projectId);
    };
  }

  /**
   * The project's status once its loop (or the one that replaced it) has ended; with no loop, once a
   * deploy in progress has settled.
   */
  async waitForOutcome(projectId: string): Promise<ProjectStatus> {
    for (;;) {
      const loop = this.loops.get(projectId);
      if (loop) {
        await loop.done;
        continue;
      }
      const row = await this.row(projectId);
      if (!row) throw new ApiError('not_found', `project ${projectId} was not found`);
      if (row.status !== 'building' || this.closed) return row.status as ProjectStatus;
      await sleep(POLL_MS);
    }
  }

  /** Platform shutdown: loops stop at their next step (waiting a little for them). */
  async close(): Promise<void> {
    this.closed = true;
    const running = [...this.loops.values()];
    for (const loop of running) loop.cancelled = true;
    this.loops.clear();
    await Promise.race([Promise.all(running.map((l) => l.done)), sleep(CLOSE_WAIT_MS)]);
  }

  private emit(projectId: string, event: BuildEvent): void {
    for (const listener of this.listeners.get(projectId) ?? []) {
      try {
        listener(event);
      } catch {
        // a listener's failure is its own
      }
    }
  }

  /** A line of ours in the project's log (its followers, and so our listeners, see it too). */
  private async note(projectId: string, line: string): Promise<void> {
    await this.deps.logs
      .append(projectId, [{ stream: 'system', service: null, line }])
      .catch(() => undefined);
  }

  private async deployOnce(loop: Loop) {
    const { accountId, projectId } = loop.job;
    const project = await this.deps.runtime.deploy(accountId, projectId);
    this.emit(projectId, { type: 'status', status: 'building' });
    return project;
  }

  private async run(loop: Loop, firstSince: number): Promise<ProjectStatus> {
    const { projectId, repo } = loop.job;
    const unfollow = this.deps.logs.follow(projectId, (lines) => {
      if (!loop.cancelled) for (const l of lines) this.emit(projectId, { type: 'log', line: l.line });
    });
    let status: ProjectStatus = 'building';
    try {
      let since = firstSince;
      let previous: string | null = null;
      for (let attempt = 1; ; attempt += 1) {
        if (attempt > 1) {
          since = await this.lastSeq(projectId);
          await this.deployOnce(loop);
        }
        const outcome = await this.outcome(loop);
        status = outcome.status;
        this.emit(projectId, { type: 'status', status });
        if (outcome.error === null || status === 'stopped' || !repo) return status;
        const tail = await this.tail(projectId, since, outcome.error);
        const signature = errorSignature(outcome.error, tail);
        if (signature === previous) {
          await this.note(
            projectId,
            `Repair stopped: attempt ${attempt} failed with the same error as attempt ${attempt - 1} (${outcome.error})`,
          );
          return status;
        }
        if (attempt >= MAX_ATTEMPTS) {
          await this.note(projectId, `Repair stopped after ${MAX_ATTEMPTS} attempts: ${outcome.error}`);
          return status;
        }
        previous = signature;
        const lines = tail.map((l) => l.line);
        if (!(await this.repair(loop, repo, attempt + 1, lines))) return status;
      }
    } catch (error) {
      if (error instanceof Cancelled || loop.cancelled) return status;
      // The project was deleted, or the store closed under us: nothing left to report to. Nobody may
      // be waiting on this loop, so it must not reject.
      try {
        await this.note(projectId, `Repair stopped: ${(error as Error).message}`);
        return ((await this.row(projectId))?.status as ProjectStatus | undefined) ?? status;
      } catch {
        return status;
      }
    } finally {
      unfollow();
    }
  }

  /**
   * Commits a fix for the failed attempt; false when there is none (the reason is in the log). Holds
   * the repository while it reads, asks and writes, so an edit cannot slip in between.
   */
  private async repair(loop: Loop, repo: AiRepo, attempt: number, tail: string[]): Promise<boolean> {
    const { accountId, projectId, engine } = loop.job;
    try {
      return await repo.exclusive(async () => {
        this.check(loop);
        const files = await repo.readHead();
        let next: Record<string, string>;
        let description: string;
        const { images } = this.deps.config;
        const fixed = deterministicFixes(files, tail, images);
        if (fixed && fixed.fixes.length > 0) {
          next = fixed.files;
          description = fixed.fixes.join('; ');
        } else if (engine) {
          await this.note(
            projectId,
            `Repair attempt ${attempt}: asking the model (${engine.modelId}) to fix the app`,
          );
          await this.deps.engines.admit(accountId, engine);
          const repaired = await repairApp({
            files,
            logTail: tail,
            model: engine,
            images,
            onUsage: (usage) => this.meter(loop, usage, `AI repair of ${projectId}`),
          });
          next = repaired.files;
          description = `the model changed ${repaired.changed.join(', ') || 'nothing'}`;
        } else {
          await this.note(
            projectId,
            'Repair stopped: no automatic fix matches this error, and no AI engine is configured to look further',
          );
          return false;
        }
        this.check(loop);
        const commit = await repo.commitFiles(
          next,
          `Repair attempt ${attempt}: ${oneLine(description, 200)}`,
        );
        if (!commit) {
          await this.note(projectId, `Repair stopped: the fix for attempt ${attempt} changed nothing`);
          return false;
        }
        await this.note(projectId, `Repair attempt ${attempt}: ${description}`);
        return true;
      });
    } catch (error) {
      if (error instanceof Cancelled || loop.cancelled) throw new Cancelled();
      await this.note(projectId, `Repair stopped: ${(error as Error).message}`);
      return false;
    }
  }

  private async meter(loop: Loop, usage: TokenUsage, description: string): Promise<void> {
    const { accountId, engine } = loop.job;
    if (!engine) return;
    await this.deps.engines.meter(accountId, engine, usage, description, `ai-usage:${newId('use')}`);
  }

  /** Polls the project until its deploy settles: failed, or running with no new error. */
  private async outcome(loop: Loop): Promise<Outcome> {
    for (;;) {
      this.check(loop);
      const row = await this.row(loop.job.projectId);
      if (!row) throw new Error(`project ${loop.job.projectId} was deleted`);
      const status = row.status as ProjectStatus;
      if (status === 'running') return { status, error: row.last_deploy_error };
      if (status === 'failed') return { status, error: row.last_deploy_error ?? 'the deploy failed' };
      if (status === 'stopped' || status === 'created') return { status, error: 'the project was stopped' };
      await sleep(POLL_MS);
    }
  }

  private check(loop: Loop): void {
    if (loop.cancelled) throw new Cancelled();
  }

  private row(projectId: string) {
    return this.deps.db
      .selectFrom('projects')
      .select(['status', 'last_deploy_error'])
      .where('id', '=', projectId)
      .executeTakeFirst();
  }

  private async lastSeq(projectId: string): Promise<number> {
    const [last] = await this.deps.logs.read(projectId, { limit: 1 });
    return last?.seq ?? 0;
  }

  /** The attempt's last log lines (those after `since`); see IMAGE_BUILD_TAIL_LINES. */
  private async tail(projectId: string, since: number, error: string): Promise<LogLine[]> {
    const imageBuild = error.startsWith(IMAGE_BUILD_FAILED);
    const limit = imageBuild ? IMAGE_BUILD_TAIL_LINES : LOG_TAIL_LINES;
    const lines = (await this.deps.logs.read(projectId, { limit })).filter((l) => l.seq > since);
    if (!imageBuild) return lines;
    const step = lines.findLastIndex((l) => l.stream === 'build' && buildStepOf(l.line) !== null);
    const from = step === -1 ? lines.length - LOG_TAIL_LINES : Math.min(step, lines.length - LOG_TAIL_LINES);
    return lines.slice(Math.max(0, from));
  }
}

/**
 * What identifies an error across attempts: the deploy error and the app's own telling of it (its last
 * line that reads like an error), without the numbers, ids and paths that change from one attempt to
 * the next.
 */
export function errorSignature(error: string, tail: LogLine[]): string {
  const own = tail.filter((l) => l.stream !== 'system' && l.line.trim() !== '').map((l) => l.line);
  const appLine =
    own.findLast((l) => /error|exception|cannot|can't|not found|failed|refused|denied|missing/i.test(l)) ??
    own.at(-1) ??
    '';
  const normalize = (text: string) =>
    text
      .toLowerCase()
      .replace(/\b[a-z]{3}_[0-9a-z]{16,}\b/g, '<id>')
      .replace(/(\/[\w.@-]+)+\/?/g, '<path>')
      .replace(/\d+(\.\d+)*/g, '#')
      .replace(/\s+/g, ' ')
      .trim();
  return `${normalize(error)} | ${normalize(appLine)}`;
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
