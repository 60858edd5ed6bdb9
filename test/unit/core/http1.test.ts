// The byte path's HTTP/1.1 framer: bytes pass through untouched but for the heads a caller replaces,
// at any split of the stream; messages are found for the capture (heads, de-chunked bodies, ends);
// framing two parsers could read differently is refused; upgrades hold, then go raw or stay HTTP.
import { describe, expect, it } from 'vitest';
import {
  FramingError,
  Http1Framer,
  type MessageHead,
  appendedLines,
  connectionListed,
  editHead,
  headerValue,
  rewriteHead,
  withoutLastLine,
} from '../../../src/core/tunnel/http1.js';

const PIPELINED = Buffer.from(
  'GET /a HTTP/1.1\r\nHost: one.test\r\n\r\n' +
    'POST /b HTTP/1.1\r\nHost: one.test\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n' +
    'PUT /c HTTP/1.1\r\nHost: one.test\r\nContent-Length: 3\r\n\r\nabc' +
    'DELETE /d HTTP/1.1\r\nHost: one.test\r\nX-Bytes: caf\xe9\r\n\r\n',
  'latin1',
);

/** Feeds `input` in pieces of `step` bytes; what came out, the heads and the bodies seen. */
function run(input: Buffer, step: number, replace?: (head: MessageHead) => Buffer) {
  const heads: MessageHead[] = [];
  const bodies: Buffer[] = [];
  let ends = 0;
  const framer = new Http1Framer('request', {
    head: (head) => {
      heads.push(head);
      return replace ? { replace: replace(head) } : undefined;
    },
    body: (data) => bodies.push(Buffer.from(data)),
    end: () => (ends += 1),
  });
  const out: Buffer[] = [];
  for (let at = 0; at < input.length; at += step)
    out.push(...framer.write(input.subarray(at, at + step)).out);
  return { framer, heads, body: Buffer.concat(bodies).toString(), ends, out: Buffer.concat(out) };
}

