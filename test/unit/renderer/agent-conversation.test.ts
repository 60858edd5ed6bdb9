// The Agent screen's pure logic: folding a run's `ai-agent` events into its turn (streamed text,
// live steps with their build logs, notes, errors, `done` and `closed`), refusals, and the history
// sent with the next question.
import { describe, expect, it } from 'vitest';
import type { AgentStep } from '../../../src/shared/api/ai.js';
import type { AiAgentEvent } from '../../../src/shared/bridge.js';
import {
  BUILD_LINES_KEPT,
  applyAgentEvent,
  historyOf,
  isRunning,
  refusedTurn,
  startTurn,
  streamedText,
  type AssistantTurn,
  type StepView,
  type Turn,
} from '../../../src/renderer/src/stores/agent/conversation.js';

const RUN = 'run_0123456789abcdef';
const STEP = 'stp_aaaaaaaaaaaa';
const OTHER_STEP = 'stp_bbbbbbbbbbbb';
const PROJECT = 'prj_cccccccccccc';

/** An event without its run id (Omit over each member of the union). */
type RunEvent = AiAgentEvent extends infer E ? (E extends unknown ? Omit<E, 'runId'> : never) : never;

const run = (events: RunEvent[], turn: AssistantTurn = startTurn(RUN)): AssistantTurn =>
  events.reduce((current, event) => applyAgentEvent(current, { ...event, runId: RUN } as AiAgentEvent), turn);

const steps = (turn: AssistantTurn): StepView[] =>
  turn.items.flatMap((item) => (item.kind === 'step' ? [item.step] : []));

const done = (reply: string, extra: Partial<{ steps: AgentStep[] }> = {}) =>
  ({
    event: 'done',
    data: { reply, steps: extra.steps ?? [], usage: { engine: 'included', cost_usd: 0.002 } },
  }) as const;

