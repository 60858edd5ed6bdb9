// Capture: one HTTP exchange as a captured request (API.md §7) with its bodies up to 1 MiB each. The
// same module runs on both sides of a tunnel: the edge keeps what it captures in memory, the tunnel
// client writes it to the Mirror. Bodies are observed as they stream by, never buffered whole.
import { randomBytes } from 'node:crypto';
import {
  CAPTURE_LIMITS,
  type CapturedRequest,
  type CapturedRequestDetail,
  type HeaderList,
  headerObject,
} from '../../shared/api/tunnels.js';

/** An empty body: one buffer for all of them. */
export const EMPTY_BODY = Buffer.alloc(0);
const EMPTY = EMPTY_BODY;

/** The first `limit` bytes of a body that streams past, and its whole size. */
export class BodyTap {
  size = 0;
  private readonly chunks: Buffer[] = [];
  private kept = 0;

  constructor(private readonly limit: number = CAPTURE_LIMITS.bodyBytes) {}

  /**
   * Observes a chunk going by. It is kept by reference until `body` copies the kept bytes out once, so
   * the chunk must not change afterwards (Node's streams hand out a fresh buffer for every chunk).
   */
  push(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.kept >= this.limit) return;
    const take = Math.min(chunk.length, this.limit - this.kept);
    this.chunks.push(take === chunk.length ? chunk : chunk.subarray(0, take));
    this.kept += take;
  }

  get truncated(): boolean {
    return this.size > this.kept;
  }

  /** How many bytes are kept (at most the limit). */
  get keptBytes(): number {
    return this.kept;
  }

  /** Copies the kept bytes into `target` at `offset`; returns how many. */
  copyTo(target: Buffer, offset: number): number {
    // TypedArray#set: Buffer#copy's argument handling costs more than the copy of a small body.
    let at = offset;
    for (const chunk of this.chunks) {
      target.set(chunk, at);
      at += chunk.length;
    }
    return at - offset;
  }

  /** The kept bytes, in a buffer of their own (so that no chunk's larger backing memory stays alive). */
  get body(): Buffer {
    return this.kept === 0 ? EMPTY : joined(this.chunks, this.kept);
  }

  /**
   * The kept bytes for a finished exchange: the chunks themselves while they are mostly these bytes
   * (joined when first read, see KeptBody), else copied out now, so that a small body never holds a
   * chunk's larger memory.
   */
  keep(): KeptBody {
    if (this.kept === 0) return KeptBody.EMPTY;
    let backing = 0;
    for (const chunk of this.chunks) backing += chunk.buffer.byteLength;
    return worthItsMemory(this.kept, backing)
      ? new KeptBody(this.chunks.slice(), this.kept)
      : new KeptBody([joined(this.chunks, this.kept)], this.kept);
  }
}

/**
 * Whether `kept` bytes are worth holding on to in the chunks they came in, whose memory is `backing`
 * bytes in all: not when they are a small part of it (they are copied out instead).
 */
function worthItsMemory(kept: number, backing: number): boolean {
  return backing <= 2 * kept + 4096;
}

/** Chunks as one buffer; a chunk that is its own whole allocation as it is. */
function joined(chunks: readonly Buffer[], length: number): Buffer {
  const only = chunks.length === 1 ? chunks[0]! : null;
  if (only && only.byteOffset === 0 && only.buffer.byteLength === only.length) return only;
  return Buffer.concat(chunks, length);
}

/**
 * A finished exchange's body, still in the chunks it came in. Joining them would allocate a buffer as
 * large as the body for every exchange (at 64 KiB, that allocation and the collections it brings
 * doubled what the tunnel client spends per request); a reader that only copies the bytes on (the
 * Mirror into SQLite) joins them into a buffer of its own (`bodyInto`) instead, and the first reader
 * that takes `buffer` gets them joined, once.
 */
export class KeptBody {
  static readonly EMPTY = new KeptBody([], 0);
  private parts: readonly Buffer[];
  private whole: Buffer | null;

  constructor(
    parts: readonly Buffer[],
    readonly length: number,
  ) {
    this.parts = parts;
    this.whole = length === 0 ? EMPTY : parts.length === 1 ? parts[0]! : null;
  }

  get buffer(): Buffer {
    if (this.whole === null) {
      this.whole = joined(this.parts, this.length);
      this.parts = [];
    }
    return this.whole;
  }

  /** The bytes as one buffer: itself when it is one already, else joined into `scratch`. */
  into(scratch: Scratch): Buffer {
    if (this.whole !== null) return this.whole;
    const target = scratch.take(this.length);
    let at = 0;
    for (const part of this.parts) at += part.copy(target, at);
    return target;
  }
}

