// The tunnel connection's multiplexer (the `mux` feature): byte-path streams without HTTP/2.
//
// A public HTTP/1.1 connection's bytes used to ride an HTTP/2 stream of the tunnel connection, and each
// request and response paid for nghttp2's frames and Node's Http2Stream on both sides. Two plain Node
// relays joined by a multiplexer like this one moved 0.41–0.64 of direct where two joined by HTTP/2
// moved 0.37–0.49, at 4–11 µs less CPU per request on each side (bench/relay-floor.mjs). Once both
// ends agreed on it (TUNNEL_HEADERS.mux), the connection carries frames:
//
//   length (u32) · type (u8) · stream id (u32) · payload (`length` bytes)
//
// Stream 0 carries the HTTP/2 session, which keeps everything else (replays, upgrades on the request
// path, PINGs, GOAWAY) as it was; its own flow control bounds it. Byte-path streams and the capture
// stream are opened by the edge only (OPEN, its metadata as a JSON object of strings), answered by
// the client (RESPOND: `{ status, error? }`, as the HTTP/2 stream's response headers were), and carry
// DATA each way until each side's END, or a RESET. Each way of a stream has a window, as HTTP/2's: a sender
// sends no more than the receiver allowed (STREAM_WINDOW at first), and the receiver gives it back
// (WINDOW) as its reader takes the bytes, so a slow reader holds at most one window per stream.
// Frames written in one turn of the event loop go out in one write.
//
// Either peer may be hostile: a frame over MAX_PAYLOAD (MAX_METADATA for the others), DATA past the
// window, a window past 2^31 - 1, an OPEN from the side that does not open, a second RESPOND, or
// metadata that is not a small object of strings ends the whole connection. Frames of unknown types are skipped, so that a later version can add some.
import { EventEmitter } from 'node:events';
import { Duplex } from 'node:stream';
import { SESSION_SETTINGS, STREAM_WINDOW } from './protocol.js';

export const MUX_TYPES = { data: 0, open: 1, respond: 2, end: 3, reset: 4, window: 5 } as const;
const { data: DATA, open: OPEN, respond: RESPOND, end: END, reset: RESET, window: WINDOW } = MUX_TYPES;

const HEADER = 9;
const EMPTY = Buffer.alloc(0);
/** The largest payload a frame may carry; DATA is cut to it. */
export const MAX_PAYLOAD = 256 * 1024;
/** The largest OPEN or RESPOND payload. */
export const MAX_METADATA = 16 * 1024;
const MAX_WINDOW = 2 ** 31 - 1;
/** A receiver gives its window back in steps of at least this much (small exchanges send no WINDOW). */
const CREDIT_STEP = STREAM_WINDOW / 4;
/**
 * A payload this large goes to the socket as it is, in the turn's writev; the frames' headers and
 * smaller payloads between such ones are joined into one buffer (a copy costs less than a writev's
 * entry up to a few KiB, far more than it for a body).
 */
const WRITE_WHOLE = 8 * 1024;
/** The code a stream reset from the other side, or cut with its connection, closes with (HTTP/2's CANCEL). */
export const MUX_CANCEL = 8;

export type MuxRole = 'edge' | 'client';

/** What the client answers an OPEN with: 200 once its app connection is up, else a status and why. */
export interface MuxResponse {
  ':status': number;
  'wharf-error'?: string;
}

export class MuxProtocolError extends Error {}

/**
 * One byte-path stream: a Duplex whose writes go to the peer as DATA (within its window) and whose
 * reads are the peer's DATA. Its `respond`, `headersSent`, `rstCode` and `close` are those of the
 * HTTP/2 stream it replaces, so that the byte path takes either.
 */
export class MuxStream extends Duplex {
  /** Set once the stream ends by a reset, sent or received (MUX_CANCEL); 0 otherwise. */
  rstCode = 0;
  headersSent = false;
  /** @internal On the edge: whether the client answered the stream's OPEN. */
  answered = false;
  /** How much more the peer allows this side to send. */
  private sendWindow = STREAM_WINDOW;
  /** How much more this side allows the peer to send. */
  private receiveWindow = STREAM_WINDOW;
  private received = 0;
  private credited = 0;
  /** A write waiting for the peer's window: the bytes left and its callback. */
  private stalled: { chunks: Buffer[]; done: (error?: Error | null) => void } | null = null;
  private remoteEnded = false;
  private localEnded = false;

