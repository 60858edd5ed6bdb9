// The Traffic screen's filters: the query the filter bar sends to the Mirror, and the live matcher that
// applies the same query to exchanges as they arrive.
import { describe, expect, it } from 'vitest';
import { type CapturedRequest, headerObject } from '../../../src/shared/api/tunnels.js';
import {
  EMPTY_FILTER,
  activeFilterCount,
  filterProblems,
  headerMatches,
  matchTraffic,
  parseHeaderFilter,
  queryKey,
  sameQuery,
  statusMatches,
  toTrafficQuery,
  type TrafficFilter,
} from '../../../src/renderer/src/lib/traffic-filter.js';

function exchange(extra: Partial<CapturedRequest> = {}): CapturedRequest {
  const fields: CapturedRequest = {
    request_headers: {},
    response_headers: {},
    id: 'req_000000001aa0123456789ab',
    tunnel_id: 'tun_00000001',
    method: 'GET',
    path: '/api/Users?page=2',
    url: 'http://demo.tunnel.localhost:8788/api/Users?page=2',
    http_version: 'HTTP/1.1',
    status_code: 200,
    duration_ms: 42,
    request_header_list: [
      { name: 'Host', value: 'demo.tunnel.localhost:8788' },
      { name: 'Accept', value: 'application/json' },
    ],
    response_header_list: [{ name: 'Content-Type', value: 'application/json; charset=utf-8' }],
    request_size: 0,
    response_size: 120,
    remote_addr: '203.0.113.7:53211',
    timestamp: '2025-01-31T14:03:07.123Z',
    error: null,
    replay_of: null,
    ...extra,
  };
  return {
    ...fields,
    request_headers: headerObject(fields.request_header_list),
    response_headers: headerObject(fields.response_header_list),
  };
}

const filter = (extra: Partial<TrafficFilter>): TrafficFilter => ({ ...EMPTY_FILTER, ...extra });

describe('toTrafficQuery', () => {
  it('sends nothing for an empty filter bar', () => {
    expect(toTrafficQuery(EMPTY_FILTER)).toEqual({});
  });

  it('trims text, upper-cases methods and joins status classes with typed codes', () => {
    expect(
      toTrafficQuery(
        filter({
          q: '  checkout  ',
          methods: ['post', 'GET', 'POST'],
          statusClasses: ['4xx', 'error'],
          statusCodes: '503, 201 503',
          path: ' /api ',
          header: ' content-type: json ',
          minDuration: '10',
          maxDuration: '250.5',
        }),
      ),
    ).toEqual({
      q: 'checkout',
      methods: ['POST', 'GET'],
      statuses: ['4xx', 'error', '503', '201'],
      path: '/api',
      header: 'content-type: json',
      minDurationMs: 10,
      maxDurationMs: 250.5,
    });
  });

  it('leaves out a field until it is valid, and says why', () => {
    const bad = filter({ statusCodes: '404, 4o4', minDuration: 'fast', maxDuration: '-1' });
    expect(filterProblems(bad)).toEqual({
      statusCodes: '"4o4" is not a status code (100–599)',
      minDuration: 'a number of milliseconds',
      maxDuration: 'a number of milliseconds',
    });
    expect(toTrafficQuery(bad)).toEqual({});
  });

  it('wants a header name before a value', () => {
    expect(filterProblems(filter({ header: ': json' }))).toEqual({ header: 'a header name first' });
    expect(toTrafficQuery(filter({ header: ': json' }))).toEqual({});
  });

  it('refuses a duration range whose minimum is above its maximum', () => {
    const inverted = filter({ minDuration: '500', maxDuration: '100' });
    expect(filterProblems(inverted)).toEqual({ maxDuration: 'at least the minimum' });
    expect(toTrafficQuery(inverted)).toEqual({});
  });

  it('counts each narrowing field once', () => {
    expect(activeFilterCount({})).toBe(0);
    expect(
      activeFilterCount({
        q: 'x',
        methods: ['GET', 'POST'],
        statuses: ['2xx'],
        minDurationMs: 1,
        maxDurationMs: 2,
      }),
    ).toBe(4);
  });

  it('compares queries without their paging and without key order', () => {
    expect(sameQuery({ q: 'a', path: '/x' }, { path: '/x', q: 'a', before: 'req_1', limit: 5 })).toBe(true);
    expect(sameQuery({ q: 'a' }, { q: 'b' })).toBe(false);
    expect(queryKey({ limit: 3 })).toBe('{}');
  });
});

