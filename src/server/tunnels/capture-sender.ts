// The edge's end of a relay client's capture streams (core/tunnel/capture-records.ts): the records of
// the relay path's exchanges (core/capture/record.ts), gathered for a few milliseconds and written as one
// chunk, on a stream of its own. What waits for the client is bounded: a client that reads slowly (or
// not at all) gets records without their bodies, then none, and the edge's memory stays put.
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import type { Exchange } from '../../core/capture/capture.js';
import { planRecord } from '../../core/capture/record.js';
import { STREAM_HEADERS } from '../../core/tunnel/protocol.js';

/**
 * How long a record waits for others to go with it: a capture stream costs both sides a few hundred µs,
 * so under load it carries a few hundred exchanges; a person watching sees them a moment later.
 */
const GATHER_MS = 20;
/** Past this much unsent, records go without bodies; past the second, they are dropped (and counted). */
const BODIES_BACKLOG = 8 * 1024 * 1024;
const RECORDS_BACKLOG = 16 * 1024 * 1024;

/** Records are written as they come into chunks of this size (or one record's, if larger). */
const CHUNK_BYTES = 64 * 1024;

export class CaptureSender {
  /**
   * The records gathered, written into chunks as each comes: an exchange is let go at once (held until
   * the batch went, it would hold the buffers its bodies were read in, and the collector would pay).
   */
  private full: Buffer[] = [];
  private chunk: Buffer | null = null;
  private chunkUsed = 0;
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
    if (this.chunk === null || this.chunkUsed + record.size > this.chunk.length) {
      if (this.chunk !== null && this.chunkUsed > 0) this.full.push(this.chunk.subarray(0, this.chunkUsed));
      this.chunk = Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, record.size));
      this.chunkUsed = 0;
    }
    record.write(this.chunk, this.chunkUsed);
    this.chunkUsed += record.size;
    this.gatheredBytes += record.size;
    this.timer ??= setTimeout(() => this.flush(), GATHER_MS);
  }

  /**
   * Writes what was gathered on a capture stream of its own, ended with it: a stream per batch, so
   * that none stays open on a connection that is closing (its close waits for its streams).
   */
  private flush(): void {
    this.timer = null;
    if (this.gatheredBytes === 0 || this.session.closed || this.session.destroyed) return;
    const parts = this.full;
    if (this.chunk !== null && this.chunkUsed > 0) parts.push(this.chunk.subarray(0, this.chunkUsed));
    // The chunk goes with the stream's writes: the next record starts a new one.
    const size = this.gatheredBytes;
    this.full = [];
    this.chunk = null;
    this.chunkUsed = 0;
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
    this.unreadBytes += size;
    stream.once('close', () => (this.unreadBytes -= size));
    stream.on('error', () => undefined);
    // The client has nothing to say on it; its answer is read and dropped.
    stream.resume();
    for (const part of parts.slice(0, -1)) stream.write(part);
    stream.end(parts.at(-1));
  }

  private close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.full = [];
    this.chunk = null;
    this.chunkUsed = 0;
    this.gatheredBytes = 0;
  }
}
