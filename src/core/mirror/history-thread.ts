// The traffic history as the Engine uses it: the Mirror's CaptureStore run in a worker thread
// (history-writer.ts), so that its SQLite work (a row, its bodies and its full-text index for every
// exchange, and a commit that may take tens of ms) is not done on the thread that moves the tunnels'
// bytes. Measured with `wharf http` at 13 B, that work was ~70 % of what the client spent per request.
//
// - Exchanges gather here for `flushMs` (50) and go over as one message: each request as the JSON its
//   row stores (made here, where the request already is), the bodies copied into one buffer that is
//   transferred. The writer acknowledges a batch by id; `stored` is emitted here, with the requests
//   as they are here, once their rows are committed.
// - Reads and deletes are calls, answered after every batch sent before them: a read sees every
//   exchange added before it, as the store's own did.
// - What waits here is bounded: past MAX_QUEUED_BYTES not yet written (the requests' JSON and the
//   bodies), exchanges go without their bodies (flagged truncated); when not even the request fits, or
//   past MAX_QUEUED_EXCHANGES, they are not kept at all (counted in `stats`). A disk or a writer that
//   cannot keep up, or public clients sending heads of 64 KiB, cost history, never the Engine's memory.
// - The writer's own time budget (CaptureStore's, a share of the writer thread's time) sheds bodies
//   under a load it cannot write.
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { CapturedRequest } from '../../shared/api/tunnels.js';
import type { TrafficPage, TrafficQuery, TrafficTunnel } from '../../shared/bridge.js';
import { type CapturedExchange, Scratch, bodyInto, bodyLength } from '../capture/capture.js';
import type { CaptureOrigin, CaptureStoreOptions, StoredCapture } from './captures.js';
import { rowJson } from './captures-schema.js';
import type {
  FromWriter,
  HistoryMethod,
  HistoryWriterData,
  ToWriter,
  WireExchange,
} from './history-protocol.js';

const DEFAULT_FLUSH_MS = 50;
/** Bytes waiting for the writer (requests as JSON, bodies), at most. */
export const MAX_QUEUED_BYTES = 64 * 1024 * 1024;
/** Exchanges waiting for the writer, at most; past it, exchanges are not kept. */
export const MAX_QUEUED_EXCHANGES = 50_000;
/**
 * The writer thread may spend this share of its time writing bodies in the long run (CaptureStore's
 * budget). Higher than the store's own 10 %, which was a share of the tunnel's thread.
 */
const WRITER_SHARE = 0.5;

export interface TrafficHistoryOptions {
  /** The Mirror's file, or `:memory:` (a history of the writer's own). */
  file: string;
  /** The built writer (history-writer.js). */
  writerScript: string;
  /** The history's size bound and the writer's budget (CaptureStore's options); `flushMs` is ours. */
  captures?: CaptureStoreOptions;
  /** What may wait for the writer (MAX_QUEUED_EXCHANGES, MAX_QUEUED_BYTES). */
  queue?: { exchanges: number; bytes: number };
}

export interface TrafficHistoryStats {
  count: number;
  bytes: number;
  limitBytes: number;
  /** Exchanges kept without their bodies: by the writer's budget, or while too much waited here. */
  shedBodies: number;
  /** Exchanges not kept because too much waited for the writer. */
  dropped: number;
}

interface Call {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export interface TrafficHistoryEvents {
  /** A batch was committed: the requests stored, in the order they were added. */
  stored: [CapturedRequest[]];
  /** A batch could not be written, or the writer stopped; what was lost is lost for the history. */
  failed: [Error];
}

export class TrafficHistory extends EventEmitter<TrafficHistoryEvents> {
  private readonly worker: Worker;
  private readonly flushMs: number;
  /** Gathered here, not yet sent. */
  private items: WireExchange[] = [];
  private requests: CapturedRequest[] = [];
  private bodies: Buffer[] = [];
  private bodyBytes = 0;
  /** Gathered here: the requests' JSON and the bodies, in bytes (JSON counted as one a character). */
  private gatheredBytes = 0;
  /** Sent and not yet acknowledged, oldest first: each batch's requests and bytes. */
  private readonly inFlight: Array<{ requests: CapturedRequest[]; bytes: number }> = [];
  private queuedExchanges = 0;
  private queuedBytes = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly calls = new Map<number, Call>();
  private nextCall = 1;
  /** Why the writer stopped, once it has. */
  private broken: Error | null = null;
  private closing: Promise<void> | null = null;
  private readonly scratch = new Scratch();
  private shedHere = 0;
  private dropped = 0;
  private readonly queueLimit: { exchanges: number; bytes: number };

