// The agent loop: model call, tool calls, model call… until the model answers without calling a tool,
// the step limit is reached, the client goes away, or something stops it (402/429 from the engines, a
// provider error). Each model call is admitted before (rate limit, balance) and metered after through
// AiEngines; every event of API.md §8 goes through `emit`, in order, and the run always ends with one
// result (the routes send it as `done`, after an `error` event when one stopped the run).
import type { ModelMessage, ToolSet } from 'ai';
import type { AgentStep } from '../../../shared/api/ai.js';
import { ApiError } from '../../errors.js';
import { newId } from '../../ids.js';
import type { AiEngines, ResolvedEngine, TokenUsage } from '../engines.js';
import { aiSdk } from '../sdk.js';
import { type EmitAgentEvent, StepRecorder } from './steps.js';

type AiSdk = Awaited<ReturnType<typeof aiSdk>>;

export interface AgentRunInput {
  accountId: string;
  engine: ResolvedEngine;
  messages: Array<{ role: 'user' | 'assistant'; content: string }>;
  /** Tool calls the run may make (config.ai.maxSteps). */
  maxSteps: number;
  signal: AbortSignal;
  emit: EmitAgentEvent;
  /** The first model call was admitted already (the stream route admits it before answering 200). */
  firstCallAdmitted?: boolean;
  /** For errors nobody foresaw (logged, never shown in full). */
  onUnexpected?: (error: unknown, where: string) => void;
}

export interface AgentRunResult {
  reply: string;
  steps: AgentStep[];
  usage: { engine: ResolvedEngine['kind']; cost_usd: number };
  /** What stopped the run early, if anything (already emitted as an `error` event). */
  error: { code: string; detail: string; cause: unknown } | null;
  aborted: boolean;
}

/** Builds the run's tools around its step recorder (see tools.ts). */
export type AgentToolFactory = (recorder: StepRecorder, emit: EmitAgentEvent, signal: AbortSignal) => ToolSet;

const SYSTEM_PROMPT = `You are the Wharf agent. Wharf is a platform that deploys apps (from git repositories, images,
uploads, or apps its AI builder generates) at <subdomain>.<base domain>, and also offers tunnels,
custom domains and email verification. You act for the signed-in user, on their account only, through
the tools you are given; you cannot see or change anything of other accounts.
- Use the tools to find facts (projects, logs, balance, docs) instead of guessing; quote ids exactly.
- When a tool answers with an error, explain it or try a sensible fix; do not repeat the same call.
- Before creating or changing something, make sure the request asks for it. Never invent secrets.
- Keep replies short and concrete: what you did, what you found, what the user can do next.`;

export async function runAgent(
  engines: AiEngines,
  makeTools: AgentToolFactory,
  input: AgentRunInput,
): Promise<AgentRunResult> {
  const { accountId, engine, emit, signal } = input;
  const runId = newId('stp').replace(/^stp_/, 'run_');
  const recorder = new StepRecorder(input.maxSteps, emit, (error, tool) =>
    input.onUnexpected?.(error, `agent tool ${tool}`),
  );
  const tools = makeTools(recorder, emit, signal);
  const messages: ModelMessage[] = input.messages.map((m) => ({ role: m.role, content: m.content }));
  let reply = '';
  let costMicroUsd = 0;
  let error: AgentRunResult['error'] = null;

  const token = (text: string) => {
    reply += text;
    emit({ event: 'token', data: { text } });
  };

  const ai = await aiSdk();
  // At most one model call per allowed tool call, plus the one that answers.
  for (let call = 1; call <= input.maxSteps + 1; call += 1) {
    if (signal.aborted) break;
    try {
      if (call > 1 || !input.firstCallAdmitted) await engines.admit(accountId, engine);
    } catch (cause) {
      error = stopping(ai, cause, input);
      break;
    }
    let textStarted = false;
    const outcome = await modelCall(ai, engine, tools, messages, recorder, signal, (text) => {
      // Text of separate model calls reads as separate paragraphs.
      if (reply !== '' && !textStarted && !/\s$/.test(reply)) token('\n\n');
      textStarted = true;
      token(text);
    });
    try {
      const cost = await engines.meter(
        accountId,
        engine,
        outcome.usage,
        `AI agent (${engine.provider} ${engine.modelId}), model call ${call}`,
        `ai-agent:${runId}:${call}`,
      );
      costMicroUsd += Math.round(cost * 1_000_000);
    } catch (cause) {
      error ??= stopping(ai, cause, input);
    }
    if (outcome.error !== undefined) error ??= stopping(ai, outcome.error, input);
    if (error || signal.aborted) break;
    messages.push(...outcome.responseMessages);
    if (outcome.toolCalls === 0) break;
    if (recorder.limitReached) {
      emit({
        event: 'note',
        data: {
          text: `Stopped after ${recorder.steps.length} tool calls: the step limit of this platform is ${input.maxSteps}. Ask again to continue.`,
        },
      });
      break;
    }
  }
  if (error) emit({ event: 'error', data: { code: error.code, detail: error.detail } });
  return {
    reply,
    steps: recorder.steps,
    usage: { engine: engine.kind, cost_usd: costMicroUsd / 1_000_000 },
    error,
    aborted: signal.aborted,
  };
}

