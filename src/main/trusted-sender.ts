// Which URLs are "the app": the one renderer this shell loads (the built out/renderer/index.html over
// file://, or the electron-vite dev server in development). Every IPC handler checks that its message
// comes from a frame showing that renderer, and navigation is limited to it, so a page that somehow got
// into a window (a link, a redirect, an iframe) can neither drive the Engine nor stay in the window.
//
// Pure functions over URLs (electron is imported for types only), so they hold no Electron state.
import { fileURLToPath } from 'node:url';
import type { WebFrameMain } from 'electron';

export type RendererTarget =
  /** The built renderer, loaded with loadFile(`file`, a path); only this exact file counts as the app. */
  | { kind: 'file'; file: string; url: string }
  /** The electron-vite dev server (development only): any page of that origin is the app. */
  | { kind: 'dev'; url: string; origin: string };

/**
 * Where the renderer is. `devServerUrl` (ELECTRON_RENDERER_URL) is honoured only when the app is not
 * packaged: otherwise anyone who can set an environment variable could point the window, and with it
 * the Bridge and the user's API key, at a site of their choosing.
 */
export function resolveRendererTarget(options: {
  indexHtmlUrl: URL;
  devServerUrl: string | undefined;
  isPackaged: boolean;
}): RendererTarget {
  if (!options.isPackaged && options.devServerUrl) {
    const url = new URL(options.devServerUrl);
    if ((url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.hostname)) {
      return { kind: 'dev', url: url.href, origin: url.origin };
    }
    throw new Error(
      `ELECTRON_RENDERER_URL must be an http(s) URL on this machine (localhost), not ${options.devServerUrl}`,
    );
  }
  return { kind: 'file', file: fileURLToPath(options.indexHtmlUrl), url: options.indexHtmlUrl.href };
}

/** Whether `candidate` is a page of the app (hash and query ignored for the built file). */
export function isAppUrl(candidate: string, target: RendererTarget): boolean {
  let url: URL;
  try {
    url = new URL(candidate);
  } catch {
    return false;
  }
  if (target.kind === 'dev') return url.origin === target.origin;
  if (url.protocol !== 'file:' || (url.host !== '' && url.host !== 'localhost')) return false;
  let path: string;
  try {
    path = fileURLToPath(new URL(url.pathname, 'file:///'));
  } catch {
    return false;
  }
  return samePath(path, target.file);
}

/** The parts of the sending frame the check needs (a WebFrameMain in Electron). */
export type SenderFrame = Pick<WebFrameMain, 'url'> & { parent: unknown };

/**
 * Whether an IPC message may be served: it must come from a frame that still exists, is a top-level
 * frame (not an iframe some page embedded), and shows the app.
 */
export function isTrustedSender(frame: SenderFrame | null | undefined, target: RendererTarget): boolean {
  if (!frame) return false;
  if (frame.parent !== null) return false;
  return isAppUrl(frame.url, target);
}

/** http(s) links leave the app for the system browser; nothing else is opened at all. */
export function isExternalWebUrl(candidate: string): boolean {
  try {
    const url = new URL(candidate);
    return (
      (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === ''
    );
  } catch {
    return false;
  }
}

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '127.0.0.1' || hostname === '[::1]';
}

function samePath(a: string, b: string): boolean {
  // Paths are case-insensitive on Windows (and file URLs may spell the drive letter either way).
  return process.platform === 'win32' ? a.toLowerCase() === b.toLowerCase() : a === b;
}