describe('applyAgentEvent', () => {
  it('starts streaming at the first event and appends tokens to the text they continue', () => {
    const turn = run([
      { event: 'token', data: { text: 'You have ' } },
      { event: 'token', data: { text: 'two projects.' } },
    ]);
    expect(turn.state).toBe('streaming');
    expect(turn.items).toEqual([{ kind: 'text', text: 'You have two projects.' }]);
  });

  it('ignores the events of other runs', () => {
    const turn = startTurn(RUN);
    const after = applyAgentEvent(turn, { runId: 'run_other000000', event: 'token', data: { text: 'x' } });
    expect(after).toBe(turn);
  });

  it('shows a step running at once, then its status, result and duration at step_done', () => {
    let turn = run([
      { event: 'token', data: { text: 'Let me look.' } },
      { event: 'step', data: { id: STEP, tool: 'list_projects', input: {} } },
    ]);
    expect(steps(turn)).toEqual([
      {
        id: STEP,
        tool: 'list_projects',
        input: {},
        output: undefined,
        status: 'running',
        durationMs: null,
        builds: [],
      },
    ]);
    turn = run(
      [
        {
          event: 'step_done',
          data: {
            id: STEP,
            tool: 'list_projects',
            status: 'ok',
            output: [{ name: 'shop' }],
            duration_ms: 12,
          },
        },
        { event: 'token', data: { text: 'You have one.' } },
      ],
      turn,
    );
    expect(steps(turn)[0]).toMatchObject({ status: 'ok', output: [{ name: 'shop' }], durationMs: 12 });
    // Text after a step is a new text item, so it shows under the step.
    expect(turn.items.map((item) => item.kind)).toEqual(['text', 'step', 'text']);
    expect(streamedText(turn)).toBe('Let me look.You have one.');
  });

  it('still shows a step whose start was missed, finished', () => {
    const turn = run([
      {
        event: 'step_done',
        data: { id: STEP, tool: 'get_logs', status: 'error', output: 'no such project', duration_ms: 3 },
      },
    ]);
    expect(steps(turn)[0]).toMatchObject({ id: STEP, tool: 'get_logs', status: 'error', input: undefined });
  });

  it('puts build logs and statuses under the step that is running, per project', () => {
    const turn = run([
      { event: 'step', data: { id: STEP, tool: 'list_projects', input: {} } },
      {
        event: 'step_done',
        data: { id: STEP, tool: 'list_projects', status: 'ok', output: [], duration_ms: 1 },
      },
      { event: 'step', data: { id: OTHER_STEP, tool: 'build_app', input: { generator: 'landing' } } },
      { event: 'build_status', data: { project_id: PROJECT, status: 'building' } },
      { event: 'build_log', data: { project_id: PROJECT, line: 'npm install' } },
      { event: 'build_log', data: { project_id: PROJECT, line: 'listening on 4000' } },
      { event: 'build_status', data: { project_id: PROJECT, status: 'running' } },
    ]);
    const [listed, built] = steps(turn);
    expect(listed!.builds).toEqual([]);
    expect(built!.builds).toEqual([
      { projectId: PROJECT, status: 'running', lines: ['npm install', 'listening on 4000'], dropped: 0 },
    ]);
  });

  it('keeps the newest build lines and counts the dropped ones', () => {
    const lines = Array.from({ length: BUILD_LINES_KEPT + 5 }, (_, i) => ({
      event: 'build_log' as const,
      data: { project_id: PROJECT, line: `line ${i}` },
    }));
    const turn = run([{ event: 'step', data: { id: STEP, tool: 'build_app', input: {} } }, ...lines]);
    const build = steps(turn)[0]!.builds[0]!;
    expect(build.lines).toHaveLength(BUILD_LINES_KEPT);
    expect(build.lines[0]).toBe('line 5');
    expect(build.dropped).toBe(5);
  });

  it('shows build events with no step as notes, so no line is lost', () => {
    const turn = run([{ event: 'build_log', data: { project_id: PROJECT, line: 'hello' } }]);
    expect(turn.items).toEqual([{ kind: 'note', text: `${PROJECT}: hello` }]);
  });

  it('keeps notes and errors in the order they came', () => {
    const turn = run([
      { event: 'note', data: { text: 'step limit reached' } },
      { event: 'error', data: { code: 'rate_limited', detail: 'try again in 20 s' } },
    ]);
    expect(turn.items).toEqual([
      { kind: 'note', text: 'step limit reached' },
      { kind: 'error', code: 'rate_limited', detail: 'try again in 20 s' },
    ]);
  });

  it('ends at done with the reply and usage, adding the reply when no token carried it', () => {
    const turn = run([done('All good.')]);
    expect(turn.state).toBe('done');
    expect(turn.reply).toBe('All good.');
    expect(turn.usage).toEqual({ engine: 'included', cost_usd: 0.002 });
    expect(turn.items).toEqual([{ kind: 'text', text: 'All good.' }]);
    expect(isRunning(turn)).toBe(false);
  });

  it('does not repeat a reply that was streamed', () => {
    const turn = run([{ event: 'token', data: { text: 'All good.' } }, done('All good.')]);
    expect(turn.items).toEqual([{ kind: 'text', text: 'All good.' }]);
  });

  it('settles steps left running from the steps of done', () => {
    const turn = run([
      { event: 'step', data: { id: STEP, tool: 'list_projects', input: {} } },
      done('ok', {
        steps: [
          { id: STEP, tool: 'list_projects', input: {}, output: [], status: 'ok', duration_ms: 8 },
          {
            id: OTHER_STEP,
            tool: 'account_status',
            input: {},
            output: { plan: 'free' },
            status: 'ok',
            duration_ms: 2,
          },
        ],
      }),
    ]);
    expect(steps(turn).map((step) => [step.id, step.status, step.durationMs])).toEqual([
      [STEP, 'ok', 8],
      [OTHER_STEP, 'ok', 2],
    ]);
  });

  it('marks steps cut short when the run is stopped, and stays done after done', () => {
    const stopped = run([
      { event: 'step', data: { id: STEP, tool: 'build_app', input: {} } },
      { event: 'closed', data: { reason: 'stopped' } },
    ]);
    expect(stopped.state).toBe('stopped');
    expect(steps(stopped)[0]).toMatchObject({ status: 'error', output: 'stopped before it finished' });

    const finished = run([done('hi'), { event: 'closed', data: { reason: 'done' } }]);
    expect(finished.state).toBe('done');
  });

  it('fails when the stream broke', () => {
    const turn = run([
      { event: 'error', data: { code: 'offline', detail: 'the agent stream broke' } },
      { event: 'closed', data: { reason: 'failed' } },
    ]);
    expect(turn.state).toBe('failed');
    expect(turn.items).toEqual([{ kind: 'error', code: 'offline', detail: 'the agent stream broke' }]);
  });
});

describe('refusedTurn', () => {
  it('fails the turn with the refusal and its status', () => {
    const turn = refusedTurn(startTurn(RUN), {
      code: 'insufficient_balance',
      status: 402,
      detail: 'the balance is used up',
    });
    expect(turn.state).toBe('failed');
    expect(turn.items).toEqual([
      { kind: 'error', code: 'insufficient_balance', detail: 'the balance is used up', status: 402 },
    ]);
  });
});

describe('historyOf', () => {
  it('sends the questions and the finished replies, skipping replies with no text', () => {
    const answered = run([{ event: 'token', data: { text: 'Two.' } }, done('Two.')]);
    const refused = refusedTurn(startTurn('run_refused000000'), {
      code: 'unavailable',
      status: 503,
      detail: 'x',
    });
    const turns: Turn[] = [
      { role: 'user', id: 'msg_1', content: 'How many projects?' },
      answered,
      { role: 'user', id: 'msg_2', content: 'Build one' },
      refused,
      { role: 'user', id: 'msg_3', content: 'Try again' },
    ];
    expect(historyOf(turns)).toEqual([
      { role: 'user', content: 'How many projects?' },
      { role: 'assistant', content: 'Two.' },
      { role: 'user', content: 'Build one' },
      { role: 'user', content: 'Try again' },
    ]);
  });
});
