// HTTP/1.1 messages in a byte stream, for the tunnel's byte path: the bytes of a connection pass
// through untouched but for request heads a caller replaces, while a parser (http-parser-js) finds
// where each message's head and body begin and end, hands out the heads and the (de-chunked) body bytes
// for the capture, and says when a connection turns into something else (an Upgrade's 101, CONNECT).
// Body bytes are forwarded as slices of the chunks they came in: never copied, never re-framed.
import { maxHeaderSize } from 'node:http';
import { HTTPParser } from 'http-parser-js';
import { HTTP_TOKEN } from '../../shared/http-token.js';

// Header bytes as they are (RFC 9110 allows obs-text): 'ascii', the default, would clear their top bit.
HTTPParser.encoding = 'latin1';
// The parser's own head size check counts the bytes of a message that ended at a chunk's end into the
// next message's head (a 64 KiB chunk of body would trip it): the framer measures heads itself instead.
HTTPParser.maxHeaderSize = Number.MAX_SAFE_INTEGER;

/**
 * http-parser-js reads a chunk size with parseInt, which takes `1x`, `-0` or `0x10`; a proxy that reads
 * a chunked body differently from the app behind it lets a request hide inside another's body. A chunk
 * size here is hex digits, then optional extensions, as RFC 9112 §7.1 writes it.
 */
const CHUNK_SIZE = /^([0-9a-fA-F]{1,15})[ \t]*(?:;.*)?$/;

function strictChunkHead(this: ParserState): void {
  const line = this.consumeLine();
  if (line === undefined) return;
  const match = CHUNK_SIZE.exec(line);
  if (!match) throw framingError('an invalid chunk size');
  this.body_bytes = parseInt(match[1]!, 16);
  this.state = this.body_bytes === 0 ? 'BODY_CHUNKTRAILERS' : 'BODY_CHUNK';
  this.trailerBytes = 0;
}

/**
 * The parser's line reader, finding the line's end with Buffer#indexOf (memchr) instead of a loop
 * over each byte in JavaScript: the same lines, a fraction of the time on every head. `crlf`: a line
 * must end with CR LF (RFC 9112 §2.2). Node's parser refuses a bare LF in a request, and a server that
 * does not take it for a line's end would read a chunk size, and so where the body ends, otherwise.
 */
function lineReader(crlf: boolean): (this: ParserState) => string | undefined {
  return function consumeLine(this: ParserState): string | undefined {
    const { chunk, end } = this;
    const newline = chunk.indexOf(0x0a, this.offset);
    // A line is kept whole until its end comes: one that never ends (a chunk extension sent on and on)
    // must not grow forever. Heads are bounded as a whole (Http1Framer#write), this bounds the lines
    // of a chunked body.
    if (this.line.length + (newline < 0 || newline >= end ? end : newline) - this.offset > maxHeaderSize)
      throw framingError('a line over the size limit');
    if (newline < 0 || newline >= end) {
      this.line += chunk.latin1Slice(this.offset, end);
      this.offset = end;
      return undefined;
    }
    let line = this.line + chunk.latin1Slice(this.offset, newline);
    if (line.charCodeAt(line.length - 1) === 0x0d) line = line.slice(0, -1);
    else if (crlf) throw framingError('a line that ends without CR');
    this.line = '';
    this.offset = newline + 1;
    return line;
  };
}

const readLineEndingCrlf = lineReader(true);
const readLine = lineReader(false);

/** What a field value may not hold (RFC 9110 §5.5): control characters but the tab (CR, LF, NUL among them). */
// eslint-disable-next-line no-control-regex
const NOT_IN_A_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;

