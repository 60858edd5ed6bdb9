// The main window and the hardening every web page in the app gets (Electron's security checklist):
// - webPreferences: contextIsolation, sandbox, no Node integration anywhere, webSecurity, no <webview>;
//   the renderer reaches the Engine only through the preload's window.wharf.
// - Navigation: a window may show the app and nothing else. Links to http(s) sites open in the system
//   browser (shell.openExternal); every other navigation and every window.open is refused.
// - A Content-Security-Policy header on every response (the dev server's pages); the built renderer,
//   loaded over file:// where no headers exist, relies on the <meta> CSP of src/renderer/index.html.
// - Permission requests (camera, notifications, geolocation…) are refused, except writing to the
//   clipboard from the app itself.
/// <reference types="electron-vite/node" />
import { fileURLToPath } from 'node:url';
import { BrowserWindow, app, shell, type Session, type WebContents } from 'electron';
import appIcon from '../../resources/icon.png?asset';
import { isAppUrl, isExternalWebUrl, type RendererTarget } from './trusted-sender.js';

/** Bundled next to the main bundle: out/preload/index.cjs beside out/main/index.js. */
export const PRELOAD_FILE = fileURLToPath(new URL('../preload/index.cjs', import.meta.url));
/** The built renderer: out/renderer/index.html. */
export const RENDERER_INDEX_URL = new URL('../renderer/index.html', import.meta.url);

const ALLOWED_PERMISSIONS: ReadonlySet<string> = new Set(['clipboard-sanitized-write']);

/** The policy for the app's pages; the dev server needs inline scripts and its HMR socket. */
export function contentSecurityPolicy(target: RendererTarget): string {
  const dev = target.kind === 'dev';
  const devSocket = dev ? ` ${target.origin.replace(/^http/, 'ws')}` : '';
  return [
    "default-src 'none'",
    `script-src 'self'${dev ? " 'unsafe-inline'" : ''}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    `connect-src 'self'${devSocket}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-src 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Session-wide rules: the CSP header and the permission policy. Call once, before any window loads. */
export function hardenSession(session: Session, target: RendererTarget): void {
  const policy = contentSecurityPolicy(target);
  session.webRequest.onHeadersReceived((details, callback) => {
    const headers = { ...details.responseHeaders };
    for (const name of Object.keys(headers)) {
      if (name.toLowerCase() === 'content-security-policy') delete headers[name];
    }
    headers['Content-Security-Policy'] = [policy];
    callback({ responseHeaders: headers });
  });

  // Only the app may write to the clipboard (its copy buttons); every other permission is refused.
  session.setPermissionRequestHandler((_contents, permission, callback, details) => {
    callback(ALLOWED_PERMISSIONS.has(permission) && isAppUrl(details.requestingUrl, target));
  });
  session.setPermissionCheckHandler((contents, permission, _origin, details) => {
    const url = details.requestingUrl ?? contents?.getURL() ?? '';
    return ALLOWED_PERMISSIONS.has(permission) && isAppUrl(url, target);
  });
}

/** Opens http(s) URLs in the system browser; anything else (file:, javascript:, custom schemes) is dropped. */
export function openExternally(url: string): void {
  if (!isExternalWebUrl(url)) return;
  shell.openExternal(url).catch((error: unknown) => {
    console.error(`could not open ${url} in the browser:`, error);
  });
}

/**
 * Navigation and window-open limits for one WebContents. Installed on every WebContents the app
 * creates (see limitAllWebContents), so even one we did not expect cannot wander off.
 */
export function limitNavigation(contents: WebContents, target: RendererTarget): void {
  contents.on('will-navigate', (event) => {
    if (isAppUrl(event.url, target)) return;
    event.preventDefault();
    openExternally(event.url);
  });
  // Subframes (an iframe the app never meant to have) may not navigate anywhere but the app either.
  contents.on('will-frame-navigate', (event) => {
    if (event.isMainFrame || isAppUrl(event.url, target)) return;
    event.preventDefault();
  });
  contents.on('will-redirect', (event) => {
    if (isAppUrl(event.url, target)) return;
    event.preventDefault();
  });
  contents.on('will-attach-webview', (event) => event.preventDefault());
  contents.setWindowOpenHandler(({ url }) => {
    openExternally(url);
    return { action: 'deny' };
  });
}

/** Applies limitNavigation to every WebContents created from now on. */
export function limitAllWebContents(target: RendererTarget): void {
  app.on('web-contents-created', (_event, contents) => limitNavigation(contents, target));
}

export function createMainWindow(target: RendererTarget): BrowserWindow {
  const window = new BrowserWindow({
    width: 1280,
    height: 820,
    minWidth: 860,
    minHeight: 560,
    show: false,
    title: 'Wharf',
    backgroundColor: '#0f172a',
    // Windows and macOS take the icon from the packaged app; Linux needs it on the window.
    ...(process.platform === 'linux' ? { icon: appIcon } : {}),
    webPreferences: {
      preload: PRELOAD_FILE,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      experimentalFeatures: false,
      webviewTag: false,
      navigateOnDragDrop: false,
      safeDialogs: true,
      spellcheck: false,
    },
  });
  window.once('ready-to-show', () => window.show());

  const load = target.kind === 'dev' ? window.loadURL(target.url) : window.loadFile(target.file);
  load.catch((error: unknown) => {
    console.error(`could not load the Wharf UI from ${target.url}:`, error);
    // Show the (empty) window anyway: a hidden window that never appears is worse.
    if (!window.isDestroyed()) window.show();
  });
  return window;
}

/** Shows the app at a project's page: the renderer routes `#/projects/<id>`. */
export function showProject(window: BrowserWindow, target: RendererTarget, projectId: string): void {
  const contents = window.webContents;
  if (!isAppUrl(contents.mainFrame.url, target)) return;
  const hash = `#/projects/${encodeURIComponent(projectId)}`;
  // In-page navigation keeps the renderer's state; JSON.stringify makes the id inert as code.
  contents.executeJavaScript(`location.hash = ${JSON.stringify(hash)}`).catch((error: unknown) => {
    console.error('could not show the project:', error);
  });
}