  constructor(options: TrafficHistoryOptions) {
    super();
    if (!existsSync(options.writerScript)) {
      throw new Error(
        `the traffic history's writer is missing (${options.writerScript}): run \`npm run build\``,
      );
    }
    const { flushMs, ...captures } = options.captures ?? {};
    this.flushMs = flushMs ?? DEFAULT_FLUSH_MS;
    this.queueLimit = options.queue ?? { exchanges: MAX_QUEUED_EXCHANGES, bytes: MAX_QUEUED_BYTES };
    const data: HistoryWriterData = {
      file: options.file,
      captures: { writeBudget: { share: WRITER_SHARE, burstMs: 1_000 }, ...captures, flushMs: 0 },
    };
    this.worker = new Worker(options.writerScript, { workerData: data });
    this.worker.on('message', (message: FromWriter) => this.received(message));
    this.worker.on('error', (error) => this.stopped(error));
    this.worker.on('exit', (code) => {
      this.stopped(
        new Error(
          this.closing
            ? 'the traffic history is closed'
            : `the traffic history's writer ended (exit code ${code})`,
        ),
      );
    });
    // An Engine that is otherwise idle may end (a test, a command): the writer holds the process open
    // only while a call waits for its answer.
    this.worker.unref();
  }

  /** Queues an exchange; it is written with the next batch. */
  add(exchange: CapturedExchange, origin: CaptureOrigin): void {
    if (this.broken || this.closing) return;
    if (this.queuedExchanges >= this.queueLimit.exchanges) {
      this.dropped += 1;
      return;
    }
    const json = rowJson(exchange.request);
    if (this.queuedBytes + json.length > this.queueLimit.bytes) {
      this.dropped += 1;
      return;
    }
    const requestLength = bodyLength(exchange, 'request');
    const responseLength = bodyLength(exchange, 'response');
    const keepBodies =
      this.queuedBytes + json.length + requestLength + responseLength <= this.queueLimit.bytes;
    if (!keepBodies && requestLength + responseLength > 0) this.shedHere += 1;
    const item: WireExchange = {
      json,
      origin,
      requestBody: this.bodyBytes,
      requestLength: keepBodies ? requestLength : 0,
      responseBody: 0,
      responseLength: keepBodies ? responseLength : 0,
      // A body not sent counts as cut short: none of its bytes are here.
      requestTruncated: exchange.requestBodyTruncated || (!keepBodies && requestLength > 0),
      responseTruncated: exchange.responseBodyTruncated || (!keepBodies && responseLength > 0),
    };
    if (keepBodies) {
      this.takeBody(bodyInto(exchange, 'request', this.scratch));
      item.responseBody = this.bodyBytes;
      this.takeBody(bodyInto(exchange, 'response', this.scratch));
    }
    this.items.push(item);
    this.requests.push(exchange.request);
    const bytes = json.length + item.requestLength + item.responseLength;
    this.queuedExchanges += 1;
    this.queuedBytes += bytes;
    this.gatheredBytes += bytes;
    this.timer ??= setTimeout(() => this.send(), this.flushMs).unref();
  }

  /** Copies a body in (a body joined in the scratch buffer is only valid until its next use). */
  private takeBody(body: Buffer): void {
    if (body.length === 0) return;
    this.bodies.push(Buffer.from(body));
    this.bodyBytes += body.length;
  }

