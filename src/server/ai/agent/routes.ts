// POST /ai/agent and POST /ai/agent/stream (API.md §8): the tool-calling agent over the caller's
// account. Both check the same things before anything runs, as problem+json: a verified email (403),
// an engine (503 with how to set one up), the rate limit and balance for the first model call (429,
// 402). Then /ai/agent answers `{ reply, steps }` once the run ends (an error that stops the run is a
// problem carrying the steps done so far), while /ai/agent/stream answers 200 text/event-stream at once
// and sends `step`, `step_done`, `token`, `note`, `build_log`, `build_status`, `error` as they happen,
// a `: keep-alive` comment every 15 s (config.ai.agentHeartbeatMs), and `done` exactly once, last, even
// after an error. A client that goes away stops the run (the model call is aborted, deploys already
// started go on).
import type { ServerResponse } from 'node:http';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AgentRequest, AgentResponse, type AgentStreamEvent } from '../../../shared/api/ai.js';
import type { Ledger } from '../../billing/ledger.js';
import type { PlatformConfig } from '../../config.js';
import { ApiError } from '../../errors.js';
import { accountLimits } from '../../limits.js';
import type { LogStore } from '../../projects/logs.js';
import type { ProjectService } from '../../projects/projects.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Store } from '../../store/open.js';
import type { AiBuilder } from '../builder.js';
import { type AiEngines, type ResolvedEngine, assertEmailVerified } from '../engines.js';
import { type AgentRunResult, runAgent } from './loop.js';
import type { EmitAgentEvent } from './steps.js';
import { createAgentTools } from './tools.js';
import { startEventStream } from '../../event-stream.js';

export interface AgentRoutesOptions {
  db: Store;
  config: PlatformConfig;
  engines: AiEngines;
  builder: AiBuilder;
  projects: ProjectService;
  runtime: Runtime;
  logs: LogStore;
  ledger: Ledger;
}

/** How long a tool that deploys waits for the app to run (or fail) before answering "still building". */
export const BUILD_WAIT_MS = 5 * 60_000;

const NO_ENGINE =
  'the agent needs an AI engine and none is available: save your own key for one of the supported providers ' +
  '(PUT /account/ai-key, or Settings › AI key in the app), or have the platform started with an included engine ' +
  '(--ai-provider and WHARF_AI_KEY)';

