// The app's agent runs on their own (core/agent-runs.ts), against a real platform whose included
// engine is a local OpenAI-compatible server: a run's events arrive checked and in order with `closed`
// last, a refusal rejects the start, a run can be stopped, and bad input is refused up front.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentRuns } from '../../src/core/agent-runs.js';
import { PlatformClient } from '../../src/core/api-client/platform-client.js';
import type { AiAgentEvent, BridgeError } from '../../src/shared/bridge.js';
import { startAiPlatform, type AiPlatform } from '../helpers/ai-platform.js';
import type { FakeAi } from '../helpers/fake-ai.js';
import type { TestPlatform } from '../helpers/platform.js';
import { until } from '../helpers/poll.js';

let ai: FakeAi;
let tp: TestPlatform;

let world: AiPlatform;

beforeAll(async () => {
  world = await startAiPlatform({ ai: { model: 'gpt-test', key: 'sk-included-test' } });
  ({ tp, fake: ai } = world);
});

afterAll(() => world?.close());

function runs() {
  const events: AiAgentEvent[] = [];
  const client = new PlatformClient({ baseUrl: new URL(tp.api).origin, apiKey: tp.key });
  const agent = new AgentRuns({
    open: (body, signal) => client.agentStream(body, signal),
    emit: (event) => events.push(event),
  });
  return { agent, events };
}

describe('AgentRuns', () => {
  it('passes a run’s events on in order, checked, and closes it when the answer is done', async () => {
    ai.push({ text: 'Nothing to do: all good.' });
    const { agent, events } = runs();
    const { runId } = await agent.start({ messages: [{ role: 'user', content: 'How are things?' }] });
    expect(runId).toMatch(/^run_/);
    await until(() => events.some((e) => e.event === 'closed'), 'the run to close');
    const names = events.map((e) => e.event);
    expect(names.at(-1)).toBe('closed');
    expect(names.at(-2)).toBe('done');
    expect(events.every((e) => e.runId === runId)).toBe(true);
    expect(events.at(-1)).toMatchObject({ event: 'closed', data: { reason: 'done' } });
    expect(events.find((e) => e.event === 'done')).toMatchObject({
      data: { reply: 'Nothing to do: all good.' },
    });
  });

  it('stops a run by its id: closed as stopped; an unknown id stops nothing', async () => {
    // A turn the fake answers slowly enough to stop it first: a tool call, then the next turn waits.
    ai.push({ toolCalls: [{ name: 'list_projects', args: {} }] }, () => ({ text: 'late' }));
    const { agent, events } = runs();
    const { runId } = await agent.start({ messages: [{ role: 'user', content: 'List my projects' }] });
    expect(agent.stop(runId)).toEqual({ runId, stopped: true });
    await until(() => events.some((e) => e.event === 'closed'), 'the run to close');
    expect(events.at(-1)).toMatchObject({ event: 'closed', data: { reason: 'stopped' } });
    expect(agent.stop('run_unknown0')).toEqual({ runId: 'run_unknown0', stopped: false });
  });

  it('refuses bad input up front and a run id already running', async () => {
    const { agent } = runs();
    const refusal = (input: object) =>
      agent.start(input as never).then(
        () => null,
        (error: BridgeError) => ({ status: error.status, path: error.errors?.[0]?.path ?? null }),
      );
    expect(await refusal({ messages: [] })).toEqual({ status: 422, path: 'messages' });
    expect(await refusal({ messages: [{ role: 'user', content: 'x' }], runId: 'bad id' })).toEqual({
      status: 422,
      path: 'runId',
    });
  });

  it('rejects the start with the platform’s refusal (an unknown engine choice)', async () => {
    const { agent, events } = runs();
    const error = await agent
      .start({ messages: [{ role: 'user', content: 'Hi' }], engine: 'own_key' })
      .catch((e: BridgeError) => e);
    expect(error).toMatchObject({ status: expect.any(Number) });
    expect((error as BridgeError).status).toBeGreaterThanOrEqual(400);
    expect(events).toEqual([]);
  });
});
