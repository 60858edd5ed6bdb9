// Server-sent events as the platform answers them (logs, the AI agent): the head of a stream that no
// proxy may buffer or cache.
import type { ServerResponse } from 'node:http';

/** Writes the head of a `text/event-stream` answer: 200, not cached, not buffered by a proxy in front. */
export function startEventStream(raw: ServerResponse): void {
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
}
