// The Electron transport: wraps `window.wharf` (the preload's RawBridge, results as data) into a
// Bridge whose failures are thrown BridgeErrors. IPC has no token and no socket: it is always ready.
import {
  BridgeError,
  isBridgeErrorShape,
  type BridgeEventName,
  type BridgeEvents,
  type BridgeInput,
  type BridgeOperation,
  type BridgeOutput,
  type BridgeResult,
  type RawBridge,
} from '../../../shared/bridge.js';
import type { RendererBridge, TransportState } from './types';

export function ipcBridge(raw: RawBridge): RendererBridge {
  return {
    host: 'electron',

    async invoke<K extends BridgeOperation>(operation: K, input: BridgeInput<K>): Promise<BridgeOutput<K>> {
      let result: BridgeResult;
      try {
        result = await raw.invoke(operation, input);
      } catch (error) {
        throw new BridgeError(
          'internal',
          500,
          `the app did not answer ${operation}: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      if (result?.ok === true) return result.value as BridgeOutput<K>;
      if (result?.ok === false && isBridgeErrorShape(result.error)) throw BridgeError.from(result.error);
      throw new BridgeError('internal', 500, `the app sent a malformed answer to ${operation}`);
    },

    on<E extends BridgeEventName>(event: E, listener: (payload: BridgeEvents[E]) => void): () => void {
      return raw.on(event, listener as (payload: unknown) => void);
    },

    onTransportState(listener: (state: TransportState) => void): () => void {
      listener('ready');
      return () => undefined;
    },
  };
}