  constructor(
    private readonly mux: Mux,
    readonly id: number,
    readonly metadata: Readonly<Record<string, string>>,
  ) {
    super({ allowHalfOpen: true });
  }

  /** The client's answer to an OPEN (HTTP/2's `respond`); `endStream` ends this side with it. */
  respond(headers: MuxResponse, options?: { endStream?: boolean }): void {
    if (this.headersSent || this.destroyed) return;
    this.headersSent = true;
    const answer: Record<string, string | number> = { status: headers[':status'] };
    if (headers['wharf-error'] !== undefined) answer.error = headers['wharf-error'].slice(0, 1024);
    this.mux.sendFrame(RESPOND, this.id, Buffer.from(JSON.stringify(answer)));
    if (options?.endStream) this.end();
  }

  /** Resets the stream (HTTP/2's `close(code)`): the peer's side closes too, whatever it was doing. */
  close(_code?: number): void {
    this.reset(true);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.send([chunk], done);
  }

  /** Writes made while corked (a head and the body after it) go out in the same turn's frames. */
  override _writev(
    chunks: Array<{ chunk: Buffer; encoding: BufferEncoding }>,
    done: (error?: Error | null) => void,
  ): void {
    this.send(
      chunks.map(({ chunk }) => chunk),
      done,
    );
  }

  override _final(done: (error?: Error | null) => void): void {
    this.localEnded = true;
    this.mux.sendFrame(END, this.id);
    done();
  }

  override _read(): void {
    this.giveBack();
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    // Gone before both sides ended: the peer is told, unless the reset came from it.
    if (this.rstCode === 0 && !(this.localEnded && this.remoteEnded)) {
      this.rstCode = MUX_CANCEL;
      this.mux.sendFrame(RESET, this.id);
    }
    const stalled = this.stalled;
    this.stalled = null;
    stalled?.done(error ?? new Error('the stream was reset'));
    this.mux.forget(this);
    done(error);
  }

  /** @internal A DATA frame of `length` bytes begins: it must fit the window this side gave. */
  onDataFrame(length: number): void {
    if (length > this.receiveWindow)
      throw new MuxProtocolError(`stream ${this.id} was sent more than its window`);
    this.receiveWindow -= length;
  }

  /** @internal The peer's DATA, or a piece of a frame. */
  onData(payload: Buffer): void {
    this.received += payload.length;
    if (this.remoteEnded || this.destroyed) return;
    this.push(payload);
    this.giveBack();
  }

  /** @internal The peer's END. */
  onEnd(): void {
    if (this.remoteEnded) return;
    this.remoteEnded = true;
    this.push(null);
  }

  /** @internal The peer's RESET, or the connection gone. */
  reset(send: boolean): void {
    if (this.destroyed) return;
    if (!send) this.rstCode = MUX_CANCEL;
    this.destroy();
  }

  /** @internal The peer's WINDOW. */
  onWindow(increment: number): void {
    if (increment === 0 || this.sendWindow + increment > MAX_WINDOW)
      throw new MuxProtocolError(`stream ${this.id} was given a window it cannot have`);
    this.sendWindow += increment;
    const stalled = this.stalled;
    if (stalled) {
      this.stalled = null;
      this.send(stalled.chunks, stalled.done);
    }
  }

  private send(chunks: Buffer[], done: (error?: Error | null) => void): void {
    for (let i = 0; i < chunks.length; i++) {
      let rest = chunks[i]!;
      while (rest.length > 0) {
        const size = Math.min(rest.length, this.sendWindow, MAX_PAYLOAD);
        if (size === 0) {
          this.stalled = { chunks: [rest, ...chunks.slice(i + 1)], done };
          return;
        }
        this.mux.sendFrame(DATA, this.id, size === rest.length ? rest : rest.subarray(0, size));
        this.sendWindow -= size;
        rest = rest.subarray(size);
      }
    }
    this.mux.whenWritable(done);
  }

