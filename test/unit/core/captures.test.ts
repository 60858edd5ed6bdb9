// The Mirror's traffic history (CaptureStore): batching, the size bound with oldest-first eviction,
// filters, full-text search (with FTS5 syntax in user input made harmless), paging, and that it stays
// on disk across reopening.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import SQLite from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { Exchange, type CapturedExchange } from '../../../src/core/capture/capture.js';
import { ftsQuery, type CaptureOrigin } from '../../../src/core/mirror/captures.js';
import { Mirror } from '../../../src/core/mirror/mirror.js';
import { CapturedRequest, type HeaderList } from '../../../src/shared/api/tunnels.js';
import { BridgeError } from '../../../src/shared/bridge.js';
import { until } from '../../helpers/poll.js';

const mirrors: Mirror[] = [];
const dirs: string[] = [];

function open(
  file = ':memory:',
  limitBytes?: number,
  writeBudget?: { share: number; burstMs: number },
): Mirror {
  const mirror = new Mirror(file, {
    captures: { flushMs: 10, ...(limitBytes ? { limitBytes } : {}), ...(writeBudget ? { writeBudget } : {}) },
  });
  mirrors.push(mirror);
  return mirror;
}

afterEach(() => {
  for (const mirror of mirrors.splice(0)) {
    try {
      mirror.close();
    } catch {
      // already closed by the test
    }
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const origin: CaptureOrigin = {
  tunnelKey: 'local_a',
  subdomain: 'demo',
  localPort: 3000,
  hostHeader: 'preserve',
};

interface Spec {
  method?: string;
  path?: string;
  tunnelId?: string;
  status?: number | null;
  requestHeaders?: HeaderList;
  responseHeaders?: HeaderList;
  requestBody?: Buffer | string;
  responseBody?: Buffer | string;
  error?: string | null;
  replayOf?: string;
}

let clock = 0;

function exchange(spec: Spec = {}): CapturedExchange {
  const e = new Exchange({
    tunnelId: spec.tunnelId ?? 'tun_aaaaaaaaaaaaaaaaaaaaaa',
    method: spec.method ?? 'GET',
    path: spec.path ?? '/',
    url: `http://demo.tunnel.localhost:8788${spec.path ?? '/'}`,
    httpVersion: 'HTTP/1.1',
    requestHeaders: spec.requestHeaders ?? [{ name: 'user-agent', value: 'test' }],
    remoteAddr: '127.0.0.1:50123',
    replayOf: spec.replayOf ?? null,
  });
  if (spec.requestBody !== undefined) e.requestBody.push(Buffer.from(spec.requestBody));
  if (spec.status !== null) e.response(spec.status ?? 200, spec.responseHeaders ?? []);
  if (spec.responseBody !== undefined) e.responseBody.push(Buffer.from(spec.responseBody));
  const finished = e.finish(spec.error ?? null);
  // Distinct, increasing durations for the duration filters.
  finished.request.duration_ms = ++clock;
  return finished;
}

const json: HeaderList = [{ name: 'Content-Type', value: 'application/json; charset=utf-8' }];
const png: HeaderList = [{ name: 'content-type', value: 'image/png' }];

describe('ftsQuery', () => {
  it('quotes every word as a prefix phrase, so FTS5 operators are plain text', () => {
    expect(ftsQuery('hello world')).toBe('"hello"* "world"*');
    expect(ftsQuery('a"b OR c')).toBe('"a""b"* "OR"* "c"*');
    expect(ftsQuery('NEAR(x y) *:^-')).toBe('"NEAR(x"* "y)"*');
    expect(ftsQuery('  / ?= ')).toBeNull();
    expect(ftsQuery('')).toBeNull();
  });
});

describe('CaptureStore', () => {
  it('writes exchanges in batches, emits them once stored, and reads them back with bodies', async () => {
    const mirror = open();
    const batches: string[][] = [];
    mirror.captures.on('stored', (requests) => batches.push(requests.map((r) => r.id)));
    const a = exchange({ method: 'POST', path: '/a', requestBody: 'ping', responseBody: 'pong' });
    const b = exchange({ path: '/b' });
    mirror.captures.add(a, origin);
    mirror.captures.add(b, origin);
    expect(batches).toEqual([]);
    await new Promise((r) => setTimeout(r, 40));
    expect(batches).toEqual([[a.request.id, b.request.id]]);

    const stored = mirror.captures.get(a.request.id)!;
    expect(stored).toMatchObject({ tunnelKey: 'local_a', subdomain: 'demo', localPort: 3000 });
    expect(stored.detail).toMatchObject({
      id: a.request.id,
      method: 'POST',
      path: '/a',
      request_body: Buffer.from('ping').toString('base64'),
      response_body: Buffer.from('pong').toString('base64'),
      request_body_truncated: false,
    });
    expect(mirror.captures.get(b.request.id)!.detail.request_body).toBeNull();
    expect(mirror.captures.get('req_nope')).toBeNull();

    // Reads see what is still queued.
    const c = exchange({ path: '/c' });
    mirror.captures.add(c, origin);
    expect(mirror.captures.list().requests.map((r) => r.path)).toEqual(['/c', '/b', '/a']);
    // The same exchange twice is kept once.
    mirror.captures.add(c, origin);
    expect(mirror.captures.list().total).toBe(3);
  });

  it('writes big batches in several transactions, all of them stored', async () => {
    const mirror = open();
    const batches: number[] = [];
    mirror.captures.on('stored', (requests) => batches.push(requests.length));
    const body = Buffer.alloc(100 * 1024, 1);
    for (let i = 0; i < 30; i++)
      mirror.captures.add(exchange({ path: `/b${i}`, responseBody: body }), origin);
    for (let i = 0; i < 1200; i++) mirror.captures.add(exchange({ path: `/s${i}` }), origin);
    await until(() => batches.reduce((a, b) => a + b, 0) >= 1230, 'all 1230 exchanges in batches', 5_000, 10);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(1230);
    expect(batches.length).toBeGreaterThan(3);
    expect(Math.max(...batches)).toBeLessThanOrEqual(500);
  });

  it('keeps exchanges without their bodies once writing exceeds its time budget', () => {
    const mirror = open(':memory:', undefined, { share: 0, burstMs: 0 });
    const e = exchange({
      method: 'POST',
      path: '/shed',
      requestHeaders: json,
      requestBody: '{"a":"guava"}',
      responseBody: 'ok',
    });
    mirror.captures.add(e, origin);
    const detail = mirror.captures.get(e.request.id)!.detail;
    expect(detail).toMatchObject({
      path: '/shed',
      request_body: null,
      response_body: null,
      request_body_truncated: true,
      response_body_truncated: true,
      request_size: 13,
    });
    expect(mirror.captures.shedBodies).toBe(1);
    expect(mirror.captures.list({ q: 'shed' }).total).toBe(1);
    expect(mirror.captures.list({ q: 'guava' }).total).toBe(0);
    // An exchange without bodies loses nothing.
    const bare = exchange({ path: '/bare' });
    mirror.captures.add(bare, origin);
    expect(mirror.captures.get(bare.request.id)!.detail.response_body_truncated).toBe(false);
  });

  it('writes bodies that came in several chunks, each its own, from one batch', async () => {
    const mirror = open();
    const sent = Array.from({ length: 5 }, (_, i) => {
      const e = new Exchange({
        tunnelId: 'tun_x',
        method: 'POST',
        path: `/parts/${i}`,
        url: `http://demo.tunnel.localhost/parts/${i}`,
        httpVersion: 'HTTP/1.1',
        requestHeaders: [],
        remoteAddr: '127.0.0.1:50000',
      });
      // Chunks of their own, mostly body: kept as they came until the Mirror writes them.
      e.requestBody.push(Buffer.alloc(3_000 + i, `q${i}`));
      e.requestBody.push(Buffer.alloc(2_000, `r${i}`));
      e.response(200, []);
      e.responseBody.push(Buffer.alloc(40_000 - i, `s${i}`));
      e.responseBody.push(Buffer.alloc(30_000, `t${i}`));
      const expected = {
        request: Buffer.concat([Buffer.alloc(3_000 + i, `q${i}`), Buffer.alloc(2_000, `r${i}`)]),
        response: Buffer.concat([Buffer.alloc(40_000 - i, `s${i}`), Buffer.alloc(30_000, `t${i}`)]),
      };
      mirror.captures.add(e.finish(), origin);
      return { id: e.id, expected };
    });
    await until(() => sent.every(({ id }) => mirror.captures.get(id) !== null), 'the batch stored');
    for (const { id, expected } of sent) {
      const { detail } = mirror.captures.get(id)!;
      expect(Buffer.from(detail.request_body!, 'base64').equals(expected.request)).toBe(true);
      expect(Buffer.from(detail.response_body!, 'base64').equals(expected.response)).toBe(true);
      expect(detail.request_size).toBe(expected.request.length);
      expect(detail.response_body_truncated).toBe(false);
    }
  });

  it('keeps the truncation flags', () => {
    const mirror = open();
    const e = new Exchange({
      tunnelId: 'tun_x',
      method: 'POST',
      path: '/big',
      url: 'http://demo.tunnel.localhost/big',
      httpVersion: 'HTTP/1.1',
      requestHeaders: [],
      remoteAddr: '127.0.0.1:50000',
    });
    e.requestBody.push(Buffer.alloc(1024 * 1024 + 10, 1));
    e.response(200, []);
    mirror.captures.add(e.finish(), origin);
    const detail = mirror.captures.get(e.id)!.detail;
    expect(detail.request_body_truncated).toBe(true);
    expect(detail.response_body_truncated).toBe(false);
    expect(detail.request_size).toBe(1024 * 1024 + 10);
    expect(Buffer.from(detail.request_body!, 'base64').length).toBe(1024 * 1024);
  });

  it('filters by tunnel, method, status, path, header and duration', () => {
    const mirror = open();
    const all = [
      exchange({ method: 'GET', path: '/users/1', status: 200 }),
      exchange({
        method: 'POST',
        path: '/users',
        status: 201,
        requestHeaders: [{ name: 'X-Trace', value: 'Abc-123' }],
      }),
      exchange({ method: 'DELETE', path: '/users/1', status: 404, tunnelId: 'tun_other' }),
      exchange({
        method: 'GET',
        path: '/boom',
        status: 500,
        responseHeaders: [{ name: 'Retry-After', value: '5' }],
      }),
      exchange({ method: 'GET', path: '/down', status: null, error: 'tunnel offline' }),
      exchange({ method: 'GET', path: '/refused', status: 502, error: 'nothing is listening' }),
    ];
    mirror.captures.add(all[0]!, origin);
    mirror.captures.add(all[1]!, origin);
    mirror.captures.add(all[2]!, { ...origin, tunnelKey: 'local_b', subdomain: 'other' });
    for (const e of all.slice(3)) mirror.captures.add(e, origin);
    const paths = (query: Parameters<typeof mirror.captures.list>[0]) =>
      mirror.captures.list(query).requests.map((r) => r.path);

    expect(paths({ tunnelId: 'tun_other' })).toEqual(['/users/1']);
    expect(paths({ tunnelId: 'local_b' })).toEqual(['/users/1']);
    expect(paths({ tunnelId: 'other' })).toEqual(['/users/1']);
    expect(mirror.captures.list({ tunnelId: 'local_a' }).total).toBe(5);
    expect(mirror.captures.list({}, ['tun_other', 'nope']).total).toBe(1);
    expect(mirror.captures.list({ tunnelId: 'ignored' }, ['local_a', 'other']).total).toBe(6);
    expect(paths({ methods: ['post', 'DELETE'] })).toEqual(['/users/1', '/users']);
    expect(paths({ statuses: ['2xx'] })).toEqual(['/users', '/users/1']);
    // No response from the app: the public client got the edge's 502, and that is the status kept.
    expect(paths({ statuses: ['404', '5xx'] })).toEqual(['/refused', '/down', '/boom', '/users/1']);
    expect(paths({ statuses: ['error'] })).toEqual(['/refused', '/down']);
    expect(paths({ path: 'USERS/' })).toEqual(['/users/1', '/users/1']);
    expect(paths({ header: 'x-trace' })).toEqual(['/users']);
    expect(paths({ header: 'X-Trace: abc-1' })).toEqual(['/users']);
    expect(paths({ header: 'x-trace: nope' })).toEqual([]);
    expect(paths({ header: 'retry-after: 5' })).toEqual(['/boom']);
    const durations = all.map((e) => e.request.duration_ms!);
    expect(paths({ minDurationMs: durations[3], maxDurationMs: durations[4] })).toEqual(['/down', '/boom']);
    expect(mirror.captures.list({ methods: ['GET'], statuses: ['2xx', '5xx'] }).total).toBe(4);
    expect(mirror.captures.list({ path: '/down' }).requests[0]).toMatchObject({
      status_code: 502,
      error: 'tunnel offline',
    });
  });

  it('filters by a repeated header on its joined value, and by set-cookie on any one cookie', () => {
    const mirror = open();
    mirror.captures.add(
      exchange({
        path: '/twice',
        requestHeaders: [
          { name: 'X-Tag', value: 'first' },
          { name: 'x-tag', value: 'second' },
        ],
        responseHeaders: [
          { name: 'Set-Cookie', value: 'a=1; Path=/' },
          { name: 'Set-Cookie', value: 'session=xyz; HttpOnly' },
        ],
      }),
      origin,
    );
    mirror.captures.add(exchange({ path: '/other' }), origin);
    const paths = (header: string) => mirror.captures.list({ header }).requests.map((r) => r.path);
    expect(paths('x-tag: second')).toEqual(['/twice']);
    expect(paths('X-TAG: first, sec')).toEqual(['/twice']);
    expect(paths('set-cookie: session=xyz')).toEqual(['/twice']);
    expect(paths('user-agent')).toEqual(['/other']);
    expect(paths('x-tag: third')).toEqual([]);
    expect(paths('x-missing')).toEqual([]);
    // A header name with JSON-path syntax in it is a plain name, never a path expression.
    expect(paths('a"].b: 1')).toEqual([]);
  });

  it('refuses malformed filters with the field named', () => {
    const mirror = open();
    const refusal = (query: object) => {
      try {
        mirror.captures.list(query);
      } catch (error) {
        return error as BridgeError;
      }
      throw new Error('no error');
    };
    expect(refusal({ statuses: ['2x'] })).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: 'statuses' }],
    });
    expect(refusal({ limit: 0 })).toMatchObject({ errors: [{ path: 'limit' }] });
    expect(refusal({ methods: ['GET; DROP'] })).toMatchObject({ errors: [{ path: 'methods' }] });
    expect(refusal({ minDurationMs: -1 })).toBeInstanceOf(BridgeError);
    expect(refusal({ header: ': x' })).toMatchObject({ errors: [{ path: 'header' }] });
  });

  it('searches method, path, headers and text bodies; binary bodies are not indexed', () => {
    const mirror = open();
    const items = {
      jsonBody: exchange({
        method: 'POST',
        path: '/orders',
        requestHeaders: json,
        requestBody: '{"customer":"Zanzibar Ltd"}',
      }),
      gzipped: exchange({
        path: '/report',
        responseHeaders: [...json, { name: 'content-encoding', value: 'gzip' }],
        responseBody: gzipSync('{"total":"quetzalcoatl"}'),
      }),
      binary: exchange({ path: '/logo.png', responseHeaders: png, responseBody: 'zanzibar in a png' }),
      header: exchange({
        path: '/h',
        requestHeaders: [{ name: 'Authorization', value: 'Bearer xylophone' }],
      }),
      form: exchange({
        method: 'PUT',
        path: '/form?name=J%C3%BCrgen+Smith',
        requestHeaders: [{ name: 'content-type', value: 'application/x-www-form-urlencoded' }],
        requestBody: 'city=S%C3%A3o+Paulo',
      }),
    };
    for (const e of Object.values(items)) mirror.captures.add(e, origin);
    const found = (q: string) => mirror.captures.list({ q }).requests.map((r) => r.path);

    expect(found('zanzibar')).toEqual(['/orders']);
    expect(found('zanz')).toEqual(['/orders']);
    expect(found('quetzalcoatl')).toEqual(['/report']);
    expect(found('xylophone')).toEqual(['/h']);
    expect(found('bearer xylo')).toEqual(['/h']);
    expect(found('jürgen')).toEqual(['/form?name=J%C3%BCrgen+Smith']);
    expect(found('paulo')).toEqual(['/form?name=J%C3%BCrgen+Smith']);
    expect(found('put')).toEqual(['/form?name=J%C3%BCrgen+Smith']);
    expect(found('logo png')).toEqual(['/logo.png']);
    expect(found('/orders')).toEqual(['/orders']);
    // FTS5 syntax in the input is text, never an error or an operator.
    for (const q of [
      '"',
      'zanzibar OR xylophone',
      'NEAR(a b)',
      'customer:*',
      '(',
      'a AND',
      '^x',
      '-x',
      '*',
    ]) {
      expect(() => found(q), q).not.toThrow();
    }
    expect(found('zanzibar OR xylophone')).toEqual([]);
    // No word at all: matched in the path instead.
    expect(found('?name=')).toEqual(['/form?name=J%C3%BCrgen+Smith']);
    expect(mirror.captures.list({ q: 'zanzibar', methods: ['GET'] }).total).toBe(0);
  });

  it('pages backwards with before, newest first, with the total of all matches', () => {
    const mirror = open();
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) {
      const e = exchange({ path: `/p${i}`, method: i % 2 ? 'POST' : 'GET' });
      ids.push(e.request.id);
      mirror.captures.add(e, origin);
    }
    const first = mirror.captures.list({ limit: 10 });
    expect(first.total).toBe(25);
    expect(first.requests.map((r) => r.path)).toEqual(Array.from({ length: 10 }, (_, i) => `/p${24 - i}`));
    const second = mirror.captures.list({ limit: 10, before: first.requests.at(-1)!.id });
    expect(second.total).toBe(25);
    expect(second.requests[0]!.path).toBe('/p14');
    const third = mirror.captures.list({ limit: 10, before: second.requests.at(-1)!.id });
    expect(third.requests.map((r) => r.path)).toEqual(['/p4', '/p3', '/p2', '/p1', '/p0']);
    const posts = mirror.captures.list({ methods: ['POST'], limit: 5, before: ids[20] });
    expect(posts.total).toBe(12);
    expect(posts.requests.map((r) => r.path)).toEqual(['/p19', '/p17', '/p15', '/p13', '/p11']);
    expect(mirror.captures.list({ before: 'req_unknown' }).requests).toEqual([]);
    expect(mirror.captures.list({ limit: 5000 }).requests).toHaveLength(25);
  });

  it('evicts the oldest exchanges once the history outgrows its size limit', () => {
    const mirror = open(':memory:', 200_000);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const e = exchange({
        path: `/e${i}`,
        requestHeaders: json,
        responseHeaders: json,
        responseBody: `{"n":"word${i}"}`.padEnd(20_000, ' '),
      });
      ids.push(e.request.id);
      mirror.captures.add(e, origin);
      mirror.captures.flush();
      expect(mirror.captures.stats().bytes).toBeLessThanOrEqual(200_000);
    }
    const { count, bytes } = mirror.captures.stats();
    // Each holds ~40 kB (its 20 kB body, and the same text in the index).
    expect(count).toBeGreaterThanOrEqual(3);
    expect(count).toBeLessThanOrEqual(5);
    expect(bytes).toBeGreaterThan(120_000);
    const kept = mirror.captures.list({ limit: 1000 }).requests.map((r) => r.id);
    expect(kept).toEqual(ids.slice(-count).reverse());
    expect(mirror.captures.get(ids[0]!)).toBeNull();
    // The evicted rows are gone from the index as well.
    expect(mirror.captures.list({ q: 'word0' }).total).toBe(0);
    expect(mirror.captures.list({ q: 'word39' }).total).toBe(1);
  });

  it('under eviction without end, keeps its file bounded and its search right (the index merges whole segments away)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wharf-captures-'));
    dirs.push(dir);
    const file = join(dir, 'mirror.db');
    const mirror = open(file, 400_000);
    const config = new SQLite(file, { readonly: true });
    try {
      expect(config.prepare("SELECT v FROM captured_fts_config WHERE k = 'deletemerge'").get()).toEqual({
        v: 100,
      });
      const pages = () => config.pragma('page_count', { simple: true }) as number;
      const sizes: number[] = [];
      let last = '';
      for (let round = 0; round < 6; round++) {
        for (let i = 0; i < 1_500; i++) {
          const e = exchange({
            path: `/r${round}/n${i}`,
            responseHeaders: json,
            responseBody: `{"word":"w${round}x${i}"}`,
          });
          last = e.request.id;
          mirror.captures.add(e, origin);
        }
        mirror.captures.flush();
        expect(mirror.captures.stats().bytes).toBeLessThanOrEqual(400_000);
        sizes.push(pages());
      }
      // Rounds 3 to 6 write as much as the first two and evict as much as they write: the file
      // stops growing once the history is full (its free pages reused).
      expect(Math.max(...sizes.slice(3))).toBeLessThanOrEqual(1.25 * sizes[2]!);
      // What was evicted is not found; what is kept is.
      expect(mirror.captures.list({ q: 'w0x5' }).total).toBe(0);
      expect(mirror.captures.list({ q: 'w5x1499' }).total).toBe(1);
      expect(mirror.captures.list({ limit: 1 }).requests[0]!.id).toBe(last);
      expect(mirror.integrityCheck()).toBe('ok');
    } finally {
      config.close();
    }
  });

  it('clears everything or one tunnel', () => {
    const mirror = open();
    mirror.captures.add(exchange({ path: '/a', requestHeaders: [{ name: 'x', value: 'findme' }] }), origin);
    mirror.captures.add(exchange({ path: '/b' }), origin);
    mirror.captures.add(exchange({ path: '/c', tunnelId: 'tun_c' }), { ...origin, tunnelKey: 'local_c' });
    expect(mirror.captures.clear(['local_c'])).toBe(1);
    expect(mirror.captures.clear([])).toBe(0);
    expect(mirror.captures.list().requests.map((r) => r.path)).toEqual(['/b', '/a']);
    expect(mirror.captures.stats().count).toBe(2);
    expect(mirror.captures.clear()).toBe(2);
    expect(mirror.captures.stats()).toMatchObject({ count: 0, bytes: 0 });
    expect(mirror.captures.list({ q: 'findme' }).total).toBe(0);
    mirror.captures.add(exchange({ path: '/d' }), origin);
    expect(mirror.captures.list().total).toBe(1);
  });

  it('names the tunnels it holds requests of by subdomain, newest first, with their latest port', () => {
    const mirror = open();
    expect(mirror.captures.tunnels()).toEqual([]);
    mirror.captures.add(exchange({ path: '/a' }), origin);
    mirror.captures.add(exchange({ path: '/b', tunnelId: 'tun_shop' }), {
      ...origin,
      tunnelKey: 'local_s',
      subdomain: 'shop',
      localPort: 4000,
    });
    // The demo tunnel again, reconnected (a new platform id) to another port: one tunnel, now on 3001.
    mirror.captures.add(exchange({ path: '/c', tunnelId: 'tun_again' }), { ...origin, localPort: 3001 });
    // Without a subdomain (an exchange of an unknown origin), it names no tunnel.
    mirror.captures.add(exchange({ path: '/d' }), { ...origin, subdomain: null });
    expect(mirror.captures.tunnels()).toEqual([
      { subdomain: 'demo', localPort: 3001, requests: 2 },
      { subdomain: 'shop', localPort: 4000, requests: 1 },
    ]);
    // The subdomain lists that tunnel's requests, whatever their platform ids.
    expect(mirror.captures.list({ tunnelId: 'demo' }).requests.map((r) => r.path)).toEqual(['/c', '/a']);
    mirror.captures.clear(['shop']);
    expect(mirror.captures.tunnels().map((t) => t.subdomain)).toEqual(['demo']);
  });

  it('keeps the history on disk across reopening, and passes integrity_check', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wharf-captures-'));
    dirs.push(dir);
    const file = join(dir, 'mirror.db');
    const first = open(file);
    const e = exchange({ path: '/kept', requestHeaders: json, requestBody: '{"keep":"persimmon"}' });
    first.captures.add(e, origin);
    first.close();
    // Only this user may read captured traffic.
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const second = open(file);
    expect(second.integrityCheck()).toBe('ok');
    expect(second.captures.get(e.request.id)!.detail.path).toBe('/kept');
    expect(second.captures.list({ q: 'persimmon' }).total).toBe(1);
    expect(second.captures.stats().count).toBe(1);
  });

  it('stores every exchange in SPEC.md §2.4 fields and types', () => {
    const mirror = open();
    const e = exchange({
      path: '/spec',
      requestHeaders: [
        { name: 'Accept', value: 'text/html' },
        { name: 'Accept', value: 'application/json' },
      ],
      responseHeaders: [{ name: 'Content-Type', value: 'text/plain' }],
    });
    mirror.captures.add(e, origin);
    const [listed] = mirror.captures.list({}).requests;
    expect(CapturedRequest.parse(listed)).toEqual(listed);
    expect(listed).toMatchObject({
      status_code: 200,
      remote_addr: '127.0.0.1:50123',
      request_headers: { accept: 'text/html, application/json' },
      response_headers: { 'content-type': 'text/plain' },
    });
    expect(Number.isInteger(listed!.duration_ms)).toBe(true);
    expect(listed!.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(listed).not.toHaveProperty('started_at');
  });

  it('stores the header lists once, and reads the header objects made from them, as the request had them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wharf-captures-'));
    dirs.push(dir);
    const file = join(dir, 'mirror.db');
    const mirror = open(file);
    const headers = {
      requestHeaders: [
        { name: 'X-Tag', value: 'one' },
        { name: 'x-tag', value: 'two' },
      ],
      responseHeaders: [
        { name: 'Set-Cookie', value: 'a=1' },
        { name: 'Set-Cookie', value: 'b=2' },
      ],
    };
    const now = exchange({ path: '/now', ...headers });
    // A row as Wharf wrote it before: the header objects in its JSON too.
    const before = exchange({ path: '/before', ...headers });
    mirror.captures.add(now, origin);
    mirror.captures.add(before, origin, JSON.stringify(before.request));
    mirror.captures.flush();

    const db = new SQLite(file, { readonly: true });
    const rows = db.prepare('SELECT path, json FROM captured_requests ORDER BY seq').all() as Array<{
      path: string;
      json: string;
    }>;
    db.close();
    const stored = JSON.parse(rows[0]!.json) as Record<string, unknown>;
    expect(stored).not.toHaveProperty('request_headers');
    expect(stored).not.toHaveProperty('response_headers');
    expect(stored.request_header_list).toEqual(headers.requestHeaders);
    expect(JSON.parse(rows[1]!.json)).toHaveProperty('request_headers');

    for (const one of [now, before]) {
      const {
        request_body: _requestBody,
        response_body: _responseBody,
        request_body_truncated: _requestTruncated,
        response_body_truncated: _responseTruncated,
        ...request
      } = mirror.captures.get(one.request.id)!.detail;
      // The same fields, values and order as the request the exchange made.
      expect(JSON.stringify(request)).toBe(JSON.stringify(one.request));
      expect(request.request_headers).toEqual({ 'x-tag': 'one, two' });
      expect(request.response_headers).toEqual({ 'set-cookie': 'a=1\nb=2' });
      const [listed] = mirror.captures.list({ path: one.request.path }).requests;
      expect(JSON.stringify(listed)).toBe(JSON.stringify(one.request));
    }
    // The header filter reads both kinds of row alike.
    const paths = (header: string) => mirror.captures.list({ header }).requests.map((r) => r.path);
    expect(paths('x-tag: one, tw')).toEqual(['/before', '/now']);
    expect(paths('set-cookie: b=2')).toEqual(['/before', '/now']);
    expect(paths('x-tag: three')).toEqual([]);
  });
});