function isBlank(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/** `line`'s field value from `from` on, without the spaces and tabs around it. */
function fieldValue(line: string, from: number): string {
  let start = from;
  while (start < line.length && isBlank(line.charCodeAt(start))) start += 1;
  let end = line.length;
  while (end > start && isBlank(line.charCodeAt(end - 1))) end -= 1;
  const value = line.slice(start, end);
  if (NOT_IN_A_VALUE.test(value)) throw framingError('a control character in a header value');
  return value;
}

/**
 * The parser's header line reader, strict: a line it could not read (a space before the colon, a name
 * that is not a token, no colon at all) was skipped, and passed on as it came. An app that reads such a
 * line (`Transfer-Encoding : chunked`) would frame the message otherwise than the edge did, and a
 * request could hide inside another's body; the edge refuses the message instead (RFC 9112 §5.1).
 * A folded line (obs-fold) is refused in a request; in a response it continues the value above it.
 */
function strictHeaderLine(this: ParserState, line: string, headers: string[]): void {
  if (this.state === 'BODY_CHUNKTRAILERS') {
    // The trailers are kept until the message ends: as many as a head may hold.
    this.trailerBytes += line.length + 2;
    if (this.trailerBytes > maxHeaderSize) throw framingError('trailers over the size limit');
  }
  if (isBlank(line.charCodeAt(0))) {
    if (this.type === HTTPParser.REQUEST || headers.length === 0)
      throw framingError('a header folded over lines');
    const more = fieldValue(line, 1);
    const last = headers.length - 1;
    if (more.length > 0) headers[last] = headers[last] === '' ? more : `${headers[last]!} ${more}`;
    return;
  }
  const colon = line.indexOf(':');
  if (colon <= 0 || !HTTP_TOKEN.test(line.slice(0, colon))) throw framingError('a malformed header line');
  headers.push(line.slice(0, colon), fieldValue(line, colon + 1));
}

/** The parser's own state and methods, as far as this file reads them (the typings call them private). */
interface ParserState {
  chunk: Buffer & { latin1Slice(start: number, end: number): string };
  end: number;
  line: string;
  offset: number;
  state: string;
  body_bytes: number | null;
  type: string;
  /** The bytes of a chunked message's trailers so far (ours). */
  trailerBytes: number;
  consumeLine(this: ParserState): string | undefined;
  parseHeader(this: ParserState, line: string, headers: string[]): void;
  execute(chunk: Buffer): number | Error;
  finish(): void | Error;
  reinitialize(type: string): void;
  BODY_CHUNKHEAD(): void;
}

export interface MessageHead {
  /** Requests: the method and the request target. */
  method: string;
  url: string;
  /** Responses: the status code. */
  status: number;
  /** `1.1`, `1.0`. */
  version: string;
  /** Names and values alternating, as sent. */
  headers: string[];
  /** The head's bytes as they came. */
  raw: Buffer;
  /** The connection turns into another protocol after this message (an Upgrade request, a 101, CONNECT). */
  upgrade: boolean;
}

/** What to do with a head: forward it (or `replace` it), skip its body (a response to HEAD), or stop. */
export interface HeadDecision {
  replace?: Buffer;
  noBody?: boolean;
  /** Parsing stops before this head: `write` returns it, and what follows, as `rest`. */
  stop?: boolean;
  /** After this message the connection carries raw bytes (an accepted Upgrade). */
  raw?: boolean;
}

export interface FramerHandlers {
  head(head: MessageHead): HeadDecision | undefined;
  /** A message's body bytes, de-chunked (for the capture). */
  body?(data: Buffer): void;
  end?(): void;
}

export interface FramedChunk {
  /** The bytes to pass on, in order. */
  out: Buffer[];
  /**
   * After a head that said `stop`: that head's bytes and everything after it, not parsed. After an
   * Upgrade request (`holding`): what came after it, to be passed to `release` once the response says
   * whether the connection was upgraded.
   */
  rest: Buffer | null;
}

/** A message the peer framed wrongly (or ambiguously): answered 400 and the connection closed. */
export class FramingError extends Error {
  readonly code = 'WHARF_HTTP_FRAMING';
}

function framingError(why: string): FramingError {
  return new FramingError(why);
}

const STOPPED = Symbol('stopped');
const RAW = Symbol('raw');
const HOLD = Symbol('hold');

export class Http1Framer {
  private readonly parser: ParserState;
  private chunk: Buffer = Buffer.alloc(0);
  /** Where the bytes of the current chunk not yet placed in `out` (or kept as head bytes) begin. */
  private mark = 0;
  /** Head bytes from earlier chunks of a head still being read. */
  private headParts: Buffer[] = [];
  private headBytes = 0;
  private inHead = true;
  private out: Buffer[] = [];
  private rest: Buffer | null = null;
  private rawAfterMessage = false;
  private holdAfterMessage = false;
  /** The connection carries raw bytes now (after an Upgrade); nothing more is parsed. */
  raw = false;
  /** Parsing stopped at a head (see HeadDecision.stop); nothing more may be written. */
  stopped = false;
  /**
   * An Upgrade request went by: what follows is another protocol if the app answers 101, more HTTP if
   * not. Nothing more may be written until `release` says which.
   */
  holding = false;

  constructor(
    readonly kind: 'request' | 'response',
    private readonly handlers: FramerHandlers,
  ) {
    const parser = new HTTPParser(kind === 'request' ? HTTPParser.REQUEST : HTTPParser.RESPONSE);
    parser[HTTPParser.kOnHeadersComplete] = (info) => this.onHead(info as HeadInfo);
    parser[HTTPParser.kOnBody] = (chunk) => this.handlers.body?.(chunk);
    parser[HTTPParser.kOnMessageComplete] = () => this.onMessageEnd();
    this.parser = parser as unknown as ParserState;
    // The state machine calls each state by name on the parser: this one reads chunk sizes strictly.
    this.parser.BODY_CHUNKHEAD = strictChunkHead;
    this.parser.consumeLine = kind === 'request' ? readLineEndingCrlf : readLine;
    this.parser.parseHeader = strictHeaderLine;
  }

  /** Whether a message has begun and not ended (its head, or its body, is still coming). */
  get midMessage(): boolean {
    return !this.inHead || this.headParts.length > 0;
  }

  /** Parses a chunk; throws a FramingError for a message framed wrongly. */
  write(chunk: Buffer): FramedChunk {
    if (this.raw) return { out: [chunk], rest: null };
    if (this.stopped || this.holding) throw new Error('the framer is stopped or holding');
    this.chunk = chunk;
    this.mark = 0;
    this.out = [];
    let parsed: number | Error;
    try {
      parsed = this.parser.execute(chunk);
    } catch (error) {
      if (error === STOPPED) return { out: this.out, rest: this.rest };
      if (error === HOLD) {
        this.holding = true;
        return {
          out: this.out,
          rest: this.mark < chunk.length ? chunk.subarray(this.mark) : Buffer.alloc(0),
        };
      }
      if (error !== RAW) throw error;
      this.raw = true;
      if (this.mark < chunk.length) this.pass(chunk.subarray(this.mark));
      return { out: this.out, rest: null };
    }
    if (parsed instanceof FramingError) throw parsed;
    if (parsed instanceof Error) {
      throw framingError(
        parsed.message === 'max header size exceeded' ? 'a head over the size limit' : 'a malformed message',
      );
    }
    if (this.mark < chunk.length) {
      if (this.inHead) {
        this.headParts.push(chunk.subarray(this.mark));
        this.headBytes += chunk.length - this.mark;
        // As large as Node's own server takes (16 KiB): a head that never ends must not grow forever.
        if (this.headBytes > maxHeaderSize) throw framingError('a head over the size limit');
      } else this.pass(chunk.subarray(this.mark));
    }
    return { out: this.out, rest: null };
  }

  /** After an Upgrade request: the app upgraded the connection (raw from now on), or did not. */
  release(held: Buffer, upgraded: boolean): FramedChunk {
    this.holding = false;
    if (upgraded) {
      this.raw = true;
      return { out: held.length > 0 ? [held] : [], rest: null };
    }
    // The hold cut the parser off as it went on to the next message: it starts that one afresh.
    this.parser.reinitialize(this.kind === 'request' ? HTTPParser.REQUEST : HTTPParser.RESPONSE);
    return held.length > 0 ? this.write(held) : { out: [], rest: null };
  }

  /** The stream ended: a body read until the connection closes is complete now. */
  finish(): void {
    if (this.raw || this.stopped) return;
    this.chunk = Buffer.alloc(0);
    this.mark = 0;
    this.out = [];
    try {
      this.parser.finish();
    } catch (error) {
      if (error !== RAW && error !== STOPPED && error !== HOLD) throw error;
    }
  }

  /**
   * Adds bytes to pass on; bytes that follow the last ones in memory (a head passed unchanged, then
   * the body after it in the same chunk) widen that view instead, so the caller has one buffer to
   * write where it would otherwise have copied the parts into a new one.
   */
  private pass(part: Buffer): void {
    const last = this.out.at(-1);
    if (
      last !== undefined &&
      last.buffer === part.buffer &&
      last.byteOffset + last.length === part.byteOffset
    )
      this.out[this.out.length - 1] = Buffer.from(last.buffer, last.byteOffset, last.length + part.length);
    else this.out.push(part);
  }

  private onHead(info: HeadInfo): number {
    const offset = this.parser.offset;
    const tail = this.chunk.subarray(this.mark, offset);
    const raw = this.headParts.length === 0 ? tail : Buffer.concat([...this.headParts, tail]);
    this.headParts = [];
    this.headBytes = 0;
    if (raw.length > maxHeaderSize) throw framingError('a head over the size limit');
    const head: MessageHead = {
      method: HTTPParser.methods[info.method] ?? '',
      url: info.url ?? '',
      status: info.statusCode ?? 0,
      version: `${info.versionMajor}.${info.versionMinor}`,
      headers: info.headers,
      raw,
      upgrade: info.upgrade,
    };
    if (this.kind === 'request') checkRequestFraming(head);
    const decision = this.handlers.head(head);
    if (decision?.stop) {
      this.stopped = true;
      this.rest = Buffer.concat([raw, this.chunk.subarray(offset)]);
      throw STOPPED;
    }
    this.pass(decision?.replace ?? raw);
    this.mark = offset;
    this.inHead = false;
    if (head.upgrade && this.kind === 'request') this.holdAfterMessage = true;
    else if (decision?.raw || head.upgrade) this.rawAfterMessage = true;
    return decision?.noBody ? 1 : 0;
  }

  private onMessageEnd(): void {
    const offset = this.parser.offset;
    if (!this.inHead && offset > this.mark) this.pass(this.chunk.subarray(this.mark, offset));
    this.mark = offset;
    this.inHead = true;
    this.handlers.end?.();
    if (this.holdAfterMessage) {
      this.holdAfterMessage = false;
      throw HOLD;
    }
    if (this.rawAfterMessage) throw RAW;
  }
}

interface HeadInfo {
  versionMajor: number;
  versionMinor: number;
  headers: string[];
  method: number;
  url: string;
  statusCode: number;
  upgrade: boolean;
}

/**
 * Refuses request framing that two HTTP parsers could read differently (RFC 9112 §6.3): a
 * Transfer-Encoding other than `chunked` alone, one next to a Content-Length, a Content-Length that is
 * not digits, two Host headers, a request target with a control character (header lines are checked
 * as they are read).
 */
function checkRequestFraming(head: MessageHead): void {
  let transferEncoding: string | null = null;
  let contentLength: string | null = null;
  let hosts = 0;
  const { headers } = head;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    // The edge routes by the first, an app may read the last (RFC 9112 §3.2: refused).
    if (name.length === 4 && name.toLowerCase() === 'host' && ++hosts > 1)
      throw framingError('two Host headers');
    if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') {
      transferEncoding =
        transferEncoding === null ? headers[i + 1]! : `${transferEncoding},${headers[i + 1]!}`;
    } else if (name.length === 14 && name.toLowerCase() === 'content-length') {
      const value = headers[i + 1]!.trim();
      if (!/^\d{1,15}$/.test(value)) throw framingError('an invalid Content-Length');
      if (contentLength !== null && contentLength !== value) throw framingError('two Content-Lengths');
      contentLength = value;
    }
  }
  if (transferEncoding !== null) {
    if (transferEncoding.trim().toLowerCase() !== 'chunked')
      throw framingError(`a Transfer-Encoding other than chunked (${transferEncoding})`);
    if (contentLength !== null) throw framingError('both Transfer-Encoding and Content-Length');
  }
  // Folded lines were refused as they were read (strictHeaderLine). A target with a control
  // character in it is read as two by some servers (a tab), and as one by others.
  if (NOT_IN_A_TARGET.test(head.url)) throw framingError('a control character in the request target');
}

