// `wharf deploy <project> [--follow]`: starts a deploy; with --follow it prints the deploy's log lines
// while it watches the project's status, and exits 0 once the project runs the new version, 1 when the
// deploy failed (also when a redeploy failed while the previous version keeps serving). `wharf rollback
// --follow` follows a rollback the same way (followDeploy).
import { setTimeout as wait } from 'node:timers/promises';
import { Command } from 'commander';
import type { PlatformClient } from '../core/api-client/platform-client.js';
import type { LogLine, Project } from '../shared/api/index.js';
import { type ConnectionOptions, withConnectionOptions, withPlatform } from './connect.js';
import { describe, resolveProject } from './find-project.js';
import { deployLine, table } from './format.js';
import { CommandExit, type Io } from './io.js';
import { abortOnSignals, streamLogs } from './log-stream.js';
import { MAX_LINES } from './logs.js';

const POLL_MS = 500;
/** After the outcome, lines still on their way are waited for until none came for this long… */
const DRAIN_QUIET_MS = 300;
/** …but no longer than this. */
const DRAIN_MAX_MS = 3_000;

interface DeployOptions extends ConnectionOptions {
  follow?: boolean;
}

/** Where the progress line goes: stderr, and only when it is a terminal. */
export interface Terminal {
  readonly isTTY: boolean;
  write(text: string): void;
}

export const stderrTerminal: Terminal = {
  get isTTY() {
    return process.stderr.isTTY === true;
  },
  write: (text) => void process.stderr.write(text),
};

export type Phase = 'cloning' | 'unpacking' | 'pulling' | 'installing' | 'building' | 'starting';

const INSTALL_COMMAND = /\b(install|ci|sync|restore|bundle)\b|^(pip|pip3|uv|poetry|yarn|pnpm|npm|bun)$/;

export function initialPhase(project: Project): Phase {
  return project.deploy_source === 'git'
    ? 'cloning'
    : project.deploy_source === 'image'
      ? 'pulling'
      : 'unpacking';
}

/**
 * The deploy's phase after this line. The API has no phase field, so it is read from the lines the
 * platform's runtime writes (`cloning …`, `$ <command>`, `pulling …`, `starting …`); an unknown line
 * keeps the phase as it was, so a change of wording only makes the progress line less precise.
 */
export function phaseAfter(line: LogLine, current: Phase): Phase {
  if (line.stream === 'build') {
    if (line.line.startsWith('cloning ')) return 'cloning';
    if (line.line.startsWith('pulling ')) return 'pulling';
    const command = /^\$ (.+)$/.exec(line.line);
    if (command) return INSTALL_COMMAND.test(command[1]!.trim()) ? 'installing' : 'building';
  }
  if (line.stream === 'system' && line.line.startsWith('starting ')) return 'starting';
  return current;
}

/** One line on a terminal, rewritten in place: `Deploying demo: installing (12 s)`. */
export class Progress {
  private shown = false;
  private timer: NodeJS.Timeout | null = null;
  /** What the line says is happening: `Deploying`, or `Rolling back` for a rollback. */
  verb = 'Deploying';

  constructor(
    private readonly terminal: Terminal,
    private readonly name: string,
    public phase: Phase,
    private readonly started: number = Date.now(),
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    if (!this.terminal.isTTY) return;
    this.render();
    this.timer = setInterval(() => this.render(), 1_000);
    this.timer.unref();
  }

  text(): string {
    return `${this.verb} ${this.name}: ${this.phase} (${Math.floor((this.now() - this.started) / 1000)} s)`;
  }

  render(): void {
    if (!this.terminal.isTTY) return;
    this.terminal.write(`\r\x1b[2K${this.text()}`);
    this.shown = true;
  }

  /** Takes the line off the terminal, e.g. before a log line is printed. */
  clear(): void {
    if (!this.shown) return;
    this.terminal.write('\r\x1b[2K');
    this.shown = false;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.clear();
  }
}

export type Outcome = { done: false } | { done: true; ok: true } | { done: true; ok: false; reason: string };

/** Whether the deploy is over, judged from the project as the platform shows it now. */
export function outcomeOf(project: Project): Outcome {
  if (project.status === 'building') return { done: false };
  // A failed redeploy leaves the previous version running: the error is what tells.
  if (project.last_deploy_error !== null) return { done: true, ok: false, reason: project.last_deploy_error };
  if (project.status === 'running') return { done: true, ok: true };
  if (project.status === 'stopped')
    return { done: true, ok: false, reason: 'the project was stopped during the deploy' };
  return { done: true, ok: false, reason: `the project is ${project.status} (the platform gave no reason)` };
}

/** Waits `ms`, or less when `signal` aborts; leaves no listener on the signal either way. */
const sleep = (ms: number, signal: AbortSignal) => wait(ms, undefined, { signal }).catch(() => undefined);

