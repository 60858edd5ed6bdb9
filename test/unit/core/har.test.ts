// HAR 1.2 export: the document's shape, query strings, cookies, text and binary bodies (base64),
// compressed bodies, truncation notes, failures, timings; and the content rules it shares.
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  bodyText,
  decodeContentEncoding,
  isTextualContentType,
  toHar,
} from '../../../src/core/capture/har.js';
import { type CapturedRequestDetail, headerObject } from '../../../src/shared/api/tunnels.js';
import { parseForm } from '../../../src/shared/form.js';

const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64');

function detail(overrides: Partial<CapturedRequestDetail> = {}): CapturedRequestDetail {
  const fields: CapturedRequestDetail = {
    request_headers: {},
    response_headers: {},
    id: 'req_0000000010000000000000',
    tunnel_id: 'tun_aaaaaaaaaaaaaaaaaaaaaa',
    method: 'GET',
    path: '/',
    url: 'http://demo.tunnel.localhost:8788/',
    http_version: 'HTTP/1.1',
    status_code: 200,
    duration_ms: 13,
    request_header_list: [],
    response_header_list: [],
    request_size: 0,
    response_size: 0,
    remote_addr: '203.0.113.7:53211',
    timestamp: '2025-01-31T14:02:07.000Z',
    error: null,
    replay_of: null,
    request_body: null,
    response_body: null,
    request_body_truncated: false,
    response_body_truncated: false,
    ...overrides,
  };
  return {
    ...fields,
    request_headers: headerObject(fields.request_header_list),
    response_headers: headerObject(fields.response_header_list),
  };
}

describe('content rules', () => {
  it('knows which content types are text', () => {
    for (const type of [
      'text/html; charset=utf-8',
      'application/json',
      'application/problem+json',
      'application/xml',
      'image/svg+xml',
      'application/x-www-form-urlencoded',
      'application/javascript',
    ])
      expect(isTextualContentType(type), type).toBe(true);
    for (const type of [
      'image/png',
      'application/octet-stream',
      'multipart/form-data; boundary=x',
      '',
      undefined,
    ])
      expect(isTextualContentType(type), String(type)).toBe(false);
  });

  it('undoes gzip, and keeps bytes it cannot decode', () => {
    const gz = gzipSync('hello');
    expect(decodeContentEncoding(gz, [{ name: 'Content-Encoding', value: 'gzip' }])).toEqual({
      body: Buffer.from('hello'),
      encoding: 'gzip',
    });
    const junk = Buffer.from('not gzip');
    expect(decodeContentEncoding(junk, [{ name: 'content-encoding', value: 'gzip' }])).toEqual({
      body: junk,
      encoding: null,
    });
    // A gzip body cut short still gives what it holds.
    const long = gzipSync('x'.repeat(10_000) + 'y'.repeat(10_000));
    const cut = decodeContentEncoding(long.subarray(0, long.length - 20), [
      { name: 'content-encoding', value: 'gzip' },
    ]);
    expect(cut.encoding).toBe('gzip');
    expect(cut.body.length).toBeGreaterThan(1000);
  });

  it('decodes text bodies only, sniffing undeclared ones when asked', () => {
    const text = [{ name: 'content-type', value: 'text/plain' }];
    expect(bodyText(Buffer.from('héllo'), text)).toBe('héllo');
    expect(bodyText(Buffer.from([0xff, 0xfe]), text)).toBeNull();
    expect(bodyText(Buffer.from('plain'), [])).toBeNull();
    expect(bodyText(Buffer.from('plain'), [], { sniff: true })).toBe('plain');
    expect(bodyText(Buffer.from([0, 1, 2, 3]), [], { sniff: true })).toBeNull();
    // A truncated body may end inside a character.
    const cut = Buffer.from('añ').subarray(0, 2);
    expect(bodyText(cut, text)).toBeNull();
    expect(bodyText(cut, text, { truncated: true })).toBe('a');
  });

  it('parses forms and query strings', () => {
    expect(parseForm('a=1&b=x+y%21&c&d=%zz')).toEqual([
      { name: 'a', value: '1' },
      { name: 'b', value: 'x y!' },
      { name: 'c', value: '' },
      { name: 'd', value: '%zz' },
    ]);
  });
});

