// An ended exchange as one binary record: how the edge keeps what it captured (ring.ts) and how it
// sends a relay client its captures (core/tunnel/capture-records.ts). A fixed part of numbers and the
// lengths of the variable parts, then those parts: strings, the two heads as the bytes they came in
// (neither side takes them apart to keep or send them), and, when inline, the kept bodies. A record is
// read back into a captured request only when someone asks for it.
//
// One record instead of the objects an exchange is made of: a ring of a thousand exchanges kept as
// objects (a dozen each) is what the garbage collector copied and promoted on every request under load.
import {
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
  size: number;
  write(target: Buffer, at: number): void;
}

/** Plans the record of an ended exchange (Exchange.end with `error`). */
export function planRecord(exchange: Exchange, error: string | null, options: RecordOptions): PlannedRecord {
  const ended = exchange.end(error);
  const { start } = ended;
  const { requestBody, responseBody } = exchange;
  let flags = 0;
  const requestHead = options.requestHead ?? headBytes(start.requestHeaders);
  if (typeof requestHead === 'string') flags |= REQUEST_LIST;
  const responseHead = headBytes(ended.responseHeaders);
  if (typeof responseHead === 'string') flags |= RESPONSE_LIST;
  if (ended.error !== null) flags |= HAS_ERROR;
  if (start.replayOf) flags |= HAS_REPLAY_OF;
  const inline = options.bodies === 'inline';
  if (options.bodies === 'none' ? requestBody.size > 0 : requestBody.truncated) flags |= REQUEST_TRUNCATED;
  if (options.bodies === 'none' ? responseBody.size > 0 : responseBody.truncated) flags |= RESPONSE_TRUNCATED;

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
  // The strings are written as one when they are ASCII (they nearly always are): each native write
  // costs more than the bytes it writes.
  const text = strings.join('');
  const textBytes = Buffer.byteLength(text);
  const ascii = textBytes === text.length;
  const lengths = new Array<number>(PARTS);
  let size = RECORD_FIXED_BYTES;
  for (let i = 0; i < STRINGS; i++)
    size += lengths[i] = ascii ? strings[i]!.length : Buffer.byteLength(strings[i]!);
  size += lengths[Part.requestHead] = byteLength(requestHead);
  size += lengths[Part.responseHead] = byteLength(responseHead);
  size += lengths[Part.requestBody] = inline ? requestBody.keptBytes : 0;
  size += lengths[Part.responseBody] = inline ? responseBody.keptBytes : 0;

  return {
    size,
    write(target, offset) {
      target.writeUInt32BE(size - 4, offset);
      target.writeUInt8(flags, offset + 4);
      target.writeUInt16BE(ended.status, offset + 5);
      target.writeUInt32BE(Math.min(ended.durationMs, 0xffffffff), offset + 7);
      target.writeDoubleBE(ended.startedAt, offset + 11);
      target.writeDoubleBE(ended.requestSize, offset + 19);
      target.writeDoubleBE(ended.responseSize, offset + 27);
      for (let i = 0; i < PARTS; i++) target.writeUInt32BE(lengths[i]!, offset + LENGTHS_AT + 4 * i);
      let at = offset + RECORD_FIXED_BYTES;
      // Joined, a lone surrogate at the end of one string and one at the start of the next would be
      // written as one character: strings that are not ASCII are written one by one.
      if (ascii) at += target.write(text, at, 'latin1');
      else for (let i = 0; i < STRINGS; i++) at += target.write(strings[i]!, at, 'utf8');
      at += writeHead(target, at, requestHead);
      at += writeHead(target, at, responseHead);
      if (inline) {
        at += requestBody.copyTo(target, at);
        responseBody.copyTo(target, at);
      }
    },
  };
}

/** The record of an ended exchange, in a buffer of its own. */
export function encodeRecord(exchange: Exchange, error: string | null, options: RecordOptions): Buffer {
  const planned = planRecord(exchange, error, options);
  const record = Buffer.allocUnsafe(planned.size);
  planned.write(record, 0);
  return record;
}

/** A head as latin1 text (its bytes), or a list as JSON. */
function headBytes(headers: CapturedHeaders): Buffer | RawHead | string {
  if (headers instanceof RawHead) return headers;
  return JSON.stringify(
    typeof headers[0] === 'string' ? headerList(headers as readonly string[]) : (headers as HeaderList),
  );
}

function byteLength(head: Buffer | RawHead | string): number {
  if (head instanceof RawHead) return head.text.length;
  return typeof head === 'string' ? Buffer.byteLength(head) : head.length;
}

function writeHead(target: Buffer, at: number, head: Buffer | RawHead | string): number {
  if (head instanceof RawHead) return target.write(head.text, at, 'latin1');
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
  for (let i = 0; i < STRINGS; i++) {
    strings[i] = record.toString('utf8', at, at + lengths[i]!);
    at += lengths[i]!;
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
  if (!isList) return new RawHead(record.toString('latin1', at, at + length));
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
