import { describe, expect, it } from 'vitest';
import { Http1Framer, type MessageHead } from '../../../src/core/tunnel/http1.js';
import {
  BodyTap,
  CLIENT_WENT_AWAY_STATUS,
  Exchange,
  RawHead,
  ResponseHeadReader,
  Scratch,
  bodyInto,
  bodyLength,
  formatAddress,
  headerList,
  hostOfAddress,
  peerAddress,
} from '../../../src/core/capture/capture.js';
import { CaptureRing } from '../../../src/core/capture/ring.js';
import {
  CapturedRequest,
  RemoteAddr,
  SET_COOKIE_SEPARATOR,
  headerObject,
} from '../../../src/shared/api/tunnels.js';

function exchange(bodyBytes: number, fill = 1) {
  const e = new Exchange({
    tunnelId: 'tun_test',
    method: 'POST',
    path: '/',
    url: 'http://t.tunnel.localhost/',
    httpVersion: 'HTTP/1.1',
    requestHeaders: [],
    remoteAddr: '127.0.0.1:50000',
  });
  e.requestBody.push(Buffer.alloc(bodyBytes, fill));
  e.response(200, []);
  return e;
}

describe('BodyTap', () => {
  it('keeps the first bytes up to its limit, counts them all, and says it truncated', () => {
    const tap = new BodyTap(5);
    tap.push(Buffer.from('abc'));
    tap.push(Buffer.from('defgh'));
    expect(tap.body.toString()).toBe('abcde');
    expect(tap.size).toBe(8);
    expect(tap.truncated).toBe(true);
  });
});

describe('a finished exchange’s bodies', () => {
  /** A response body in two reads of their own, as a socket hands them out (mostly body bytes). */
  function twoReads(): Exchange {
    const e = exchange(0);
    e.responseBody.push(Buffer.alloc(60_000, 'a'));
    e.responseBody.push(Buffer.alloc(5_536, 'b'));
    return e;
  }

  it('are joined into the reader’s own buffer when it copies them on, and into one of their own when read', () => {
    const finished = twoReads().finish();
    const scratch = new Scratch();
    expect(bodyLength(finished, 'response')).toBe(65_536);
    const joined = bodyInto(finished, 'response', scratch);
    expect(joined.length).toBe(65_536);
    expect(joined.subarray(59_999, 60_001).toString()).toBe('ab');
    // The scratch again, for the next exchange: no buffer of the body's size per exchange.
    const again = bodyInto(twoReads().finish(), 'response', scratch);
    expect(again.buffer).toBe(joined.buffer);
    // Read as a buffer: joined once, the same buffer each time, equal to what the scratch got.
    const body = finished.responseBody;
    expect(body).toBe(finished.responseBody);
    expect(body.equals(Buffer.concat([Buffer.alloc(60_000, 'a'), Buffer.alloc(5_536, 'b')]))).toBe(true);
    expect(body.buffer).not.toBe(joined.buffer);
    // Once joined, a reader that copies it on gets that buffer.
    expect(bodyInto(finished, 'response', scratch)).toBe(body);
  });

  it('never hold a larger chunk for a small body: those few bytes are copied out as the exchange ends', () => {
    const e = exchange(0);
    const read = Buffer.alloc(64 * 1024, 'x');
    e.responseBody.push(read.subarray(100, 113));
    e.responseBody.push(read.subarray(200, 210));
    const finished = e.finish();
    read.fill('y');
    const body = bodyInto(finished, 'response', new Scratch());
    expect(body.toString()).toBe('x'.repeat(23));
    expect(body.buffer).not.toBe(read.buffer);
  });

  it('a body in one chunk of its own, or none, is that buffer', () => {
    const e = exchange(0);
    // Buffer.alloc makes a buffer of its own (Buffer.from may give a slice of a shared pool).
    const only = Buffer.alloc(4, 'only');
    e.responseBody.push(only);
    const finished = e.finish();
    expect(bodyInto(finished, 'response', new Scratch())).toBe(only);
    expect(finished.responseBody).toBe(only);
    expect(bodyLength(finished, 'request')).toBe(0);
    expect(finished.requestBody.length).toBe(0);
  });
});