describe('toHar', () => {
  it('makes a HAR 1.2 log with the creator and one entry per exchange, oldest first', () => {
    const har = toHar(
      [
        detail({ id: 'req_b', timestamp: '2025-01-31T14:02:08.000Z' }),
        detail({ id: 'req_a', timestamp: '2025-01-31T14:02:07.000Z' }),
      ],
      { version: '1.2.3' },
    );
    expect(har.log.version).toBe('1.2');
    expect(har.log.creator).toEqual({ name: 'Wharf', version: '1.2.3' });
    expect(har.log.entries.map((e) => e._wharf.id)).toEqual(['req_a', 'req_b']);
    const [entry] = har.log.entries;
    expect(entry).toMatchObject({
      startedDateTime: '2025-01-31T14:02:07.000Z',
      time: 13,
      cache: {},
      timings: { send: 0, wait: 13, receive: 0, blocked: -1, dns: -1, connect: -1, ssl: -1 },
      request: {
        method: 'GET',
        url: 'http://demo.tunnel.localhost:8788/',
        httpVersion: 'HTTP/1.1',
        headersSize: -1,
      },
      response: { status: 200, statusText: 'OK', redirectURL: '', headersSize: -1 },
    });
    expect(entry!.request.postData).toBeUndefined();
    // Valid JSON through and through.
    expect(JSON.parse(JSON.stringify(har))).toEqual(har);
  });

  it('lists the query string, cookies, headers and a form body', () => {
    const [entry] = toHar([
      detail({
        method: 'POST',
        path: '/search?q=two+words&lang=en%2Dgb',
        url: 'http://demo.tunnel.localhost:8788/search?q=two+words&lang=en%2Dgb',
        request_header_list: [
          { name: 'Cookie', value: 'session=abc; theme=dark' },
          { name: 'Content-Type', value: 'application/x-www-form-urlencoded' },
        ],
        request_body: b64('name=J%C3%BCrgen&city=S%C3%A3o+Paulo'),
        request_size: 36,
        status_code: 302,
        response_header_list: [
          { name: 'Location', value: '/done' },
          { name: 'Set-Cookie', value: 'session=xyz; Path=/; HttpOnly; Secure; SameSite=Lax' },
        ],
      }),
    ]).log.entries;
    expect(entry!.request.queryString).toEqual([
      { name: 'q', value: 'two words' },
      { name: 'lang', value: 'en-gb' },
    ]);
    expect(entry!.request.cookies).toEqual([
      { name: 'session', value: 'abc' },
      { name: 'theme', value: 'dark' },
    ]);
    expect(entry!.request.headers).toContainEqual({ name: 'Cookie', value: 'session=abc; theme=dark' });
    expect(entry!.request.postData).toEqual({
      mimeType: 'application/x-www-form-urlencoded',
      text: 'name=J%C3%BCrgen&city=S%C3%A3o+Paulo',
      params: [
        { name: 'name', value: 'Jürgen' },
        { name: 'city', value: 'São Paulo' },
      ],
    });
    expect(entry!.response).toMatchObject({ status: 302, statusText: 'Found', redirectURL: '/done' });
    expect(entry!.response.cookies).toEqual([
      { name: 'session', value: 'xyz', path: '/', httpOnly: true, secure: true, sameSite: 'Lax' },
    ]);
  });

  it('keeps text as text, binary as base64, and decodes compressed content', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]);
    const gz = gzipSync('{"ok":true}');
    const [binary, compressed] = toHar([
      detail({
        id: 'req_1',
        method: 'PUT',
        request_header_list: [{ name: 'content-type', value: 'application/octet-stream' }],
        request_body: b64(png),
        request_size: png.length,
        response_header_list: [{ name: 'content-type', value: 'image/png' }],
        response_body: b64(png),
        response_size: png.length,
      }),
      detail({
        id: 'req_2',
        timestamp: '2025-01-31T14:03:00.000Z',
        response_header_list: [
          { name: 'content-type', value: 'application/json' },
          { name: 'content-encoding', value: 'gzip' },
        ],
        response_body: b64(gz),
        response_size: gz.length,
      }),
    ]).log.entries;
    expect(binary!.response.content).toMatchObject({
      mimeType: 'image/png',
      size: png.length,
      encoding: 'base64',
      text: png.toString('base64'),
    });
    expect(binary!.request.postData).toMatchObject({ text: png.toString('base64'), _encoding: 'base64' });
    expect(compressed!.response.content).toEqual({
      mimeType: 'application/json',
      size: 11,
      compression: 11 - gz.length,
      text: '{"ok":true}',
    });
    expect(compressed!.response.bodySize).toBe(gz.length);
  });

  it('writes the raw header lists, in order and case, and the remote address with its port', () => {
    const [entry] = toHar([
      detail({
        request_header_list: [
          { name: 'Accept', value: 'text/html' },
          { name: 'accept', value: 'application/json' },
        ],
        response_header_list: [
          { name: 'Set-Cookie', value: 'a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT' },
          { name: 'Set-Cookie', value: 'b=2' },
        ],
      }),
    ]).log.entries;
    expect(entry!.request.headers).toEqual([
      { name: 'Accept', value: 'text/html' },
      { name: 'accept', value: 'application/json' },
    ]);
    expect(entry!.response.headers).toHaveLength(2);
    expect(entry!.response.cookies.map((c) => c.name)).toEqual(['a', 'b']);
    expect(entry!._wharf.remote_addr).toBe('203.0.113.7:53211');
  });

  it('notes truncated bodies, failures and replays', () => {
    const [entry] = toHar([
      detail({
        status_code: 502,
        duration_ms: 0,
        error: 'tunnel offline',
        replay_of: 'req_original',
        request_header_list: [{ name: 'content-type', value: 'text/plain' }],
        request_body: b64('abc'),
        request_size: 5_000_000,
        request_body_truncated: true,
      }),
    ]).log.entries;
    expect(entry!.time).toBe(0);
    // The public client got the edge's 502: the entry says so, and why.
    expect(entry!.response).toMatchObject({
      status: 502,
      statusText: 'Bad Gateway',
      bodySize: 0,
      comment: 'tunnel offline',
    });
    expect(entry!.request.postData).toMatchObject({
      text: 'abc',
      comment: 'only the first 3 of 5000000 bytes were captured',
    });
    expect(entry!.comment).toBe('replay of req_original; error: tunnel offline');
    expect(entry!._wharf).toMatchObject({ replay_of: 'req_original', request_body_truncated: true });
  });
});
