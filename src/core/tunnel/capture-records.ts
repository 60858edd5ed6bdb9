// The tunnel's capture streams (the `captures` feature): on the relay path the edge does a connection's
// HTTP work, the client none, so the edge sends the client what it captured, one record per exchange
// (core/capture/record.ts, bodies inline), on streams of their own (STREAM_HEADERS.captures). This reads
// them on the client.
import type { CapturedExchange } from '../capture/capture.js';
import { RecordError, capturedFromRecord, recordSize } from '../capture/record.js';

export { RecordError as CaptureRecordError };

/** Reads records out of a capture stream's chunks, however they were cut. */
export class CaptureRecordReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  /** The exchanges whose records `chunk` completes; throws a CaptureRecordError for a bad record. */
  push(chunk: Buffer): CapturedExchange[] {
    let data = chunk;
    if (this.pendingBytes > 0) {
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      if (this.pendingBytes < 4) return [];
      const first = this.pending[0]!.length >= 4 ? this.pending[0]! : Buffer.concat(this.pending);
      if (this.pendingBytes < recordSize(first, 0)) return [];
      data = Buffer.concat(this.pending, this.pendingBytes);
      this.pending = [];
      this.pendingBytes = 0;
    }
    const out: CapturedExchange[] = [];
    let at = 0;
    while (data.length - at >= 4) {
      const size = recordSize(data, at);
      if (data.length - at < size) break;
      // Bodies are views of the chunk: Node hands each one out fresh, and it is not written again.
      out.push(capturedFromRecord(data.subarray(at, at + size)));
      at += size;
    }
    if (at < data.length) {
      this.pending = [data.subarray(at)];
      this.pendingBytes = data.length - at;
    }
    return out;
  }
}