/** Polls the project list (cheap: 304 while nothing changed) until the deploy is over; null if aborted. */
async function waitForOutcome(
  client: PlatformClient,
  projectId: string,
  noun: string,
  signal: AbortSignal,
): Promise<{ project: Project; outcome: Outcome & { done: true } } | null> {
  let etag: string | null = null;
  let project: Project | null = null;
  while (!signal.aborted) {
    const list = await client.listProjects(etag);
    if (!list.notModified) {
      etag = list.etag;
      project = list.projects.find((p) => p.id === projectId) ?? null;
      if (!project) throw new Error(`the project was deleted during the ${noun}`);
      const outcome = outcomeOf(project);
      if (outcome.done) return { project, outcome };
    }
    await sleep(POLL_MS, signal);
  }
  return null;
}

export function urlLines(project: Project): string[] {
  const lines = [`${project.name} is running at ${project.url}`];
  const services = Object.entries(project.service_urls);
  if (services.length > 0) lines.push(...table(services.map(([name, url]) => [`  ${name}`, url])));
  return lines;
}

/** What --follow watches: a deploy, or a rollback (no build: a kept release only starts again). */
export interface FollowedWork {
  /** How messages name it: `deploy`, `rollback`. */
  noun: string;
  /** The progress line's verb: `Deploying`, `Rolling back`. */
  verb: string;
  /** The phase it begins in. */
  phase: Phase;
}

export function deployWork(project: Project): FollowedWork {
  return { noun: 'deploy', verb: 'Deploying', phase: initialPhase(project) };
}

/**
 * Prints the log lines of the deploy (or rollback) `started` began while it waits for the outcome;
 * returns once the project runs it, throws when it failed, exits 130 on Ctrl+C (the work goes on).
 */
export async function followDeploy(
  client: PlatformClient,
  project: Project,
  started: Project,
  startedAt: number,
  io: Io,
  terminal: Terminal,
  work: FollowedWork = deployWork(project),
): Promise<void> {
  const since = new Date(
    (started.last_deploy_at ? Date.parse(started.last_deploy_at) : startedAt) - 1,
  ).toISOString();
  const progress = new Progress(terminal, project.name, work.phase, startedAt);
  progress.verb = work.verb;
  const controller = new AbortController();
  const release = abortOnSignals(controller);
  const logs = new AbortController();
  let lastLineAt = 0;
  const streaming = streamLogs(
    client,
    project.id,
    { since, limit: MAX_LINES },
    AbortSignal.any([controller.signal, logs.signal]),
    (line) => {
      lastLineAt = Date.now();
      progress.phase = phaseAfter(line, progress.phase);
      progress.clear();
      io.out(deployLine(line));
      progress.render();
    },
  ).then(
    () => undefined,
    (error: unknown) => {
      progress.clear();
      io.err(`wharf: ${(error as Error).message}; still waiting for the ${work.noun} to finish`);
      progress.render();
    },
  );

  progress.start();
  let result;
  try {
    result = await waitForOutcome(client, project.id, work.noun, controller.signal);
    if (result) {
      // The last lines (`running at …`, the failing command's output) may still be on their way.
      const over = Date.now();
      lastLineAt = Math.max(lastLineAt, over);
      while (
        !controller.signal.aborted &&
        Date.now() - lastLineAt < DRAIN_QUIET_MS &&
        Date.now() - over < DRAIN_MAX_MS
      ) {
        await sleep(50, controller.signal);
      }
    }
  } finally {
    logs.abort();
    await streaming;
    progress.stop();
    release();
  }

  if (!result) {
    io.err(`Stopped following; the ${work.noun} goes on (wharf logs ${project.subdomain} -f to follow it).`);
    throw new CommandExit(130);
  }
  if (!result.outcome.ok)
    throw new Error(`the ${work.noun} of ${describe(project)} failed: ${result.outcome.reason}`);
  for (const line of urlLines(result.project)) io.out(line);
}

export function deployCommand(io: Io, terminal: Terminal = stderrTerminal): Command {
  return withConnectionOptions(
    new Command('deploy')
      .description('deploy a project: build it from its source and run it')
      .argument('<project>', 'the project: its subdomain, name or id')
      .option(
        '-f, --follow',
        'print the build log and wait for the outcome (default when stdout is a terminal)',
      )
      .option('--no-follow', 'only start the deploy'),
  ).action(async (query: string, options: DeployOptions) => {
    const follow = options.follow ?? process.stdout.isTTY === true;
    await withPlatform(options, async ({ client }) => {
      const project = await resolveProject(client, query);
      const startedAt = Date.now();
      const deployed = await client.deploy(project.id);
      if (!follow) {
        io.out(`Deploying ${project.name}… (wharf logs ${project.subdomain} -f to follow)`);
        return;
      }
      await followDeploy(client, project, deployed, startedAt, io, terminal);
    });
  });
}