/** A buffer used over and over, grown as needed: what `bodyInto` joins bodies into. */
export class Scratch {
  private buffer = Buffer.alloc(0);

  /** `length` bytes of it, valid until the next call. */
  take(length: number): Buffer {
    if (this.buffer.length < length)
      this.buffer = Buffer.allocUnsafeSlow(Math.max(length, 2 * this.buffer.length));
    return this.buffer.subarray(0, length);
  }
}

/** How many bytes of an exchange's body are kept (without joining a body still in parts). */
export function bodyLength(exchange: ExchangeBodies, which: 'request' | 'response'): number {
  if (exchange instanceof Captured)
    return (which === 'request' ? exchange.requestKept : exchange.responseKept).length;
  return (which === 'request' ? exchange.requestBody : exchange.responseBody).length;
}

/**
 * An exchange's body as one buffer, for a reader that copies it on at once (it is valid until the
 * next use of `scratch`): a body still in parts is joined into `scratch` rather than into a buffer of
 * its own.
 */
export function bodyInto(exchange: ExchangeBodies, which: 'request' | 'response', scratch: Scratch): Buffer {
  if (exchange instanceof Captured)
    return (which === 'request' ? exchange.requestKept : exchange.responseKept).into(scratch);
  return which === 'request' ? exchange.requestBody : exchange.responseBody;
}

/** `rawHeaders` (`[name, value, name, value…]`) as a list that keeps order and case. */
export function headerList(raw: readonly string[]): HeaderList {
  const list: HeaderList = [];
  for (let i = 0; i + 1 < raw.length; i += 2) list.push({ name: raw[i]!, value: raw[i + 1]! });
  return list;
}

/** Headers of an HTTP/2 frame (or Node's header object) as a list, pseudo-headers left out. */
export function headerListOf(headers: Record<string, string | string[] | number | undefined>): HeaderList {
  const list: HeaderList = [];
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(':') || value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) list.push({ name, value: String(one) });
  }
  return list;
}

/** `<host>:<port>` as SPEC.md §2.4 writes `remote_addr`; an IPv6 host in brackets, as in a URL. */
export function formatAddress(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The peer of a socket as `<host>:<port>`; a socket already closed may have lost it (`0.0.0.0:0`). */
export function peerAddress(socket: { remoteAddress?: string; remotePort?: number }): string {
  return formatAddress(socket.remoteAddress ?? '0.0.0.0', socket.remotePort ?? 0);
}

/** The host part of a `<host>:<port>` address (brackets dropped), for X-Forwarded-For and the like. */
export function hostOfAddress(address: string): string {
  const bracketed = /^\[([^\]]*)\]:\d+$/.exec(address);
  if (bracketed) return bracketed[1]!;
  const colon = address.lastIndexOf(':');
  // A bare IPv6 address or a host without a port (a capture written before ports were kept).
  if (colon < 0 || address.indexOf(':') !== colon || !/^\d+$/.test(address.slice(colon + 1))) return address;
  return address.slice(0, colon);
}

let sequence = 0;
/** Random bytes drawn 4 KiB at a time, as hex: one call per request costs more than the rest of its id. */
let entropy = '';
let entropyAt = 0;
/** The id's time part, made once per millisecond. */
let stampMs = -1;
let stamp = '';

/** Request ids sort by time, like the platform's other ids: base36 milliseconds, a counter, randomness. */
export function newRequestId(): string {
  sequence = (sequence + 1) % 1296;
  if (entropyAt + 12 > entropy.length) {
    entropy = randomBytes(4096).toString('hex');
    entropyAt = 0;
  }
  const random = entropy.slice(entropyAt, (entropyAt += 12));
  const now = Date.now();
  if (now !== stampMs) {
    stampMs = now;
    stamp = `req_${now.toString(36).padStart(9, '0')}`;
  }
  return `${stamp}${sequence.toString(36).padStart(2, '0')}${random}`;
}

/**
 * A message head as it came (its bytes, request or status line first), whose headers are taken apart
 * only when the captured request is read. An exchange keeps the bytes the parser found it in until it
 * is recorded (ring.ts, the capture stream and the Mirror copy them on), so that a head costs no
 * conversion on its way: text is made of it only for a reader of its headers.
 */
export class RawHead {
  readonly bytes: Buffer;

  /** A head's bytes (kept, not copied: they must not change), or its latin1 text. */
  constructor(head: Buffer | string) {
    this.bytes = typeof head === 'string' ? Buffer.from(head, 'latin1') : head;
  }

  get text(): string {
    return this.bytes.toString('latin1');
  }

