// The edge's capture of a tunnel: the last `capacity` exchanges, oldest dropped first, each kept as one
// record (record.ts) in a log of 64 KiB chunks, its bodies apart in one buffer of `bodyBudget` bytes
// written round and round. An exchange whose bodies are written over loses them (flagged truncated)
// while its metadata stays, so 1,000 exchanges of 1 MiB bodies cannot hold 2 GiB.
//
// What the ring holds for an exchange is bytes and a few numbers, never objects: under load a thousand
// exchanges kept as objects were copied and promoted by the garbage collector on every request (a
// quarter of the tunnel's throughput). A captured request is read back from its record when asked for.
import {
  type CapturedExchange,
  EMPTY_BODY,
  type EndedExchange,
  type Exchange,
  capturedRequest,
} from './capture.js';
import { type ReadRecord, planRecord, readRecord, recordId } from './record.js';
import { CAPTURE_LIMITS, type CapturedRequest } from '../../shared/api/tunnels.js';

const CHUNK_BYTES = 64 * 1024;
/** No body kept in the arena (none, not fitted, or written over). */
const NOWHERE = -1;

export class CaptureRing {
  // One entry per exchange kept, in parallel arrays from `first` on (an index moves instead of the
  // arrays shifting on every record; they are cut once that many have gone). Entry `i` is the
  // exchange recorded `firstSeq + i`-th.
  private readonly metaChunk: number[] = [];
  private readonly metaAt: number[] = [];
  private readonly bodyAt: number[] = [];
  private readonly requestKept: number[] = [];
  private readonly responseKept: number[] = [];
  private first = 0;
  private firstSeq = 0;
  /** The record log: chunks[0] is chunk number `chunkFirst`; records are written on in the last one. */
  private readonly chunks: Buffer[] = [];
  private chunkFirst = 0;
  private chunkUsed = 0;
  /** The bodies' buffer, allocated on the first body (its pages are touched only as they are written). */
  private arena: Buffer | null = null;
  private writeAt = 0;
  /** The sequence numbers of the exchanges whose bodies are in the arena, oldest first from placedFirst. */
  private readonly placed: number[] = [];
  private placedFirst = 0;
  private keptBodyBytes = 0;
  total = 0;

  constructor(
    private readonly capacity: number = CAPTURE_LIMITS.perTunnel,
    private readonly bodyBudget = 64 * 1024 * 1024,
  ) {}

  /** Ends an exchange and keeps it (see keep), as a captured exchange. */
  record(exchange: Exchange, error: string | null = null): CapturedExchange {
    this.keep(exchange, error);
    return new RingEntry(this, this.total - 1, exchange.end(error), {
      request: exchange.requestBody.truncated,
      response: exchange.responseBody.truncated,
    });
  }