describe('CaptureRing', () => {
  it('keeps the newest exchanges in order through thousands dropped, and their bodies while they fit', () => {
    const ring = new CaptureRing(10, 64);
    const ids: string[] = [];
    for (let i = 0; i < 5_000; i++) {
      const e = exchange(8, i % 256);
      ids.push(e.id);
      ring.record(e);
    }
    expect(ring.size).toBe(10);
    expect(ring.total).toBe(5_000);
    expect(ring.list().map((r) => r.id)).toEqual(ids.slice(-10).reverse());
    expect(ring.get(ids[4_989]!)).toBeUndefined();
    // 64 bytes of budget: the last 8 bodies of 8 bytes, the two before written over.
    expect(ring.withBodies).toBe(8);
    const last = ring.get(ids[4_999]!)!;
    expect(last.requestBody.equals(Buffer.alloc(8, 4_999 % 256))).toBe(true);
    expect(ring.get(ids[4_990]!)!.requestBodyTruncated).toBe(true);
    expect(last.request).toBe(last.request);
  });

  it('reads every kept exchange back whole, its record anywhere in a chunk, through thousands dropped', () => {
    // Records of many lengths, so that they start anywhere in a chunk and some are cut off by its end;
    // 200 kept over a few chunks of 64 KiB, thousands written and dropped.
    const ring = new CaptureRing(200, 1024 * 1024);
    const kept: Exchange[] = [];
    for (let i = 0; i < 4_000; i++) {
      const e = new Exchange({
        tunnelId: 'tun_test',
        method: 'GET',
        path: `/${'p'.repeat(i % 700)}/${i}`,
        url: `http://t.tunnel.localhost/${'p'.repeat(i % 700)}/${i}`,
        httpVersion: 'HTTP/1.1',
        requestHeaders: new RawHead(`GET /${i} HTTP/1.1\r\nX-N: ${'n'.repeat(i % 311)}\r\n\r\n`),
        remoteAddr: '127.0.0.1:50000',
      });
      e.requestBody.push(Buffer.alloc(i % 50, i % 256));
      e.response(200, new RawHead(`HTTP/1.1 200 OK\r\nX-I: ${i}\r\n\r\n`));
      ring.record(e, i % 3 === 0 ? `failed ${i}` : null);
      kept.push(e);
      if (kept.length > 200) kept.shift();
    }
    expect(ring.list()).toEqual(kept.map((e) => e.finish().request).reverse());
    for (const e of kept) {
      const entry = ring.get(e.id)!;
      expect(entry.request).toEqual(e.finish().request);
      expect(entry.requestBody.equals(e.finish().requestBody)).toBe(true);
    }
  });

  it('keeps the last `capacity` exchanges, newest first', () => {
    const ring = new CaptureRing(3);
    const all = Array.from({ length: 5 }, () => ring.record(exchange(1)));
    expect(ring.list().map((r) => r.id)).toEqual(
      all
        .slice(2)
        .reverse()
        .map((e) => e.request.id),
    );
    expect(ring.get(all[0]!.request.id)).toBeUndefined();
    expect(ring.total).toBe(5);
  });

  it('drops the oldest bodies past its byte budget, flagging them truncated, and keeps the metadata', () => {
    const ring = new CaptureRing(10, 250);
    const all = Array.from({ length: 4 }, (_, i) => ring.record(exchange(100, i + 1)));
    expect(ring.size).toBe(4);
    const kept = all.map((e) => ring.get(e.request.id)!);
    expect(kept.map((e) => e.requestBody.length)).toEqual([0, 0, 100, 100]);
    expect(kept.map((e) => e.requestBodyTruncated)).toEqual([true, true, false, false]);
    expect(ring.withBodies).toBe(2);
    expect(kept[0]!.request.request_size).toBe(100);
    expect(kept[2]!.requestBody.equals(Buffer.alloc(100, 3))).toBe(true);
    expect(kept[3]!.requestBody.equals(Buffer.alloc(100, 4))).toBe(true);
  });

  it('keeps request and response bodies apart, and an exchange failed with its error', () => {
    const ring = new CaptureRing(10, 1024);
    const e = exchange(5, 7);
    e.responseBody.push(Buffer.from('hello '));
    e.responseBody.push(Buffer.from('world'));
    const captured = ring.record(e, 'the response was cut off');
    expect(captured.requestBody.equals(Buffer.alloc(5, 7))).toBe(true);
    expect(captured.responseBody.toString()).toBe('hello world');
    expect(captured.request).toMatchObject({
      error: 'the response was cut off',
      request_size: 5,
      response_size: 11,
    });
  });

  it('writes bodies round and round, giving up the oldest ones, also those left at the end of the buffer', () => {
    const ring = new CaptureRing(100, 100);
    // x fills [0, 85), a [85, 95); b wraps to [0, 40) over x, c takes [40, 80).
    const [x, a, b, c] = [85, 10, 40, 40].map((size, i) => ring.record(exchange(size, i + 1)));
    expect([x, a, b, c].map((e) => e!.requestBodyTruncated)).toEqual([true, false, false, false]);
    // d (30 bytes) cannot follow c before the end: it wraps to [0, 30), over b, and a (at the end,
    // older than b) goes too, or the order the bodies are given up in would no longer be the age order.
    const d = ring.record(exchange(30, 5));
    expect([x, a, b, c, d].map((e) => e!.requestBodyTruncated)).toEqual([true, true, true, false, false]);
    expect(c!.requestBody.equals(Buffer.alloc(40, 4))).toBe(true);
    expect(d.requestBody.equals(Buffer.alloc(30, 5))).toBe(true);
    // Next, e (50 bytes) takes [30, 80), over c.
    const e = ring.record(exchange(50, 6));
    expect(c!.requestBodyTruncated).toBe(true);
    expect(c!.requestBody.length).toBe(0);
    expect(d.requestBody.equals(Buffer.alloc(30, 5))).toBe(true);
    expect(e.requestBody.equals(Buffer.alloc(50, 6))).toBe(true);
  });

  it('keeps no body larger than its whole budget, and says so', () => {
    const ring = new CaptureRing(10, 64);
    const big = ring.record(exchange(65));
    expect(big.requestBody.length).toBe(0);
    expect(big.requestBodyTruncated).toBe(true);
    expect(big.request.request_size).toBe(65);
    const empty = ring.record(exchange(0));
    expect(empty.requestBodyTruncated).toBe(false);
  });

  it('forgets the bodies of exchanges dropped for capacity, so they hold no room', () => {
    const ring = new CaptureRing(2, 100);
    // Thousands of small exchanges through a ring of 2: only the last two keep anything.
    let last = ring.record(exchange(10, 1));
    for (let i = 0; i < 5_000; i++) last = ring.record(exchange(10, (i % 200) + 2));
    expect(ring.size).toBe(2);
    expect(last.requestBody.equals(Buffer.alloc(10, (4_999 % 200) + 2))).toBe(true);
    expect(ring.list()).toHaveLength(2);
    expect(ring.withBodies).toBe(2);
  });
});

