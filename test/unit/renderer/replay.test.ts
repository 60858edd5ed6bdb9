// Edit and replay: the editor's draft, the ReplayInput it becomes, and the header comparison.
import { describe, expect, it } from 'vitest';
import { type CapturedRequestDetail, headerObject } from '../../../src/shared/api/tunnels.js';
import {
  diffHeaders,
  draftFrom,
  draftProblems,
  isEdited,
  replayInputFrom,
} from '../../../src/renderer/src/lib/replay.js';
import {
  formatClock,
  formatDuration,
  harFileName,
  headersText,
  statusLabel,
  statusTone,
} from '../../../src/renderer/src/lib/traffic-format.js';

const b64 = (text: string) => Buffer.from(text).toString('base64');

function detail(extra: Partial<CapturedRequestDetail> = {}): CapturedRequestDetail {
  const fields: CapturedRequestDetail = {
    request_headers: {},
    response_headers: {},
    id: 'req_000000001aa0123456789ab',
    tunnel_id: 'tun_00000001',
    method: 'POST',
    path: '/api/orders',
    url: 'http://demo.tunnel.localhost:8788/api/orders',
    http_version: 'HTTP/1.1',
    status_code: 201,
    duration_ms: 12,
    request_header_list: [
      { name: 'Content-Type', value: 'application/json' },
      { name: 'Content-Length', value: '11' },
    ],
    response_header_list: [],
    request_size: 11,
    response_size: 0,
    remote_addr: '203.0.113.7:53211',
    timestamp: '2025-01-31T14:03:07.123Z',
    error: null,
    replay_of: null,
    request_body: b64('{"qty":1}  '),
    response_body: null,
    request_body_truncated: false,
    response_body_truncated: false,
    ...extra,
  };
  return {
    ...fields,
    request_headers: headerObject(fields.request_header_list),
    response_headers: headerObject(fields.response_header_list),
  };
}

describe('draftFrom', () => {
  it('copies method, path, headers and the body as text', () => {
    const draft = draftFrom(detail());
    expect(draft).toEqual({
      method: 'POST',
      path: '/api/orders',
      headers: [
        { name: 'Content-Type', value: 'application/json' },
        { name: 'Content-Length', value: '11' },
      ],
      body: '{"qty":1}  ',
      bodyEditable: true,
      bodyNote: null,
      bodyTruncated: false,
    });
  });

  it('does not offer a binary body for editing', () => {
    const binary = draftFrom(detail({ request_body: Buffer.from([0, 1, 2, 255]).toString('base64') }));
    expect(binary).toMatchObject({
      body: '',
      bodyEditable: false,
      bodyNote: 'The body is binary: it is replayed as captured.',
    });
    const cut = draftFrom(
      detail({ request_body: Buffer.from([0, 1, 2, 255]).toString('base64'), request_body_truncated: true }),
    );
    expect(cut.bodyNote).toMatch(/cannot be replayed/);
  });

  it('offers a truncated text body for editing, saying how much of it was captured', () => {
    const truncated = draftFrom(detail({ request_body_truncated: true, request_size: 2_000_000 }));
    expect(truncated).toMatchObject({
      bodyEditable: true,
      bodyTruncated: true,
      bodyNote: `Only the first 11 of ${(2_000_000).toLocaleString()} bytes were captured: the body below is what is sent.`,
    });
  });
});

describe('replayInputFrom', () => {
  it('sends only the id for an unedited draft', () => {
    const original = detail();
    const input = replayInputFrom(original, draftFrom(original));
    expect(input).toEqual({ id: original.id });
    expect(isEdited(input)).toBe(false);
  });

  it('sends a changed method (upper-cased) and path', () => {
    const original = detail();
    const input = replayInputFrom(original, {
      ...draftFrom(original),
      method: ' put ',
      path: '/api/orders/7',
    });
    expect(input).toEqual({ id: original.id, method: 'PUT', path: '/api/orders/7' });
    expect(isEdited(input)).toBe(true);
  });

  it('sends the headers, without blank rows, when one changed', () => {
    const original = detail();
    const draft = draftFrom(original);
    const input = replayInputFrom(original, {
      ...draft,
      headers: [...draft.headers, { name: ' X-Debug ', value: '1' }, { name: '', value: 'ignored' }],
    });
    expect(input.headers).toEqual([...original.request_header_list, { name: 'X-Debug', value: '1' }]);
    expect(input.body).toBeUndefined();
  });

  it('sends a new body as base64 and sets Content-Length to its length in bytes', () => {
    const original = detail();
    const input = replayInputFrom(original, { ...draftFrom(original), body: '{"qty":"é"}' });
    expect(Buffer.from(input.body!, 'base64').toString()).toBe('{"qty":"é"}');
    expect(input.headers).toEqual([
      { name: 'Content-Type', value: 'application/json' },
      { name: 'Content-Length', value: '12' },
    ]);
  });

  it('adds Content-Length for a new body when the original had none, and sends an emptied body as null', () => {
    const original = detail({ method: 'GET', request_header_list: [], request_body: null });
    const added = replayInputFrom(original, { ...draftFrom(original), body: 'hi' });
    expect(added.headers).toEqual([{ name: 'Content-Length', value: '2' }]);
    const emptied = replayInputFrom(detail(), { ...draftFrom(detail()), body: '' });
    expect(emptied.body).toBeNull();
    expect(emptied.headers).toContainEqual({ name: 'Content-Length', value: '0' });
  });

  it('leaves a binary body to the Engine', () => {
    const original = detail({ request_body: Buffer.from([0, 1, 2, 255]).toString('base64') });
    expect(replayInputFrom(original, { ...draftFrom(original), body: 'changed' })).toEqual({
      id: original.id,
    });
  });

  it('always sends a truncated body, edited or not (the Engine does not have it whole)', () => {
    const original = detail({ request_body_truncated: true, request_size: 5_000 });
    const input = replayInputFrom(original, draftFrom(original));
    expect(Buffer.from(input.body!, 'base64').toString()).toBe('{"qty":1}  ');
  });
});