  /** Gives the peer back the window its bytes took once the reader has taken them. */
  private giveBack(): void {
    const consumed = this.received - this.readableLength;
    const due = consumed - this.credited;
    if (due < CREDIT_STEP || this.remoteEnded || this.destroyed) return;
    this.credited = consumed;
    this.receiveWindow += due;
    const increment = Buffer.allocUnsafe(4);
    increment.writeUInt32BE(due, 0);
    this.mux.sendFrame(WINDOW, this.id, increment);
  }
}

/**
 * Frames over one connection (`socket`): stream 0 is `channel`, for the HTTP/2 session; the edge opens
 * byte-path streams with `open`, the client gets them as `stream` events.
 */
export class Mux extends EventEmitter<{
  stream: [stream: MuxStream];
  close: [];
}> {
  /** Stream 0: the HTTP/2 session's bytes. Destroying it ends the connection. */
  readonly channel: Duplex;
  private readonly streams = new Map<number, MuxStream>();
  private nextId = 1;
  private parts: Buffer[] = [];
  private size = 0;
  private scheduled = false;
  /** The frame being read: its payload bytes still to come (-1: its header is next), type and stream. */
  private remaining = -1;
  private type = 0;
  private id = 0;
  private stream: MuxStream | null = null;
  /** A control frame's payload so far. */
  private controlParts: Buffer[] = [];
  /** A header cut between reads. */
  private readonly header = Buffer.alloc(HEADER);
  private headerBytes = 0;
  /**
   * Callbacks of the writes whose frames wait for this turn's write, then, while the connection's own
   * buffer is full, for its drain. A writer sees its stream full until then, as it would a socket's.
   */
  private waiting: (() => void)[] = [];
  private full = false;
  private closed = false;
  private channelEnding: ((error?: Error | null) => void) | null = null;
  /** The session on the channel (see runs), whose close or destroy the channel's end follows. */
  private session: { readonly closed: boolean } | null = null;

  constructor(
    private readonly socket: Duplex,
    private readonly role: MuxRole,
    /** The most byte streams open at once: the edge opens no more, the client refuses more (RESET). */
    private readonly maxStreams: number = SESSION_SETTINGS.maxConcurrentStreams ?? 10_000,
  ) {
    super();
    this.channel = new Duplex({
      read: () => {
        if (this.socket.isPaused()) this.socket.resume();
      },
      write: (chunk: Buffer, _encoding, done) => {
        if (this.closed) {
          done(new Error('the connection closed'));
          return;
        }
        for (let at = 0; at < chunk.length; at += MAX_PAYLOAD)
          this.sendFrame(DATA, 0, chunk.subarray(at, at + MAX_PAYLOAD));
        this.whenWritable(done);
      },
      final: (done) => {
        // A session closed gracefully ends the channel once the byte streams still open are done, as
        // an HTTP/2 session's close waits for its own streams; one destroyed ends the connection now
        // (Node ends the channel either way, and destroys it only once that end is done).
        if (this.session?.closed === false) {
          this.destroy();
          done();
          return;
        }
        this.channelEnding = done;
        this.endChannelWhenIdle();
      },
      destroy: (error, done) => {
        this.destroy();
        done(error);
      },
    });
    socket.on('data', (chunk: Buffer) => {
      try {
        this.read(chunk);
      } catch {
        // A peer that breaks the protocol (MuxProtocolError) loses the connection; so does one whose
        // frames met anything else unforeseen, rather than the process.
        this.destroy();
      }
    });
    socket.on('drain', () => {
      this.full = false;
      this.release();
    });
    socket.on('end', () => this.destroy());
    socket.on('error', () => this.destroy());
    socket.on('close', () => this.destroy());
  }

  /** Names the HTTP/2 session that runs on the channel: how it ends says how the channel ends. */
  runs(session: { readonly closed: boolean }): void {
    this.session = session;
  }

  /** The edge's side: a new byte-path stream, announced with `metadata`. */
  open(metadata: Record<string, string>): MuxStream {
    if (this.role !== 'edge') throw new Error('only the edge opens streams');
    if (this.closed || this.channelEnding) throw new Error('the tunnel connection is closing');
    if (this.streams.size >= this.maxStreams)
      throw new Error('too many streams open on the tunnel connection');
    let id = this.nextId;
    while (id === 0 || this.streams.has(id)) id = (id + 1) >>> 0;
    this.nextId = (id + 1) >>> 0;
    const stream = new MuxStream(this, id, metadata);
    this.streams.set(id, stream);
    this.sendFrame(OPEN, id, Buffer.from(JSON.stringify(metadata)));
    return stream;
  }

  /** The byte streams open now. */
  streamsOpen(): MuxStream[] {
    return [...this.streams.values()];
  }

  /** Ends the connection: every stream is reset, the channel closes. */
  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    for (const stream of [...this.streams.values()]) stream.reset(false);
    this.release();
    const ending = this.channelEnding;
    this.channelEnding = null;
    ending?.();
    // Why (a peer's breach of the protocol) goes no further: the session reads a closed connection.
    if (!this.channel.destroyed) this.channel.destroy();
    this.socket.destroy();
    this.emit('close');
  }

  /** @internal Queues a frame for this turn's write. */
  sendFrame(type: number, id: number, payload?: Buffer): void {
    if (this.closed) return;
    const header = Buffer.allocUnsafe(HEADER);
    header.writeUInt32BE(payload?.length ?? 0, 0);
    header[4] = type;
    header.writeUInt32BE(id, 5);
    this.parts.push(header);
    this.size += HEADER;
    if (payload && payload.length > 0) {
      this.parts.push(payload);
      this.size += payload.length;
    }
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  /** @internal Calls `done` once the frames queued so far are written, and the connection has room. */
  whenWritable(done: () => void): void {
    if (this.closed || (!this.scheduled && !this.full)) done();
    else this.waiting.push(done);
  }

  /** @internal */
  forget(stream: MuxStream): void {
    if (this.streams.get(stream.id) === stream) this.streams.delete(stream.id);
    this.endChannelWhenIdle();
  }

  private endChannelWhenIdle(): void {
    const done = this.channelEnding;
    if (!done || this.streams.size > 0 || this.closed) return;
    this.channelEnding = null;
    this.sendFrame(END, 0);
    done();
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const { parts, size } = this;
    this.parts = [];
    this.size = 0;
    if (this.closed) return;
    if (!parts.some((part) => part.length >= WRITE_WHOLE)) {
      this.socket.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size));
    } else {
      this.socket.cork();
      let run: Buffer[] = [];
      for (const part of parts) {
        if (part.length < WRITE_WHOLE) {
          run.push(part);
          continue;
        }
        if (run.length > 0) this.socket.write(run.length === 1 ? run[0]! : Buffer.concat(run));
        run = [];
        this.socket.write(part);
      }
      if (run.length > 0) this.socket.write(run.length === 1 ? run[0]! : Buffer.concat(run));
      this.socket.uncork();
    }
    this.full = this.socket.writableNeedDrain;
    if (!this.full) this.release();
  };

  /** The writes waiting are done: their frames are in the connection's buffer, which has room. */
  private release(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const done of waiting) done();
  }

  /**
   * Reads frames out of `chunk`. DATA is passed on as it comes, a frame cut between reads in pieces (no
   * copy); a control frame's payload is joined when whole.
   */
  private read(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length && !this.closed) {
      if (this.remaining < 0) {
        // A frame's header: from the chunk itself, or put together across reads.
        let header = chunk;
        let from = at;
        if (this.headerBytes > 0 || chunk.length - at < HEADER) {
          const take = Math.min(HEADER - this.headerBytes, chunk.length - at);
          chunk.copy(this.header, this.headerBytes, at, at + take);
          this.headerBytes += take;
          at += take;
          if (this.headerBytes < HEADER) return;
          this.headerBytes = 0;
          header = this.header;
          from = 0;
        } else at += HEADER;
        this.begin(header.readUInt32BE(from), header[from + 4]!, header.readUInt32BE(from + 5));
        if (this.remaining === 0) this.complete(EMPTY);
        continue;
      }
      const take = Math.min(this.remaining, chunk.length - at);
      const piece = chunk.subarray(at, at + take);
      at += take;
      this.remaining -= take;
      if (this.type === DATA) {
        this.data(piece);
        if (this.remaining === 0) this.remaining = -1;
      } else {
        this.controlParts.push(piece);
        if (this.remaining === 0) {
          const parts = this.controlParts;
          this.complete(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
        }
      }
    }
  }

  /** A frame's header is in: what it is, checked before any of its payload is taken. */
  private begin(length: number, type: number, id: number): void {
    if (length > (type === DATA ? MAX_PAYLOAD : MAX_METADATA))
      throw new MuxProtocolError(`a frame of ${length} bytes`);
    this.remaining = length;
    this.type = type;
    this.id = id;
    this.controlParts = [];
    if (type === DATA && id !== 0) {
      this.stream = this.streams.get(id) ?? null;
      this.stream?.onDataFrame(length);
    }
  }

  /** A DATA frame's bytes, or some of them. */
  private data(piece: Buffer): void {
    if (this.id === 0) {
      if (piece.length > 0 && !this.channel.push(piece)) this.socket.pause();
    } else this.stream?.onData(piece);
  }

  private complete(payload: Buffer): void {
    const { type, id } = this;
    this.remaining = -1;
    this.controlParts = [];
    this.dispatch(type, id, payload);
  }

  private dispatch(type: number, id: number, payload: Buffer): void {
    if (type === DATA) return;
    if (id === 0) {
      if (type === END) this.channel.push(null);
      return;
    }
    if (type === OPEN) {
      if (this.role !== 'client' || this.streams.has(id))
        throw new MuxProtocolError(`an OPEN of stream ${id} this side does not take`);
      const metadata = metadataOf(payload);
      if (this.streams.size >= this.maxStreams) {
        // As HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS: one more is refused, the connection goes on.
        this.sendFrame(RESET, id);
        return;
      }
      const stream = new MuxStream(this, id, metadata);
      this.streams.set(id, stream);
      this.emit('stream', stream);
      return;
    }
    // A frame for a stream that is gone (reset, or closed as it came) is dropped.
    const stream = this.streams.get(id);
    if (type === END) stream?.onEnd();
    else if (type === RESET) stream?.reset(false);
    else if (type === WINDOW) {
      if (payload.length !== 4) throw new MuxProtocolError('a WINDOW frame of the wrong size');
      stream?.onWindow(payload.readUInt32BE(0));
    } else if (type === RESPOND) {
      if (this.role !== 'edge') throw new MuxProtocolError('a RESPOND to the side that answers');
      if (!stream) return;
      if (stream.answered) throw new MuxProtocolError(`a second RESPOND of stream ${id}`);
      stream.answered = true;
      const answer = metadataOf(payload);
      const status = Number(answer.status);
      if (!Number.isInteger(status) || status < 200 || status > 599)
        throw new MuxProtocolError('a RESPOND without a status');
      const headers: MuxResponse = { ':status': status };
      if (answer.error !== undefined) headers['wharf-error'] = answer.error;
      stream.emit('response', headers);
    }
  }
}

/** An OPEN's or RESPOND's payload: a JSON object of strings (or numbers, as strings), small. */
function metadataOf(payload: Buffer): Record<string, string> {
  if (payload.length > MAX_METADATA) throw new MuxProtocolError('metadata too large');
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload.toString('utf8'));
  } catch {
    throw new MuxProtocolError('metadata that is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new MuxProtocolError('metadata that is not an object');
  const metadata: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value !== 'string' && typeof value !== 'number')
      throw new MuxProtocolError('metadata values are strings');
    metadata[key] = String(value);
  }
  return metadata;
}
