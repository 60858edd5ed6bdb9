// The agent conversation as plain data, and how each `ai-agent` event changes it. A turn of the
// assistant is a list of items in the order they arrived: streamed text (tokens appended to the text
// item they continue), tool steps (running until their `step_done`, with the build logs and statuses of
// what they built), notes and errors. `done` fills in what the stream left out (a reply sent without
// tokens, a step whose end was missed). Pure functions, so the store stays small and this is tested alone.
import type { AgentStep, AiEngine } from '../../../../shared/api/ai.js';
import type { ProjectStatus } from '../../../../shared/api/projects.js';
import type { AiAgentEvent } from '../../../../shared/bridge.js';

/** The build lines kept per project of a step (the newest). */
export const BUILD_LINES_KEPT = 400;

export interface StepBuild {
  projectId: string;
  status: ProjectStatus | null;
  lines: string[];
  /** Lines dropped from the start to keep BUILD_LINES_KEPT. */
  dropped: number;
}

export interface StepView {
  id: string;
  tool: string;
  input: unknown;
  output: unknown;
  status: 'running' | 'ok' | 'error';
  durationMs: number | null;
  /** What the step built, by project, in the order the projects first appeared. */
  builds: StepBuild[];
}

export type TurnItem =
  | { kind: 'text'; text: string }
  | { kind: 'step'; step: StepView }
  | { kind: 'note'; text: string }
  | { kind: 'error'; code: string; detail: string; status?: number };

export type RunState = 'starting' | 'streaming' | 'done' | 'stopped' | 'failed';

export interface UserTurn {
  role: 'user';
  id: string;
  content: string;
}

export interface AssistantTurn {
  role: 'assistant';
  /** The run's id. */
  id: string;
  state: RunState;
  items: TurnItem[];
  /** The final reply (`done`), else null. */
  reply: string | null;
  usage: { engine: AiEngine; cost_usd: number } | null;
}

export type Turn = UserTurn | AssistantTurn;

export function startTurn(runId: string): AssistantTurn {
  return { role: 'assistant', id: runId, state: 'starting', items: [], reply: null, usage: null };
}

export function isRunning(turn: AssistantTurn): boolean {
  return turn.state === 'starting' || turn.state === 'streaming';
}

/** The text the assistant has streamed so far, all text items joined. */
export function streamedText(turn: AssistantTurn): string {
  return turn.items.map((item) => (item.kind === 'text' ? item.text : '')).join('');
}

/** Applies one event of the turn's run; events of other runs leave it as it is. */
export function applyAgentEvent(turn: AssistantTurn, event: AiAgentEvent): AssistantTurn {
  if (event.runId !== turn.id) return turn;
  const live: AssistantTurn = turn.state === 'starting' ? { ...turn, state: 'streaming' } : turn;
  switch (event.event) {
    case 'token': {
      if (event.data.text === '') return live;
      const last = live.items[live.items.length - 1];
      if (last?.kind === 'text')
        return {
          ...live,
          items: [...live.items.slice(0, -1), { kind: 'text', text: last.text + event.data.text }],
        };
      return { ...live, items: [...live.items, { kind: 'text', text: event.data.text }] };
    }
    case 'step': {
      if (findStep(live, event.data.id)) return live;
      const step: StepView = {
        id: event.data.id,
        tool: event.data.tool,
        input: event.data.input,
        output: undefined,
        status: 'running',
        durationMs: null,
        builds: [],
      };
      return { ...live, items: [...live.items, { kind: 'step', step }] };
    }
    case 'step_done': {
      const { id, tool, status, output, duration_ms: durationMs } = event.data;
      if (!findStep(live, id)) {
        // Its start was missed: the step still shows, finished.
        const step: StepView = { id, tool, input: undefined, output, status, durationMs, builds: [] };
        return { ...live, items: [...live.items, { kind: 'step', step }] };
      }
      return updateStep(live, id, (step) => ({ ...step, status, output, durationMs }));
    }
    case 'note':
      return { ...live, items: [...live.items, { kind: 'note', text: event.data.text }] };
    case 'build_log':
    case 'build_status': {
      const target = buildingStep(live);
      if (!target) {
        // Nothing runs that could have built it: shown as a note, so no line is lost.
        const text =
          event.event === 'build_log'
            ? `${event.data.project_id}: ${event.data.line}`
            : `${event.data.project_id} is ${event.data.status}`;
        return { ...live, items: [...live.items, { kind: 'note', text }] };
      }
      return updateStep(live, target.id, (step) => ({
        ...step,
        builds: updateBuild(step.builds, event.data.project_id, (build) =>
          event.event === 'build_log'
            ? appendLine(build, event.data.line)
            : { ...build, status: event.data.status },
        ),
      }));
    }
    case 'error':
      return {
        ...live,
        items: [...live.items, { kind: 'error', code: event.data.code, detail: event.data.detail }],
      };
    case 'done': {
      let next: AssistantTurn = { ...live, state: 'done', reply: event.data.reply, usage: event.data.usage };
      for (const step of event.data.steps) next = settleStep(next, step);
      if (streamedText(next).trim() === '' && event.data.reply.trim() !== '')
        next = { ...next, items: [...next.items, { kind: 'text', text: event.data.reply }] };
      return next;
    }
    case 'closed': {
      const state: RunState =
        event.data.reason === 'stopped' ? 'stopped' : event.data.reason === 'failed' ? 'failed' : 'done';
      // A run that ended keeps no spinner: steps still running were cut short.
      const items = live.items.map((item) =>
        item.kind === 'step' && item.step.status === 'running' && state !== 'done'
          ? {
              ...item,
              step: {
                ...item.step,
                status: 'error' as const,
                output: item.step.output ?? stoppedOutput(state),
              },
            }
          : item,
      );
      return { ...live, state: live.state === 'done' ? 'done' : state, items };
    }
  }
}

