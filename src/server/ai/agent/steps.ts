// One agent run's tool steps: each tool call becomes a step `{ id, tool, input, output, status,
// duration_ms }` announced as `step` when it starts and `step_done` when it ends. A tool that throws
// never ends the run: its error becomes the step's output (`{ error: { code, detail } }`), which the
// model sees as the tool's result and can react to.
import { ZodError } from 'zod';
import type { AgentStep, AgentStreamEvent } from '../../../shared/api/ai.js';
import { fieldErrors } from '../../../shared/api/validation.js';
import { ApiError } from '../../errors.js';
import { newId } from '../../ids.js';

export type EmitAgentEvent = (event: AgentStreamEvent) => void;

/** What a tool gives the model when it failed. */
export interface ToolFailure {
  error: { code: string; detail: string };
}

export class StepRecorder {
  readonly steps: AgentStep[] = [];
  /** Tool calls the recorder ran (or refused), by the model's call id. */
  private readonly seen = new Set<string>();

  constructor(
    private readonly limit: number,
    private readonly emit: EmitAgentEvent,
    private readonly onUnexpected: (error: unknown, tool: string) => void = () => undefined,
  ) {}

  get limitReached(): boolean {
    return this.steps.length >= this.limit;
  }

  /** Whether the recorder has handled the model's tool call with this id. */
  handled(toolCallId: string): boolean {
    return this.seen.has(toolCallId);
  }

  /** Runs one tool call as a step and returns what the model sees; never throws. Past the limit nothing runs. */
  async run(
    toolCallId: string,
    tool: string,
    input: unknown,
    execute: () => Promise<unknown>,
  ): Promise<unknown> {
    this.seen.add(toolCallId);
    if (this.limitReached) {
      return failure('step_limit', `not run: the step limit of ${this.limit} tool calls is reached`).output;
    }
    const id = newId('stp');
    const started = performance.now();
    this.emit({ event: 'step', data: { id, tool, input } });
    let status: AgentStep['status'] = 'ok';
    let output: unknown;
    try {
      output = await execute();
    } catch (error) {
      status = 'error';
      output = this.describe(error, tool);
    }
    this.finish({ id, tool, input, output, status, duration_ms: Math.round(performance.now() - started) });
    return output;
  }

  /** A call the model made that never reached the tool (unknown tool, input not matching its schema). */
  rejected(toolCallId: string, tool: string, input: unknown, error: unknown): void {
    this.seen.add(toolCallId);
    const id = newId('stp');
    this.emit({ event: 'step', data: { id, tool, input } });
    const detail = error instanceof Error ? error.message : String(error);
    this.finish({
      id,
      tool,
      input,
      output: failure('invalid_tool_call', detail).output,
      status: 'error',
      duration_ms: 0,
    });
  }

  private finish(step: AgentStep): void {
    this.steps.push(step);
    const { id, tool, status, output, duration_ms } = step;
    this.emit({ event: 'step_done', data: { id, tool, status, output, duration_ms } });
  }

  private describe(error: unknown, tool: string): ToolFailure {
    if (error instanceof ApiError) return failure(error.code, error.detail).output;
    if (error instanceof ZodError) {
      const detail = fieldErrors(error.issues)
        .map((e) => `${e.path || 'input'}: ${e.message}`)
        .join('; ');
      return failure('validation_failed', detail).output;
    }
    this.onUnexpected(error, tool);
    return failure('internal', `the ${tool} tool failed unexpectedly`).output;
  }
}

function failure(code: string, detail: string): { output: ToolFailure } {
  return { output: { error: { code, detail } } };
}