describe('the Mirror upgrade to SPEC.md §2.4 fields (user_version 3)', () => {
  /** A database as the Mirror wrote it before: user_version 2, rows in the old shape, indexed for search. */
  function oldDatabase(): string {
    const dir = mkdtempSync(join(tmpdir(), 'wharf-captures-old-'));
    dirs.push(dir);
    const file = join(dir, 'mirror.db');
    // The tables of version 2 are those of version 3 (3 only rewrites rows): made by the Mirror, emptied.
    new Mirror(file).close();
    const db = new SQLite(file);
    const old = (id: string, fields: Record<string, unknown>) => ({
      id,
      tunnel_id: 'tun_aaaaaaaaaaaaaaaaaaaaaa',
      method: 'POST',
      path: '/old',
      url: 'http://demo.tunnel.localhost:8788/old',
      http_version: 'HTTP/1.1',
      status_code: 200,
      duration_ms: 19.16,
      request_headers: [
        { name: 'Content-Type', value: 'application/json' },
        { name: 'X-Tag', value: 'one' },
        { name: 'x-tag', value: 'two' },
      ],
      response_headers: [
        { name: 'Set-Cookie', value: 'a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT' },
        { name: 'Set-Cookie', value: 'b=2' },
      ],
      request_size: 21,
      response_size: 0,
      remote_addr: '127.0.0.1',
      started_at: '2025-01-31T14:02:07.123Z',
      error: null,
      replay_of: null,
      ...fields,
    });
    const rows = [
      old('req_old0000000001', {}),
      old('req_old0000000002', {
        status_code: null,
        duration_ms: null,
        error: 'tunnel offline',
        remote_addr: null,
      }),
      old('req_old0000000003', {
        status_code: null,
        error: 'the public client went away',
        remote_addr: '::1',
      }),
    ];
    const insert = db.prepare(
      `INSERT INTO captured_requests (id, tunnel_id, tunnel_key, subdomain, local_port, host_header, method,
         path, status_code, duration_ms, error, replay_of, bytes, json)
       VALUES (?, ?, 'local_a', 'demo', 3000, 'preserve', 'POST', '/old', ?, ?, ?, NULL, 1000, ?)`,
    );
    for (const row of rows) {
      const seq = Number(
        insert.run(row.id, row.tunnel_id, row.status_code, row.duration_ms, row.error, JSON.stringify(row))
          .lastInsertRowid,
      );
      db.prepare('INSERT INTO captured_bodies VALUES (?, ?, NULL, 0, 0)').run(
        seq,
        Buffer.from('{"fruit":"quince"}'),
      );
      db.prepare('INSERT INTO captured_fts (rowid, method, path, headers, body) VALUES (?, ?, ?, ?, ?)').run(
        seq,
        'POST',
        '/old',
        row.request_headers.map((h) => `${h.name}: ${h.value}`).join('\n'),
        '{"fruit":"quince"}',
      );
    }
    db.prepare('UPDATE capture_stats SET count = ?, bytes = ? WHERE id = 1').run(
      rows.length,
      rows.length * 1000,
    );
    db.pragma('user_version = 2');
    db.close();
    return file;
  }

  it('rewrites stored exchanges in SPEC.md §2.4 fields and types, keeping the raw header lists', () => {
    const mirror = open(oldDatabase());
    expect(mirror.integrityCheck()).toBe('ok');
    const { requests } = mirror.captures.list({});
    expect(requests).toHaveLength(3);
    for (const request of requests) {
      expect(CapturedRequest.parse(request)).toEqual(request);
      expect(request).not.toHaveProperty('started_at');
    }
    const first = mirror.captures.get('req_old0000000001')!.detail;
    expect(first).toMatchObject({
      status_code: 200,
      duration_ms: 19,
      timestamp: '2025-01-31T14:02:07.123Z',
      remote_addr: '127.0.0.1:0',
      request_headers: { 'content-type': 'application/json', 'x-tag': 'one, two' },
      response_headers: { 'set-cookie': 'a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT\nb=2' },
      request_header_list: [
        { name: 'Content-Type', value: 'application/json' },
        { name: 'X-Tag', value: 'one' },
        { name: 'x-tag', value: 'two' },
      ],
    });
    expect(first.response_header_list).toHaveLength(2);
    expect(Buffer.from(first.request_body!, 'base64').toString()).toBe('{"fruit":"quince"}');
    expect(mirror.captures.get('req_old0000000002')!.detail).toMatchObject({
      status_code: 502,
      duration_ms: 0,
      error: 'tunnel offline',
      remote_addr: '0.0.0.0:0',
    });
    expect(mirror.captures.get('req_old0000000003')!.detail).toMatchObject({
      status_code: 499,
      remote_addr: '[::1]:0',
    });
  });

  it('keeps search, filters and the stored count working on the upgraded rows', () => {
    const mirror = open(oldDatabase());
    expect(mirror.captures.list({ q: 'quince' }).total).toBe(3);
    expect(mirror.captures.list({ q: 'x-tag' }).total).toBe(3);
    expect(mirror.captures.list({ statuses: ['5xx'] }).total).toBe(1);
    expect(mirror.captures.list({ statuses: ['error'] }).total).toBe(2);
    expect(mirror.captures.list({ header: 'x-tag: one, two' }).total).toBe(3);
    expect(mirror.captures.list({ minDurationMs: 19, maxDurationMs: 19 }).total).toBe(2);
    expect(mirror.captures.stats().count).toBe(3);
    // New exchanges go in beside the upgraded ones.
    mirror.captures.add(exchange({ path: '/new' }), origin);
    expect(mirror.captures.list({}).total).toBe(4);
  });

  it('then sets the search index to merge evicted rows away a whole segment at a time (user_version 4)', () => {
    const file = oldDatabase();
    open(file).close();
    const db = new SQLite(file, { readonly: true });
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(4);
      expect(db.prepare("SELECT v FROM captured_fts_config WHERE k = 'deletemerge'").get()).toEqual({
        v: 100,
      });
    } finally {
      db.close();
    }
  });

  it('runs once: a database already upgraded is left as it is', () => {
    const file = oldDatabase();
    open(file).close();
    const again = open(file);
    expect(again.captures.get('req_old0000000001')!.detail.duration_ms).toBe(19);
    expect(again.captures.list({}).total).toBe(3);
  });

  it('upgrades rows with unreadable header lists to empty ones rather than failing to open', () => {
    const file = oldDatabase();
    const db = new SQLite(file);
    db.prepare(
      `UPDATE captured_requests SET json = json_set(json, '$.request_headers', json('"not a list"'),
         '$.response_headers', json('[1, {"name": 2}]')) WHERE id = 'req_old0000000001'`,
    ).run();
    db.close();
    const mirror = open(file);
    expect(mirror.captures.get('req_old0000000001')!.detail).toMatchObject({
      request_headers: {},
      request_header_list: [],
      response_headers: {},
      response_header_list: [],
    });
  });
});
