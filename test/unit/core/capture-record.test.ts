// An exchange as one binary record (core/capture/record.ts): what the edge keeps in its ring and sends a
// relay client on its capture streams. A record reads back as the exchange it was made of, field for
// field; records cut anywhere over chunks read back whole; bytes that are not records are refused.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Exchange, RawHead, capturedRequest } from '../../../src/core/capture/capture.js';
import {
  MAX_RECORD_BYTES,
  RecordError,
  capturedFromRecord,
  encodeRecord,
  readRecord,
  recordId,
} from '../../../src/core/capture/record.js';
import { CaptureRecordReader } from '../../../src/core/tunnel/capture-records.js';
import type { HeaderList } from '../../../src/shared/api/tunnels.js';

const REQUEST_HEAD = 'POST /p?q=caf\xe9 HTTP/1.1\r\nHost: demo.tunnel.localhost\r\nX-Latin: \xa0\xff\r\n\r\n';
const RESPONSE_HEAD =
  'HTTP/1.1 201 Created\r\nContent-Type: text/plain\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n';

function exchange(
  options: {
    path?: string;
    requestHeaders?: RawHead | HeaderList | string[];
    requestBody?: Buffer;
    responseBody?: Buffer;
    responseHeaders?: RawHead | HeaderList;
    replayOf?: string | null;
  } = {},
): Exchange {
  const path = options.path ?? '/p?q=caf\xe9';
  const e = new Exchange({
    tunnelId: 'tun_records',
    method: 'POST',
    path,
    url: `http://demo.tunnel.localhost${path}`,
    httpVersion: 'HTTP/1.1',
    requestHeaders: options.requestHeaders ?? new RawHead(REQUEST_HEAD),
    remoteAddr: '[::1]:50123',
    replayOf: options.replayOf ?? null,
  });
  if (options.requestBody) e.requestBody.push(options.requestBody);
  e.response(201, options.responseHeaders ?? new RawHead(RESPONSE_HEAD));
  if (options.responseBody) e.responseBody.push(options.responseBody);
  return e;
}