export const aiAgentRoutes: FastifyPluginAsyncZod<AgentRoutesOptions> = async (app, options) => {
  const { db, config, engines } = options;
  // Runs in progress: stopped on shutdown (each still ends its stream with `done`).
  const running = new Map<AbortController, Promise<unknown>>();
  app.addHook('preClose', async () => {
    for (const controller of running.keys()) controller.abort();
    await Promise.allSettled(running.values());
  });

  const tags = ['ai'];

  /** The checks made before a run answers anything; the first model call is admitted here. */
  async function prepare(accountId: string, asked: AgentRequest['engine']): Promise<ResolvedEngine> {
    await assertEmailVerified(db, accountId);
    const engine = await engines.resolve(accountId, asked);
    if (!engine) throw new ApiError('unavailable', NO_ENGINE);
    await engines.admit(accountId, engine);
    return engine;
  }

  function start(
    accountId: string,
    engine: ResolvedEngine,
    body: AgentRequest,
    emit: EmitAgentEvent,
    raw: ServerResponse,
  ): { controller: AbortController; result: Promise<AgentRunResult> } {
    const controller = new AbortController();
    // The response closing before it was ended is the client going away.
    const onClose = () => {
      if (!raw.writableEnded) controller.abort();
    };
    raw.once('close', onClose);
    const result = runAgent(
      engines,
      (recorder, toolEmit, signal) =>
        createAgentTools(
          { ...options, buildWaitMs: BUILD_WAIT_MS },
          { accountId, engine, recorder, emit: toolEmit, signal },
        ),
      {
        accountId,
        engine,
        messages: body.messages,
        maxSteps: config.ai.maxSteps,
        signal: controller.signal,
        emit,
        firstCallAdmitted: true,
        onUnexpected: (error, where) => app.log.error({ err: error }, `${where} failed`),
      },
    );
    running.set(controller, result);
    // The caller handles the run's outcome; this chain only tidies up and must not reject on its own.
    result
      .finally(() => {
        running.delete(controller);
        raw.off('close', onClose);
      })
      .catch(() => undefined);
    return { controller, result };
  }

  app.post('/ai/agent', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Run the agent: it calls tools on your account until it can answer',
      description:
        'Answers once the run ends with the reply and every tool step. An error that stops the run midway ' +
        '(402, 429, a provider failure as 503) is a problem whose `steps` and `reply` say what was done.',
      tags,
      body: AgentRequest,
      response: { 200: AgentResponse },
    },
    handler: async (request, reply) => {
      const { accountId } = request.caller;
      const engine = await prepare(accountId, request.body.engine);
      const { result } = start(accountId, engine, request.body, () => undefined, reply.raw);
      const outcome = await result;
      if (outcome.error) {
        const { cause, code, detail } = outcome.error;
        const extra = { reply: outcome.reply, steps: outcome.steps };
        if (cause instanceof ApiError) {
          throw new ApiError(cause.code, cause.detail, cause.fields, cause.headers, {
            ...cause.extra,
            ...extra,
          });
        }
        throw new ApiError(
          'unavailable',
          code === 'provider_error' ? detail : `${code}: ${detail}`,
          undefined,
          undefined,
          extra,
        );
      }
      return { reply: outcome.reply, steps: outcome.steps };
    },
  });

  app.post('/ai/agent/stream', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Run the agent, streaming its steps, text and build progress as server-sent events',
      description:
        'text/event-stream; each event is named (step, step_done, token, note, build_log, build_status, error, ' +
        'done) and its data is JSON as in API.md §8. `done { reply, steps, usage }` comes exactly once, last. ' +
        'A `: keep-alive` comment is sent every 15 s. Closing the connection stops the run.',
      tags,
      body: AgentRequest,
    },
    handler: async (request, reply) => {
      const { accountId } = request.caller;
      // The stream holds one of the account's stream slots until its connection closes; taken before
      // the run is admitted, so that a refused stream costs no AI call.
      if (!(await accountLimits(config).streams.takeFor(accountId, reply.raw))) {
        // Gone while its slot was counted: no run for nobody.
        reply.hijack();
        return;
      }
      const engine = await prepare(accountId, request.body.engine);

      const raw = reply.raw;
      reply.hijack();
      startEventStream(raw);
      raw.flushHeaders();
      const write = (chunk: string) => {
        if (!raw.writableEnded && !raw.destroyed) raw.write(chunk);
      };
      let finished = false;
      const send = (event: AgentStreamEvent) => {
        if (finished) return;
        write(`event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`);
      };
      write(': agent run started\n\n');
      const heartbeat = setInterval(() => write(': keep-alive\n\n'), config.ai.agentHeartbeatMs);

      let done: AgentStreamEvent;
      try {
        const outcome = await start(accountId, engine, request.body, send, raw).result;
        done = { event: 'done', data: { reply: outcome.reply, steps: outcome.steps, usage: outcome.usage } };
      } catch (error) {
        // runAgent ends every run with a result; this is a bug, still answered with error and done.
        app.log.error({ err: error }, 'the agent run failed');
        send({ event: 'error', data: { code: 'internal', detail: 'the agent run failed unexpectedly' } });
        done = { event: 'done', data: { reply: '', steps: [], usage: { engine: engine.kind, cost_usd: 0 } } };
      } finally {
        clearInterval(heartbeat);
      }
      send(done);
      finished = true;
      raw.end();
    },
  });
};
