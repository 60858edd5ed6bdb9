// The Mirror's traffic history: every exchange a tunnel client captures, with its bodies, kept in the
// Mirror's SQLite so it survives restarts (and a `kill -9`: WAL, one transaction per batch) and can be
// searched offline.
//
// - Writes are batched: exchanges queue up for ~50 ms and are written in one transaction (a big batch
//   in several, with the event loop free in between); `stored` is emitted once a batch is committed.
// - An FTS5 index (contentless, so text is not stored twice) covers method, path, headers and the
//   bodies that are text (by Content-Type, after undoing gzip/deflate/br; the first 128 KiB of each).
//   User input is turned into a safe query: each word becomes a quoted prefix phrase, so FTS5 syntax
//   in it means nothing.
// - Writing shares the tunnel's thread, so it has a time budget (a token bucket: 10 % of the time,
//   bursts of up to a second). Under a load that would exceed it, exchanges are still recorded, but
//   without their bodies (flagged as truncated), so the tunnel keeps its speed.
// - The history is bounded by size (bodies, headers and indexed text; 256 MiB by default): the oldest
//   exchanges are evicted first. The running total is kept in the database, so two processes sharing
//   the file (`wharf app` and `wharf http`) keep one bound.
// - Rows are listed newest first by the order they were stored; `before` pages backwards from an id.
import { EventEmitter } from 'node:events';
import type SQLite from 'better-sqlite3';
import {
  type CapturedRequest,
  type CapturedRequestDetail,
  type HeaderList,
  RemoteAddr,
  headerObject,
} from '../../shared/api/tunnels.js';
import type { TrafficPage, TrafficQuery, TrafficTunnel } from '../../shared/bridge.js';
import {
  type CheckedInput,
  MAX_TRAFFIC_PAGE,
  STATUS_FILTER,
  parseBridgeInput,
} from '../../shared/bridge-inputs.js';
import {
  CLIENT_WENT_AWAY_STATUS,
  type CapturedExchange,
  NO_RESPONSE_STATUS,
  formatAddress,
} from '../capture/capture.js';
import { bodyText, decodeContentEncoding, headerValue, mediaType } from '../capture/har.js';
import { decodeFormComponent } from '../../shared/form.js';

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

export const DEFAULT_CAPTURE_LIMIT_BYTES = 256 * 1024 * 1024;
const DEFAULT_FLUSH_MS = 50;
/** One transaction writes at most this many exchanges, or this many body bytes. */
const CHUNK_EXCHANGES = 500;
const CHUNK_BYTES = 1024 * 1024;
/** The most text of one body that goes into the search index. */
const MAX_INDEXED_CHARS = 128 * 1024;
/** The share of time writing bodies may take in the long run, and the burst it may take at once. */
const DEFAULT_WRITE_SHARE = 0.1;
const DEFAULT_WRITE_BURST_MS = 1_000;
/** What a row costs beyond its bodies, headers and text (the row, its index entries). */
const ROW_OVERHEAD = 256;
export const DEFAULT_PAGE = 200;
const EMPTY = Buffer.alloc(0);
export const MAX_PAGE = MAX_TRAFFIC_PAGE;

/** Where an exchange came from on this machine, kept with it (replay needs the port). */
export interface CaptureOrigin {
  /** The Engine's own id of the tunnel (stable while it runs, unlike the platform's). */
  tunnelKey: string | null;
  subdomain: string | null;
  localPort: number | null;
  hostHeader: string | null;
}

export interface StoredCapture extends CaptureOrigin {
  detail: CapturedRequestDetail;
}

export interface CaptureStoreOptions {
  /** The most the history may hold, in bytes; the oldest exchanges go first. */
  limitBytes?: number;
  /** How long captured exchanges wait to be written together. */
  flushMs?: number;
  /**
   * The time budget of writing bodies: `share` of the time in the long run (0.1), `burstMs` at once
   * (1,000). Past it, exchanges are kept without their bodies.
   */
  writeBudget?: { share: number; burstMs: number };
}