describe('an exchange as a record', () => {
  it('reads back as the captured request the exchange makes, with its bodies inline', () => {
    const e = exchange({ requestBody: Buffer.from('ping'), responseBody: Buffer.from('pong!') });
    const record = encodeRecord(e, null, { bodies: 'inline' });
    const read = capturedFromRecord(record);
    expect(read.request).toEqual(e.finish().request);
    expect(read.requestBody.toString()).toBe('ping');
    expect(read.responseBody.toString()).toBe('pong!');
    expect([read.requestBodyTruncated, read.responseBodyTruncated]).toEqual([false, false]);
    expect(recordId(record, 0)).toBe(e.id);
  });

  it('keeps header lists, names and values alternating, an error, a replay and a head given instead', () => {
    const list: HeaderList = [
      { name: 'X-One', value: 'a' },
      { name: 'x-one', value: 'b, "c"' },
    ];
    const fromList = exchange({ requestHeaders: list, responseHeaders: list, replayOf: 'req_original' });
    const read = readRecord(encodeRecord(fromList, 'the app closed the connection', { bodies: 'inline' }));
    expect(read.ended.start.requestHeaders).toEqual(list);
    expect(read.ended.responseHeaders).toEqual(list);
    expect(read.ended.error).toBe('the app closed the connection');
    expect(read.ended.start.replayOf).toBe('req_original');

    const fromPairs = exchange({ requestHeaders: ['Host', 'x.test', 'Accept', '*/*'] });
    expect(
      capturedFromRecord(encodeRecord(fromPairs, null, { bodies: 'inline' })).request.request_header_list,
    ).toEqual([
      { name: 'Host', value: 'x.test' },
      { name: 'Accept', value: '*/*' },
    ]);

    // The head the app was sent stands in for the exchange's own (the edge's X-Forwarded-* in it).
    const sent = Buffer.from(
      'GET / HTTP/1.1\r\nHost: demo.tunnel.localhost\r\nX-Forwarded-For: 127.0.0.1\r\n\r\n',
    );
    const withHead = capturedFromRecord(
      encodeRecord(exchange(), null, { requestHead: sent, bodies: 'inline' }),
    );
    expect(withHead.request.request_headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(withHead.request.replay_of).toBeNull();
    expect(withHead.request.error).toBeNull();
  });

  it('keeps every string as its UTF-8 reads back, ASCII or not, lone surrogates included', () => {
    // Strings that are ASCII are written as one; others one by one, so that a lone surrogate at the end
    // of one and another at the start of the next are not written as one character.
    const text = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.constantFrom('\ud83d', '\ude00', 'caf\xe9', ''),
    );
    fc.assert(
      fc.property(text, text, text, text, (method, path, error, replayOf) => {
        const e = new Exchange({
          tunnelId: 'tun_records',
          method,
          path,
          url: `http://demo.tunnel.localhost${path}`,
          httpVersion: 'HTTP/1.1',
          requestHeaders: [],
          remoteAddr: '127.0.0.1:1',
          replayOf: replayOf || null,
        });
        const read = readRecord(encodeRecord(e, error || null, { bodies: 'inline' }));
        const utf8 = (s: string) => Buffer.from(s, 'utf8').toString('utf8');
        expect(read.ended.start.method).toBe(utf8(method));
        expect(read.ended.start.path).toBe(utf8(path));
        expect(read.ended.start.url).toBe(utf8(`http://demo.tunnel.localhost${path}`));
        expect(read.ended.error).toBe(error ? utf8(error) : null);
        expect(read.ended.start.replayOf).toBe(replayOf ? utf8(replayOf) : null);
        expect(read.ended.id).toBe(e.id);
      }),
      { numRuns: 300 },
    );
    const split = readRecord(
      encodeRecord(
        new Exchange({
          tunnelId: 'tun_records',
          method: 'GET',
          path: '/',
          url: 'http://demo.tunnel.localhost/',
          httpVersion: 'HTTP/1.1',
          requestHeaders: [],
          remoteAddr: '127.0.0.1:1',
          replayOf: '\ude00',
        }),
        'ends high \ud83d',
        { bodies: 'inline' },
      ),
    );
    expect([split.ended.error, split.ended.start.replayOf]).toEqual(['ends high \ufffd', '\ufffd']);
  });

  it('flags bodies cut at the limit, left out for a client too far behind, or kept apart', () => {
    const big = Buffer.alloc(1024 * 1024 + 10, 7);
    const cut = capturedFromRecord(encodeRecord(exchange({ responseBody: big }), null, { bodies: 'inline' }));
    expect(cut.responseBody.length).toBe(1024 * 1024);
    expect(cut.responseBodyTruncated).toBe(true);
    expect(cut.request.response_size).toBe(big.length);

    const small = () => exchange({ requestBody: Buffer.from('abc'), responseBody: Buffer.alloc(0) });
    const none = capturedFromRecord(encodeRecord(small(), null, { bodies: 'none' }));
    expect([none.requestBody.length, none.requestBodyTruncated, none.responseBodyTruncated]).toEqual([
      0,
      true,
      false,
    ]);
    const apart = readRecord(encodeRecord(small(), null, { bodies: 'apart' }));
    expect([apart.requestBody.length, apart.requestTruncated]).toEqual([0, false]);
  });
});

