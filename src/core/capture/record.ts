// An ended exchange as one binary record: how the edge keeps what it captured (ring.ts) and how it
// sends a relay client its captures (core/tunnel/capture-records.ts). A fixed part of numbers and the
// lengths of the variable parts, then those parts: strings, the two heads as the bytes they came in
// (neither side takes them apart to keep or send them), and, when inline, the kept bodies. A record is
// read back into a captured request only when someone asks for it.
//
// One record instead of the objects an exchange is made of: a ring of a thousand exchanges kept as
// objects (a dozen each) is what the garbage collector copied and promoted on every request under load.
import {
  type BodyTap,
  type CapturedExchange,
  type CapturedHeaders,
  type EndedExchange,
  type Exchange,
  RawHead,
  capturedExchange,
  headerList,
} from './capture.js';
import type { HeaderList } from '../../shared/api/tunnels.js';

const REQUEST_TRUNCATED = 1;
const RESPONSE_TRUNCATED = 2;
/** The request headers are a JSON header list, not a head's bytes. */
const REQUEST_LIST = 4;
const RESPONSE_LIST = 8;
const HAS_ERROR = 16;
const HAS_REPLAY_OF = 32;
/** The strings are ASCII: read as one. Readers that do not know the flag read them as UTF-8, the same. */
const STRINGS_ASCII = 64;

/** The variable parts, in order, each with its length in the fixed part. */
const Part = {
  id: 0,
  tunnelId: 1,
  method: 2,
  path: 3,
  url: 4,
  httpVersion: 5,
  remoteAddr: 6,
  error: 7,
  replayOf: 8,
  requestHead: 9,
  responseHead: 10,
  requestBody: 11,
  responseBody: 12,
} as const;
const PARTS = 13;
const STRINGS = 9;

/** u32 length, u8 flags, u16 status, u32 duration, f64 started at, f64 ×2 sizes, then the part lengths. */
const LENGTHS_AT = 35;
export const RECORD_FIXED_BYTES = LENGTHS_AT + 4 * PARTS;

/**
 * The largest record read: two heads of at most 64 KiB (the framer stops at 16), two bodies of at most
 * 1 MiB (CAPTURE_LIMITS.bodyBytes), and short strings. A longer one is not a record.
 */
export const MAX_RECORD_BYTES = 4 * 1024 * 1024;

/**
 * What of the bodies goes in the record: `inline` (the kept bytes, truncated as the taps say), `none`
 * (left out, flagged truncated when there were any: a client too far behind) or `apart` (kept elsewhere
 * by the caller, truncated as the taps say).
 */
export type RecordBodies = 'inline' | 'none' | 'apart';

export interface RecordOptions {
  /** The request head to record instead of the exchange's own request headers (see tunnel-conduit.ts). */
  requestHead?: Buffer | null;
  bodies: RecordBodies;
}

/** A record to be written: its size, and the writer. */
export interface PlannedRecord {
  readonly size: number;
  write(target: Buffer, at: number): void;
}

/** The strings of an ended exchange's record, and how they are written. */
interface RecordStrings {
  strings: string[];
  /** The strings joined, written as one when they are ASCII (each native write costs more than its bytes). */
  text: string;
  ascii: boolean;
  /** Their byte lengths. */
  lengths: number[];
}

/**
 * The strings of the exchange last planned: the edge plans two records of each exchange in a row (the
 * relay client's, then the ring's), and the second takes the first's.
 */
let lastEnded: EndedExchange | null = null;
let lastStrings: RecordStrings | null = null;

function recordStrings(ended: EndedExchange): RecordStrings {
  if (ended === lastEnded && lastStrings !== null) return lastStrings;
  const { start } = ended;
  const strings = [
    ended.id,
    start.tunnelId,
    start.method,
    start.path,
    start.url,
    start.httpVersion,
    start.remoteAddr,
    ended.error ?? '',
    start.replayOf ?? '',
  ];
  const text = strings.join('');
  const ascii = Buffer.byteLength(text) === text.length;
  const lengths = new Array<number>(STRINGS);
  for (let i = 0; i < STRINGS; i++) lengths[i] = ascii ? strings[i]!.length : Buffer.byteLength(strings[i]!);
  lastEnded = ended;
  return (lastStrings = { strings, text, ascii, lengths });
}

/**
 * A record being planned. There is one, planned afresh by each planRecord and written once at once,
 * never kept: a record costs no objects of its own.
 */
class RecordPlan implements PlannedRecord {
  size = 0;
  private flags = 0;
  private ended!: EndedExchange;
  private strings!: RecordStrings;
  private requestHead: Buffer | string = '';
  private responseHead: Buffer | string = '';
  private requestBody: BodyTap | null = null;
  private responseBody: BodyTap | null = null;
  private readonly lengths = new Array<number>(PARTS).fill(0);