describe('draftProblems', () => {
  it('accepts a plain draft and names what is wrong with a bad one', () => {
    expect(draftProblems(draftFrom(detail()))).toEqual({});
    expect(
      draftProblems({
        ...draftFrom(detail()),
        method: 'GE T',
        path: 'api',
        headers: [{ name: 'Bad Name', value: 'x' }],
      }),
    ).toEqual({
      method: 'a method such as GET or POST',
      path: 'a path starting with /',
      headers: '"Bad Name" is not a valid header name',
    });
    expect(draftProblems({ ...draftFrom(detail()), path: '/a b' }).path).toMatch(/no spaces/);
    expect(
      draftProblems({ ...draftFrom(detail()), headers: [{ name: 'X', value: 'a\nb' }] }).headers,
    ).toMatch(/one line/);
  });
});

describe('diffHeaders', () => {
  it('pairs headers by name in any case, and marks what changed, appeared or went', () => {
    expect(
      diffHeaders(
        [
          { name: 'Content-Type', value: 'application/json' },
          { name: 'Set-Cookie', value: 'a=1' },
          { name: 'Set-Cookie', value: 'b=2' },
          { name: 'X-Old', value: 'yes' },
        ],
        [
          { name: 'content-type', value: 'application/json' },
          { name: 'Set-Cookie', value: 'a=1, b=3' },
          { name: 'X-New', value: '1' },
        ],
      ),
    ).toEqual([
      { name: 'Content-Type', before: 'application/json', after: 'application/json', change: 'same' },
      { name: 'Set-Cookie', before: 'a=1, b=2', after: 'a=1, b=3', change: 'changed' },
      { name: 'X-Old', before: 'yes', after: null, change: 'removed' },
      { name: 'X-New', before: null, after: '1', change: 'added' },
    ]);
  });
});

describe('traffic formats', () => {
  it('colours statuses by class, and calls a missing response an error', () => {
    expect([101, 200, 304, 404, 503, null].map(statusTone)).toEqual([
      'info',
      'success',
      'redirect',
      'client-error',
      'server-error',
      'error',
    ]);
    expect(statusLabel({ status_code: 502 })).toBe('502');
    expect(statusLabel({ status_code: 204 })).toBe('204');
  });

  it('writes durations at a useful precision', () => {
    expect([0.423, 4.56, 12.4, 999.6, 1234, 12_345, 125_000, null].map(formatDuration)).toEqual([
      '0.42 ms',
      '4.6 ms',
      '12 ms',
      '1.00 s',
      '1.23 s',
      '12.3 s',
      '2 min 5 s',
      '—',
    ]);
    // Whole milliseconds, as captured requests carry them, are written without decimals.
    expect([0, 7, 42, 999, 1000].map(formatDuration)).toEqual(['0 ms', '7 ms', '42 ms', '999 ms', '1.00 s']);
  });

  it('writes the time of day to the millisecond, and headers as lines', () => {
    const local = new Date(2025, 0, 31, 9, 5, 7, 45).toISOString();
    expect(formatClock(local)).toBe('09:05:07.045');
    expect(formatClock('nonsense')).toBe('');
    expect(
      headersText([
        { name: 'A', value: '1' },
        { name: 'b', value: 'two' },
      ]),
    ).toBe('A: 1\nb: two');
  });

  it('names a HAR file after the time, without characters file systems refuse', () => {
    expect(harFileName(new Date('2025-01-31T14:03:07.123Z'))).toBe('wharf-traffic-2025-01-31T14-03-07.har');
  });
});