describe('matchTraffic', () => {
  it('matches everything with an empty query', () => {
    expect(matchTraffic(exchange(), {})).toBe('match');
  });

  it('filters by method, in any case', () => {
    expect(matchTraffic(exchange(), { methods: ['get'] })).toBe('match');
    expect(matchTraffic(exchange(), { methods: ['POST', 'PUT'] })).toBe('no-match');
  });

  it('filters by status class, exact code, or error (no response), any of them', () => {
    expect(matchTraffic(exchange({ status_code: 201 }), { statuses: ['2xx'] })).toBe('match');
    expect(matchTraffic(exchange({ status_code: 404 }), { statuses: ['2xx', '404'] })).toBe('match');
    expect(matchTraffic(exchange({ status_code: 404 }), { statuses: ['5xx', '403'] })).toBe('no-match');
    expect(matchTraffic(exchange({ status_code: 502 }), { statuses: ['error'] })).toBe('no-match');
    // The app's own 502 is no error of the tunnel's; one the edge answered (with its error) is, and it
    // still counts as the 5xx the public client got.
    expect(matchTraffic(exchange({ status_code: 502, error: 'tunnel offline' }), { statuses: ['5xx'] })).toBe(
      'match',
    );
    // A failure recorded with a status (the edge's 502 "tunnel offline") is an error too.
    expect(
      matchTraffic(exchange({ status_code: 502, error: 'tunnel offline' }), { statuses: ['error'] }),
    ).toBe('match');
  });

  it('filters by a path substring, ignoring case', () => {
    expect(matchTraffic(exchange(), { path: '/api/users' })).toBe('match');
    expect(matchTraffic(exchange(), { path: 'page=2' })).toBe('match');
    expect(matchTraffic(exchange(), { path: '/admin' })).toBe('no-match');
  });

  it('filters by a header name, or a name and a value substring, on either side', () => {
    expect(matchTraffic(exchange(), { header: 'accept' })).toBe('match');
    expect(matchTraffic(exchange(), { header: 'content-type: JSON' })).toBe('match');
    expect(matchTraffic(exchange(), { header: 'content-type: xml' })).toBe('no-match');
    expect(matchTraffic(exchange(), { header: 'x-debug' })).toBe('no-match');
  });

  it('filters by a duration range, bounds included', () => {
    expect(matchTraffic(exchange({ duration_ms: 42 }), { minDurationMs: 42, maxDurationMs: 42 })).toBe(
      'match',
    );
    expect(matchTraffic(exchange({ duration_ms: 41 }), { minDurationMs: 42 })).toBe('no-match');
    expect(matchTraffic(exchange({ duration_ms: 300 }), { maxDurationMs: 250 })).toBe('no-match');
    expect(matchTraffic(exchange({ duration_ms: 0 }), { minDurationMs: 0 })).toBe('match');
  });

  it('filters by tunnel: its platform id, or its subdomain (kept across reconnects), as the Mirror does', () => {
    expect(matchTraffic(exchange(), { tunnelId: 'tun_00000001' })).toBe('match');
    expect(matchTraffic(exchange(), { tunnelId: 'tun_00000002' })).toBe('no-match');
    expect(matchTraffic(exchange({ tunnel_id: 'tun_00000009' }), { tunnelId: 'demo' })).toBe('match');
    expect(matchTraffic(exchange(), { tunnelId: 'shop' })).toBe('no-match');
    expect(toTrafficQuery({ ...EMPTY_FILTER, tunnel: 'demo' })).toEqual({ tunnelId: 'demo' });
    expect(toTrafficQuery(EMPTY_FILTER)).toEqual({});
  });

  it('asks the Mirror about full-text search (bodies are not in live events), after the other filters', () => {
    expect(matchTraffic(exchange(), { q: 'checkout' })).toBe('ask-mirror');
    expect(matchTraffic(exchange(), { q: 'checkout', methods: ['POST'] })).toBe('no-match');
    expect(matchTraffic(exchange(), { q: '   ' })).toBe('match');
  });

  it('matches a search of punctuation only in the path, as typed (the Mirror has no word to look up)', () => {
    expect(matchTraffic(exchange(), { q: '/' })).toBe('match');
    expect(matchTraffic(exchange(), { q: '?page=' })).toBe('ask-mirror');
    expect(matchTraffic(exchange(), { q: '/#' })).toBe('no-match');
  });

  it('combines every filter with AND', () => {
    const query = {
      methods: ['GET'],
      statuses: ['2xx'],
      path: 'users',
      header: 'accept',
      maxDurationMs: 100,
    };
    expect(matchTraffic(exchange(), query)).toBe('match');
    expect(matchTraffic(exchange({ status_code: 500 }), query)).toBe('no-match');
  });
});

describe('statusMatches and header filters', () => {
  it('reads classes in any case and ignores nonsense', () => {
    const found = { status_code: 302, error: null };
    expect(statusMatches(found, '3XX')).toBe(true);
    expect(statusMatches(found, '30')).toBe(false);
    expect(statusMatches(found, 'x')).toBe(false);
  });

  it('parses `name` and `name: value`, a value that is blank meaning any', () => {
    expect(parseHeaderFilter('X-Request-Id')).toEqual({ name: 'x-request-id', value: null });
    expect(parseHeaderFilter(' Content-Type :  text/html ')).toEqual({
      name: 'content-type',
      value: 'text/html',
    });
    expect(parseHeaderFilter('authorization:')).toEqual({ name: 'authorization', value: null });
    // A value with a colon of its own (a URL) keeps it.
    expect(parseHeaderFilter('referer: http://a')).toEqual({ name: 'referer', value: 'http://a' });
  });

  it('matches nothing-to-match as true', () => {
    expect(headerMatches(exchange(), '  ')).toBe(true);
  });
});