  plan(exchange: Exchange, error: string | null, options: RecordOptions): this {
    const ended = exchange.end(error);
    const { start } = ended;
    const { requestBody, responseBody } = exchange;
    const strings = recordStrings(ended);
    const requestHead = options.requestHead ?? headBytes(start.requestHeaders);
    const responseHead = headBytes(ended.responseHeaders);
    let flags = strings.ascii ? STRINGS_ASCII : 0;
    if (typeof requestHead === 'string') flags |= REQUEST_LIST;
    if (typeof responseHead === 'string') flags |= RESPONSE_LIST;
    if (ended.error !== null) flags |= HAS_ERROR;
    if (start.replayOf) flags |= HAS_REPLAY_OF;
    const inline = options.bodies === 'inline';
    if (options.bodies === 'none' ? requestBody.size > 0 : requestBody.truncated) flags |= REQUEST_TRUNCATED;
    if (options.bodies === 'none' ? responseBody.size > 0 : responseBody.truncated)
      flags |= RESPONSE_TRUNCATED;

    const { lengths } = this;
    let size = RECORD_FIXED_BYTES;
    for (let i = 0; i < STRINGS; i++) size += lengths[i] = strings.lengths[i]!;
    size += lengths[Part.requestHead] = byteLength(requestHead);
    size += lengths[Part.responseHead] = byteLength(responseHead);
    size += lengths[Part.requestBody] = inline ? requestBody.keptBytes : 0;
    size += lengths[Part.responseBody] = inline ? responseBody.keptBytes : 0;
    this.size = size;
    this.flags = flags;
    this.ended = ended;
    this.strings = strings;
    this.requestHead = requestHead;
    this.responseHead = responseHead;
    this.requestBody = inline ? requestBody : null;
    this.responseBody = inline ? responseBody : null;
    return this;
  }

  write(target: Buffer, offset: number): void {
    const { ended, lengths, strings } = this;
    target.writeUInt32BE(this.size - 4, offset);
    target.writeUInt8(this.flags, offset + 4);
    target.writeUInt16BE(ended.status, offset + 5);
    target.writeUInt32BE(Math.min(ended.durationMs, 0xffffffff), offset + 7);
    target.writeDoubleBE(ended.startedAt, offset + 11);
    target.writeDoubleBE(ended.requestSize, offset + 19);
    target.writeDoubleBE(ended.responseSize, offset + 27);
    for (let i = 0; i < PARTS; i++) target.writeUInt32BE(lengths[i]!, offset + LENGTHS_AT + 4 * i);
    let at = offset + RECORD_FIXED_BYTES;
    // Joined, a lone surrogate at the end of one string and one at the start of the next would be
    // written as one character: strings that are not ASCII are written one by one.
    if (strings.ascii) at += target.write(strings.text, at, 'latin1');
    else for (let i = 0; i < STRINGS; i++) at += target.write(strings.strings[i]!, at, 'utf8');
    at += writeHead(target, at, this.requestHead);
    at += writeHead(target, at, this.responseHead);
    if (this.requestBody) at += this.requestBody.copyTo(target, at);
    if (this.responseBody) this.responseBody.copyTo(target, at);
    // Written once: the plan does not hold on to the exchange's bodies and heads until the next one.
    this.requestBody = this.responseBody = null;
    this.requestHead = this.responseHead = '';
  }
}

const plan = new RecordPlan();

/**
 * Plans the record of an ended exchange (Exchange.end with `error`). Write it once, at once: the plan
 * is the next call's.
 */
export function planRecord(exchange: Exchange, error: string | null, options: RecordOptions): PlannedRecord {
  return plan.plan(exchange, error, options);
}

/** The record of an ended exchange, in a buffer of its own. */
export function encodeRecord(exchange: Exchange, error: string | null, options: RecordOptions): Buffer {
  const planned = planRecord(exchange, error, options);
  const record = Buffer.allocUnsafe(planned.size);
  planned.write(record, 0);
  return record;
}

/** A head as its bytes, or a list as JSON. */
function headBytes(headers: CapturedHeaders): Buffer | string {
  if (headers instanceof RawHead) return headers.bytes;
  return JSON.stringify(
    typeof headers[0] === 'string' ? headerList(headers as readonly string[]) : (headers as HeaderList),
  );
}

function byteLength(head: Buffer | string): number {
  return typeof head === 'string' ? Buffer.byteLength(head) : head.length;
}

function writeHead(target: Buffer, at: number, head: Buffer | string): number {
  if (typeof head === 'string') return target.write(head, at, 'utf8');
  target.set(head, at);
  return head.length;
}

/** Bytes that are not a record: a stream that does not carry them, or memory written over. */
export class RecordError extends Error {}