  /** Sends what has gathered as one batch. */
  private send(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.items.length === 0 || this.broken) return;
    // A buffer of its own (never one of Node's shared pools): it is transferred, and gone from here.
    const bodies = Buffer.allocUnsafeSlow(this.bodyBytes);
    let at = 0;
    for (const body of this.bodies) {
      bodies.set(body, at);
      at += body.length;
    }
    const message: ToWriter = { kind: 'add', items: this.items, bodies: bodies.buffer as ArrayBuffer };
    this.inFlight.push({ requests: this.requests, bytes: this.gatheredBytes });
    this.gatheredBytes = 0;
    this.items = [];
    this.requests = [];
    this.bodies = [];
    this.bodyBytes = 0;
    this.worker.postMessage(message, [message.bodies]);
  }

  private received(message: FromWriter): void {
    switch (message.kind) {
      case 'stored': {
        const batch = this.inFlight.shift();
        if (!batch) return;
        this.queuedExchanges -= batch.requests.length;
        this.queuedBytes -= batch.bytes;
        // The ids stored come in the batch's order; one left out (its chunk failed, or its id was
        // stored before) is skipped. Of two with one id, the first is the one stored.
        let stored = batch.requests;
        if (message.ids.length < stored.length) {
          let next = 0;
          stored = stored.filter((request) => {
            if (request.id !== message.ids[next]) return false;
            next += 1;
            return true;
          });
        }
        if (message.error !== null) this.emit('failed', new Error(message.error));
        if (stored.length > 0) this.emit('stored', stored);
        return;
      }
      case 'answer':
      case 'error': {
        const call = this.calls.get(message.id);
        this.calls.delete(message.id);
        if (this.calls.size === 0) this.worker.unref();
        if (message.kind === 'answer') call?.resolve(message.value);
        else call?.reject(new Error(message.message));
        return;
      }
      case 'broken':
        this.stopped(new Error(`the traffic history cannot be opened: ${message.message}`));
        return;
    }
  }

  /** The writer is gone: calls waiting and to come fail with why; what was queued is lost. */
  private stopped(error: Error): void {
    if (this.broken) return;
    this.broken = error;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const call of this.calls.values()) call.reject(error);
    this.calls.clear();
    if (!this.closing) this.emit('failed', error);
  }

  private call<T>(method: HistoryMethod, args: unknown[] = []): Promise<T> {
    if (this.broken) return Promise.reject(this.broken);
    if (this.closing) return Promise.reject(new Error('the traffic history is closed'));
    this.send();
    const id = this.nextCall++;
    this.worker.ref();
    return new Promise<T>((resolve, reject) => {
      this.calls.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.worker.postMessage({ kind: 'call', id, method, args } satisfies ToWriter);
    });
  }

  /** Writes everything queued now; `stored` has been emitted for it when this resolves. */
  flush(): Promise<void> {
    return this.call('flush');
  }

  /**
   * Exchanges matching the query, newest first, and how many match in all (see CaptureStore.list).
   * A query that does not check out rejects with the BridgeError's message.
   */
  list(query: TrafficQuery = {}, tunnels?: readonly string[]): Promise<TrafficPage> {
    return this.call('list', tunnels === undefined ? [query] : [query, tunnels]);
  }

  tunnels(): Promise<TrafficTunnel[]> {
    return this.call('tunnels');
  }

  get(id: string): Promise<StoredCapture | null> {
    return this.call('get', [id]);
  }

  /** Deletes the history, or one tunnel's part of it; answers how many exchanges went. */
  clear(tunnels?: readonly string[]): Promise<number> {
    return this.call('clear', tunnels === undefined ? [] : [tunnels]);
  }

  async stats(): Promise<TrafficHistoryStats> {
    const stats = await this.call<Omit<TrafficHistoryStats, 'dropped'>>('stats');
    return { ...stats, shedBodies: stats.shedBodies + this.shedHere, dropped: this.dropped };
  }

  /** Writes what is queued, closes the history and ends the writer. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (!this.broken) {
        this.send();
        const id = this.nextCall++;
        this.worker.ref();
        const closed = new Promise<unknown>((resolve, reject) => this.calls.set(id, { resolve, reject }));
        this.worker.postMessage({ kind: 'close', id } satisfies ToWriter);
        await closed.catch(() => undefined);
      }
      await this.worker.terminate();
    })();
    return this.closing;
  }
}
