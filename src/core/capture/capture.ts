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

const EMPTY = Buffer.alloc(0);

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
    let at = offset;
    for (const chunk of this.chunks) at += chunk.copy(target, at);
    return at - offset;
  }

  /** The kept bytes, in a buffer of their own (so that no chunk's larger backing memory stays alive). */
  get body(): Buffer {
    if (this.kept === 0) return EMPTY;
    const only = this.chunks.length === 1 ? this.chunks[0]! : null;
    // A chunk that is its own whole allocation is kept as is: copying it would only cost time and GC.
    if (only && only.byteOffset === 0 && only.buffer.byteLength === only.length) return only;
    return Buffer.concat(this.chunks, this.kept);
  }
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
/** Random bytes drawn 4 KiB at a time: one call per request costs more than the rest of its id. */
let entropy = Buffer.alloc(0);
let entropyAt = 0;

/** Request ids sort by time, like the platform's other ids: base36 milliseconds, a counter, randomness. */
export function newRequestId(): string {
  sequence = (sequence + 1) % 1296;
  if (entropyAt + 6 > entropy.length) {
    entropy = randomBytes(4096);
    entropyAt = 0;
  }
  const random = entropy.toString('hex', entropyAt, entropyAt + 6);
  entropyAt += 6;
  return `req_${Date.now().toString(36).padStart(9, '0')}${sequence.toString(36).padStart(2, '0')}${random}`;
}

export interface ExchangeStart {
  tunnelId: string;
  method: string;
  path: string;
  /** The public URL the request was made to. */
  url: string;
  httpVersion: string;
  requestHeaders: HeaderList;
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
  private readonly startedMs = performance.now();
  private readonly record: CapturedRequest;
  private status: number | null = null;
  private finished = false;

  constructor(start: ExchangeStart) {
    this.record = {
      id: start.id ?? newRequestId(),
      method: start.method,
      path: start.path,
      status_code: NO_RESPONSE_STATUS,
      duration_ms: 0,
      request_headers: headerObject(start.requestHeaders),
      response_headers: {},
      request_size: 0,
      response_size: 0,
      remote_addr: start.remoteAddr,
      timestamp: new Date().toISOString(),
      tunnel_id: start.tunnelId,
      url: start.url,
      http_version: start.httpVersion,
      request_header_list: start.requestHeaders,
      response_header_list: [],
      error: null,
      replay_of: start.replayOf ?? null,
    };
  }

  get id(): string {
    return this.record.id;
  }

  /** Whether a response (the app's, or one the tunnel answered with) has been recorded. */
  get responded(): boolean {
    return this.status !== null;
  }

  response(status: number, headers: HeaderList): void {
    this.status = status;
    this.record.status_code = status;
    this.record.response_header_list = headers;
    this.record.response_headers = headerObject(headers);
  }

  /**
   * The status the public client got although no response came (the edge answered it itself, e.g.
   * 504 on a time-out, 499 when the public client went away); a response already recorded stays.
   */
  noResponse(status: number): void {
    if (this.status === null) this.record.status_code = status;
  }

  /**
   * Ends the exchange (with why it failed, if it did) and returns the captured request. Its bodies are
   * buffers of their own, or, given `store`, wherever the store copies them (null: not kept).
   */
  finish(error: string | null = null, store?: BodyStore): CapturedExchange {
    if (!this.finished) {
      this.finished = true;
      this.record.duration_ms = Math.round(performance.now() - this.startedMs);
      this.record.request_size = this.requestBody.size;
      this.record.response_size = this.responseBody.size;
      this.record.error = error;
    }
    const stored = store ? store(this.requestBody, this.responseBody) : undefined;
    const dropped = stored === null;
    return {
      request: { ...this.record },
      requestBody: stored ? stored.request : dropped ? EMPTY : this.requestBody.body,
      responseBody: stored ? stored.response : dropped ? EMPTY : this.responseBody.body,
      requestBodyTruncated: this.requestBody.truncated || (dropped && this.requestBody.keptBytes > 0),
      responseBodyTruncated: this.responseBody.truncated || (dropped && this.responseBody.keptBytes > 0),
    };
  }
}

