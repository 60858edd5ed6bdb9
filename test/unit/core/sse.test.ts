// The text/event-stream parser and reader the Engine and the CLI follow logs with.
import { describe, expect, it } from 'vitest';
import { SseIdleError, SseParser, readSse, type SseEvent } from '../../../src/core/api-client/sse.js';

function parseAll(chunks: string[]): SseEvent[] {
  const parser = new SseParser();
  return chunks.flatMap((chunk) => parser.push(chunk));
}

function streamOf(chunks: Array<string | Uint8Array>, options: { hang?: boolean } = {}) {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks)
        controller.enqueue(typeof chunk === 'string' ? encoder.encode(chunk) : chunk);
      if (!options.hang) controller.close();
    },
  });
}

describe('SseParser', () => {
  it('hands each comment to onComment as it is read, without making it an event', () => {
    const comments: string[] = [];
    const parser = new SseParser({ onComment: (text) => comments.push(text) });
    const events = [
      ...parser.push(': agent run started\n\nevent: step\ndata: 1\n'),
      ...parser.push(': keep-alive\n\n'),
    ];
    expect(comments).toEqual(['agent run started', 'keep-alive']);
    expect(events).toEqual([{ event: 'step', data: '1', id: null }]);
  });

  it('parses named events with data and ids, as the platform sends log lines', () => {
    const events = parseAll([
      ': following logs\n\n',
      'event: log\nid: 7\ndata: {"line":"a"}\n\n',
      'event: log\nid: 8\ndata: {"line":"b"}\n\n',
    ]);
    expect(events).toEqual([
      { event: 'log', data: '{"line":"a"}', id: '7' },
      { event: 'log', data: '{"line":"b"}', id: '8' },
    ]);
  });

  it('ignores comment lines (keep-alives) and dispatches nothing for them', () => {
    expect(parseAll([': keep-alive\n\n', ':\n\n', ': x\n'])).toEqual([]);
  });

  it('joins data lines with a newline and defaults the event name to message', () => {
    expect(parseAll(['data: one\ndata: two\ndata\n\n'])).toEqual([
      { event: 'message', data: 'one\ntwo\n', id: null },
    ]);
  });

  it('removes exactly one space after the colon', () => {
    expect(parseAll(['data:  two spaces\ndata:none\n\n'])).toEqual([
      { event: 'message', data: ' two spaces\nnone', id: null },
    ]);
  });

  it('accepts LF, CRLF and CR line ends, even a CRLF split across chunks', () => {
    const parser = new SseParser();
    const events = ['event: log\r\ndata: a\r', '\n\r', '\ndata: b\rdata: c\r\r'].flatMap((chunk) =>
      parser.push(chunk),
    );
    // The last CR might still be half of a CRLF: it ends its line once the stream ends.
    expect(events).toEqual([{ event: 'log', data: 'a', id: null }]);
    expect(parser.end()).toEqual([{ event: 'message', data: 'b\nc', id: null }]);
  });

  it('reassembles fields cut anywhere between chunks', () => {
    const text = 'event: log\ndata: {"line":"hello world"}\n\n';
    for (let cut = 1; cut < text.length; cut++) {
      expect(parseAll([text.slice(0, cut), text.slice(cut)])).toEqual([
        { event: 'log', data: '{"line":"hello world"}', id: null },
      ]);
    }
  });

  it('does not dispatch an event without data, and resets the event name after each dispatch', () => {
    expect(parseAll(['event: log\n\ndata: x\n\n'])).toEqual([{ event: 'message', data: 'x', id: null }]);
  });

  it('keeps the last id for later events and ignores an id with NUL', () => {
    expect(parseAll(['id: 1\ndata: a\n\ndata: b\n\nid: 2\u0000\ndata: c\n\n'])).toEqual([
      { event: 'message', data: 'a', id: '1' },
      { event: 'message', data: 'b', id: '1' },
      { event: 'message', data: 'c', id: '1' },
    ]);
  });

  it('reads retry only when it is all digits, and ignores unknown fields and lines without a colon', () => {
    const parser = new SseParser();
    parser.push('retry: 1500\nfoo: bar\nretry: 2s\ndata: x\n\n');
    expect(parser.retryMs).toBe(1500);
  });

  it('strips a byte order mark at the start of the stream only', () => {
    expect(parseAll(['\uFEFFdata: a\n\n', 'data: \uFEFFb\n\n'])).toEqual([
      { event: 'message', data: 'a', id: null },
      { event: 'message', data: '\uFEFFb', id: null },
    ]);
  });

  it('drops an event the stream ends in the middle of', () => {
    expect(parseAll(['data: complete\n\ndata: incomplete\n'])).toEqual([
      { event: 'message', data: 'complete', id: null },
    ]);
  });
});

describe('readSse', () => {
  it('reads a body to its end, decoding UTF-8 split across chunks', async () => {
    const bytes = new TextEncoder().encode('data: héllo ✓\n\n');
    const events: SseEvent[] = [];
    await readSse(streamOf([bytes.slice(0, 8), bytes.slice(8, 14), bytes.slice(14)]), (e) => events.push(e));
    expect(events).toEqual([{ event: 'message', data: 'héllo ✓', id: null }]);
  });

  it('fails with SseIdleError when nothing arrives for idleMs', async () => {
    const events: SseEvent[] = [];
    await expect(
      readSse(streamOf(['data: first\n\n'], { hang: true }), (e) => events.push(e), { idleMs: 50 }),
    ).rejects.toBeInstanceOf(SseIdleError);
    expect(events.map((e) => e.data)).toEqual(['first']);
  });
});
