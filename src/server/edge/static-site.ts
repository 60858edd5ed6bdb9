// Static sites at the edge: never a file whose real location leaves the site's root, and no race
// between looking and serving. A tenant's worker may run beside its static site and write into the
// release folder, so a file checked with realpath and then opened again by name could be swapped for
// a link in between. On Linux the file is opened once, its real location read from the open
// descriptor (/proc/self/fd), and what is served is that same open file; elsewhere (a desktop with
// one account) the location is checked with realpath before serving.
import { existsSync } from 'node:fs';
import { constants } from 'node:fs';
import { type FileHandle, open, readlink, realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { basename, isAbsolute, join, normalize, relative, resolve, sep } from 'node:path';
import send from '@fastify/send';
import type { EdgePage } from './pages.js';

const FD_DIR = '/proc/self/fd';
const HAS_FD_DIR = process.platform === 'linux' && existsSync(FD_DIR);

const NOT_FOUND: EdgePage = { status: 404, title: 'Not found', message: 'There is no file at this address.' };
const BAD_PATH: EdgePage = {
  status: 400,
  title: 'Bad request',
  message: 'This address is not a valid path.',
};

type Page = (res: ServerResponse, page: EdgePage) => void;

/** Serves GET and HEAD for the static site at `root` (a folder of a release under `<dataDir>/apps`). */
export async function serveStaticSite(
  req: IncomingMessage,
  res: ServerResponse,
  root: string,
  dataDir: string,
  page: Page,
): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
    res.end('method not allowed: a static site answers GET and HEAD\n');
    return;
  }
  const url = new URL(req.url ?? '/', 'http://edge');
  const site = await siteRoot(root, dataDir);
  if (site === null) return page(res, NOT_FOUND);
  const path = sitePath(url.pathname);
  if (path === null) return page(res, BAD_PATH);
  // Dotfiles (.env, .git) are never served.
  if (path.split(sep).some((part) => part.startsWith('.') && part !== '.')) return page(res, NOT_FOUND);
  if (!HAS_FD_DIR) return serveByPath(req, res, site, url.pathname, page);

  let opened = await openInside(site, join(site, path));
  if (opened === 'outside') return page(res, NOT_FOUND);
  if (opened !== 'missing' && opened.directory) {
    if (!url.pathname.endsWith('/')) {
      await opened.handle.close();
      // As a web server does: relative links in the folder's index.html need the slash.
      res.writeHead(301, { location: `${url.pathname}/${url.search}`, 'content-type': 'text/plain' });
      res.end();
      return;
    }
    const folder = opened.handle;
    opened = await openInside(site, `${FD_DIR}/${folder.fd}/index.html`);
    await folder.close();
  }
  // Single-page apps route on the client: a path without an extension falls back to index.html.
  if (opened === 'missing' && !/\.[a-z0-9]+$/i.test(path)) {
    opened = await openInside(site, join(site, 'index.html'));
  }
  if (opened === 'outside' || opened === 'missing' || opened.directory) {
    if (typeof opened === 'object') await opened.handle.close();
    return page(res, NOT_FOUND);
  }
  const { handle, real } = opened;
  const closeHandle = () => void handle.close().catch(() => undefined);
  // send opens /proc/self/fd/N again: the same file, whatever its name points at by now. The handle
  // stays open until the response is done, so that number names this file throughout.
  res.once('close', closeHandle);
  let result;
  try {
    result = await send(req, `/${handle.fd}`, {
      root: FD_DIR,
      dotfiles: 'allow',
      index: false,
      contentType: false,
    });
  } catch (error) {
    res.off('close', closeHandle);
    closeHandle();
    throw error;
  }
  const headers = result.headers as Record<string, string>;
  if (result.statusCode < 300) headers['Content-Type'] = contentTypeOf(real);
  res.writeHead(result.statusCode, headers);
  // A file that cannot be read after all ends this response only.
  result.stream.on('error', () => res.destroy());
  result.stream.pipe(res);
}

