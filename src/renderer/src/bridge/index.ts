// The renderer's one Bridge, chosen by what the host offers: Electron's preload exposes `window.wharf`;
// a browser has the HTTP transport of the page's own origin. Nothing else in the renderer knows which.
import type { RawBridge } from '../../../shared/bridge.js';
import { httpBridge } from './http';
import { ipcBridge } from './ipc';
import type { RendererBridge } from './types';

declare global {
  interface Window {
    /** Exposed by src/preload in the desktop app only. */
    wharf?: RawBridge;
  }
}

export const bridge: RendererBridge = window.wharf ? ipcBridge(window.wharf) : httpBridge(location);

export type { InvokeOptions, RendererBridge, TransportState } from './types';