describe('records planned in a row', () => {
  it('each read back as their own exchange, whichever was planned before (the strings of the last are reused)', () => {
    const first = exchange({ requestBody: Buffer.from('one'), responseBody: Buffer.from('1') });
    const second = exchange({ path: '/\u00e9two', responseBody: Buffer.from('2') });
    const sent = Buffer.from('POST /p HTTP/1.1\r\nHost: app.local\r\nX-Forwarded-For: ::1\r\n\r\n', 'latin1');
    const records = [
      encodeRecord(first, null, { requestHead: sent, bodies: 'inline' }),
      encodeRecord(first, null, { bodies: 'apart' }),
      encodeRecord(second, 'the app went away', { bodies: 'inline' }),
      encodeRecord(first, null, { bodies: 'inline' }),
      encodeRecord(second, null, { bodies: 'apart' }),
    ].map(readRecord);
    const [relayed, kept, other, again, otherKept] = records;
    expect(capturedRequest(relayed!.ended).request_headers).toEqual({
      host: 'app.local',
      'x-forwarded-for': '::1',
    });
    expect(capturedRequest(kept!.ended)).toEqual(first.finish().request);
    expect([relayed!.requestBody.toString(), kept!.requestBody.length]).toEqual(['one', 0]);
    expect(capturedRequest(other!.ended)).toEqual(second.finish('the app went away').request);
    expect(capturedRequest(otherKept!.ended)).toEqual(second.finish().request);
    expect(capturedRequest(again!.ended)).toEqual(first.finish().request);
    expect(again!.responseBody.toString()).toBe('1');
  });
});

describe('a record from a writer that did not flag its strings as ASCII', () => {
  it('reads the same as one that did', () => {
    const e = exchange({ path: '/plain?ascii=1', responseBody: Buffer.from('ok') });
    const flagged = encodeRecord(e, 'closed early', { bodies: 'inline' });
    const unflagged = Buffer.from(flagged);
    unflagged.writeUInt8(unflagged.readUInt8(4) & ~64, 4);
    expect(unflagged.equals(flagged)).toBe(false);
    expect(capturedFromRecord(unflagged).request).toEqual(capturedFromRecord(flagged).request);
    expect(capturedFromRecord(flagged).request).toEqual(e.finish('closed early').request);
  });
});

describe('a raw head', () => {
  it('keeps the bytes it came in while they are most of their chunk, and copies a small part of a large one', () => {
    const head = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n';
    const own = Buffer.allocUnsafeSlow(head.length + 2);
    own.write(`${head}ok`, 'latin1');
    const kept = RawHead.of(own.subarray(0, head.length));
    expect(kept.bytes.buffer).toBe(own.buffer);

    const large = Buffer.allocUnsafeSlow(64 * 1024).fill(0x61);
    large.write(head, 1000, 'latin1');
    const copied = RawHead.of(large.subarray(1000, 1000 + head.length));
    expect(copied.bytes.buffer).not.toBe(large.buffer);
    large.fill(0);
    expect(copied.text).toBe(head);
    expect(new RawHead(head).text).toBe(head);
  });
});

describe('the capture stream reader', () => {
  const records = [
    exchange({ requestBody: Buffer.from('one') }),
    exchange({ path: '/two', responseBody: Buffer.alloc(70_000, 2) }),
    exchange({ path: '/three' }),
  ].map((e) => ({ id: e.id, bytes: encodeRecord(e, null, { bodies: 'inline' }) }));
  const stream = Buffer.concat(records.map((r) => r.bytes));

  it('reads every record whole, however the stream is cut into chunks', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 12 }),
        (cuts) => {
          const reader = new CaptureRecordReader();
          const ids: string[] = [];
          let from = 0;
          for (const at of [...cuts.sort((a, b) => a - b), stream.length]) {
            for (const e of reader.push(stream.subarray(from, at))) ids.push(e.request.id);
            from = at;
          }
          expect(ids).toEqual(records.map((r) => r.id));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuses a length no record has, and parts that do not add up to it', () => {
    const tooLong = Buffer.alloc(8);
    tooLong.writeUInt32BE(MAX_RECORD_BYTES + 1, 0);
    expect(() => new CaptureRecordReader().push(tooLong)).toThrow(RecordError);
    const tooShort = Buffer.alloc(8);
    tooShort.writeUInt32BE(3, 0);
    expect(() => new CaptureRecordReader().push(tooShort)).toThrow(RecordError);
    const lying = Buffer.from(records[0]!.bytes);
    lying.writeUInt32BE(lying.readUInt32BE(35) + 1, 35);
    expect(() => new CaptureRecordReader().push(lying)).toThrow(RecordError);
  });
});
