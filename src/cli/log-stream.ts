// Follows a project's logs over the platform's event stream (GET /projects/:id/logs?follow=1): each
// `log` event's data is one log line as JSON. Used by `wharf logs -f` and `wharf deploy --follow`.
import type { LogsQuery, PlatformClient } from '../core/api-client/platform-client.js';
import { SseIdleError, readSse, type SseEvent } from '../core/api-client/sse.js';
import { LogLine } from '../shared/api/index.js';

/** The platform sends a keep-alive comment every 15 s; this much silence means the connection died. */
const IDLE_MS = 45_000;

export type StreamEnd = 'aborted' | 'ended';

/**
 * The log line an event carries, or null for other events and data that is not a log line. A
 * `skipped` event (the platform skipped lines this reader was too slow for) becomes a line saying so.
 */
export function logLineOf(event: SseEvent): LogLine | null {
  if (event.event === 'skipped') {
    const lines = Number((/"lines":(\d+)/.exec(event.data) ?? [])[1] ?? 0);
    return {
      ts: new Date().toISOString(),
      stream: 'system',
      service: null,
      line: `… ${lines} line${lines === 1 ? '' : 's'} skipped: they came faster than this terminal read them (wharf logs --since reads them)`,
    };
  }
  if (event.event !== 'log') return null;
  let data: unknown;
  try {
    data = JSON.parse(event.data);
  } catch {
    return null;
  }
  const parsed = LogLine.safeParse(data);
  return parsed.success ? parsed.data : null;
}

/**
 * Hands each streamed line to `onLine` until `signal` aborts (`aborted`) or the platform ends the
 * stream (`ended`). Failing to connect, or the connection breaking, throws.
 */
export async function streamLogs(
  client: PlatformClient,
  projectId: string,
  query: LogsQuery,
  signal: AbortSignal,
  onLine: (line: LogLine) => void,
): Promise<StreamEnd> {
  let response: Response;
  try {
    response = await client.followLogs(projectId, query, signal);
  } catch (error) {
    if (signal.aborted) return 'aborted';
    throw error;
  }
  try {
    await readSse(
      response.body!,
      (event) => {
        const line = logLineOf(event);
        if (line && !signal.aborted) onLine(line);
      },
      { idleMs: IDLE_MS },
    );
  } catch (error) {
    if (signal.aborted) return 'aborted';
    const reason =
      error instanceof SseIdleError ? error.message : `${(error as Error).message || 'the connection broke'}`;
    throw new Error(`lost the log stream from ${client.baseUrl}: ${reason}`);
  }
  return signal.aborted ? 'aborted' : 'ended';
}

/** Aborts on the first SIGINT or SIGTERM (Ctrl+C); call the returned function when done listening. */
export function abortOnSignals(controller: AbortController): () => void {
  const abort = () => controller.abort();
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  return () => {
    process.off('SIGINT', abort);
    process.off('SIGTERM', abort);
  };
}
