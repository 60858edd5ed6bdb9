// The edge's end of a relay client's capture streams (core/tunnel/capture-records.ts): the records of
// the relay path's exchanges (core/capture/record.ts), gathered for a few milliseconds and written as one
// chunk, on a stream of its own. What waits for the client is bounded: a client that reads slowly (or
// not at all) gets records without their bodies, then none, and the edge's memory stays put.
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import type { Exchange } from '../../core/capture/capture.js';
import { type PlannedRecord, planRecord } from '../../core/capture/record.js';
import { STREAM_HEADERS } from '../../core/tunnel/protocol.js';

/**
 * How long a record waits for others to go with it: a capture stream costs both sides a few hundred µs,
 * so under load it carries a few hundred exchanges; a person watching sees them a moment later.
 */
const GATHER_MS = 20;
/** Past this much unsent, records go without bodies; past the second, they are dropped (and counted). */
const BODIES_BACKLOG = 8 * 1024 * 1024;
const RECORDS_BACKLOG = 16 * 1024 * 1024;

export class CaptureSender {
  private gathered: PlannedRecord[] = [];
  private gatheredBytes = 0;
  /** Bytes written on capture streams the client has not taken whole yet. */
  private unreadBytes = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Records not sent because the client was too far behind. */
  dropped = 0;

  constructor(private readonly session: ClientHttp2Session) {
    session.once('close', () => this.close());
  }

  /** Sends an ended exchange's record; `requestHead`: its head as the app was sent it (see the codec). */
  send(exchange: Exchange, error: string | null, requestHead: Buffer | null): void {
    if (this.session.closed || this.session.destroyed) return;
    const backlog = this.gatheredBytes + this.unreadBytes;
    if (backlog > RECORDS_BACKLOG) {
      this.dropped += 1;
      return;
    }
    const record = planRecord(exchange, error, {
      requestHead,
      bodies: backlog <= BODIES_BACKLOG ? 'inline' : 'none',
    });
    this.gathered.push(record);
    this.gatheredBytes += record.size;
    this.timer ??= setTimeout(() => this.flush(), GATHER_MS);
  }

  /**
   * Writes what was gathered on a capture stream of its own, ended with it: a stream per batch, so
   * that none stays open on a connection that is closing (its close waits for its streams).
   */
  private flush(): void {
    this.timer = null;
    if (this.gathered.length === 0 || this.session.closed || this.session.destroyed) return;
    const data = Buffer.allocUnsafe(this.gatheredBytes);
    let at = 0;
    for (const record of this.gathered) {
      record.write(data, at);
      at += record.size;
    }
    this.gathered = [];
    this.gatheredBytes = 0;
    let stream: ClientHttp2Stream;
    try {
      stream = this.session.request(
        { ':method': 'POST', ':path': '/', [STREAM_HEADERS.captures]: '1' },
        { endStream: false },
      );
    } catch {
      // The session is going away: what was gathered goes with it.
      return;
    }
    this.unreadBytes += data.length;
    stream.once('close', () => (this.unreadBytes -= data.length));
    stream.on('error', () => undefined);
    // The client has nothing to say on it; its answer is read and dropped.
    stream.resume();
    stream.end(data);
  }

  private close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.gathered = [];
    this.gatheredBytes = 0;
  }
}