  /**
   * The head in `bytes`, a view of the chunk it came in. A head that is a small part of a larger
   * chunk is copied, so that an exchange in flight does not hold the rest of that memory (as KeptBody).
   */
  static of(bytes: Buffer): RawHead {
    return new RawHead(worthItsMemory(bytes.length, bytes.buffer.byteLength) ? bytes : Buffer.from(bytes));
  }
}

/** Headers as a list, as names and values alternating, or as the head they came in. */
export type CapturedHeaders = HeaderList | readonly string[] | RawHead;

export interface ExchangeStart {
  tunnelId: string;
  method: string;
  path: string;
  /** The public URL the request was made to. */
  url: string;
  httpVersion: string;
  /** A list, or names and values alternating as parsers give them (turned into a list when read). */
  requestHeaders: CapturedHeaders;
  /** The public client as `<host>:<port>` (see `peerAddress`). */
  remoteAddr: string;
  replayOf?: string | null;
  /** Defaults to a new id. */
  id?: string;
}

/**
 * The status recorded when no response came from the app and nobody said otherwise: what the edge
 * and the tunnel client answer the public client in that case.
 */
export const NO_RESPONSE_STATUS = 502;
/** The public client went away before any response (nginx's "client closed request"). */
export const CLIENT_WENT_AWAY_STATUS = 499;

/** A captured exchange in progress: feed it the bodies and the response, then finish it. */
export class Exchange {
  readonly requestBody = new BodyTap();
  readonly responseBody = new BodyTap();
  readonly id: string;
  private readonly startedMs = performance.now();
  private readonly startedAt = Date.now();
  private status: number | null = null;
  /** The status recorded when no response comes (see noResponse). */
  private fallbackStatus = NO_RESPONSE_STATUS;
  private responseHeaders: CapturedHeaders = [];
  private ended: EndedExchange | null = null;

  constructor(private readonly start: ExchangeStart) {
    this.id = start.id ?? newRequestId();
  }

  /** Whether a response (the app's, or one the tunnel answered with) has been recorded. */
  get responded(): boolean {
    return this.status !== null;
  }

  /** `headers`: a list, or names and values alternating (turned into a list when read). */
  response(status: number, headers: CapturedHeaders): void {
    this.status = status;
    this.responseHeaders = headers;
  }

  /**
   * The status the public client got although no response came (the edge answered it itself, e.g.
   * 504 on a time-out, 499 when the public client went away); a response already recorded stays.
   */
  noResponse(status: number): void {
    if (this.status === null) this.fallbackStatus = status;
  }

  /**
   * Ends the exchange (with why it failed, if it did): what its captured request is made of. The first
   * call ends it; later ones (finish, another reader) get the same.
   */
  end(error: string | null = null): EndedExchange {
    return (this.ended ??= {
      start: this.start,
      id: this.id,
      startedAt: this.startedAt,
      status: this.status ?? this.fallbackStatus,
      responseHeaders: this.responseHeaders,
      durationMs: Math.round(performance.now() - this.startedMs),
      requestSize: this.requestBody.size,
      responseSize: this.responseBody.size,
      error,
    });
  }

  /**
   * Ends the exchange (with why it failed, if it did) and returns the captured request, its bodies in
   * buffers of their own. Its captured request is put together when first read.
   */
  finish(error: string | null = null): CapturedExchange {
    return new Captured(
      this.end(error),
      this.requestBody.keep(),
      this.responseBody.keep(),
      this.requestBody.truncated,
      this.responseBody.truncated,
    );
  }
}

/**
 * A finished exchange. It holds what its captured request needs (never the exchange, whose taps hold
 * the bodies' chunks), and puts that request together when it is first read.
 */
class Captured implements CapturedExchange {
  private view: CapturedRequest | null = null;

  constructor(
    private readonly ended: EndedExchange,
    readonly requestKept: KeptBody,
    readonly responseKept: KeptBody,
    public requestBodyTruncated: boolean,
    public responseBodyTruncated: boolean,
  ) {}

  get request(): CapturedRequest {
    return (this.view ??= capturedRequest(this.ended));
  }

  get requestBody(): Buffer {
    return this.requestKept.buffer;
  }

  get responseBody(): Buffer {
    return this.responseKept.buffer;
  }
}

/**
 * A finished exchange from its parts: what it ended as (Exchange.end, or a record of the tunnel's
 * capture stream) and its kept bodies.
 */
export function capturedExchange(
  ended: EndedExchange,
  bodies: { request: Buffer; response: Buffer; requestTruncated: boolean; responseTruncated: boolean },
): CapturedExchange {
  return new Captured(
    ended,
    new KeptBody([bodies.request], bodies.request.length),
    new KeptBody([bodies.response], bodies.response.length),
    bodies.requestTruncated,
    bodies.responseTruncated,
  );
}

