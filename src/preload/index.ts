// The preload script: exposes `window.wharf` (a RawBridge) to the renderer through contextBridge, and
// nothing else. `invoke` only forwards the operations of BRIDGE_OPERATIONS and `on` only the events of
// BRIDGE_EVENTS; ipcRenderer itself and the IPC event objects (which carry it) never reach the page.
//
// It runs sandboxed, so it is bundled into one CommonJS file (electron.vite.config.ts) whose only
// require is `electron`.
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import { BRIDGE_EVENTS, type BridgeEventName, type BridgeResult, type RawBridge } from '../shared/bridge.js';
import { BRIDGE_OPERATIONS } from '../shared/bridge-inputs.js';
import {
  BRIDGE_EVENT_CHANNEL as EVENT_CHANNEL,
  BRIDGE_INVOKE_CHANNEL as INVOKE_CHANNEL,
  type BridgeEventMessage,
} from '../shared/ipc-channels.js';

const operations: ReadonlySet<string> = new Set(BRIDGE_OPERATIONS);
const events: ReadonlySet<string> = new Set(BRIDGE_EVENTS);

const listeners = new Map<BridgeEventName, Set<(payload: unknown) => void>>();

// One IPC listener for all events; the page's listeners get the payload only.
ipcRenderer.on(EVENT_CHANNEL, (_event: IpcRendererEvent, message: BridgeEventMessage) => {
  if (typeof message !== 'object' || message === null || !events.has(message.event)) return;
  for (const listener of [...(listeners.get(message.event) ?? [])]) {
    try {
      listener(message.payload);
    } catch (error) {
      console.error(`a listener of the Wharf "${message.event}" event failed`, error);
    }
  }
});

const wharf: RawBridge = {
  invoke(operation: string, input: unknown): Promise<BridgeResult> {
    if (typeof operation !== 'string' || !operations.has(operation)) {
      return Promise.resolve({
        ok: false,
        error: { code: 'unknown_operation', status: 404, detail: `unknown operation ${String(operation)}` },
      });
    }
    // The handler answers errors as data; this catches what fails before it (an input IPC cannot clone).
    return (ipcRenderer.invoke(INVOKE_CHANNEL, operation, input) as Promise<BridgeResult>).catch(
      (error: unknown): BridgeResult => ({
        ok: false,
        error: {
          code: 'bad_request',
          status: 400,
          detail: `the request could not be sent to Wharf: ${error instanceof Error ? error.message : String(error)}`,
        },
      }),
    );
  },

  on(event: string, listener: (payload: unknown) => void): () => void {
    if (typeof event !== 'string' || !events.has(event)) {
      throw new TypeError(`unknown Wharf event ${String(event)}; known: ${BRIDGE_EVENTS.join(', ')}`);
    }
    if (typeof listener !== 'function') throw new TypeError('the listener must be a function');
    const name = event as BridgeEventName;
    let set = listeners.get(name);
    if (!set) listeners.set(name, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
    };
  },
};

contextBridge.exposeInMainWorld('wharf', wharf);
