// The Electron main process: a thin host of the Engine, like `wharf app` is for the browser. It keeps
// one instance per Wharf home, creates the Engine (API keys in Electron safeStorage; the embedded
// platform reused when one already serves this home, else started in this process), serves the Bridge
// over IPC to one hardened window, shows the tray and a notification when a deploy ends, and closes
// everything in order on quit.
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { app, dialog, session, type BrowserWindow } from 'electron';
import { Engine } from '../core/engine.js';
import { wharfHome } from '../server/config.js';
import type { LocalPlatform } from '../server/local.js';
import { serveBridgeOverIpc } from './ipc.js';
import { notifyDeploys } from './notifications.js';
import { SECRETS_FILE_NAME, SafeStorageSecretStore } from './safe-storage-secret-store.js';
import { createTray, type AppTray } from './tray.js';
import { resolveRendererTarget, type RendererTarget } from './trusted-sender.js';
import {
  RENDERER_INDEX_URL,
  createMainWindow,
  hardenSession,
  limitAllWebContents,
  openExternally,
  showProject,
} from './window.js';

/** The traffic history's writer thread, built beside this bundle: out/main/history-writer.js. */
const HISTORY_WRITER_FILE = fileURLToPath(new URL('./history-writer.js', import.meta.url));

const SHUTDOWN_TIMEOUT_MS = 5_000;

const home = resolve(wharfHome());

app.setName('Wharf');
// A Wharf home other than the default gets its own Chromium profile, and so its own single-instance
// lock: two homes (a test run next to the real app) may run side by side, one home only once.
if (process.env.WHARF_HOME) app.setPath('userData', join(home, 'electron'));
// Every renderer sandboxed, whatever a window's webPreferences say.
app.enableSandbox();

if (!app.requestSingleInstanceLock()) {
  // Another Wharf serves this home; it shows its window (second-instance) and this one leaves.
  app.exit(0);
} else {
  main();
}

function main(): void {
  const target: RendererTarget = resolveRendererTarget({
    indexHtmlUrl: RENDERER_INDEX_URL,
    devServerUrl: process.env.ELECTRON_RENDERER_URL,
    isPackaged: app.isPackaged,
  });
  limitAllWebContents(target);

  let engine: Engine | null = null;
  let localPlatform: Promise<LocalPlatform> | null = null;
  let stopIpc: (() => void) | null = null;
  let tray: AppTray | null = null;
  let stopNotifications: (() => void) | null = null;
  let window: BrowserWindow | null = null;

  const showWindow = (): BrowserWindow => {
    if (!window || window.isDestroyed()) {
      window = createMainWindow(target);
      window.on('closed', () => {
        window = null;
      });
    } else {
      if (window.isMinimized()) window.restore();
      window.show();
    }
    window.focus();
    return window;
  };

  const openProject = (projectId: string) => {
    const shown = showWindow();
    const contents = shown.webContents;
    if (contents.isLoading()) contents.once('did-finish-load', () => showProject(shown, target, projectId));
    else showProject(shown, target, projectId);
  };

  app.on('second-instance', () => {
    if (app.isReady()) showWindow();
  });
  app.on('activate', () => {
    if (app.isReady()) showWindow();
  });
  app.on('window-all-closed', () => {
    // The tray keeps the app reachable on macOS (with the dock) and Windows. Many Linux desktops show no
    // tray icons at all (GNOME without an extension), where staying would leave an invisible process.
    if (process.platform === 'linux') app.quit();
  });

  let shutdown: Promise<void> | null = null;
  let shutdownDone = false;
  const closeEverything = async () => {
    tray?.destroy();
    tray = null;
    stopNotifications?.();
    stopNotifications = null;
    stopIpc?.();
    stopIpc = null;
    await engine?.close().catch((error: unknown) => console.error('closing the Engine failed:', error));
    engine = null;
    const local = await localPlatform?.catch(() => null);
    await local?.close().catch((error: unknown) => console.error('stopping the platform failed:', error));
  };
  app.on('before-quit', (event) => {
    if (shutdownDone) return;
    event.preventDefault();
    shutdown ??= Promise.race([
      closeEverything(),
      new Promise<void>((done) => setTimeout(done, SHUTDOWN_TIMEOUT_MS).unref()),
    ]).finally(() => {
      shutdownDone = true;
      app.quit();
    });
  });

  app
    .whenReady()
    .then(() => {
      hardenSession(session.defaultSession, target);

      // safeStorage answers truthfully only once the app is ready (on Linux, before it, never).
      const secrets = new SafeStorageSecretStore(join(home, SECRETS_FILE_NAME));
      if (secrets.warning) console.warn(`Wharf: ${secrets.warning}`);

      const running = new Engine({
        home,
        secrets,
        historyWriter: HISTORY_WRITER_FILE,
        localPlatform: async () => {
          // Loaded on first use: a remote-only user never loads the platform's server code.
          localPlatform ??= import('../server/local.js').then(({ ensureLocalPlatform }) =>
            ensureLocalPlatform(home),
          );
          try {
            const local = await localPlatform;
            return { url: local.url, apiKey: local.apiKey };
          } catch (error) {
            localPlatform = null; // try again on the next call
            throw error;
          }
        },
      });
      engine = running;

      stopIpc = serveBridgeOverIpc({
        bridge: running,
        target,
        windows: () => (window && !window.isDestroyed() ? [window.webContents] : []),
        onRefused: (url) => console.warn(`Wharf: refused a Bridge call from ${url ?? 'a closed frame'}`),
      });

      showWindow();
      stopNotifications = notifyDeploys(running, openProject);
      tray = createTray(running, {
        showWindow: () => void showWindow(),
        openProject,
        openUrl: openExternally,
        quit: () => app.quit(),
      });
    })
    .catch((error: unknown) => {
      const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
      console.error('Wharf could not start:', message);
      dialog.showErrorBox('Wharf could not start', message);
      app.exit(1);
    });
}
