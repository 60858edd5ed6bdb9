// Project logs: every line a deploy or a running app writes, stored as `{ ts, stream, service, line }`
// in the project_logs table (bounded per project, oldest dropped), read back in order, and followed
// live by subscribers (the SSE stream of GET /projects/:id/logs?follow=1). The runtime appends here.
import { EventEmitter } from 'node:events';
import type { LogLine } from '../../shared/api/projects.js';
import type { Transaction } from 'kysely';
import type { Store } from '../store/open.js';
import type { Database } from '../store/schema.js';

export const LOG_LINES_KEPT = 5_000;
export const LOG_LINE_MAX_CHARS = 16 * 1024;

/** A stored line with its sequence number, which orders lines and tells a backlog from what follows. */
export type SequencedLine = LogLine & { seq: number };

export interface LogQuery {
  /** Only lines strictly after this time. */
  since?: string;
  /** At most this many lines: the newest ones. */
  limit: number;
}

/**
 * A line as the store keeps it: cut at LOG_LINE_MAX_CHARS, and a NUL (which a tenant's output may hold,
 * and PostgreSQL's text cannot) shown as U+FFFD, as an undecodable byte is.
 */
function storable(line: string): string {
  const kept = line.length > LOG_LINE_MAX_CHARS ? `${line.slice(0, LOG_LINE_MAX_CHARS)}… (line cut)` : line;
  return kept.includes('\u0000') ? kept.replaceAll('\u0000', '\ufffd') : kept;
}

export class LogStore {
  private readonly followers = new EventEmitter();

  constructor(private readonly db: Store) {
    this.followers.setMaxListeners(0);
  }

  /** Stores lines (in the order given) and hands them to the project's followers. */
  async append(
    projectId: string,
    lines: Array<Omit<LogLine, 'ts'> & { ts?: string }>,
    /** Written in the same transaction as the lines (how far a copied output got, say). */
    alongside?: (trx: Transaction<Database>) => Promise<void>,
  ): Promise<SequencedLine[]> {
    if (lines.length === 0) return [];
    const now = new Date().toISOString();
    const values = lines.map((l) => ({
      project_id: projectId,
      ts: l.ts ?? now,
      stream: l.stream,
      service: l.service,
      line: storable(l.line),
    }));
    const stored = await this.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('project_logs')
        .values(values)
        .returning(['seq', 'ts', 'stream', 'service', 'line'])
        .execute();
      const cutoff = await trx
        .selectFrom('project_logs')
        .select('seq')
        .where('project_id', '=', projectId)
        .orderBy('seq', 'desc')
        .offset(LOG_LINES_KEPT)
        .limit(1)
        .executeTakeFirst();
      if (cutoff) {
        await trx
          .deleteFrom('project_logs')
          .where('project_id', '=', projectId)
          .where('seq', '<=', cutoff.seq)
          .execute();
      }
      await alongside?.(trx);
      return inserted.map(toLine);
    });
    this.followers.emit(projectId, stored);
    return stored;
  }

  /** Lines in the order they were written (oldest first): the newest `limit` after `since`. */
  async read(projectId: string, query: LogQuery): Promise<SequencedLine[]> {
    let select = this.db
      .selectFrom('project_logs')
      .select(['seq', 'ts', 'stream', 'service', 'line'])
      .where('project_id', '=', projectId);
    if (query.since !== undefined) select = select.where('ts', '>', new Date(query.since).toISOString());
    const rows = await select.orderBy('seq', 'desc').limit(query.limit).execute();
    return rows.reverse().map(toLine);
  }

  /** Calls `listener` with each batch of new lines of the project; returns the unsubscribe. */
  follow(projectId: string, listener: (lines: SequencedLine[]) => void): () => void {
    this.followers.on(projectId, listener);
    return () => this.followers.off(projectId, listener);
  }

  /** How many follow a project's lines now (for the platform's own accounting and its tests). */
  followersOf(projectId: string): number {
    return this.followers.listenerCount(projectId);
  }
}

function toLine(row: {
  seq: number;
  ts: string;
  stream: string;
  service: string | null;
  line: string;
}): SequencedLine {
  return {
    seq: row.seq,
    ts: row.ts,
    stream: row.stream as LogLine['stream'],
    service: row.service,
    line: row.line,
  };
}

/** The public shape of a line (API.md §4), without the store's sequence number. */
export function publicLine({ ts, stream, service, line }: SequencedLine): LogLine {
  return { ts, stream, service, line };
}