export interface CaptureStoreEvents {
  /** A batch was committed: the exchanges in the order they were stored. */
  stored: [CapturedRequest[]];
  /** A batch could not be written (disk full, database locked too long); it is dropped. */
  failed: [Error];
}

interface Pending {
  exchange: CapturedExchange;
  origin: CaptureOrigin;
}

interface RequestRow {
  seq: number;
  json: string;
  tunnel_key: string | null;
  subdomain: string | null;
  local_port: number | null;
  host_header: string | null;
  request_body: Buffer | null;
  response_body: Buffer | null;
  request_truncated: number | null;
  response_truncated: number | null;
}

export class CaptureStore extends EventEmitter<CaptureStoreEvents> {
  readonly limitBytes: number;
  private readonly flushMs: number;
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly statements;
  private readonly share: number;
  private readonly burstMs: number;
  /** The write budget left, in ms of work (a token bucket refilled at `share` of the time passing). */
  private budgetMs: number;
  private budgetAt = performance.now();
  private chunkStartedAt: number | null = null;
  /** Exchanges kept without their bodies since this store opened, to stay within the budget. */
  shedBodies = 0;

  constructor(
    private readonly db: SQLite.Database,
    options: CaptureStoreOptions = {},
  ) {
    super();
    this.limitBytes = Math.max(1, options.limitBytes ?? DEFAULT_CAPTURE_LIMIT_BYTES);
    this.flushMs = options.flushMs ?? DEFAULT_FLUSH_MS;
    this.share = options.writeBudget?.share ?? DEFAULT_WRITE_SHARE;
    this.burstMs = options.writeBudget?.burstMs ?? DEFAULT_WRITE_BURST_MS;
    this.budgetMs = this.burstMs;
    this.statements = {
      insert: db.prepare(
        `INSERT OR IGNORE INTO captured_requests
           (id, tunnel_id, tunnel_key, subdomain, local_port, host_header, method, path, status_code,
            duration_ms, error, replay_of, bytes, json)
         VALUES (@id, @tunnel_id, @tunnel_key, @subdomain, @local_port, @host_header, @method, @path,
                 @status_code, @duration_ms, @error, @replay_of, @bytes, @json)`,
      ),
      insertBodies: db.prepare(
        `INSERT INTO captured_bodies (seq, request_body, response_body, request_truncated, response_truncated)
         VALUES (?, ?, ?, ?, ?)`,
      ),
      insertText: db.prepare(
        'INSERT INTO captured_fts (rowid, method, path, headers, body) VALUES (?, ?, ?, ?, ?)',
      ),
      stats: db.prepare('SELECT count, bytes FROM capture_stats WHERE id = 1'),
      addStats: db.prepare('UPDATE capture_stats SET count = count + ?, bytes = bytes + ? WHERE id = 1'),
      oldest: db.prepare('SELECT seq, bytes FROM captured_requests ORDER BY seq LIMIT ?'),
      get: db.prepare(
        `SELECT r.seq, r.json, r.tunnel_key, r.subdomain, r.local_port, r.host_header,
                b.request_body, b.response_body, b.request_truncated, b.response_truncated
           FROM captured_requests r LEFT JOIN captured_bodies b ON b.seq = r.seq
          WHERE r.id = ?`,
      ),
    };
  }

  /** Queues an exchange; it is written with the next batch. */
  add(exchange: CapturedExchange, origin: CaptureOrigin): void {
    if (this.closed) return;
    this.pending.push({ exchange, origin });
    this.schedule(this.flushMs);
  }

