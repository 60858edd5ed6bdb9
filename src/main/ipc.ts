// The Bridge over Electron IPC, main-process side. Two channels, typed by `BridgeIpcChannels`, which
// the preload script checks its own channel names against:
// - `bridge:invoke` (renderer → main, ipcMain.handle): validates the operation, calls the Engine, and
//   answers with a BridgeResult envelope. Errors travel as data because IPC drops Error subclasses.
// - `bridge:event` (main → renderer, webContents.send): every event of BRIDGE_EVENTS, as it happens.
// Every handler first checks that the sender is a top-level frame showing our renderer
// (trusted-sender.ts); anything else is refused without touching the Engine.
// The logs a window follows (`logs.follow`) are counted per window and unfollowed for it when it
// reloads or closes, so no log stream outlives the page that asked for it.
import { ipcMain, type IpcMainInvokeEvent, type WebContents } from 'electron';
import {
  BRIDGE_EVENTS,
  BridgeError,
  bridgeFailure,
  isBridgeOperation,
  type Bridge,
  type BridgeEventName,
  type BridgeEvents,
  type BridgeResult,
  type LogFollow,
} from '../shared/bridge.js';
import { isAppUrl, isTrustedSender, type RendererTarget } from './trusted-sender.js';

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
type InvokeChannel = {
  [C in BridgeIpcChannel]: BridgeIpcChannels[C] extends { direction: 'renderer-to-main' } ? C : never;
}[BridgeIpcChannel];
type SendChannel = {
  [C in BridgeIpcChannel]: BridgeIpcChannels[C] extends { direction: 'main-to-renderer' } ? C : never;
}[BridgeIpcChannel];

export const BRIDGE_INVOKE_CHANNEL = 'bridge:invoke' satisfies BridgeIpcChannel;
export const BRIDGE_EVENT_CHANNEL = 'bridge:event' satisfies BridgeIpcChannel;

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
  const follows = new FollowsPerWindow(bridge);

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
      const value = await bridge.invoke(operation, input as never);
      if (operation === 'logs.follow') follows.followed(event.sender, (value as LogFollow).projectId);
      else if (operation === 'logs.unfollow') follows.unfollowed(event.sender, (input as { id: string }).id);
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
    follows.releaseAll();
    for (const off of unsubscribe) off();
  };
}

/** How many times each window follows each project, released when the window's page goes away. */
class FollowsPerWindow {
  private readonly windows = new Map<WebContents, Map<string, number>>();

  constructor(private readonly bridge: Bridge) {}

  followed(contents: WebContents, projectId: string): void {
    let counts = this.windows.get(contents);
    if (!counts) {
      const created = new Map<string, number>();
      counts = created;
      this.windows.set(contents, created);
      const release = () => {
        contents.off('did-navigate', release);
        contents.off('destroyed', release);
        if (this.windows.get(contents) === created) this.release(contents);
      };
      // A full navigation (a reload) starts a new page that knows nothing of what the old one followed;
      // moves between the app's screens are in-page and keep them.
      contents.on('did-navigate', release);
      contents.once('destroyed', release);
    }
    counts.set(projectId, (counts.get(projectId) ?? 0) + 1);
  }

  unfollowed(contents: WebContents, projectId: string): void {
    const counts = this.windows.get(contents);
    const count = counts?.get(projectId) ?? 0;
    if (count > 1) counts?.set(projectId, count - 1);
    else counts?.delete(projectId);
  }

  releaseAll(): void {
    for (const contents of [...this.windows.keys()]) this.release(contents);
  }

  private release(contents: WebContents): void {
    const counts = this.windows.get(contents);
    this.windows.delete(contents);
    for (const [id, count] of counts ?? []) {
      for (let i = 0; i < count; i++) void this.bridge.invoke('logs.unfollow', { id }).catch(() => undefined);
    }
  }
}
