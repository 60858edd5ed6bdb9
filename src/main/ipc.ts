// The Bridge over Electron IPC, main-process side. Two channels, typed by `BridgeIpcChannels`
// (src/shared/ipc-channels.ts, which the preload script uses too):
// - `bridge:invoke` (renderer → main, ipcMain.handle): validates the operation, calls the Engine, and
//   answers with a BridgeResult envelope. Errors travel as data because IPC drops Error subclasses.
// - `bridge:event` (main → renderer, webContents.send): every event of BRIDGE_EVENTS, as it happens.
// Every handler first checks that the sender is a top-level frame showing our renderer
// (trusted-sender.ts); anything else is refused without touching the Engine.
// Each window's page is one BridgeSession: the logs it follows are unfollowed for it when it reloads or
// closes, so no log stream outlives the page that asked for it.
import { ipcMain, type IpcMainInvokeEvent, type WebContents } from 'electron';
import { BRIDGE_EVENTS, BridgeError, bridgeFailure, type Bridge } from '../shared/bridge.js';
import { isBridgeOperation } from '../shared/bridge-inputs.js';
import {
  BRIDGE_INVOKE_CHANNEL,
  type BridgeEventMessage,
  type BridgeIpcChannel,
  type BridgeIpcChannels,
} from '../shared/ipc-channels.js';
import { BridgeSession } from '../core/bridge-session.js';
import { isAppUrl, isTrustedSender, type RendererTarget } from './trusted-sender.js';

type InvokeChannel = {
  [C in BridgeIpcChannel]: BridgeIpcChannels[C] extends { direction: 'renderer-to-main' } ? C : never;
}[BridgeIpcChannel];
type SendChannel = {
  [C in BridgeIpcChannel]: BridgeIpcChannels[C] extends { direction: 'main-to-renderer' } ? C : never;
}[BridgeIpcChannel];

/** A typed ipcMain.handle: the handler's arguments and result come from BridgeIpcChannels. */
function handle<C extends InvokeChannel>(
  channel: C,
  handler: (
    event: IpcMainInvokeEvent,
    ...args: BridgeIpcChannels[C]['args']
  ) => Promise<BridgeIpcChannels[C]['result']>,
): void {
  ipcMain.handle(channel, (event, ...args: unknown[]) =>
    handler(event, ...(args as BridgeIpcChannels[C]['args'])),
  );
}

/** A typed webContents.send. */
function send<C extends SendChannel>(
  contents: WebContents,
  channel: C,
  message: BridgeIpcChannels[C]['message'],
): void {
  contents.send(channel, message);
}

export interface BridgeIpcOptions {
  bridge: Bridge;
  target: RendererTarget;
  /** The windows that receive events (just the main window, when it exists). */
  windows: () => WebContents[];
  /** Told about refused senders, for the log. */
  onRefused?: (url: string | null) => void;
}

/** Serves the Bridge over IPC; returns a function that stops serving (handlers and subscriptions). */
export function serveBridgeOverIpc(options: BridgeIpcOptions): () => void {
  const { bridge, target } = options;
  const sessions = new SessionsPerWindow(bridge);

  handle('bridge:invoke', async (event, operation, input) => {
    if (!isTrustedSender(event.senderFrame, target)) {
      options.onRefused?.(event.senderFrame?.url ?? null);
      return bridgeFailure(new BridgeError('forbidden', 403, 'this page may not use the Wharf Bridge'));
    }
    if (!isBridgeOperation(operation)) {
      return bridgeFailure(
        new BridgeError('unknown_operation', 404, `unknown operation ${String(operation)}`),
      );
    }
    try {
      // The input is checked by the Engine's handlers (and by the platform's schemas behind them).
      const value = await sessions.of(event.sender).invoke(operation, input as never);
      return { ok: true, value };
    } catch (error) {
      return bridgeFailure(error);
    }
  });

  const unsubscribe = BRIDGE_EVENTS.map((event) =>
    bridge.on(event, (payload) => {
      for (const contents of options.windows()) {
        // Only to a window that still shows the app: never hand events to a page that got in.
        if (contents.isDestroyed() || !isAppUrl(contents.mainFrame.url, target)) continue;
        send(contents, 'bridge:event', { event, payload } as BridgeEventMessage);
      }
    }),
  );

  return () => {
    ipcMain.removeHandler(BRIDGE_INVOKE_CHANNEL);
    sessions.releaseAll();
    for (const off of unsubscribe) off();
  };
}

/** One Bridge session per window's page, released when the page goes away (a reload, a close). */
class SessionsPerWindow {
  private readonly windows = new Map<WebContents, BridgeSession>();

  constructor(private readonly bridge: Bridge) {}

  of(contents: WebContents): BridgeSession {
    const known = this.windows.get(contents);
    if (known) return known;
    const session = new BridgeSession(this.bridge);
    this.windows.set(contents, session);
    const release = () => {
      contents.off('did-navigate', release);
      contents.off('destroyed', release);
      if (this.windows.get(contents) === session) this.release(contents);
    };
    // A full navigation (a reload) starts a new page that knows nothing of what the old one followed;
    // moves between the app's screens are in-page and keep them.
    contents.on('did-navigate', release);
    contents.once('destroyed', release);
    return session;
  }

  releaseAll(): void {
    for (const contents of [...this.windows.keys()]) this.release(contents);
  }

  private release(contents: WebContents): void {
    const session = this.windows.get(contents);
    this.windows.delete(contents);
    void session?.release();
  }
}
