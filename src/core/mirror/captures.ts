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
// - Writing has a time budget (a token bucket: by default 10 % of the time, bursts of up to a second).
//   Under a load that would exceed it, exchanges are still recorded, but without their bodies (flagged
//   as truncated). The Engine runs this store in a writer thread of its own (history-thread.ts), with
//   half of that thread's time as the budget.
// - The history is bounded by size (bodies, headers and indexed text; 256 MiB by default): the oldest
//   exchanges are evicted first. The running total is kept in the database, so two processes sharing
//   the file (`wharf app` and `wharf http`) keep one bound.
// - Rows are listed newest first by the order they were stored; `before` pages backwards from an id.
//
// This file is the writer (batches, budget, eviction) and the store's methods; reading (filters, search,
// pages) is captures-query.ts, the indexed text captures-text.ts, the tables captures-schema.ts.
import { EventEmitter } from 'node:events';
import type SQLite from 'better-sqlite3';
import type { CapturedRequestDetail } from '../../shared/api/tunnels.js';
import type { TrafficPage, TrafficQuery, TrafficTunnel } from '../../shared/bridge.js';
import { parseBridgeInput } from '../../shared/bridge-inputs.js';
import {
  type CapturedExchange,
  type ExchangeBodies,
  Scratch,
  bodyInto,
  bodyLength,
} from '../capture/capture.js';
import { capturedTunnels, listCaptures, tunnelMatch } from './captures-query.js';
import { type RowRequest, requestOfRow, rowJson } from './captures-schema.js';
import { indexedText } from './captures-text.js';

export { CAPTURES_FIFO_MERGES, CAPTURES_MIGRATION, migrateCapturesToSpecFields } from './captures-schema.js';
export { ftsQuery } from './captures-query.js';

const DEFAULT_CAPTURE_LIMIT_BYTES = 256 * 1024 * 1024;
const DEFAULT_FLUSH_MS = 50;
/** One transaction writes at most this many exchanges, or this many body bytes. */
const CHUNK_EXCHANGES = 500;
const CHUNK_BYTES = 1024 * 1024;
/** The share of time writing bodies may take in the long run, and the burst it may take at once. */
const DEFAULT_WRITE_SHARE = 0.1;
const DEFAULT_WRITE_BURST_MS = 1_000;
/** What a row costs beyond its bodies, headers and text (the row, its index entries). */
const ROW_OVERHEAD = 256;
const EMPTY = Buffer.alloc(0);

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
  stored: [RowRequest[]];
  /** A batch could not be written (disk full, database locked too long); it is dropped. */
  failed: [Error];
}

/**
 * An exchange as the store takes it: a CapturedExchange, or what the writer thread makes of one (its
 * request as its row stores it).
 */
export interface StorableExchange
  extends ExchangeBodies, Pick<CapturedExchange, 'requestBodyTruncated' | 'responseBodyTruncated'> {
  request: RowRequest;
}

interface Pending {
  exchange: StorableExchange;
  origin: CaptureOrigin;
  /** The request as JSON, when the caller made it already. */
  json: string | undefined;
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
  /** Where bodies still in parts are joined to be written (see bodyInto). */
  private readonly scratch = { request: new Scratch(), response: new Scratch() };
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

  /**
   * Queues an exchange; it is written with the next batch. `json`: its request as JSON, when the caller
   * has it (the writer thread gets it so from the Engine's).
   */
  add(exchange: StorableExchange, origin: CaptureOrigin, json?: string): void {
    if (this.closed) return;
    this.pending.push({ exchange, origin, json });
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
  flush(): RowRequest[] {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const stored: RowRequest[] = [];
    while (this.pending.length > 0) stored.push(...this.writeChunk());
    return stored;
  }

  /** Writes the next chunk of the queue in one transaction; emits and returns what was stored. */
  private writeChunk(): RowRequest[] {
    let count = 0;
    let bytes = 0;
    while (count < this.pending.length && count < CHUNK_EXCHANGES && bytes < CHUNK_BYTES) {
      const { exchange } = this.pending[count]!;
      bytes += bodyLength(exchange, 'request') + bodyLength(exchange, 'response');
      count += 1;
    }
    const batch = this.pending.splice(0, count);
    if (batch.length === 0) return [];
    let stored: RowRequest[];
    this.chunkStartedAt = performance.now();
    try {
      stored = this.db.transaction(() => {
        const written: RowRequest[] = [];
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
  private write({ exchange, origin, json: given }: Pending): number | null {
    const keepBodies = this.bodiesAllowed(performance.now());
    const request = exchange.request;
    // Joined into buffers of the Mirror's own, not of each exchange's: SQLite copies them at once.
    const requestBody = keepBodies ? bodyInto(exchange, 'request', this.scratch.request) : EMPTY;
    const responseBody = keepBodies ? bodyInto(exchange, 'response', this.scratch.response) : EMPTY;
    const requestSize = bodyLength(exchange, 'request');
    const responseSize = bodyLength(exchange, 'response');
    const json = given ?? rowJson(request);
    const text = indexedText(request, requestBody, responseBody, {
      request: exchange.requestBodyTruncated,
      response: exchange.responseBodyTruncated,
    });
    const bytes =
      ROW_OVERHEAD +
      json.length +
      requestBody.length +
      responseBody.length +
      text.headers.length +
      text.body.length;
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
    const shed = !keepBodies && (requestSize > 0 || responseSize > 0);
    if (shed) this.shedBodies += 1;
    this.statements.insertBodies.run(
      seq,
      requestBody.length > 0 ? requestBody : null,
      responseBody.length > 0 ? responseBody : null,
      // A body not kept counts as cut short: none of its bytes are here.
      exchange.requestBodyTruncated || requestBody.length < requestSize ? 1 : 0,
      exchange.responseBodyTruncated || responseBody.length < responseSize ? 1 : 0,
    );
    this.statements.insertText.run(seq, request.method, text.path, text.headers, text.body);
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
    return listCaptures(
      this.db,
      query,
      tunnels,
      () => (this.statements.stats.get() as { count: number }).count,
    );
  }

  /**
   * The tunnels the history holds requests of, by subdomain (a tunnel keeps it across reconnects, and
   * `list` takes it as `tunnelId`), the most recently used first, each with the local port of its newest
   * request (SQLite takes the bare column from the row of `max(seq)`).
   */
  tunnels(): TrafficTunnel[] {
    this.flush();
    return capturedTunnels(this.db);
  }

  /** One exchange with its bodies and where it came from, or null. */
  get(id: string): StoredCapture | null {
    this.flush();
    const row = this.statements.get.get(id) as RequestRow | undefined;
    if (!row) return null;
    const request = requestOfRow(row.json);
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