  private schedule(delayMs: number): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.writeChunk();
      // More than one transaction's worth: the rest after the loop has had a turn.
      if (this.pending.length > 0) this.schedule(0);
    }, delayMs);
    this.timer.unref();
  }

  /** Writes everything queued now (reads and close call it, so they see every exchange). */
  flush(): CapturedRequest[] {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const stored: CapturedRequest[] = [];
    while (this.pending.length > 0) stored.push(...this.writeChunk());
    return stored;
  }

  /** Writes the next chunk of the queue in one transaction; emits and returns what was stored. */
  private writeChunk(): CapturedRequest[] {
    let count = 0;
    let bytes = 0;
    while (count < this.pending.length && count < CHUNK_EXCHANGES && bytes < CHUNK_BYTES) {
      const { exchange } = this.pending[count]!;
      bytes += exchange.requestBody.length + exchange.responseBody.length;
      count += 1;
    }
    const batch = this.pending.splice(0, count);
    if (batch.length === 0) return [];
    let stored: CapturedRequest[];
    this.chunkStartedAt = performance.now();
    try {
      stored = this.db.transaction(() => {
        const written: CapturedRequest[] = [];
        let size = 0;
        for (const item of batch) {
          const row = this.write(item);
          if (row !== null) {
            written.push(item.exchange.request);
            size += row;
          }
        }
        this.statements.addStats.run(written.length, size);
        this.evict();
        return written;
      })();
    } catch (error) {
      this.emit('failed', error as Error);
      return [];
    } finally {
      // The whole transaction is charged, commit included (FTS5 writes its index then).
      const now = performance.now();
      this.refill(now);
      this.budgetMs -= now - this.chunkStartedAt;
      this.chunkStartedAt = null;
    }
    if (stored.length > 0) this.emit('stored', stored);
    return stored;
  }

  private refill(now: number): void {
    this.budgetMs = Math.min(this.burstMs, this.budgetMs + (now - this.budgetAt) * this.share);
    this.budgetAt = now;
  }

  /** Whether the write budget allows an exchange's bodies now (counting the chunk being written). */
  private bodiesAllowed(now: number): boolean {
    this.refill(now);
    return this.budgetMs - (now - (this.chunkStartedAt ?? now)) > 0;
  }

  /** One exchange's rows; answers its size, or null when it was already there. */
  private write({ exchange, origin }: Pending): number | null {
    const keepBodies = this.bodiesAllowed(performance.now());
    const request = exchange.request;
    const requestBody = keepBodies ? exchange.requestBody : EMPTY;
    const responseBody = keepBodies ? exchange.responseBody : EMPTY;
    const json = JSON.stringify(request);
    const headers = [...request.request_header_list, ...request.response_header_list]
      .map(({ name, value }) => `${name}: ${value}`)
      .join('\n');
    const text = [
      indexedText(requestBody, request.request_header_list, exchange.requestBodyTruncated),
      indexedText(responseBody, request.response_header_list, exchange.responseBodyTruncated),
    ]
      .filter((t) => t !== '')
      .join('\n');
    const decodedPath = decodeFormComponent(request.path);
    const path = decodedPath === request.path ? request.path : `${request.path}\n${decodedPath}`;
    const bytes =
      ROW_OVERHEAD + json.length + requestBody.length + responseBody.length + headers.length + text.length;
    const result = this.statements.insert.run({
      id: request.id,
      tunnel_id: request.tunnel_id,
      tunnel_key: origin.tunnelKey,
      subdomain: origin.subdomain,
      local_port: origin.localPort,
      host_header: origin.hostHeader,
      method: request.method.toUpperCase(),
      path: request.path,
      status_code: request.status_code,
      duration_ms: request.duration_ms,
      error: request.error,
      replay_of: request.replay_of,
      bytes,
      json,
    });
    if (result.changes === 0) return null;
    const seq = Number(result.lastInsertRowid);
    const shed = !keepBodies && (exchange.requestBody.length > 0 || exchange.responseBody.length > 0);
    if (shed) this.shedBodies += 1;
    this.statements.insertBodies.run(
      seq,
      requestBody.length > 0 ? requestBody : null,
      responseBody.length > 0 ? responseBody : null,
      // A body not kept counts as cut short: none of its bytes are here.
      exchange.requestBodyTruncated || requestBody.length < exchange.requestBody.length ? 1 : 0,
      exchange.responseBodyTruncated || responseBody.length < exchange.responseBody.length ? 1 : 0,
    );
    this.statements.insertText.run(seq, request.method, path, headers, text);
    return bytes;
  }

  /** Drops the oldest exchanges until the history fits its limit (inside the batch's transaction). */
  private evict(): void {
    const { bytes } = this.statements.stats.get() as { count: number; bytes: number };
    let excess = bytes - this.limitBytes;
    if (excess <= 0) return;
    let cutoff = -1;
    let freed = 0;
    let count = 0;
    // Walk the oldest rows in chunks until enough is freed.
    for (let chunk = 256; excess > 0; chunk *= 2) {
      const start = count;
      const rows = this.statements.oldest.all(start + chunk) as Array<{ seq: number; bytes: number }>;
      for (const row of rows.slice(start)) {
        cutoff = row.seq;
        freed += row.bytes;
        count += 1;
        excess -= row.bytes;
        if (excess <= 0) break;
      }
      if (rows.length < start + chunk) break;
    }
    if (cutoff < 0) return;
    this.db.prepare('DELETE FROM captured_fts WHERE rowid <= ?').run(cutoff);
    this.db.prepare('DELETE FROM captured_bodies WHERE seq <= ?').run(cutoff);
    this.db.prepare('DELETE FROM captured_requests WHERE seq <= ?').run(cutoff);
    this.statements.addStats.run(-count, -freed);
  }

  /**
   * Exchanges matching the query, newest first, and how many match in all. `query.tunnelId` matches a
   * platform tunnel id, an Engine key or a subdomain; `tunnels`, when given, replaces it with several
   * names of one tunnel.
   */
  list(input: TrafficQuery = {}, tunnels?: readonly string[]): TrafficPage {
    this.flush();
    const query = parseBridgeInput('traffic.list', input);
    const filter = sqlFilter(query, tunnels);
    const where = filter.conditions.length ? `WHERE ${filter.conditions.join(' AND ')}` : '';
    const total =
      filter.conditions.length === 0
        ? (this.statements.stats.get() as { count: number }).count
        : (
            this.db
              .prepare(`SELECT count(*) AS n FROM captured_requests r ${where}`)
              .get(...filter.params) as {
              n: number;
            }
          ).n;
    const page = [...filter.conditions];
    const params = [...filter.params];
    if (query.before !== undefined) {
      page.push('r.seq < (SELECT seq FROM captured_requests WHERE id = ?)');
      params.push(query.before);
    }
    const rows = this.db
      .prepare(
        `SELECT r.json FROM captured_requests r ${page.length ? `WHERE ${page.join(' AND ')}` : ''}
          ORDER BY r.seq DESC LIMIT ?`,
      )
      .all(...params, filter.limit) as Array<{ json: string }>;
    return { requests: rows.map((r) => JSON.parse(r.json) as CapturedRequest), total };
  }

  /**
   * The tunnels the history holds requests of, by subdomain (a tunnel keeps it across reconnects, and
   * `list` takes it as `tunnelId`), the most recently used first, each with the local port of its newest
   * request (SQLite takes the bare column from the row of `max(seq)`).
   */
  tunnels(): TrafficTunnel[] {
    this.flush();
    const rows = this.db
      .prepare(
        `SELECT subdomain, local_port AS localPort, count(*) AS requests, max(seq) AS last
           FROM captured_requests WHERE subdomain IS NOT NULL GROUP BY subdomain ORDER BY last DESC`,
      )
      .all() as Array<{ subdomain: string; localPort: number | null; requests: number }>;
    return rows.map(({ subdomain, localPort, requests }) => ({ subdomain, localPort, requests }));
  }

  /** One exchange with its bodies and where it came from, or null. */
  get(id: string): StoredCapture | null {
    this.flush();
    const row = this.statements.get.get(id) as RequestRow | undefined;
    if (!row) return null;
    const request = JSON.parse(row.json) as CapturedRequest;
    return {
      detail: {
        ...request,
        request_body:
          row.request_body && row.request_body.length > 0 ? row.request_body.toString('base64') : null,
        response_body:
          row.response_body && row.response_body.length > 0 ? row.response_body.toString('base64') : null,
        request_body_truncated: row.request_truncated === 1,
        response_body_truncated: row.response_truncated === 1,
      },
      tunnelKey: row.tunnel_key,
      subdomain: row.subdomain,
      localPort: row.local_port,
      hostHeader: row.host_header,
    };
  }

  /**
   * Deletes the history, or one tunnel's part of it (`tunnels`: names of the tunnel, each matching a
   * platform tunnel id, an Engine key or a subdomain). Answers how many exchanges were deleted.
   */
  clear(tunnels?: readonly string[]): number {
    this.flush();
    return this.db.transaction(() => {
      if (tunnels === undefined) {
        const { count } = this.statements.stats.get() as { count: number };
        this.db.exec(
          'DELETE FROM captured_fts; DELETE FROM captured_bodies; DELETE FROM captured_requests; UPDATE capture_stats SET count = 0, bytes = 0 WHERE id = 1;',
        );
        return count;
      }
      if (tunnels.length === 0) return 0;
      const match = tunnelMatch(tunnels);
      const rows = this.db
        .prepare(`SELECT seq, bytes FROM captured_requests WHERE ${match.sql}`)
        .all(...match.params) as Array<{ seq: number; bytes: number }>;
      const deleteText = this.db.prepare('DELETE FROM captured_fts WHERE rowid = ?');
      const deleteBodies = this.db.prepare('DELETE FROM captured_bodies WHERE seq = ?');
      let bytes = 0;
      for (const row of rows) {
        deleteText.run(row.seq);
        deleteBodies.run(row.seq);
        bytes += row.bytes;
      }
      this.db.prepare(`DELETE FROM captured_requests WHERE ${match.sql}`).run(...match.params);
      this.statements.addStats.run(-rows.length, -bytes);
      return rows.length;
    })();
  }

  /** How much the history holds. */
  stats(): { count: number; bytes: number; limitBytes: number } {
    this.flush();
    const { count, bytes } = this.statements.stats.get() as { count: number; bytes: number };
    return { count, bytes, limitBytes: this.limitBytes };
  }

  /** Writes what is queued and takes no more. */
  close(): void {
    this.flush();
    this.closed = true;
  }
}

