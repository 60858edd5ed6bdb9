// Reading the traffic history: a checked query as SQL conditions (tunnel names, methods, status
// classes, path, header, duration, and full-text search through `ftsQuery`), its page newest first with
// the total that matches, and the tunnels the history holds requests of.
import type SQLite from 'better-sqlite3';
import { SET_COOKIE_SEPARATOR } from '../../shared/api/tunnels.js';
import type { TrafficPage, TrafficTunnel } from '../../shared/bridge.js';
import { type CheckedInput, STATUS_FILTER } from '../../shared/bridge-inputs.js';
import { requestOfRow } from './captures-schema.js';

const DEFAULT_PAGE = 200;

/**
 * Exchanges matching a checked query, newest first, and how many match in all (`countAll`: the whole
 * history's count, for a query without conditions). `tunnels`, when given, replaces `query.tunnelId`
 * with several names of one tunnel.
 */
export function listCaptures(
  db: SQLite.Database,
  query: CheckedInput<'traffic.list'>,
  tunnels: readonly string[] | undefined,
  countAll: () => number,
): TrafficPage {
  const filter = sqlFilter(query, tunnels);
  const where = filter.conditions.length ? `WHERE ${filter.conditions.join(' AND ')}` : '';
  const total =
    filter.conditions.length === 0
      ? countAll()
      : (
          db.prepare(`SELECT count(*) AS n FROM captured_requests r ${where}`).get(...filter.params) as {
            n: number;
          }
        ).n;
  const page = [...filter.conditions];
  const params = [...filter.params];
  if (query.before !== undefined) {
    page.push('r.seq < (SELECT seq FROM captured_requests WHERE id = ?)');
    params.push(query.before);
  }
  const rows = db
    .prepare(
      `SELECT r.json FROM captured_requests r ${page.length ? `WHERE ${page.join(' AND ')}` : ''}
        ORDER BY r.seq DESC LIMIT ?`,
    )
    .all(...params, filter.limit) as Array<{ json: string }>;
  return { requests: rows.map((r) => requestOfRow(r.json)), total };
}

/**
 * The tunnels the history holds requests of, by subdomain, the most recently used first, each with the
 * local port of its newest request (SQLite takes the bare column from the row of `max(seq)`).
 */
export function capturedTunnels(db: SQLite.Database): TrafficTunnel[] {
  const rows = db
    .prepare(
      `SELECT subdomain, local_port AS localPort, count(*) AS requests, max(seq) AS last
         FROM captured_requests WHERE subdomain IS NOT NULL GROUP BY subdomain ORDER BY last DESC`,
    )
    .all() as Array<{ subdomain: string; localPort: number | null; requests: number }>;
  return rows.map(({ subdomain, localPort, requests }) => ({ subdomain, localPort, requests }));
}

/**
 * A user's search as an FTS5 query that cannot be misread: each whitespace-separated word becomes a
 * quoted phrase (inner quotes doubled) matched as a prefix, all of them required. Words without a
 * letter or digit are left out (they hold no token); null when nothing is left.
 */
export function ftsQuery(input: string): string | null {
  const words = input
    .split(/\s+/)
    .filter((word) => /[\p{L}\p{N}]/u.test(word))
    .slice(0, 32);
  if (words.length === 0) return null;
  return words.map((word) => `"${word.replace(/"/g, '""')}"*`).join(' ');
}

/** Rows of a tunnel known by any of these names: platform tunnel ids, Engine keys, subdomains. */
export function tunnelMatch(names: readonly string[], alias = ''): { sql: string; params: string[] } {
  const marks = names.map(() => '?').join(', ');
  return {
    sql: `(${alias}tunnel_id IN (${marks}) OR ${alias}tunnel_key IN (${marks}) OR ${alias}subdomain IN (${marks}))`,
    params: [...names, ...names, ...names],
  };
}

/** The WHERE conditions of a checked query (all but `before`), and its page size. */
function sqlFilter(
  query: CheckedInput<'traffic.list'>,
  tunnels: readonly string[] | undefined,
): { conditions: string[]; params: unknown[]; limit: number } {
  const conditions: string[] = [];
  const params: unknown[] = [];

  const tunnel = query.tunnelId;
  const names = tunnels ?? (tunnel === undefined ? [] : [tunnel]);
  if (names.length > 0) {
    const match = tunnelMatch(names, 'r.');
    conditions.push(match.sql);
    params.push(...match.params);
  }
  const { methods, statuses } = query;
  if (methods.length > 0) {
    conditions.push(`r.method IN (${methods.map(() => '?').join(', ')})`);
    params.push(...methods);
  }
  if (statuses.length > 0) {
    const any: string[] = [];
    for (const status of statuses) {
      const match = STATUS_FILTER.exec(status)!;
      if (match[1]) {
        any.push('(r.status_code >= ? AND r.status_code < ?)');
        params.push(Number(match[1]) * 100, Number(match[1]) * 100 + 100);
      } else if (match[2]) {
        any.push('r.status_code = ?');
        params.push(Number(match[2]));
      } else any.push('(r.status_code IS NULL OR r.error IS NOT NULL)');
    }
    conditions.push(`(${any.join(' OR ')})`);
  }
  const { path, header } = query;
  if (path !== undefined) {
    conditions.push('instr(lower(r.path), lower(?)) > 0');
    params.push(path);
  }
  if (header !== undefined) {
    const colon = header.indexOf(':');
    const name = (colon === -1 ? header : header.slice(0, colon)).trim().toLowerCase();
    const value =
      colon === -1
        ? ''
        : header
            .slice(colon + 1)
            .trim()
            .toLowerCase();
    // Matched as the header objects have it (headerObject: names in lower case, repeated values
    // joined in order), from the lists the rows store: null when the name is not there.
    const separator = name === 'set-cookie' ? SET_COOKIE_SEPARATOR : ', ';
    const one = (list: string) =>
      `instr(lower((SELECT group_concat(json_extract(h.value, '$.value'), ? ORDER BY h.key)
          FROM json_each(r.json, '$.${list}') h WHERE lower(json_extract(h.value, '$.name')) = ?)), ?) > 0`;
    conditions.push(`((${one('request_header_list')}) OR (${one('response_header_list')}))`);
    params.push(separator, name, value, separator, name, value);
  }
  const { minDurationMs: min, maxDurationMs: max } = query;
  if (min !== undefined) {
    conditions.push('r.duration_ms >= ?');
    params.push(min);
  }
  if (max !== undefined) {
    conditions.push('r.duration_ms <= ?');
    params.push(max);
  }
  const q = query.q?.trim();
  if (q) {
    const fts = ftsQuery(q);
    if (fts !== null) {
      conditions.push('r.seq IN (SELECT rowid FROM captured_fts WHERE captured_fts MATCH ?)');
      params.push(fts);
    } else {
      // Only punctuation (`/`, `?=`): no word to look up; match it in the path instead.
      conditions.push('instr(r.path, ?) > 0');
      params.push(q);
    }
  }
  return { conditions, params, limit: query.limit ?? DEFAULT_PAGE };
}