// eslint-disable-next-line no-control-regex
const NOT_IN_A_TARGET = /[\x00-\x1f\x7f]/;

/** A header's value in a head's list (the first, names compared without case), or undefined. */
export function headerValue(headers: readonly string[], lowerName: string): string | undefined {
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    if (name.length === lowerName.length && name.toLowerCase() === lowerName) return headers[i + 1];
  }
  return undefined;
}

/** Headers that frame a message or name its host: a Connection header never takes them out. */
const NEVER_HOP = new Set(['content-length', 'transfer-encoding', 'host', 'connection', 'upgrade']);

/**
 * The header names a message's Connection headers list (RFC 9110 §7.6.1: they end at this hop), but
 * `close`, `keep-alive`, `upgrade` and the headers that frame the message, which pass as they are on the
 * byte path (the public connection and the app's are one conversation); null when there are none.
 */
export function connectionListed(headers: readonly string[]): Set<string> | null {
  let listed: Set<string> | null = null;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    if (name.length !== 10 || name.toLowerCase() !== 'connection') continue;
    for (const token of headers[i + 1]!.split(',')) {
      const one = token.trim().toLowerCase();
      if (one === '' || one === 'close' || one === 'keep-alive' || NEVER_HOP.has(one)) continue;
      (listed ??= new Set()).add(one);
    }
  }
  return listed;
}

