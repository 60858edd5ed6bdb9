// The AI agent's runs as the app follows them: each run is one `POST /ai/agent/stream` to the platform,
// opened on `ai.agent.start` (which answers once the platform accepted it), read in the background
// with every event checked against its schema and passed on as an `ai-agent` event, and ended by
// `closed` whatever happens (done, stopped, failed). A run can be stopped by its id; a silent stream
// (no heartbeat) is taken for a dead connection.
import { randomBytes } from 'node:crypto';
import { AgentStreamEvents, type AgentStreamEventName } from '../shared/api/index.js';
import { BridgeError, type AgentStartInput, type AiAgentEvent } from '../shared/bridge.js';
import { parseBridgeInput } from '../shared/bridge-inputs.js';
import { readSse } from './api-client/sse.js';

/** The agent stream sends a heartbeat every 15 s: this much silence means the connection died. */
const AGENT_IDLE_MS = 45_000;

export interface AgentRunsOptions {
  /** Opens the run's stream on the platform (rejects with why it refused: 402, 429, 503…). */
  open(body: Pick<AgentStartInput, 'messages' | 'engine'>, signal: AbortSignal): Promise<Response>;
  /** Each event of a run, `closed` last. */
  emit(event: AiAgentEvent): void;
  idleMs?: number;
}

export class AgentRuns {
  /** The runs streaming now, by run id: aborting one closes its stream. */
  private readonly running = new Map<string, AbortController>();

  constructor(private readonly options: AgentRunsOptions) {}

  /**
   * Opens the run's stream and answers once the platform accepted it; the stream is then read in the
   * background, each event re-emitted as an `ai-agent` event, and `closed` last whatever happens.
   */
  async start(input: AgentStartInput): Promise<{ runId: string }> {
    const { messages, engine, runId: given } = parseBridgeInput('ai.agent.start', input);
    const runId = given ?? `run_${randomBytes(12).toString('hex')}`;
    if (this.running.has(runId)) throw new BridgeError('conflict', 409, `run ${runId} is already running`);
    const abort = new AbortController();
    this.running.set(runId, abort);
    const body = { messages, ...(engine === undefined ? {} : { engine }) };
    let response: Response;
    try {
      response = await this.options.open(body, abort.signal);
    } catch (error) {
      this.running.delete(runId);
      if (abort.signal.aborted)
        throw new BridgeError('conflict', 409, 'the run was stopped before it started');
      throw error;
    }
    const send = (event: AiAgentEvent) => this.options.emit(event);
    let sawDone = false;
    void readSse(
      response.body!,
      ({ event, data }) => {
        if (!(event in AgentStreamEvents)) return;
        const name = event as AgentStreamEventName;
        let parsed: unknown;
        try {
          parsed = JSON.parse(data);
        } catch {
          return;
        }
        const checked = AgentStreamEvents[name].safeParse(parsed);
        if (!checked.success) return;
        if (name === 'done') sawDone = true;
        send({ runId, event: name, data: checked.data } as AiAgentEvent);
      },
      { idleMs: this.options.idleMs ?? AGENT_IDLE_MS },
    )
      .then(
        () => {
          if (sawDone) return 'done' as const;
          send({
            runId,
            event: 'error',
            data: { code: 'stream_ended', detail: 'the platform ended the agent stream before it finished' },
          });
          return 'failed' as const;
        },
        (error: unknown) => {
          if (abort.signal.aborted) return 'stopped' as const;
          const detail =
            error instanceof Error && error.name === 'SseIdleError'
              ? `the agent stream stopped: ${error.message}`
              : `the agent stream broke: ${(error as Error | undefined)?.message ?? String(error)}`;
          send({ runId, event: 'error', data: { code: 'offline', detail } });
          return 'failed' as const;
        },
      )
      .then((reason) => {
        this.running.delete(runId);
        send({ runId, event: 'closed', data: { reason: abort.signal.aborted ? 'stopped' : reason } });
      });
    return { runId };
  }

  /** Stops a run: its stream is closed and `closed` (`stopped`) follows. */
  stop(runId: string): { runId: string; stopped: boolean } {
    const run = this.running.get(runId);
    run?.abort();
    return { runId, stopped: run !== undefined };
  }

  stopAll(): void {
    for (const run of this.running.values()) run.abort();
  }
}
