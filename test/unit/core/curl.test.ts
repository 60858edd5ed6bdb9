// The cURL command builder: safe single quoting (checked by running the words through a real shell),
// methods, headers left out, bodies as --data-binary, binary bodies from a file.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellQuote, toCurl } from '../../../src/core/capture/curl.js';
import { type CapturedRequestDetail, headerObject } from '../../../src/shared/api/tunnels.js';

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
    duration_ms: 1,
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

/** The words a POSIX shell makes of a command line (with `curl` swapped for printf). */
function shellWords(command: string): string[] {
  const script = command
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .join('\n')
    .replace(/^curl /, "printf '%s\\0' ");
  return execFileSync('/bin/sh', ['-c', script], { encoding: 'utf8' }).split('\0').slice(0, -1);
}

describe('shellQuote', () => {
  it('leaves plain words alone and single-quotes the rest', () => {
    expect(shellQuote('GET')).toBe('GET');
    expect(shellQuote('http://a/b')).toBe('http://a/b');
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    expect(shellQuote('a b')).toBe("'a b'");
  });

  it('survives a shell unchanged, whatever the text', () => {
    const nasty = ["it's", '$(touch /tmp/pwned)', '`id`', '"quoted"', 'a\nb', '\\', "''", '!event', '*', '~'];
    const words = shellWords(`curl ${nasty.map(shellQuote).join(' ')}`);
    expect(words).toEqual(nasty);
  });
});

describe('toCurl', () => {
  it('is a plain GET for a GET', () => {
    expect(toCurl(detail({ path: '/x?a=1&b=2', url: 'http://demo.tunnel.localhost:8788/x?a=1&b=2' }))).toBe(
      "curl 'http://demo.tunnel.localhost:8788/x?a=1&b=2'",
    );
  });

  it('keeps the request headers but those curl or the edge set', () => {
    const command = toCurl(
      detail({
        request_header_list: [
          { name: 'host', value: 'demo.tunnel.localhost:8788' },
          { name: 'user-agent', value: "Mozilla/5.0 (it's me)" },
          { name: 'content-length', value: '0' },
          { name: 'x-forwarded-for', value: '127.0.0.1' },
          { name: 'accept-encoding', value: 'gzip, br' },
          { name: 'authorization', value: 'Bearer $TOKEN' },
        ],
      }),
    );
    expect(shellWords(command)).toEqual([
      'http://demo.tunnel.localhost:8788/',
      '-H',
      "user-agent: Mozilla/5.0 (it's me)",
      '-H',
      'authorization: Bearer $TOKEN',
      '--compressed',
    ]);
  });

  it('sends a text body with --data-binary, and the method when curl would not guess it', () => {
    const body = `{"name":"O'Brien","note":"line1\nline2"}`;
    const post = toCurl(
      detail({
        method: 'POST',
        request_header_list: [{ name: 'content-type', value: 'application/json' }],
        request_body: b64(body),
        request_size: body.length,
      }),
    );
    expect(shellWords(post)).toEqual([
      'http://demo.tunnel.localhost:8788/',
      '-H',
      'content-type: application/json',
      '--data-binary',
      body,
    ]);
    const put = toCurl(detail({ method: 'PUT', request_body: b64('x=1'), request_size: 3 }));
    expect(shellWords(put)).toEqual([
      'http://demo.tunnel.localhost:8788/',
      '-X',
      'PUT',
      '--data-binary',
      'x=1',
    ]);
    expect(shellWords(toCurl(detail({ method: 'DELETE' })))).toEqual([
      'http://demo.tunnel.localhost:8788/',
      '-X',
      'DELETE',
    ]);
    // A body starting with @ would be a file name to --data-binary.
    const at = toCurl(detail({ method: 'POST', request_body: b64('@/etc/passwd'), request_size: 12 }));
    expect(shellWords(at)).toEqual(['http://demo.tunnel.localhost:8788/', '--data-raw', '@/etc/passwd']);
  });

  it('reads a binary body from a file, and says so', () => {
    const command = toCurl(
      detail({
        id: 'req_bin',
        method: 'POST',
        request_header_list: [{ name: 'content-type', value: 'application/octet-stream' }],
        request_body: b64(Buffer.from([0, 1, 2, 0xff])),
        request_size: 4,
      }),
    );
    expect(command.split('\n')[0]).toMatch(/^# The request body is binary \(4 bytes\): save it as body\.bin/);
    expect(command).toContain('/api/requests/http/req_bin/request-body');
    expect(shellWords(command)).toEqual([
      'http://demo.tunnel.localhost:8788/',
      '-H',
      'content-type: application/octet-stream',
      '--data-binary',
      '@body.bin',
    ]);
  });

  it('notes a truncated body, and keeps dot segments with --path-as-is', () => {
    const truncated = toCurl(
      detail({
        method: 'POST',
        request_header_list: [{ name: 'content-type', value: 'text/plain' }],
        request_body: b64('abc'),
        request_size: 2_000_000,
        request_body_truncated: true,
      }),
    );
    expect(truncated).toMatch(/^# Only the first 3 of 2000000 bytes of the body were captured/);
    const dots = toCurl(detail({ path: '/a/../b', url: 'http://demo.tunnel.localhost:8788/a/../b' }));
    expect(shellWords(dots)).toEqual(['http://demo.tunnel.localhost:8788/a/../b', '--path-as-is']);
  });
});