/** What a record holds: the ended exchange, and its inline bodies (empty when kept apart). */
export interface ReadRecord {
  ended: EndedExchange;
  requestBody: Buffer;
  responseBody: Buffer;
  requestTruncated: boolean;
  responseTruncated: boolean;
}

const EMPTY = Buffer.alloc(0);

/** The length of the record that starts at `at` (its whole size, the length field included). */
export function recordSize(data: Buffer, at: number): number {
  const length = data.readUInt32BE(at);
  if (length < RECORD_FIXED_BYTES - 4 || length > MAX_RECORD_BYTES)
    throw new RecordError('a record of a bad length');
  return length + 4;
}

/** Reads one record (exactly its bytes). Inline bodies are views of `record`. */
export function readRecord(record: Buffer): ReadRecord {
  const flags = record.readUInt8(4);
  const lengths = new Array<number>(PARTS);
  let sum = RECORD_FIXED_BYTES;
  for (let i = 0; i < PARTS; i++) sum += lengths[i] = record.readUInt32BE(LENGTHS_AT + 4 * i);
  if (sum !== record.length) throw new RecordError('a record whose parts do not add up');
  const strings = new Array<string>(STRINGS);
  let at = RECORD_FIXED_BYTES;
  if ((flags & STRINGS_ASCII) !== 0) {
    let textLength = 0;
    for (let i = 0; i < STRINGS; i++) textLength += lengths[i]!;
    // One string made, the nine sliced from it.
    const text = record.toString('latin1', at, at + textLength);
    let from = 0;
    for (let i = 0; i < STRINGS; i++) strings[i] = text.slice(from, (from += lengths[i]!));
    at += textLength;
  } else {
    for (let i = 0; i < STRINGS; i++) {
      strings[i] = record.toString('utf8', at, at + lengths[i]!);
      at += lengths[i]!;
    }
  }
  const requestHeaders = headersOf(record, at, lengths[Part.requestHead]!, (flags & REQUEST_LIST) !== 0);
  at += lengths[Part.requestHead]!;
  const responseHeaders = headersOf(record, at, lengths[Part.responseHead]!, (flags & RESPONSE_LIST) !== 0);
  at += lengths[Part.responseHead]!;
  const requestBody =
    lengths[Part.requestBody]! > 0 ? record.subarray(at, (at += lengths[Part.requestBody]!)) : EMPTY;
  const responseBody =
    lengths[Part.responseBody]! > 0 ? record.subarray(at, at + lengths[Part.responseBody]!) : EMPTY;
  const id = strings[Part.id]!;
  return {
    ended: {
      start: {
        id,
        tunnelId: strings[Part.tunnelId]!,
        method: strings[Part.method]!,
        path: strings[Part.path]!,
        url: strings[Part.url]!,
        httpVersion: strings[Part.httpVersion]!,
        remoteAddr: strings[Part.remoteAddr]!,
        requestHeaders,
        replayOf: (flags & HAS_REPLAY_OF) !== 0 ? strings[Part.replayOf]! : null,
      },
      id,
      startedAt: record.readDoubleBE(11),
      status: record.readUInt16BE(5),
      responseHeaders,
      durationMs: record.readUInt32BE(7),
      requestSize: record.readDoubleBE(19),
      responseSize: record.readDoubleBE(27),
      error: (flags & HAS_ERROR) !== 0 ? strings[Part.error]! : null,
    },
    requestBody,
    responseBody,
    requestTruncated: (flags & REQUEST_TRUNCATED) !== 0,
    responseTruncated: (flags & RESPONSE_TRUNCATED) !== 0,
  };
}

/** The id in a record, read without reading the rest. */
export function recordId(data: Buffer, at: number): string {
  return data.toString(
    'utf8',
    at + RECORD_FIXED_BYTES,
    at + RECORD_FIXED_BYTES + data.readUInt32BE(at + LENGTHS_AT),
  );
}

/** A record with inline bodies as a captured exchange (its request put together when read). */
export function capturedFromRecord(record: Buffer): CapturedExchange {
  const read = readRecord(record);
  return capturedExchange(read.ended, {
    request: read.requestBody,
    response: read.responseBody,
    requestTruncated: read.requestTruncated,
    responseTruncated: read.responseTruncated,
  });
}

function headersOf(record: Buffer, at: number, length: number, isList: boolean): CapturedHeaders {
  if (!isList) return new RawHead(record.subarray(at, at + length));
  let list: unknown;
  try {
    list = JSON.parse(record.toString('utf8', at, at + length));
  } catch {
    throw new RecordError('a header list that is not JSON');
  }
  if (!Array.isArray(list) || !list.every(isHeader))
    throw new RecordError('a header list of the wrong shape');
  return list as HeaderList;
}

function isHeader(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const { name, value: text } = value as { name?: unknown; value?: unknown };
  return typeof name === 'string' && typeof text === 'string';
}
