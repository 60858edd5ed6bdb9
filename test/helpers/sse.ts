// Server-sent events as the tests read them, through the app's own parser (src/core/api-client/sse.ts):
// a whole body at once, or a live stream until enough events came.
import { SseParser, type SseEvent } from '../../src/core/api-client/sse.js';

/**
 * The events of a whole text/event-stream body, its comments, and both in the order they came (an
 * event's name, or a comment's text): fed line by line, so each comes out where it was written.
 */
export function sseEvents(text: string): { events: SseEvent[]; comments: string[]; order: string[] } {
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const order: string[] = [];
  const parser = new SseParser({
    onComment: (comment) => {
      comments.push(comment);
      order.push(comment);
    },
  });
  const take = (done: SseEvent[]) => {
    for (const event of done) {
      events.push(event);
      order.push(event.event);
    }
  };
  const lines = text.split(/\r\n|\r|\n/);
  // What follows the last line end is an unfinished line: given as it is, never completed.
  const rest = lines.pop() ?? '';
  for (const line of lines) take(parser.push(`${line}\n`));
  take(parser.push(rest));
  take(parser.end());
  return { events, comments, order };
}

/** Reads a live stream until `count` events of type `type` arrived or `timeoutMs` passed; then cancels it. */
export async function readSseEvents(
  response: Response,
  type: string,
  count: number,
  timeoutMs = 5_000,
): Promise<SseEvent[]> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  const events: SseEvent[] = [];
  const deadline = Date.now() + timeoutMs;
  try {
    while (events.length < count && Date.now() < deadline) {
      let timer: NodeJS.Timeout | undefined;
      const chunk = await Promise.race([
        reader.read(),
        new Promise<{ done: true; value: undefined }>((resolve) => {
          timer = setTimeout(() => resolve({ done: true, value: undefined }), deadline - Date.now());
        }),
      ]).finally(() => clearTimeout(timer));
      if (chunk.done) break;
      for (const event of parser.push(decoder.decode(chunk.value, { stream: true })))
        if (event.event === type) events.push(event);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return events;
}
