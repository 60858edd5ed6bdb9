// The Bridge over Electron IPC: its two channels, who sends each, and what it carries. The main
// process serves them (src/main/ipc.ts) and the preload script uses them (src/preload), both from here.
import type { BridgeEventName, BridgeEvents, BridgeResult } from './bridge.js';

/** What crosses `bridge:event`. */
export type BridgeEventMessage = {
  [E in BridgeEventName]: { event: E; payload: BridgeEvents[E] };
}[BridgeEventName];

/** The IPC contract: each channel, who sends it, and what it carries. */
export interface BridgeIpcChannels {
  'bridge:invoke': {
    direction: 'renderer-to-main';
    args: [operation: string, input: unknown];
    result: BridgeResult;
  };
  'bridge:event': { direction: 'main-to-renderer'; message: BridgeEventMessage };
}

export type BridgeIpcChannel = keyof BridgeIpcChannels;

export const BRIDGE_INVOKE_CHANNEL = 'bridge:invoke' satisfies BridgeIpcChannel;
export const BRIDGE_EVENT_CHANNEL = 'bridge:event' satisfies BridgeIpcChannel;