/** A turn whose start was refused (402, 429, 503…): failed, with why. */
export function refusedTurn(
  turn: AssistantTurn,
  error: { code: string; detail: string; status: number },
): AssistantTurn {
  return {
    ...turn,
    state: 'failed',
    items: [...turn.items, { kind: 'error', code: error.code, detail: error.detail, status: error.status }],
  };
}

/** The messages to send for the next question: the user's, and each reply the assistant finished. */
export function historyOf(turns: readonly Turn[]): Array<{ role: 'user' | 'assistant'; content: string }> {
  const messages: Array<{ role: 'user' | 'assistant'; content: string }> = [];
  for (const turn of turns) {
    if (turn.role === 'user') messages.push({ role: 'user', content: turn.content });
    else {
      const text = (turn.reply ?? streamedText(turn)).trim();
      if (text) messages.push({ role: 'assistant', content: text });
    }
  }
  return messages;
}

function stoppedOutput(state: RunState): string {
  return state === 'stopped' ? 'stopped before it finished' : 'the run ended before this step finished';
}

function findStep(turn: AssistantTurn, id: string): StepView | null {
  for (const item of turn.items) if (item.kind === 'step' && item.step.id === id) return item.step;
  return null;
}

function updateStep(turn: AssistantTurn, id: string, change: (step: StepView) => StepView): AssistantTurn {
  return {
    ...turn,
    items: turn.items.map((item) =>
      item.kind === 'step' && item.step.id === id ? { ...item, step: change(item.step) } : item,
    ),
  };
}

/** The step build events belong to: the latest one still running, else the latest step. */
function buildingStep(turn: AssistantTurn): StepView | null {
  let latest: StepView | null = null;
  for (let i = turn.items.length - 1; i >= 0; i--) {
    const item = turn.items[i]!;
    if (item.kind !== 'step') continue;
    if (item.step.status === 'running') return item.step;
    latest ??= item.step;
  }
  return latest;
}

function settleStep(turn: AssistantTurn, step: AgentStep): AssistantTurn {
  const seen = findStep(turn, step.id);
  if (!seen) {
    const view: StepView = {
      id: step.id,
      tool: step.tool,
      input: step.input,
      output: step.output,
      status: step.status,
      durationMs: step.duration_ms,
      builds: [],
    };
    return { ...turn, items: [...turn.items, { kind: 'step', step: view }] };
  }
  if (seen.status !== 'running') return turn;
  return updateStep(turn, step.id, (view) => ({
    ...view,
    input: view.input ?? step.input,
    output: step.output,
    status: step.status,
    durationMs: step.duration_ms,
  }));
}

function updateBuild(
  builds: StepBuild[],
  projectId: string,
  change: (build: StepBuild) => StepBuild,
): StepBuild[] {
  const index = builds.findIndex((build) => build.projectId === projectId);
  if (index === -1) return [...builds, change({ projectId, status: null, lines: [], dropped: 0 })];
  return builds.map((build, i) => (i === index ? change(build) : build));
}

function appendLine(build: StepBuild, line: string): StepBuild {
  const lines = [...build.lines, line];
  const over = lines.length - BUILD_LINES_KEPT;
  return over > 0
    ? { ...build, lines: lines.slice(over), dropped: build.dropped + over }
    : { ...build, lines };
}