/** The text of a body for the index: only bodies whose Content-Type is text, decoded. */
function indexedText(body: Buffer, headers: HeaderList, truncated: boolean): string {
  if (body.length === 0) return '';
  const decoded = decodeContentEncoding(body, headers);
  if (decoded.body.length === 0) return '';
  let text = bodyText(decoded.body, headers, { truncated: truncated || decoded.encoding !== null });
  if (text === null) return '';
  if (text.length > MAX_INDEXED_CHARS) text = text.slice(0, MAX_INDEXED_CHARS);
  if (mediaType(headerValue(headers, 'content-type')) === 'application/x-www-form-urlencoded') {
    const form = decodeFormComponent(text);
    if (form !== text) text = `${text}\n${form}`;
  }
  return text;
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
function tunnelMatch(names: readonly string[], alias = ''): { sql: string; params: string[] } {
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
    // The header objects have lower-case names, repeated values joined: one lookup per side.
    const one = (object: string) =>
      `instr(lower(coalesce(json_extract(r.json, '$.${object}.' || json_quote(?)), '')), ?) > 0
        AND json_type(r.json, '$.${object}.' || json_quote(?)) IS NOT NULL`;
    conditions.push(`((${one('request_headers')}) OR (${one('response_headers')}))`);
    params.push(name, value, name, name, value, name);
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
