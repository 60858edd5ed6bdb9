// Capture: one HTTP exchange as a captured request (API.md §7) with its bodies up to 1 MiB each. The
// same module runs on both sides of a tunnel: the edge keeps what it captures in memory, the tunnel
// client writes it to the Mirror. Bodies are observed as they stream by, never buffered whole.
import { randomBytes } from 'node:crypto';
import {
  CAPTURE_LIMITS,
  type CapturedRequest,
  type CapturedRequestDetail,
  type HeaderList,
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
  remoteAddr: string | null;
  replayOf?: string | null;
  /** Defaults to a new id. */
  id?: string;
}

/** A captured exchange in progress: feed it the bodies and the response, then finish it. */
export class Exchange {
  readonly requestBody = new BodyTap();
  readonly responseBody = new BodyTap();
  private readonly startedMs = performance.now();
  private readonly record: CapturedRequest;

  constructor(start: ExchangeStart) {
    this.record = {
      id: start.id ?? newRequestId(),
      tunnel_id: start.tunnelId,
      method: start.method,
      path: start.path,
      url: start.url,
      http_version: start.httpVersion,
      status_code: null,
      duration_ms: null,
      request_headers: start.requestHeaders,
      response_headers: [],
      request_size: 0,
      response_size: 0,
      remote_addr: start.remoteAddr,
      started_at: new Date().toISOString(),
      error: null,
      replay_of: start.replayOf ?? null,
    };
  }

  get id(): string {
    return this.record.id;
  }

  response(status: number, headers: HeaderList): void {
    this.record.status_code = status;
    this.record.response_headers = headers;
  }

  /** Ends the exchange (with why it failed, if it did) and returns the captured request. */
  finish(error: string | null = null): CapturedExchange {
    if (this.record.duration_ms === null) {
      this.record.duration_ms = Math.round((performance.now() - this.startedMs) * 100) / 100;
      this.record.request_size = this.requestBody.size;
      this.record.response_size = this.responseBody.size;
      this.record.error = error;
    }
    return {
      request: { ...this.record },
      requestBody: this.requestBody.body,
      responseBody: this.responseBody.body,
      requestBodyTruncated: this.requestBody.truncated,
      responseBodyTruncated: this.responseBody.truncated,
    };
  }
}

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
 * The last `capacity` exchanges, oldest dropped first. Their bodies share a byte budget: past it, the
 * oldest exchanges lose their bodies (flagged truncated) before any metadata is dropped, so 1,000
 * exchanges of 1 MiB bodies cannot hold 2 GiB.
 */
export class CaptureRing {
  private readonly items: CapturedExchange[] = [];
  private readonly byId = new Map<string, CapturedExchange>();
  private bodyBytes = 0;
  /** The index of the oldest exchange that may still hold bodies. */
  private firstWithBodies = 0;
  total = 0;

  constructor(
    private readonly capacity: number = CAPTURE_LIMITS.perTunnel,
    private readonly bodyBudget = 64 * 1024 * 1024,
  ) {}

  add(exchange: CapturedExchange): void {
    this.items.push(exchange);
    this.byId.set(exchange.request.id, exchange);
    this.bodyBytes += exchange.requestBody.length + exchange.responseBody.length;
    this.total += 1;
    while (this.items.length > this.capacity) {
      const dropped = this.items.shift()!;
      this.byId.delete(dropped.request.id);
      this.bodyBytes -= dropped.requestBody.length + dropped.responseBody.length;
      this.firstWithBodies = Math.max(0, this.firstWithBodies - 1);
    }
    while (this.bodyBytes > this.bodyBudget && this.firstWithBodies < this.items.length - 1) {
      const old = this.items[this.firstWithBodies]!;
      this.bodyBytes -= old.requestBody.length + old.responseBody.length;
      if (old.requestBody.length > 0) old.requestBodyTruncated = true;
      if (old.responseBody.length > 0) old.responseBodyTruncated = true;
      old.requestBody = Buffer.alloc(0);
      old.responseBody = Buffer.alloc(0);
      this.firstWithBodies += 1;
    }
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
