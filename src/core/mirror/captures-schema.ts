// The traffic history's tables in the Mirror (its migration, user_version 2) and the rewrite of
// exchanges stored before SPEC.md §2.4's fields (user_version 3).
import type SQLite from 'better-sqlite3';
import { type CapturedRequest, type HeaderList, RemoteAddr, headerObject } from '../../shared/api/tunnels.js';
import { CLIENT_WENT_AWAY_STATUS, NO_RESPONSE_STATUS, formatAddress } from '../capture/capture.js';

/** The Mirror migration that creates the traffic history (user_version 2). */
export const CAPTURES_MIGRATION = `
  CREATE TABLE captured_requests (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    tunnel_id TEXT NOT NULL,
    tunnel_key TEXT,
    subdomain TEXT,
    local_port INTEGER,
    host_header TEXT,
    method TEXT NOT NULL,
    path TEXT NOT NULL,
    status_code INTEGER,
    duration_ms REAL,
    error TEXT,
    replay_of TEXT,
    bytes INTEGER NOT NULL,
    json TEXT NOT NULL
  );
  CREATE INDEX captured_requests_tunnel_id ON captured_requests (tunnel_id);
  CREATE INDEX captured_requests_tunnel_key ON captured_requests (tunnel_key);
  CREATE INDEX captured_requests_subdomain ON captured_requests (subdomain);
  CREATE TABLE captured_bodies (
    seq INTEGER PRIMARY KEY,
    request_body BLOB,
    response_body BLOB,
    request_truncated INTEGER NOT NULL,
    response_truncated INTEGER NOT NULL
  );
  CREATE VIRTUAL TABLE captured_fts USING fts5 (
    method, path, headers, body,
    content = '', contentless_delete = 1
  );
  CREATE TABLE capture_stats (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    count INTEGER NOT NULL,
    bytes INTEGER NOT NULL
  );
  INSERT INTO capture_stats (id, count, bytes) VALUES (1, 0, 0);
`;

/**
 * The Mirror migration (user_version 4) that lets the search index keep what eviction deleted until a
 * whole segment of it is gone. The history is evicted oldest first, so old segments empty out whole;
 * FTS5's default (rewrite a segment once 10 % of it is deleted) rewrote the largest, oldest segments
 * over and over at the size limit, and the history took ~4,000 exchanges/s there (~8,000 with this,
 * the file ~20 % larger, and bounded).
 */
export const CAPTURES_FIFO_MERGES = `INSERT INTO captured_fts (captured_fts, rank) VALUES ('deletemerge', 100);`;

/**
 * The Mirror migration (user_version 3) that rewrites the stored exchanges in SPEC.md §2.4's fields:
 * `started_at` becomes `timestamp`; `duration_ms` whole milliseconds (the column too); the header lists
 * stay as `request_header_list` / `response_header_list` and `request_headers` / `response_headers`
 * become objects (headerObject's rule); `remote_addr` gains a port (0: it was not recorded); a missing
 * `status_code` becomes the status the public client got (502, or 499 when it went away). The search
 * index is keyed by `seq`, which does not change, and indexes the same header text: it stays as it is.
 */
export function migrateCapturesToSpecFields(db: SQLite.Database): void {
  const rows = db.prepare('SELECT seq, json FROM captured_requests').all() as Array<{
    seq: number;
    json: string;
  }>;
  const update = db.prepare(
    'UPDATE captured_requests SET json = ?, status_code = ?, duration_ms = ? WHERE seq = ?',
  );
  for (const row of rows) {
    const request = specCapturedRequest(JSON.parse(row.json) as Record<string, unknown>);
    update.run(JSON.stringify(request), request.status_code, request.duration_ms, row.seq);
  }
}

/** A captured request stored before SPEC.md §2.4's fields, in those fields (already converted: kept). */
function specCapturedRequest(old: Record<string, unknown>): CapturedRequest {
  const listOf = (value: unknown): HeaderList =>
    Array.isArray(value)
      ? value.filter(
          (h): h is { name: string; value: string } =>
            typeof h === 'object' && h !== null && typeof h.name === 'string' && typeof h.value === 'string',
        )
      : [];
  const requestList = Array.isArray(old.request_headers)
    ? listOf(old.request_headers)
    : listOf(old.request_header_list);
  const responseList = Array.isArray(old.response_headers)
    ? listOf(old.response_headers)
    : listOf(old.response_header_list);
  const error = typeof old.error === 'string' ? old.error : null;
  const address = typeof old.remote_addr === 'string' && old.remote_addr !== '' ? old.remote_addr : '0.0.0.0';
  const { started_at: startedAt, ...rest } = old;
  return {
    ...(rest as unknown as CapturedRequest),
    status_code:
      typeof old.status_code === 'number'
        ? old.status_code
        : error === 'the public client went away'
          ? CLIENT_WENT_AWAY_STATUS
          : NO_RESPONSE_STATUS,
    duration_ms: typeof old.duration_ms === 'number' ? Math.max(0, Math.round(old.duration_ms)) : 0,
    request_headers: headerObject(requestList),
    response_headers: headerObject(responseList),
    request_header_list: requestList,
    response_header_list: responseList,
    remote_addr: RemoteAddr.safeParse(address).success ? address : formatAddress(address, 0),
    timestamp:
      typeof old.timestamp === 'string'
        ? old.timestamp
        : typeof startedAt === 'string'
          ? startedAt
          : new Date(0).toISOString(),
    error,
  };
}

/**
 * A captured request as its row stores it: without `request_headers` and `response_headers`, which are
 * the header lists again (headerObject's rule) and are made anew when the row is read. Rows written
 * before this hold them too; they are made anew for those as well.
 */
export type RowRequest = Omit<CapturedRequest, 'request_headers' | 'response_headers'>;

/** The JSON a row stores of a captured request (see RowRequest). */
export function rowJson(request: RowRequest): string {
  const row: RowRequest = {
    id: request.id,
    method: request.method,
    path: request.path,
    status_code: request.status_code,
    duration_ms: request.duration_ms,
    request_size: request.request_size,
    response_size: request.response_size,
    remote_addr: request.remote_addr,
    timestamp: request.timestamp,
    tunnel_id: request.tunnel_id,
    url: request.url,
    http_version: request.http_version,
    request_header_list: request.request_header_list,
    response_header_list: request.response_header_list,
    error: request.error,
    replay_of: request.replay_of,
  };
  return JSON.stringify(row);
}

/** The captured request of a row's JSON, its header objects made from its lists, fields in API order. */
export function requestOfRow(json: string): CapturedRequest {
  const row = JSON.parse(json) as RowRequest;
  return {
    id: row.id,
    method: row.method,
    path: row.path,
    status_code: row.status_code,
    duration_ms: row.duration_ms,
    request_headers: headerObject(row.request_header_list),
    response_headers: headerObject(row.response_header_list),
    request_size: row.request_size,
    response_size: row.response_size,
    remote_addr: row.remote_addr,
    timestamp: row.timestamp,
    tunnel_id: row.tunnel_id,
    url: row.url,
    http_version: row.http_version,
    request_header_list: row.request_header_list,
    response_header_list: row.response_header_list,
    error: row.error,
    replay_of: row.replay_of,
  };
}