interface ModelCallOutcome {
  usage: TokenUsage;
  toolCalls: number;
  responseMessages: ModelMessage[];
  error?: unknown;
}

async function modelCall(
  ai: AiSdk,
  engine: ResolvedEngine,
  tools: ToolSet,
  messages: ModelMessage[],
  recorder: StepRecorder,
  signal: AbortSignal,
  onText: (text: string) => void,
): Promise<ModelCallOutcome> {
  const outcome: ModelCallOutcome = { usage: {}, toolCalls: 0, responseMessages: [] };
  const result = ai.streamText({
    model: engine.model,
    system: SYSTEM_PROMPT,
    messages,
    tools,
    // One model call per loop turn: admitting and metering happen around each call here.
    stopWhen: ai.stepCountIs(1),
    // A retry is another billed call the loop would not see.
    maxRetries: 0,
    abortSignal: signal,
    onError: () => undefined,
  });
  try {
    for await (const part of result.fullStream) {
      switch (part.type) {
        case 'text-delta':
          if (part.text !== '') onText(part.text);
          break;
        case 'tool-call':
          outcome.toolCalls += 1;
          break;
        case 'tool-error':
          // The tools never throw, so this is a call that never reached one (unknown tool, bad input).
          if (!recorder.handled(part.toolCallId)) {
            recorder.rejected(part.toolCallId, part.toolName, part.input, part.error);
          }
          break;
        case 'finish-step':
          outcome.usage = { inputTokens: part.usage.inputTokens, outputTokens: part.usage.outputTokens };
          break;
        case 'error':
          outcome.error ??= part.error;
          break;
        default:
          break;
      }
    }
    if (outcome.error === undefined && !signal.aborted) {
      outcome.responseMessages = (await result.response).messages;
    }
  } catch (error) {
    outcome.error ??= error;
  }
  return outcome;
}

/** What an error that stops the run says in the `error` event. */
function stopping(ai: AiSdk, cause: unknown, input: AgentRunInput): NonNullable<AgentRunResult['error']> {
  if (cause instanceof ApiError) return { code: cause.code, detail: cause.detail, cause };
  if (ai.APICallError.isInstance(cause)) {
    const status = cause.statusCode === undefined ? '' : ` (HTTP ${cause.statusCode})`;
    return {
      code: 'provider_error',
      detail: `the AI provider (${input.engine.provider}) failed${status}: ${cause.message}`,
      cause,
    };
  }
  if (cause instanceof Error && cause.name === 'AbortError') {
    return { code: 'aborted', detail: 'the run was stopped', cause };
  }
  input.onUnexpected?.(cause, 'agent model call');
  const message = cause instanceof Error ? cause.message : String(cause);
  return {
    code: 'provider_error',
    detail: `the AI provider (${input.engine.provider}) failed: ${message}`,
    cause,
  };
}
