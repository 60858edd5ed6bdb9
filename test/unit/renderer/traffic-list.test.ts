// The live list: the first page, live batches merged once per frame (newest on top, never twice, held
// behind the "N new" pill while the user looks further down), and older pages below.
import { describe, expect, it } from 'vitest';
import { type CapturedRequest, headerObject } from '../../../src/shared/api/tunnels.js';
import {
  EMPTY_LIST,
  addFromMirror,
  appendOlder,
  follow,
  fromFirstPage,
  ingest,
  removeAll,
  type LiveList,
} from '../../../src/renderer/src/lib/traffic-list.js';

let serial = 0;
function request(extra: Partial<CapturedRequest> = {}): CapturedRequest {
  serial += 1;
  const fields: CapturedRequest = {
    request_headers: {},
    response_headers: {},
    id: `req_${String(serial).padStart(11, '0')}`,
    tunnel_id: 'tun_00000001',
    method: 'GET',
    path: `/r/${serial}`,
    url: `http://demo.tunnel.localhost:8788/r/${serial}`,
    http_version: 'HTTP/1.1',
    status_code: 200,
    duration_ms: 5,
    request_header_list: [],
    response_header_list: [],
    request_size: 0,
    response_size: 2,
    remote_addr: '203.0.113.7:53211',
    timestamp: new Date(1_700_000_000_000 + serial).toISOString(),
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

const ids = (rows: CapturedRequest[]) => rows.map((r) => r.path);

function loaded(count: number, limit = 200): { list: LiveList; known: Set<string>; rows: CapturedRequest[] } {
  const rows = Array.from({ length: count }, () => request()).reverse();
  const known = new Set<string>();
  return { list: fromFirstPage({ requests: rows, total: count }, limit, known), known, rows };
}

describe('fromFirstPage', () => {
  it('takes the page as it comes (newest first) and the total for the scroll height', () => {
    const known = new Set(['req_stale']);
    const page = [request(), request()].reverse();
    const list = fromFirstPage({ requests: page, total: 5_000 }, 2, known);
    expect(list).toEqual({ rows: page, total: 5_000, held: [], following: true, exhausted: false });
    expect([...known]).toEqual(page.map((r) => r.id));
  });

  it('knows the history ended when the page is not full', () => {
    const { list } = loaded(3);
    expect(list.exhausted).toBe(true);
    expect(list.total).toBe(3);
  });
});

describe('ingest', () => {
  it('puts a batch (oldest first, as stored) on top, newest first, and counts it', () => {
    const { list, known } = loaded(2);
    const a = request();
    const b = request();
    const { list: next, askMirror } = ingest(list, [a, b], {}, known);
    expect(ids(next.rows).slice(0, 2)).toEqual([b.path, a.path]);
    expect(next.total).toBe(4);
    expect(askMirror).toBe(false);
  });

  it('never adds an exchange twice', () => {
    const { list, known, rows } = loaded(2);
    const a = request();
    const once = ingest(list, [a, rows[0]!], {}, known).list;
    const twice = ingest(once, [a], {}, known).list;
    expect(twice.rows).toHaveLength(3);
    expect(twice).toBe(once);
  });

  it('leaves out what the query does not match, and asks the Mirror about full-text search', () => {
    const { list, known } = loaded(0);
    const post = request({ method: 'POST' });
    const get = request();
    const filtered = ingest(list, [post, get], { methods: ['POST'] }, known);
    expect(ids(filtered.list.rows)).toEqual([post.path]);
    const searched = ingest(
      filtered.list,
      [request({ method: 'POST' })],
      { methods: ['POST'], q: 'invoice' },
      known,
    );
    expect(searched.askMirror).toBe(true);
    expect(searched.list.rows).toHaveLength(1);
  });

  it('holds new rows while the user is scrolled away, and lets them in on return', () => {
    const { list, known } = loaded(2);
    const away = follow(list, false);
    const a = request();
    const b = request();
    const held = ingest(away, [a], {}, known).list;
    const more = ingest(held, [b], {}, known).list;
    expect(ids(more.held)).toEqual([b.path, a.path]);
    expect(more.rows).toBe(list.rows);
    expect(more.total).toBe(2);
    const back = follow(more, true);
    expect(ids(back.rows).slice(0, 2)).toEqual([b.path, a.path]);
    expect(back).toMatchObject({ held: [], total: 4, following: true });
  });

  it('returns the same list when following does not change', () => {
    const { list } = loaded(1);
    expect(follow(list, true)).toBe(list);
    const away = follow(list, false);
    expect(follow(away, false)).toBe(away);
  });

  it('keeps 100,000 rows and merges a batch into them', () => {
    const { list, known } = loaded(0);
    let current = list;
    const batch = Array.from({ length: 1_000 }, () => request());
    for (let i = 0; i < 100; i++) {
      current = ingest(
        current,
        batch.map((r, j) => ({ ...r, id: `${r.id}-${i}-${j}` })),
        {},
        known,
      ).list;
    }
    expect(current.rows).toHaveLength(100_000);
    expect(current.total).toBe(100_000);
  });
});

describe('addFromMirror', () => {
  it('adds the rows of a refreshed newest page that the list does not have', () => {
    const { list, known, rows } = loaded(2);
    const fresh = request();
    const next = addFromMirror(list, { requests: [fresh, ...rows], total: 3 }, known);
    expect(ids(next.rows)).toEqual([fresh.path, ...ids(rows)]);
    expect(next.total).toBe(3);
  });
});

describe('appendOlder', () => {
  it('appends an older page below and counts what is left by the Mirror’s total', () => {
    const { list, known } = loaded(2, 2);
    const older = [request(), request()].reverse();
    const next = appendOlder({ ...list, total: 10 }, { requests: older, total: 10 }, 2, known);
    expect(next.rows).toHaveLength(4);
    expect(next.total).toBe(10);
    expect(next.exhausted).toBe(false);
  });

  it('ends the list at its last row when the Mirror has nothing older', () => {
    const { list, known } = loaded(2, 2);
    const next = appendOlder({ ...list, total: 10 }, { requests: [request()], total: 10 }, 2, known);
    expect(next).toMatchObject({ exhausted: true, total: 3 });
  });

  it('does not count held rows twice', () => {
    const { list, known } = loaded(2, 2);
    const away = ingest(follow(list, false), [request()], {}, known).list;
    const next = appendOlder(away, { requests: [request(), request()], total: 50 }, 2, known);
    expect(next.total).toBe(49);
  });
});

describe('removeAll', () => {
  it('empties the list and forgets its ids', () => {
    const { known } = loaded(3);
    expect(removeAll(known)).toEqual({ ...EMPTY_LIST, exhausted: true });
    expect(known.size).toBe(0);
  });
});