interface Opened {
  handle: FileHandle;
  /** Where the open file really is. */
  real: string;
  directory: boolean;
}

/**
 * Opens `path` (links followed) and keeps it only when the file opened is a regular file or folder
 * inside `site`: its location is read from the open descriptor, so no later swap changes the answer.
 */
async function openInside(site: string, path: string): Promise<Opened | 'missing' | 'outside'> {
  let handle: FileHandle;
  try {
    // Non-blocking: a FIFO a tenant left in its site must not hold the edge's open.
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return 'missing';
  }
  try {
    const real = await readlink(`${FD_DIR}/${handle.fd}`);
    if (!within(site, real)) {
      await handle.close();
      return 'outside';
    }
    const info = await handle.stat();
    if (!info.isFile() && !info.isDirectory()) {
      await handle.close();
      return 'missing';
    }
    return { handle, real, directory: info.isDirectory() };
  } catch {
    await handle.close().catch(() => undefined);
    return 'missing';
  }
}

/** The URL path as a path relative to the site (`.`-prefixed, normalised), or null when malformed. */
function sitePath(pathname: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return null;
  }
  if (decoded.includes('\0')) return null;
  const path = normalize(`.${sep}${decoded}`);
  if (path === '..' || path.startsWith(`..${sep}`)) return null;
  return path;
}

function contentTypeOf(file: string): string {
  const type = send.mime.getType(basename(file)) ?? 'application/octet-stream';
  return send.isUtf8MimeType(type) ? `${type}; charset=utf-8` : type;
}

/** Where /proc/self/fd is missing: the real location checked by name, then served by name. */
async function serveByPath(
  req: IncomingMessage,
  res: ServerResponse,
  site: string,
  pathname: string,
  page: Page,
): Promise<void> {
  if (await leavesSite(site, pathname)) return page(res, NOT_FOUND);
  let result = await send(req, pathname, { root: site, index: ['index.html'], dotfiles: 'deny' });
  if (result.statusCode === 404 && !/\.[a-z0-9]+$/i.test(pathname)) {
    if (await leavesSite(site, '/index.html')) {
      result.stream.destroy();
      return page(res, NOT_FOUND);
    }
    result = await send(req, '/index.html', { root: site, dotfiles: 'deny' });
  }
  res.writeHead(result.statusCode, result.headers as Record<string, string>);
  result.stream.on('error', () => res.destroy());
  result.stream.pipe(res);
}

/**
 * The static site's real root (links resolved), or null when it is not inside its own release folder
 * (`<dataDir>/apps/<project>/<release>`): a build may have made the served folder itself a link.
 */
async function siteRoot(root: string, dataDir: string): Promise<string | null> {
  const apps = resolve(dataDir, 'apps');
  const [project, release] = relative(apps, root).split(sep);
  const boundary =
    project && release && project !== '..' && !isAbsolute(project) ? join(apps, project, release) : root;
  try {
    const [real, realBoundary] = await Promise.all([realpath(root), realpath(boundary)]);
    return within(realBoundary, real) ? real : null;
  } catch {
    return null;
  }
}

/**
 * Whether the file `urlPath` names in the site (or the index.html send would serve for a folder) is
 * really outside it once links are followed. Paths send refuses itself (malformed, `..`, NUL) and
 * files that do not exist are not outside: send answers those.
 */
async function leavesSite(site: string, urlPath: string): Promise<boolean> {
  const relativePath = sitePath(urlPath);
  if (relativePath === null) return false;
  const candidate = join(site, relativePath);
  let real: string;
  try {
    real = await realpath(candidate);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code !== 'ENOENT' && code !== 'ENOTDIR';
  }
  if (!within(site, real)) return true;
  try {
    if (!(await stat(real)).isDirectory()) return false;
    return !within(site, await realpath(join(real, 'index.html')));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code !== 'ENOENT' && code !== 'ENOTDIR';
  }
}

function within(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}