describe('Http1Framer on requests', () => {
  it('passes pipelined requests through byte for byte at every split, and finds each message', () => {
    for (const step of [PIPELINED.length, 1, 2, 3, 7, 16, 64]) {
      const { heads, body, ends, out } = run(PIPELINED, step);
      expect(out.equals(PIPELINED), `split every ${step} bytes`).toBe(true);
      expect(heads.map((h) => `${h.method} ${h.url}`)).toEqual(['GET /a', 'POST /b', 'PUT /c', 'DELETE /d']);
      expect(body).toBe('hello worldabc');
      expect(ends).toBe(4);
    }
  });

  it('keeps header bytes as they are (obs-text) and hands out each head raw', () => {
    const { heads } = run(PIPELINED, 5);
    expect(headerValue(heads[3]!.headers, 'x-bytes')).toBe('caf\xe9');
    expect(heads[2]!.raw.toString('latin1')).toBe(
      'PUT /c HTTP/1.1\r\nHost: one.test\r\nContent-Length: 3\r\n\r\n',
    );
  });

  it('puts a replaced head in place of each one, bodies untouched', () => {
    const { out } = run(PIPELINED, 9, (head) => rewriteHead(head.raw, new Set(['host']), ['host: two.test']));
    const text = out.toString('latin1');
    expect(text).not.toContain('one.test');
    expect(text.match(/host: two\.test\r\n/g)).toHaveLength(4);
    expect(text).toContain('5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n');
    expect(text).toContain('Content-Length: 3\r\nhost: two.test\r\n\r\nabc');
  });

  it('stops at a head that says so and gives back that head and all after it', () => {
    const framer = new Http1Framer('request', {
      head: (head) => (head.url === '/c' ? { stop: true } : undefined),
    });
    const { out, rest } = framer.write(PIPELINED);
    expect(framer.stopped).toBe(true);
    expect(Buffer.concat(out).toString('latin1')).toBe(
      PIPELINED.toString('latin1').slice(0, PIPELINED.indexOf('PUT /c')),
    );
    expect(rest!.equals(PIPELINED.subarray(PIPELINED.indexOf('PUT /c')))).toBe(true);
    expect(() => framer.write(Buffer.from('x'))).toThrow();
  });

  it('holds what follows an Upgrade request until the app says whether it upgraded', () => {
    const upgrade = Buffer.from(
      'GET /ws HTTP/1.1\r\nHost: one.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
    );
    const next = Buffer.from('GET /after HTTP/1.1\r\nHost: one.test\r\n\r\n');
    const seen: string[] = [];
    const make = () => new Http1Framer('request', { head: (h) => void seen.push(h.url) });

    const upgraded = make();
    const first = upgraded.write(Buffer.concat([upgrade, Buffer.from('\x81\x05frame')]));
    expect(upgraded.holding).toBe(true);
    expect(Buffer.concat(first.out).equals(upgrade)).toBe(true);
    expect(first.rest!.toString()).toBe('\x81\x05frame');
    expect(upgraded.release(first.rest!, true).out.map(String)).toEqual(['\x81\x05frame']);
    expect(upgraded.raw).toBe(true);
    expect(upgraded.write(next).out[0]!.equals(next)).toBe(true);

    seen.length = 0;
    const refused = make();
    const held = refused.write(Buffer.concat([upgrade, next]));
    expect(refused.release(held.rest!, false).out[0]!.equals(next)).toBe(true);
    expect(refused.raw).toBe(false);
    expect(seen).toEqual(['/ws', '/after']);
  });

  it('counts no body into the next head: a 64 KiB body that ends with its chunk, then another request', () => {
    const framer = new Http1Framer('request', { head: () => undefined });
    const head = Buffer.from('POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 65536\r\n\r\n');
    framer.write(head);
    expect(framer.write(Buffer.alloc(65536, 'b')).out[0]!.length).toBe(65536);
    expect(() => framer.write(Buffer.from('GET /next HTTP/1.1\r\nHost: a\r\n\r\n'))).not.toThrow();
  });

  it('refuses a head that grows past 16 KiB over many chunks', () => {
    const framer = new Http1Framer('request', { head: () => undefined });
    framer.write(Buffer.from('GET / HTTP/1.1\r\nHost: a\r\n'));
    expect(() => {
      for (let i = 0; i < 40; i++) framer.write(Buffer.from(`X-Filler-${i}: ${'f'.repeat(500)}\r\n`));
    }).toThrow(/size limit/);
  });

  it('refuses a chunk line that never ends, and trailers that never end, before they grow past 16 KiB', () => {
    const start = 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n';
    const response = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: t\r\n';
    for (const [kind, opening, more, why] of [
      ['request', `${start}1;`, 'e'.repeat(1024), /line over the size limit/],
      ['request', `${start}0\r\n`, 'X-T: t\r\n', /trailers over the size limit/],
      // A response's folded trailer lines join the value above them: counted all the same.
      ['response', response, ` ${'f'.repeat(1000)}\r\n`, /trailers over the size limit/],
    ] as const) {
      const framer = new Http1Framer(kind, { head: () => undefined });
      framer.write(Buffer.from(opening));
      let error: unknown = null;
      let written = 0;
      try {
        for (; written < 1024 * 1024; written += more.length) framer.write(Buffer.from(more));
      } catch (thrown) {
        error = thrown;
      }
      expect(error).toBeInstanceOf(FramingError);
      expect((error as Error).message).toMatch(why);
      expect(written).toBeLessThanOrEqual(17 * 1024);
    }
  });

  const refusals: Array<[string, string, RegExp]> = [
    [
      'Transfer-Encoding next to Content-Length',
      'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n',
      /both Transfer-Encoding and Content-Length/,
    ],
    [
      'a Transfer-Encoding other than chunked alone',
      'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n',
      /other than chunked/,
    ],
    [
      'two Transfer-Encoding headers',
      'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n',
      /other than chunked/,
    ],
    [
      'a Content-Length that is not digits',
      'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\n',
      /Content-Length/,
    ],
    [
      'two different Content-Lengths',
      'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n',
      /Content-Length|malformed/,
    ],
    [
      'a chunk size parseInt would read',
      'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1x\r\na\r\n0\r\n\r\n',
      /chunk size/,
    ],
    [
      'a negative chunk size',
      'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n-0\r\n\r\n',
      /chunk size/,
    ],
    ['a header folded over lines', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n', /folded/],
    ['a header folded with a tab', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n\tc\r\n\r\n', /folded/],
    ['the first header line folded', 'GET / HTTP/1.1\r\n Host: a\r\n\r\n', /folded|malformed/],
    [
      'a space between a header name and its colon',
      'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\nContent-Length: 3\r\n\r\n',
      /malformed header line/,
    ],
    [
      'a header name that is not a token',
      'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding\x0b: chunked\r\nContent-Length: 3\r\n\r\n',
      /malformed header line/,
    ],
    ['a header line without a colon', 'GET / HTTP/1.1\r\nHost: a\r\nX-A b\r\n\r\n', /malformed header line/],
    ['an empty header name', 'GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n', /malformed header line/],
    ['a NUL in a header value', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x00c\r\n\r\n', /control character/],
    ['a CR alone in a header value', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\rc\r\n\r\n', /control character/],
    ['a head line ending in LF alone', 'GET / HTTP/1.1\r\nHost: a\nX-A: b\r\n\r\n', /without CR/],
    ['a request line ending in LF alone', 'GET / HTTP/1.1\nHost: a\r\n\r\n', /without CR/],
    [
      'a chunk size ending in LF alone',
      'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2;x\nab\r\n0\r\n\r\n',
      /without CR/,
    ],
    [
      'chunk data followed by LF alone',
      'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\n0\r\n\r\n',
      /without CR/,
    ],
    ['two Host headers', 'GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n', /two Host headers/],
    ['a tab in the request target', 'GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n', /request target/],
    [
      'a malformed trailer',
      'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T : y\r\n\r\n',
      /malformed header line/,
    ],
    ['not HTTP at all', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n', /malformed/],
    [
      'a head over the size limit',
      `GET / HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      /size limit/,
    ],
  ];
  for (const [what, input, why] of refusals) {
    it(`refuses ${what}`, () => {
      const framer = new Http1Framer('request', { head: () => undefined });
      let error: unknown = null;
      try {
        framer.write(Buffer.from(input, 'latin1'));
      } catch (thrown) {
        error = thrown;
      }
      expect(error).toBeInstanceOf(FramingError);
      expect((error as Error).message).toMatch(why);
    });
  }
});

describe('Http1Framer on responses', () => {
  it('reads no body after a response the caller says has none (HEAD), and passes interim responses by', () => {
    const statuses: number[] = [];
    let ends = 0;
    const framer = new Http1Framer('response', {
      head: (head) => {
        statuses.push(head.status);
        return { noBody: head.status === 200 };
      },
      end: () => (ends += 1),
    });
    const input = Buffer.from(
      'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n' +
        'HTTP/1.1 100 Continue\r\n\r\n' +
        'HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok',
    );
    const out = Buffer.concat(framer.write(input).out);
    expect(out.equals(input)).toBe(true);
    expect(statuses).toEqual([200, 100, 201]);
    expect(ends).toBe(3);
  });

  it('hands out a chunk passed unchanged as one view of it, and a replaced head apart from the rest', () => {
    const chunk = Buffer.from(
      'HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbodyHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nend',
    );
    const asIs = new Http1Framer('response', { head: () => undefined }).write(chunk).out;
    expect(asIs).toHaveLength(1);
    // The same memory, not a copy: the caller writes it without joining parts.
    expect(asIs[0]!.buffer).toBe(chunk.buffer);
    expect(asIs[0]!.byteOffset).toBe(chunk.byteOffset);
    expect(asIs[0]!.equals(chunk)).toBe(true);

    const replaced = new Http1Framer('response', {
      head: (head) => (head.status === 200 ? { replace: Buffer.from('HTTP/1.1 200 OK\r\n\r\n') } : undefined),
    }).write(chunk).out;
    expect(replaced.map((part) => part.toString())).toEqual([
      'HTTP/1.1 200 OK\r\n\r\n',
      'body',
      'HTTP/1.1 200 OK\r\n\r\n',
      'end',
    ]);
  });

  it('reads header values without the spaces and tabs around them, and joins a folded response line', () => {
    const heads: MessageHead[] = [];
    const framer = new Http1Framer('response', { head: (head) => void heads.push(head) });
    const input = Buffer.from(
      'HTTP/1.1 200 OK\r\nX-Pad: \t a b \t\r\nX-Empty:\r\nX-Folded: one\r\n \t two \r\nContent-Length: 0\r\n\r\n',
    );
    expect(Buffer.concat(framer.write(input).out).equals(input)).toBe(true);
    expect(heads[0]!.headers).toEqual([
      'X-Pad',
      'a b',
      'X-Empty',
      '',
      'X-Folded',
      'one two',
      'Content-Length',
      '0',
    ]);
    // An app's lines ending in LF alone are read (a request's are refused).
    const lenient = new Http1Framer('response', { head: (head) => void heads.push(head) });
    lenient.write(Buffer.from('HTTP/1.1 204 No Content\nX-A: b\n\n'));
    expect(heads[1]!.headers).toEqual(['X-A', 'b']);
    // A response line that cannot be read is an error, as a request's is (the conduit passes the rest raw).
    const strict = new Http1Framer('response', { head: () => undefined });
    expect(() => strict.write(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello'))).toThrow(
      FramingError,
    );
  });

  it('ends a body without length when the stream does', () => {
    let body = '';
    let ended = false;
    const framer = new Http1Framer('response', {
      head: () => undefined,
      body: (data) => (body += data.toString()),
      end: () => (ended = true),
    });
    framer.write(Buffer.from('HTTP/1.1 200 OK\r\n\r\nuntil '));
    framer.write(Buffer.from('close'));
    expect(ended).toBe(false);
    framer.finish();
    expect(ended).toBe(true);
    expect(body).toBe('until close');
  });

  it('turns raw after a 101: what follows is not parsed', () => {
    const framer = new Http1Framer('response', { head: () => undefined });
    const { out } = framer.write(
      Buffer.from(
        'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n\x81\x02hi',
      ),
    );
    expect(Buffer.concat(out).toString()).toContain('\x81\x02hi');
    expect(framer.raw).toBe(true);
    expect(framer.write(Buffer.from('not http')).out[0]!.toString()).toBe('not http');
  });
});

describe('rewriteHead and connectionListed', () => {
  it('drops the named headers, whatever their case, and adds lines at the end', () => {
    const raw = Buffer.from(
      'GET /x?y=1 HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 6.6.6.6\r\nAccept: */*\r\n\r\n',
    );
    expect(rewriteHead(raw, new Set(['x-forwarded-for']), ['x-forwarded-for: 1.2.3.4']).toString()).toBe(
      'GET /x?y=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\nx-forwarded-for: 1.2.3.4\r\n\r\n',
    );
  });

  it('appends to a head without taking it apart when nothing in it is dropped, and takes it apart when something is', () => {
    const raw = Buffer.from('GET / HTTP/1.1\r\nHost: a\r\n\r\n');
    const headers = ['Host', 'a'];
    expect(editHead({ raw, headers }, new Set(['x-real-ip']), ['x-real-ip: 1.2.3.4']).toString()).toBe(
      'GET / HTTP/1.1\r\nHost: a\r\nx-real-ip: 1.2.3.4\r\n\r\n',
    );
    const claimed = Buffer.from('GET / HTTP/1.1\r\nX-Real-IP: 6.6.6.6\r\nHost: a\r\n\r\n');
    expect(
      editHead({ raw: claimed, headers: ['X-Real-IP', '6.6.6.6', 'Host', 'a'] }, new Set(['x-real-ip']), [
        'x-real-ip: 1.2.3.4',
      ]).toString(),
    ).toBe('GET / HTTP/1.1\r\nHost: a\r\nx-real-ip: 1.2.3.4\r\n\r\n');
    // Bare LF line ends: taken apart, written back with CRLF.
    expect(
      editHead({ raw: Buffer.from('GET / HTTP/1.1\nHost: a\n\n'), headers }, new Set(), ['x: 1']).toString(),
    ).toBe('GET / HTTP/1.1\r\nHost: a\r\nx: 1\r\n\r\n');
  });

  it('appends lines made once (appendedLines) as it appends them made afresh', () => {
    const add = ['x-real-ip: 1.2.3.4', 'x-forwarded-proto: http'];
    const made = appendedLines(add);
    const raw = Buffer.from('GET / HTTP/1.1\r\nHost: a\r\n\r\n');
    const drop = new Set(['x-real-ip']);
    expect(editHead({ raw, headers: ['Host', 'a'] }, drop, add, made)).toEqual(
      editHead({ raw, headers: ['Host', 'a'] }, drop, add),
    );
    // A head taken apart (a header dropped) is written from the lines, the bytes made once unused.
    const claimed = Buffer.from('GET / HTTP/1.1\r\nX-Real-IP: 6.6.6.6\r\nHost: a\r\n\r\n');
    const headers = ['X-Real-IP', '6.6.6.6', 'Host', 'a'];
    expect(editHead({ raw: claimed, headers }, drop, add, made).toString()).toBe(
      'GET / HTTP/1.1\r\nHost: a\r\nx-real-ip: 1.2.3.4\r\nx-forwarded-proto: http\r\n\r\n',
    );
  });

  it('takes off a last line only when it is the one given', () => {
    const raw = Buffer.from('GET / HTTP/1.1\r\nHost: a\r\nwharf-request-id: req_1\r\n\r\n');
    expect(withoutLastLine(raw, 'wharf-request-id: req_1')!.toString()).toBe(
      'GET / HTTP/1.1\r\nHost: a\r\n\r\n',
    );
    expect(withoutLastLine(raw, 'wharf-request-id: req_2')).toBeNull();
    expect(withoutLastLine(Buffer.from('GET / HTTP/1.1\r\n\r\n'), 'wharf-request-id: req_1')).toBeNull();
  });

  it('lists what Connection names, but never a header that frames the message or names its host', () => {
    expect(
      connectionListed([
        'Connection',
        'keep-alive, X-Drop, content-length',
        'connection',
        'Transfer-Encoding, host, te',
      ]),
    ).toEqual(new Set(['x-drop', 'te']));
    expect(connectionListed(['Connection', 'close'])).toBeNull();
  });
});