/** Copies an exchange's kept bodies somewhere; null when it cannot keep them. */
export type BodyStore = (request: BodyTap, response: BodyTap) => { request: Buffer; response: Buffer } | null;

export interface CapturedExchange {
  request: CapturedRequest;
  requestBody: Buffer;
  responseBody: Buffer;
  requestBodyTruncated: boolean;
  responseBodyTruncated: boolean;
}

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
 * The last `capacity` exchanges, oldest dropped first. Their bodies share a byte budget: they are
 * copied into one buffer of that size written round and round, and an exchange whose bytes are written
 * over loses its bodies (flagged truncated) while its metadata stays, so 1,000 exchanges of 1 MiB
 * bodies cannot hold 2 GiB. One buffer instead of one per body: under load, a body per request would
 * be allocated, kept for a while and let go, and the garbage collector would pay for each.
 * The bodies of a kept exchange are views into that buffer: read them at once (a copy, if they must
 * outlive the next exchange recorded).
 */
export class CaptureRing {
  private readonly items: CapturedExchange[] = [];
  private readonly byId = new Map<string, CapturedExchange>();
  /** Allocated on the first body (its pages are touched only as they are written). */
  private arena: Buffer | null = null;
  private writeAt = 0;
  /** The exchanges whose bodies are in the arena, in the order they were written (oldest first). */
  private readonly placed: Array<{ exchange: CapturedExchange; start: number; end: number }> = [];
  total = 0;

  constructor(
    private readonly capacity: number = CAPTURE_LIMITS.perTunnel,
    private readonly bodyBudget = 64 * 1024 * 1024,
  ) {}

  /** Finishes an exchange and keeps it, with its bodies copied into the ring's buffer. */
  record(exchange: Exchange, error: string | null = null): CapturedExchange {
    const at: { range?: { start: number; end: number } } = {};
    const captured = exchange.finish(error, (request, response) => {
      const length = request.keptBytes + response.keptBytes;
      if (length === 0) return { request: EMPTY, response: EMPTY };
      const range = this.reserve(length);
      if (!range) return null;
      at.range = range;
      const arena = this.arena!;
      const split = range.start + request.copyTo(arena, range.start);
      response.copyTo(arena, split);
      return { request: arena.subarray(range.start, split), response: arena.subarray(split, range.end) };
    });
    if (at.range) this.placed.push({ exchange: captured, ...at.range });
    this.items.push(captured);
    this.byId.set(captured.request.id, captured);
    this.total += 1;
    while (this.items.length > this.capacity) {
      const dropped = this.items.shift()!;
      this.byId.delete(dropped.request.id);
      // Written in the order they were kept: a dropped exchange still in the arena is the oldest there.
      if (this.placed[0]?.exchange === dropped) this.placed.shift();
    }
    return captured;
  }

  get(id: string): CapturedExchange | undefined {
    return this.byId.get(id);
  }

  /** Newest first. */
  list(): CapturedRequest[] {
    return this.items.map((e) => e.request).reverse();
  }

  get size(): number {
    return this.items.length;
  }

  /** How many of the exchanges kept still have their bodies. */
  get withBodies(): number {
    return this.placed.length;
  }

  /** Room for `length` bytes in the arena, taken from the oldest bodies there; null if it cannot fit. */
  private reserve(length: number): { start: number; end: number } | null {
    if (length > this.bodyBudget) return null;
    this.arena ??= Buffer.allocUnsafeSlow(this.bodyBudget);
    let start = this.writeAt;
    if (start + length > this.bodyBudget) {
      // The end of the arena is skipped: the bodies there are the oldest, and go first.
      while (this.placed.length > 0 && this.placed[0]!.start >= start) this.evictOldest();
      start = 0;
    }
    const end = start + length;
    // The bodies in the way are the oldest ones: the arena is written in order, round and round.
    while (this.placed.length > 0 && this.placed[0]!.start < end && start < this.placed[0]!.end) {
      this.evictOldest();
    }
    this.writeAt = end;
    return { start, end };
  }

  private evictOldest(): void {
    const old = this.placed.shift()!.exchange;
    if (old.requestBody.length > 0) old.requestBodyTruncated = true;
    if (old.responseBody.length > 0) old.responseBodyTruncated = true;
    old.requestBody = EMPTY;
    old.responseBody = EMPTY;
  }
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