/** What a finished exchange keeps for its captured request. */
export interface EndedExchange {
  start: ExchangeStart;
  id: string;
  startedAt: number;
  status: number;
  responseHeaders: CapturedHeaders;
  durationMs: number;
  requestSize: number;
  responseSize: number;
  error: string | null;
}

/** A header list, from a list, from names and values alternating, or from the head they came in. */
function listOf(headers: CapturedHeaders): HeaderList {
  if (headers instanceof RawHead) return headerListOfHead(headers.text);
  return typeof headers[0] === 'string' ? headerList(headers as readonly string[]) : (headers as HeaderList);
}

/** Spaces and tabs around a header value go (RFC 9110 §5.5); other bytes stay, as the parser keeps them. */
function trimSpaces(value: string): string {
  return value.replace(/^[ \t]+|[ \t]+$/g, '');
}

/** The header lines of a head (its first line, and the blank line that ends it, left out). */
function headerListOfHead(text: string): HeaderList {
  const list: HeaderList = [];
  const lines = text.split('\r\n');
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const last = list.at(-1);
    // A line folded onto the one above continues its value, as the parser read it.
    if (last && (line.startsWith(' ') || line.startsWith('\t'))) {
      last.value = `${last.value} ${trimSpaces(line)}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    list.push({ name: line.slice(0, colon), value: trimSpaces(line.slice(colon + 1)) });
  }
  return list;
}

/** The captured request (API.md §7) of an ended exchange. */
export function capturedRequest(ended: EndedExchange): CapturedRequest {
  const { start } = ended;
  const requestHeaders = listOf(start.requestHeaders);
  const responseHeaders = listOf(ended.responseHeaders);
  return {
    id: ended.id,
    method: start.method,
    path: start.path,
    status_code: ended.status,
    duration_ms: ended.durationMs,
    request_headers: headerObject(requestHeaders),
    response_headers: headerObject(responseHeaders),
    request_size: ended.requestSize,
    response_size: ended.responseSize,
    remote_addr: start.remoteAddr,
    timestamp: new Date(ended.startedAt).toISOString(),
    tunnel_id: start.tunnelId,
    url: start.url,
    http_version: start.httpVersion,
    request_header_list: requestHeaders,
    response_header_list: responseHeaders,
    error: ended.error,
    replay_of: start.replayOf ?? null,
  };
}

export interface CapturedExchange {
  request: CapturedRequest;
  requestBody: Buffer;
  responseBody: Buffer;
  requestBodyTruncated: boolean;
  responseBodyTruncated: boolean;
}

/** An exchange's bodies (as a CapturedExchange has them). */
export type ExchangeBodies = Pick<CapturedExchange, 'requestBody' | 'responseBody'>;

/** The API's detail shape: bodies as base64 (null when empty). */
export function toDetail(exchange: CapturedExchange): CapturedRequestDetail {
  return {
    ...exchange.request,
    request_body: exchange.requestBody.length > 0 ? exchange.requestBody.toString('base64') : null,
    response_body: exchange.responseBody.length > 0 ? exchange.responseBody.toString('base64') : null,
    request_body_truncated: exchange.requestBodyTruncated,
    response_body_truncated: exchange.responseBodyTruncated,
  };
}

/**
 * Reads the head of an HTTP/1.1 response out of raw bytes (an Upgrade's `101 Switching Protocols`,
 * or its refusal), for capturing WebSocket handshakes that travel as a byte stream.
 */
export class ResponseHeadReader {
  private buffered = Buffer.alloc(0);
  done = false;

  /** Feeds bytes; returns the status and headers once the head is complete, else null. */
  push(chunk: Buffer): { status: number; headers: HeaderList } | null {
    if (this.done) return null;
    this.buffered = Buffer.concat([this.buffered, chunk]);
    const end = this.buffered.indexOf('\r\n\r\n');
    if (end < 0) {
      // Not an HTTP head after all (or an absurd one): stop looking.
      if (this.buffered.length > 64 * 1024) this.done = true;
      return null;
    }
    this.done = true;
    const [statusLine = '', ...lines] = this.buffered.subarray(0, end).toString('latin1').split('\r\n');
    const match = /^HTTP\/\d(?:\.\d)? (\d{3})/.exec(statusLine);
    if (!match) return null;
    const headers: HeaderList = [];
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon > 0) headers.push({ name: line.slice(0, colon).trim(), value: line.slice(colon + 1).trim() });
    }
    return { status: Number(match[1]), headers };
  }
}