/** Whether any header of the list is named in `names` (lowercase). */
export function hasAnyHeader(headers: readonly string[], names: ReadonlySet<string>): boolean {
  for (let i = 0; i < headers.length; i += 2) if (names.has(headers[i]!.toLowerCase())) return true;
  return false;
}

const HEAD_END = Buffer.from('\r\n\r\n');

/** `add` as editHead appends it to a head: the lines, then the blank line that ends the head. */
export function appendedLines(add: readonly string[]): Buffer {
  return Buffer.from(`${add.join('\r\n')}\r\n\r\n`, 'latin1');
}

/**
 * A head with `drop` left out and `add` appended, like rewriteHead, but without taking the head apart
 * when none of `drop` is in it (the common case: the lines are put before its blank line).
 * `addBytes`: `add` as appendedLines makes it, when the caller keeps it made.
 */
export function editHead(
  head: { raw: Buffer; headers: readonly string[] },
  drop: ReadonlySet<string>,
  add: readonly string[],
  addBytes?: Buffer,
): Buffer {
  const { raw } = head;
  if (hasAnyHeader(head.headers, drop) || !raw.subarray(-4).equals(HEAD_END))
    return rewriteHead(raw, drop, add);
  if (add.length === 0) return raw;
  return Buffer.concat([raw.subarray(0, raw.length - 2), addBytes ?? appendedLines(add)]);
}

/**
 * A head without its last line when that line is `line` (what the edge appended): null when it is not.
 */
export function withoutLastLine(raw: Buffer, line: string): Buffer | null {
  const tail = `\r\n${line}\r\n\r\n`;
  if (raw.length <= tail.length || raw.toString('latin1', raw.length - tail.length) !== tail) return null;
  return Buffer.concat([raw.subarray(0, raw.length - tail.length), HEAD_END]);
}

/**
 * A request head with the headers named in `drop` left out and `add` (`name: value` lines) added at
 * its end: the request line and every other line stay byte for byte.
 */
export function rewriteHead(raw: Buffer, drop: ReadonlySet<string>, add: readonly string[]): Buffer {
  const lines = raw.toString('latin1').split(/\r?\n/);
  const kept: string[] = [lines[0]!];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim().toLowerCase() : '';
    if (!drop.has(name)) kept.push(line);
  }
  kept.push(...add, '', '');
  return Buffer.from(kept.join('\r\n'), 'latin1');
}
