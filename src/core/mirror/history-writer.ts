// The traffic history's writer thread: the Mirror's CaptureStore on a connection of its own, fed and
// read by the Engine's thread through history-thread.ts. Built as an entry point of its own
// (dist/history-writer.js, out/main/history-writer.js): a worker loads a file, not a function.
//
// Each batch is written as it arrives (the Engine's side gathers exchanges for ~50 ms first), then
// acknowledged by id, so the Engine announces only what is stored. Calls are answered in the order
// they came, after every batch sent before them: a read sees every exchange added before it.
import { parentPort, workerData } from 'node:worker_threads';
import type { CaptureStore, StorableExchange } from './captures.js';
import type { RowRequest } from './captures-schema.js';
import type {
  FromWriter,
  HistoryMethod,
  HistoryWriterData,
  ToWriter,
  WireExchange,
} from './history-protocol.js';
import { Mirror } from './mirror.js';

const port = parentPort;
if (!port) throw new Error('history-writer runs as a worker thread (see history-thread.ts)');
const send = (message: FromWriter) => port.postMessage(message);

let mirror: Mirror | null = null;
try {
  const data = workerData as HistoryWriterData;
  mirror = new Mirror(data.file, { captures: data.captures });
} catch (error) {
  send({ kind: 'broken', message: messageOf(error) });
  port.close();
}

if (mirror) {
  const store = mirror.captures;
  let failure: string | null = null;
  store.on('failed', (error) => (failure = messageOf(error)));

  port.on('message', (message: ToWriter) => {
    switch (message.kind) {
      case 'add': {
        failure = null;
        const bodies = Buffer.from(message.bodies);
        for (const item of message.items) {
          try {
            store.add(exchangeOf(item, bodies), item.origin, item.json);
          } catch (error) {
            // Not a request this writer can read: that exchange is lost, the rest are written.
            failure = messageOf(error);
          }
        }
        const stored = store.flush();
        send({ kind: 'stored', ids: stored.map((request) => request.id), error: failure });
        return;
      }
      case 'call':
        try {
          send({ kind: 'answer', id: message.id, value: call(store, message.method, message.args) });
        } catch (error) {
          send({ kind: 'error', id: message.id, message: messageOf(error) });
        }
        return;
      case 'close':
        try {
          mirror?.close();
          mirror = null;
          send({ kind: 'answer', id: message.id, value: null });
        } catch (error) {
          send({ kind: 'error', id: message.id, message: messageOf(error) });
        }
        port.close();
        return;
    }
  });
}

function call(store: CaptureStore, method: HistoryMethod, args: unknown[]): unknown {
  switch (method) {
    case 'list':
      return store.list(...(args as Parameters<CaptureStore['list']>));
    case 'tunnels':
      return store.tunnels();
    case 'get':
      return store.get(args[0] as string);
    case 'clear':
      return store.clear(args[0] as string[] | undefined);
    case 'stats':
      return { ...store.stats(), shedBodies: store.shedBodies };
    case 'flush':
      store.flush();
      return null;
  }
}

/** An exchange of a batch; its bodies are views of the batch's buffer (SQLite copies them). */
function exchangeOf(item: WireExchange, bodies: Buffer): StorableExchange {
  return {
    request: JSON.parse(item.json) as RowRequest,
    requestBody: bodies.subarray(item.requestBody, item.requestBody + item.requestLength),
    responseBody: bodies.subarray(item.responseBody, item.responseBody + item.responseLength),
    requestBodyTruncated: item.requestTruncated,
    responseBodyTruncated: item.responseTruncated,
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
