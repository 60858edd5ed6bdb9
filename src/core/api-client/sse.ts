// Server-sent events (text/event-stream) as the HTML standard parses them: lines end with CRLF, LF or
// CR (a CRLF may be split across chunks); `:` lines are comments (keep-alives); `data` lines of one
// event are joined with "\n"; an empty line dispatches the event, and an event without data is not
// dispatched; `id` with a NUL is ignored; `retry` only counts when it is all digits. An event that the
// stream ends in the middle of is dropped, as the standard says.

export interface SseEvent {
  /** `message` when the event named none. */
  event: string;
  data: string;
  /** The last event id seen so far on the stream (it carries over to later events), or null. */
  id: string | null;
}

export class SseParser {
  private buffer = '';
  private started = false;
  private data: string[] = [];
  private eventType = '';
  private lastId: string | null = null;
  /** The reconnection time the server asked for with `retry:`, if any. */
  retryMs: number | null = null;

  /** `onComment`: each comment line's text (a keep-alive, a note), as it comes. */
  constructor(private readonly options: { onComment?: (text: string) => void } = {}) {}

  /** Parses a chunk of text and returns the events it completed. */
  push(chunk: string): SseEvent[] {
    let text = this.buffer + chunk;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const events: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const char = text[i];
      if (char !== '\n' && char !== '\r') continue;
      // A CR as the chunk's last character may be the first half of a CRLF: wait for the next chunk.
      if (char === '\r' && i === text.length - 1) break;
      const event = this.line(text.slice(start, i));
      if (event) events.push(event);
      if (char === '\r' && text[i + 1] === '\n') i++;
      start = i + 1;
    }
    this.buffer = text.slice(start);
    return events;
  }

  /** The stream ended: a CR held back as a possible half of a CRLF ends its line after all. */
  end(): SseEvent[] {
    if (!this.buffer.endsWith('\r')) return [];
    const events = this.push('\n');
    this.buffer = '';
    return events;
  }

  private line(line: string): SseEvent | null {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) {
      this.options.onComment?.(line.slice(1).trim());
      return null;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.eventType = value;
        break;
      case 'data':
        this.data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.lastId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
    }
    return null;
  }

  private dispatch(): SseEvent | null {
    const data = this.data;
    const type = this.eventType;
    this.data = [];
    this.eventType = '';
    if (data.length === 0) return null;
    return { event: type || 'message', data: data.join('\n'), id: this.lastId };
  }
}

export class SseIdleError extends Error {
  constructor(idleMs: number) {
    super(`the event stream sent nothing for ${Math.round(idleMs / 1000)} s`);
    this.name = 'SseIdleError';
  }
}

/**
 * Reads a text/event-stream body to its end, handing each event to `onEvent`. Fails with SseIdleError
 * when nothing at all (not even a keep-alive comment) arrives for `idleMs`, so a connection that died
 * without closing is noticed.
 */
export async function readSse(
  body: ReadableStream<Uint8Array>,
  onEvent: (event: SseEvent) => void,
  options: { idleMs?: number } = {},
): Promise<void> {
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const reader = body.getReader();
  const idleMs = options.idleMs ?? 0;
  try {
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const idle =
        idleMs > 0
          ? new Promise<never>((_, reject) => {
              timer = setTimeout(() => reject(new SseIdleError(idleMs)), idleMs);
            })
          : null;
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await (idle ? Promise.race([reader.read(), idle]) : reader.read());
      } finally {
        clearTimeout(timer);
      }
      if (chunk.done) break;
      for (const event of parser.push(decoder.decode(chunk.value, { stream: true }))) onEvent(event);
    }
    for (const event of parser.push(decoder.decode())) onEvent(event);
    for (const event of parser.end()) onEvent(event);
  } finally {
    reader.cancel().catch(() => undefined);
  }
}
