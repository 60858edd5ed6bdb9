// What the renderer's transports offer on top of the shared Bridge contract: upload progress where the
// transport can measure it, and the transport's own state (the HTTP one needs a token and a socket).
import type { Bridge, BridgeInput, BridgeOperation, BridgeOutput } from '../../../shared/bridge.js';

/**
 * - `ready`: calls and events flow.
 * - `connecting` / `reconnecting`: the event socket is (re)opening; calls may still work.
 * - `no-token`: the page was opened without the token `wharf app` prints, so nothing can work.
 * - `refused`: the server refused the token (e.g. `wharf app` restarted with a new one).
 */
export type TransportState = 'connecting' | 'ready' | 'reconnecting' | 'no-token' | 'refused';

export interface InvokeOptions {
  /** Called as an upload's bytes are sent, where the transport can tell (HTTP can, IPC cannot). */
  onUploadProgress?: (sentBytes: number, totalBytes: number) => void;
}

export interface RendererBridge extends Bridge {
  /**
   * Where the app runs: in the desktop app the main process shows system notifications (a deploy that
   * ended, say); in a browser the page shows them itself.
   */
  readonly host: 'electron' | 'browser';
  invoke<K extends BridgeOperation>(
    operation: K,
    input: BridgeInput<K>,
    options?: InvokeOptions,
  ): Promise<BridgeOutput<K>>;
  /** Calls `listener` with the current state at once, then on every change. */
  onTransportState(listener: (state: TransportState) => void): () => void;
}