describe('headerList', () => {
  it('keeps order, case and repeated names', () => {
    expect(headerList(['Set-Cookie', 'a=1', 'set-cookie', 'b=2'])).toEqual([
      { name: 'Set-Cookie', value: 'a=1' },
      { name: 'set-cookie', value: 'b=2' },
    ]);
  });
});

describe('a head captured as it came (RawHead)', () => {
  const heads: Array<[string, string]> = [
    [
      'request',
      'GET /a?b=1 HTTP/1.1\r\nHost: x.test\r\nX-Mixed-Case:  padded\t \r\nset-cookie: a=1\r\nSet-Cookie: b=2\r\nEmpty:\r\nLatin: caf\xe9 \xa0\r\n\r\n',
    ],
    ['response', 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Folded: one\r\n  two\r\nVia: 1.1 a:b\r\n\r\n'],
  ];
  it.each(heads)('gives the %s headers the parser reads, in order, case and value', (kind, text) => {
    let parsed: MessageHead | null = null;
    const framer = new Http1Framer(kind as 'request' | 'response', {
      head: (head) => {
        parsed = head;
        return undefined;
      },
    });
    // A folded line is refused in a request (a 400 on the byte path), read in a response: one of each.
    framer.write(Buffer.from(text, 'latin1'));
    const e = new Exchange({
      tunnelId: 'tun_test',
      method: 'GET',
      path: '/',
      url: 'http://t.tunnel.localhost/',
      httpVersion: 'HTTP/1.1',
      requestHeaders: RawHead.of(Buffer.from(text, 'latin1')),
      remoteAddr: '127.0.0.1:50000',
    });
    e.response(200, RawHead.of(Buffer.from(text, 'latin1')));
    const captured = e.finish().request;
    const expected = headerList(parsed!.headers);
    expect(captured.request_header_list).toEqual(expected);
    expect(captured.response_header_list).toEqual(expected);
  });
});

describe('ResponseHeadReader', () => {
  it('reads a 101 head split across chunks, and then stops looking', () => {
    const reader = new ResponseHeadReader();
    expect(reader.push(Buffer.from('HTTP/1.1 101 Switching Protocols\r\nUpgrade: web'))).toBeNull();
    const head = reader.push(Buffer.from('socket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello'));
    expect(head).toEqual({
      status: 101,
      headers: [
        { name: 'Upgrade', value: 'websocket' },
        { name: 'Connection', value: 'Upgrade' },
      ],
    });
    expect(reader.done).toBe(true);
    expect(reader.push(Buffer.from('HTTP/1.1 200 OK\r\n\r\n'))).toBeNull();
  });

  it('gives up on bytes that are not an HTTP response', () => {
    const reader = new ResponseHeadReader();
    expect(reader.push(Buffer.from('garbage\r\n\r\n'))).toBeNull();
    expect(reader.done).toBe(true);
  });
});

describe('a captured request in SPEC.md §2.4 fields', () => {
  const start = {
    tunnelId: 'tun_test',
    method: 'GET',
    path: '/spec',
    url: 'http://t.tunnel.localhost/spec',
    httpVersion: 'HTTP/1.1',
    requestHeaders: [
      { name: 'Accept', value: 'text/html' },
      { name: 'ACCEPT', value: 'application/json' },
      { name: 'Host', value: 't.tunnel.localhost' },
    ],
    remoteAddr: '203.0.113.9:61000',
  };

  it('has every field with its type: integer status and duration, header objects, host:port, timestamp', () => {
    const e = new Exchange(start);
    e.response(201, [
      { name: 'Set-Cookie', value: 'a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT' },
      { name: 'set-cookie', value: 'b=2' },
      { name: 'Vary', value: 'Accept' },
      { name: 'vary', value: 'Origin' },
    ]);
    const { request } = e.finish();
    expect(CapturedRequest.parse(request)).toEqual(request);
    expect(request).toMatchObject({
      status_code: 201,
      remote_addr: '203.0.113.9:61000',
      request_headers: { accept: 'text/html, application/json', host: 't.tunnel.localhost' },
      response_headers: {
        'set-cookie': `a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT${SET_COOKIE_SEPARATOR}b=2`,
        vary: 'Accept, Origin',
      },
      request_header_list: start.requestHeaders,
    });
    expect(SET_COOKIE_SEPARATOR).toBe('\n');
    expect(Number.isInteger(request.duration_ms)).toBe(true);
    expect(new Date(request.timestamp).toISOString()).toBe(request.timestamp);
    expect(request).not.toHaveProperty('started_at');
  });

  it('records 502 when no response came, or the status the edge answered itself; a response wins', () => {
    expect(new Exchange(start).finish('tunnel offline').request).toMatchObject({
      status_code: 502,
      error: 'tunnel offline',
      response_headers: {},
    });
    const timedOut = new Exchange(start);
    timedOut.noResponse(504);
    expect(timedOut.finish('no whole response within 30 s').request.status_code).toBe(504);
    const cut = new Exchange(start);
    cut.response(200, []);
    cut.noResponse(CLIENT_WENT_AWAY_STATUS);
    expect(cut.finish('the response was cut off').request.status_code).toBe(200);
  });

  it('writes addresses as <host>:<port>, IPv6 in brackets, and reads the host back', () => {
    expect(formatAddress('127.0.0.1', 53211)).toBe('127.0.0.1:53211');
    expect(formatAddress('::1', 8080)).toBe('[::1]:8080');
    expect(peerAddress({ remoteAddress: '::ffff:10.0.0.1', remotePort: 4000 })).toBe(
      '[::ffff:10.0.0.1]:4000',
    );
    expect(peerAddress({})).toBe('0.0.0.0:0');
    expect(hostOfAddress('127.0.0.1:53211')).toBe('127.0.0.1');
    expect(hostOfAddress('[::1]:8080')).toBe('::1');
    expect(hostOfAddress('::1')).toBe('::1');
    expect(hostOfAddress('10.0.0.1')).toBe('10.0.0.1');
  });

  it('refuses a remote_addr without a port, or with one that is not a number', () => {
    for (const bad of ['127.0.0.1', '::1', '127.0.0.1:', '127.0.0.1:http', 'a b:80', '[::1]', '']) {
      expect(RemoteAddr.safeParse(bad).success, bad).toBe(false);
    }
    for (const good of ['127.0.0.1:1', '[::1]:65535', 'localhost:8080']) {
      expect(RemoteAddr.safeParse(good).success, good).toBe(true);
    }
  });

  it('builds header objects with lower-case names; an empty list is an empty object', () => {
    expect(headerObject([])).toEqual({});
    expect(
      headerObject([
        { name: 'X-A', value: '' },
        { name: 'x-a', value: 'b' },
      ]),
    ).toEqual({ 'x-a': ', b' });
    // A header named like an Object.prototype member is a header like any other.
    expect(headerObject([{ name: '__proto__', value: 'x' }])).toHaveProperty('__proto__', 'x');
  });
});