  /** Ends an exchange and keeps it: its record in the log, its bodies copied into the arena. */
  keep(exchange: Exchange, error: string | null = null): void {
    const planned = planRecord(exchange, error, { bodies: 'apart' });
    if (this.chunks.length === 0 || this.chunkUsed + planned.size > this.chunks.at(-1)!.length) {
      this.chunks.push(Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, planned.size)));
      this.chunkUsed = 0;
    }
    planned.write(this.chunks.at(-1)!, this.chunkUsed);
    const seq = this.total;
    this.metaChunk.push(this.chunkFirst + this.chunks.length - 1);
    this.metaAt.push(this.chunkUsed);
    this.chunkUsed += planned.size;

    const requestLength = exchange.requestBody.keptBytes;
    const responseLength = exchange.responseBody.keptBytes;
    this.requestKept.push(requestLength);
    this.responseKept.push(responseLength);
    const start = requestLength + responseLength > 0 ? this.reserve(requestLength + responseLength) : null;
    if (start === null) this.bodyAt.push(NOWHERE);
    else {
      const arena = this.arena!;
      exchange.requestBody.copyTo(arena, start);
      exchange.responseBody.copyTo(arena, start + requestLength);
      this.bodyAt.push(start);
      this.placed.push(seq);
      this.keptBodyBytes += requestLength + responseLength;
    }
    this.total += 1;
    if (this.size > this.capacity) this.dropOldest();
  }

  get(id: string): CapturedExchange | undefined {
    for (let seq = this.total - 1; seq >= this.firstSeq + this.first; seq--) {
      const { chunk, at } = this.metaOf(seq);
      if (recordId(chunk, at) !== id) continue;
      const read = this.read(seq);
      return new RingEntry(this, seq, read.ended, {
        request: read.requestTruncated,
        response: read.responseTruncated,
      });
    }
    return undefined;
  }

  /** Newest first. */
  list(): CapturedRequest[] {
    const newestFirst: CapturedRequest[] = [];
    for (let seq = this.total - 1; seq >= this.firstSeq + this.first; seq--)
      newestFirst.push(capturedRequest(this.read(seq).ended));
    return newestFirst;
  }

  get size(): number {
    return this.metaAt.length - this.first;
  }

  /** How many of the exchanges kept still have their bodies. */
  get withBodies(): number {
    return this.placed.length - this.placedFirst;
  }

  /** The bytes of bodies kept now. */
  get keptBytes(): number {
    return this.keptBodyBytes;
  }

  /** An exchange's kept body, empty when it has none now (none, dropped, or written over). */
  body(seq: number, which: 'request' | 'response'): Buffer {
    const i = this.indexOf(seq);
    if (i === null || this.bodyAt[i] === NOWHERE) return EMPTY_BODY;
    const start = this.bodyAt[i]! + (which === 'request' ? 0 : this.requestKept[i]!);
    const length = which === 'request' ? this.requestKept[i]! : this.responseKept[i]!;
    return length === 0 ? EMPTY_BODY : this.arena!.subarray(start, start + length);
  }

  private indexOf(seq: number): number | null {
    const i = seq - this.firstSeq;
    return i >= this.first && i < this.metaAt.length ? i : null;
  }

  private metaOf(seq: number): { chunk: Buffer; at: number } {
    const i = seq - this.firstSeq;
    return { chunk: this.chunks[this.metaChunk[i]! - this.chunkFirst]!, at: this.metaAt[i]! };
  }

  private read(seq: number): ReadRecord {
    const { chunk, at } = this.metaOf(seq);
    return readRecord(chunk.subarray(at, at + chunk.readUInt32BE(at) + 4));
  }

  private dropOldest(): void {
    const i = this.first;
    if (this.bodyAt[i] !== NOWHERE) this.evict(this.firstSeq + i);
    this.first += 1;
    // Chunks that hold only dropped records go.
    const oldestChunk = this.metaChunk[this.first] ?? this.chunkFirst + this.chunks.length - 1;
    while (this.chunkFirst < oldestChunk) {
      this.chunks.shift();
      this.chunkFirst += 1;
    }
    if (this.first >= 1024) {
      for (const list of [this.metaChunk, this.metaAt, this.bodyAt, this.requestKept, this.responseKept])
        list.splice(0, this.first);
      this.firstSeq += this.first;
      this.first = 0;
    }
  }

  /** Room for `length` bytes in the arena, taken from the oldest bodies there; null if it cannot fit. */
  private reserve(length: number): number | null {
    if (length > this.bodyBudget) return null;
    this.arena ??= Buffer.allocUnsafeSlow(this.bodyBudget);
    let start = this.writeAt;
    if (start + length > this.bodyBudget) {
      // The end of the arena is skipped: the bodies there are the oldest, and go first.
      while (this.withBodies > 0 && this.placedStart() >= start) this.evictOldestPlaced();
      start = 0;
    }
    const end = start + length;
    // The bodies in the way are the oldest ones: the arena is written in order, round and round.
    while (this.withBodies > 0 && this.placedStart() < end && start < this.placedEnd())
      this.evictOldestPlaced();
    this.writeAt = end;
    return start;
  }

  private placedStart(): number {
    return this.bodyAt[this.placed[this.placedFirst]! - this.firstSeq]!;
  }

  private placedEnd(): number {
    const i = this.placed[this.placedFirst]! - this.firstSeq;
    return this.bodyAt[i]! + this.requestKept[i]! + this.responseKept[i]!;
  }

  private evictOldestPlaced(): void {
    this.evict(this.placed[this.placedFirst]!);
  }

  /** Gives up an exchange's bodies; it is the oldest in the arena (the arena is written in order). */
  private evict(seq: number): void {
    const i = seq - this.firstSeq;
    this.keptBodyBytes -= this.requestKept[i]! + this.responseKept[i]!;
    this.bodyAt[i] = NOWHERE;
    this.placedFirst += 1;
    if (this.placedFirst >= 1024) {
      this.placed.splice(0, this.placedFirst);
      this.placedFirst = 0;
    }
  }
}

/**
 * A kept exchange as a captured one. Its bodies are read from the ring when asked for (views of its
 * buffer: read them at once, or copy them), so they show it losing them later.
 */
class RingEntry implements CapturedExchange {
  private view: CapturedRequest | null = null;
  private readonly requestSize: number;
  private readonly responseSize: number;

  constructor(
    private readonly ring: CaptureRing,
    private readonly seq: number,
    private readonly ended: EndedExchange,
    /** Its bodies were cut at the capture's limit. */
    private readonly cut: { request: boolean; response: boolean },
  ) {
    this.requestSize = ended.requestSize;
    this.responseSize = ended.responseSize;
  }

  get request(): CapturedRequest {
    return (this.view ??= capturedRequest(this.ended));
  }

  get requestBody(): Buffer {
    return this.ring.body(this.seq, 'request');
  }

  get responseBody(): Buffer {
    return this.ring.body(this.seq, 'response');
  }

  /** Cut at the limit, or kept and since given up (a body of bytes that reads empty now). */
  get requestBodyTruncated(): boolean {
    return this.cut.request || (this.requestSize > 0 && this.requestBody.length === 0);
  }

  get responseBodyTruncated(): boolean {
    return this.cut.response || (this.responseSize > 0 && this.responseBody.length === 0);
  }
}
