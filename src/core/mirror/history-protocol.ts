// The messages between the Engine's thread and the traffic history's writer thread (history-thread.ts,
// history-writer.ts). Exchanges cross in batches: each request as the JSON its row stores (made once,
// on the Engine's side, where the request already is), its bodies as ranges of one buffer that is
// transferred, not copied. Everything else is a call with an answer.
import type { CaptureOrigin, CaptureStoreOptions } from './captures.js';

/** What the writer thread is started with (`workerData`). */
export interface HistoryWriterData {
  /** The Mirror's file, or `:memory:` (a history of the writer's own, for tests). */
  file: string;
  captures: CaptureStoreOptions;
}

/** One exchange of a batch: its bodies are `[offset, length)` of the batch's buffer. */
export interface WireExchange {
  /** The request as its row stores it (captures-schema.ts, rowJson). */
  json: string;
  origin: CaptureOrigin;
  requestBody: number;
  requestLength: number;
  responseBody: number;
  responseLength: number;
  requestTruncated: boolean;
  responseTruncated: boolean;
}

/** The history's reads and writes that answer, by name (CaptureStore's methods of the same names). */
export type HistoryMethod = 'list' | 'tunnels' | 'get' | 'clear' | 'stats' | 'flush';

export type ToWriter =
  | { kind: 'add'; items: WireExchange[]; bodies: ArrayBuffer }
  | { kind: 'call'; id: number; method: HistoryMethod; args: unknown[] }
  | { kind: 'close'; id: number };

export type FromWriter =
  /** A batch was written: the ids of its exchanges that were stored (a duplicate id is not). */
  | { kind: 'stored'; ids: string[]; error: string | null }
  | { kind: 'answer'; id: number; value: unknown }
  | { kind: 'error'; id: number; message: string }
  /** The writer could not open the history; it ends after this. */
  | { kind: 'broken'; message: string };
