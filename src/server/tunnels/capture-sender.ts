// The edge's end of a relay client's capture stream (core/tunnel/capture-records.ts): the records of the
// relay path's exchanges (core/capture/record.ts), gathered for a few milliseconds and written as one
// chunk on one stream that lasts as long as the connection. What waits for the client is bounded: a
// client that reads slowly (or not at all) gets records without their bodies, then none, and the edge's
// memory stays put.
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import http2 from 'node:http2';
import type { Exchange } from '../../core/capture/capture.js';
import { planRecord } from '../../core/capture/record.js';
import type { Mux, MuxResponse, MuxStream } from '../../core/tunnel/mux.js';
import { STREAM_HEADERS } from '../../core/tunnel/protocol.js';

/** How long a record waits for others to go with it (a person watching sees it a moment later). */
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
  private timer: NodeJS.Timeout | null = null;
  /**
   * The capture stream, opened with the first batch. One for the connection, not one per batch: a
   * stream costs each side far more than the records of a batch (a stream every 20 ms was most of the
   * capture's cost under load). Ended before the connection closes (see end()).
   */
  private stream: ClientHttp2Stream | MuxStream | null = null;
  /** Nothing more is sent: the connection is going, or the client refused the stream. */
  private ended = false;
  /** Records not sent because the client was too far behind. */
  dropped = 0;

  /** `mux`: the connection's multiplexer, when its client took it: the stream is then the multiplexer's. */
  constructor(
    private readonly session: ClientHttp2Session,
    private readonly mux: Mux | null = null,
  ) {
    session.once('close', () => this.close());
    // The client is going (its GOAWAY): its close waits for the streams open on the connection.
    session.once('goaway', () => this.end());
  }

  /** Bytes waiting to go to the client: gathered, and written on the stream but not yet sent. */
  get backlogBytes(): number {
    return this.gatheredBytes + (this.stream?.writableLength ?? 0);
  }

  /** Sends an ended exchange's record; `requestHead`: its head as the app was sent it (see the codec). */
  send(exchange: Exchange, error: string | null, requestHead: Buffer | null): void {
    if (this.ended || this.session.closed || this.session.destroyed) return;
    const backlog = this.backlogBytes;
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
   * Sends what was gathered and ends the capture stream. The edge calls it before it closes the
   * connection itself (a session's close waits for its open streams, and this one would stay open).
   */
  end(): void {
    if (this.ended) return;
    this.flush();
    this.ended = true;
    this.stream?.end();
  }

  /** Writes what was gathered on the capture stream. */
  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.gatheredBytes === 0 || this.ended || this.session.closed || this.session.destroyed) return;
    const parts = this.full;
    if (this.chunk !== null && this.chunkUsed > 0) parts.push(this.chunk.subarray(0, this.chunkUsed));
    // The chunk goes with the stream's writes: the next record starts a new one.
    this.full = [];
    this.chunk = null;
    this.chunkUsed = 0;
    this.gatheredBytes = 0;
    const stream = this.stream ?? this.open();
    if (stream === null) return;
    for (const part of parts) stream.write(part);
  }

  private open(): ClientHttp2Stream | MuxStream | null {
    let stream: ClientHttp2Stream | MuxStream;
    try {
      stream = this.mux
        ? this.mux.open({ [STREAM_HEADERS.captures]: '1' })
        : this.session.request(
            { ':method': 'POST', ':path': '/', [STREAM_HEADERS.captures]: '1' },
            { endStream: false },
          );
    } catch {
      // The session is going away: what was gathered goes with it.
      return null;
    }
    stream.on('error', () => undefined);
    // A client that takes no captures says so on the multiplexer with its answer.
    stream.on('response', (headers: MuxResponse | { ':status'?: number }) => {
      if (!this.mux || headers[':status'] === 200) return;
      this.ended = true;
      stream.close();
    });
    // The client has nothing to say on it; its answer is read and dropped.
    stream.resume();
    stream.once('close', () => {
      if (this.stream === stream) this.stream = null;
      // A client that refuses the stream takes no captures: none is opened again.
      if (stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM) this.ended = true;
    });
    this.stream = stream;
    return stream;
  }

  private close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.ended = true;
    this.stream = null;
    this.full = [];
    this.chunk = null;
    this.chunkUsed = 0;
    this.gatheredBytes = 0;
  }
}
