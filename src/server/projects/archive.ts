// Receiving and checking uploaded `.tar.gz` archives (API.md §4). An upload is streamed to a temporary
// file with its size counted, then read once through gunzip and a tar parser that enforces the rules
// before anything is kept: no absolute paths, no `..`, no links escaping the root, no device files,
// at most 10,000 entries and 1 GiB unpacked. Reading stops at the first broken rule, so a gzip bomb
// costs at most the unpacked limit.
//
// A link is judged by where it leads once the other links of the archive are followed, as the kernel
// will follow them after extraction: `s -> .` then `u -> s/..` each read as `.` alone, yet `u` is the
// folder above. Entries written through a link, and hard links through one, are refused too. The
// runtime checks the extracted tree again on disk (runtime/sources.ts).
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { posix } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { ReadEntry } from 'tar';
import { LIMITS } from '../../shared/api/projects.js';
import { ApiError, validationError } from '../errors.js';

export interface ArchiveSummary {
  files: number;
  entries: number;
  unpackedBytes: number;
}

export interface ArchiveLimits {
  maxEntries: number;
  maxUnpackedBytes: number;
}

const DEFAULT_LIMITS: ArchiveLimits = {
  maxEntries: LIMITS.uploadEntries,
  maxUnpackedBytes: LIMITS.uploadUnpackedBytes,
};

const tooLarge = () =>
  new ApiError('payload_too_large', `the upload is over ${LIMITS.uploadBytes / 1024 / 1024} MiB`, undefined, {
    connection: 'close',
  });

/** Streams `source` into `file`, failing with 413 as soon as it passes `maxBytes`. */
export async function saveStream(source: Readable, file: string, maxBytes: number): Promise<number> {
  let size = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size > maxBytes) callback(tooLarge());
      else callback(null, chunk);
    },
  });
  const out = createWriteStream(file, { mode: 0o600 });
  try {
    await pipeline(source, counter, out);
  } catch (error) {
    // The file is opened asynchronously: wait until the stream is closed, or it may appear after rm.
    if (!out.closed) await once(out, 'close').catch(() => undefined);
    await rm(file, { force: true });
    if (error instanceof ApiError) throw error;
    if ((error as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge();
    throw new ApiError('bad_request', `the upload could not be read: ${(error as Error).message}`);
  }
  return size;
}

const reject = (message: string) => validationError([{ path: 'file', message }]);

/**
 * The archive's top level, entry by entry: an archive holding one folder and nothing else (as
 * `tar czf app.tar.gz app/` makes) is unpacked from inside that folder.
 */
export class TopLevel {
  private readonly tops = new Set<string>();
  private onlyFolders = true;

  add(path: string, type: string): void {
    const segments = path.replace(/^\.\//, '').split('/').filter(Boolean);
    if (segments.length === 0) return;
    this.tops.add(segments[0]!);
    // A top-level entry that is not a directory means the files sit at the root.
    if (segments.length === 1 && type !== 'Directory') this.onlyFolders = false;
  }

  /** The one folder the archive is unpacked from, or null when it is unpacked as it is. */
  get folder(): string | null {
    const [folder] = this.tops;
    return this.tops.size === 1 && this.onlyFolders ? folder! : null;
  }
}

/** An entry's path as segments (`./a//b/` → `a`, `b`). */
function segmentsOf(path: string): string[] {
  return path.split(/[/\\]/).filter((s) => s !== '' && s !== '.');
}

/** How many links one resolution may follow before it counts as a loop (as Linux's ELOOP). */
const MAX_LINK_HOPS = 40;

/**
 * Where `target`, read from the folder `from`, leads once the archive's `links` are followed, or
 * 'escape' when it climbs above `floor` segments (the folder the archive is unpacked from), or 'loop'.
 */
function resolveInArchive(
  links: Map<string, string>,
  from: string[],
  target: string,
  floor: number,
  hops = 0,
): string[] | 'escape' | 'loop' {
  let current = [...from];
  for (const part of target.split(/[/\\]/)) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (current.length <= floor) return 'escape';
      current.pop();
      continue;
    }
    const next = [...current, part];
    const link = links.get(next.join('/'));
    if (link === undefined) {
      current = next;
      continue;
    }
    if (hops >= MAX_LINK_HOPS) return 'loop';
    if (isAbsolute(link)) return 'escape';
    const resolved = resolveInArchive(links, current, link, floor, hops + 1);
    if (typeof resolved === 'string') return resolved;
    current = resolved;
  }
  return current;
}

/** The first link of `path`'s parent folders that is a symbolic link of the archive, if any. */
function linkOnTheWay(links: Map<string, string>, path: string): string | null {
  const segments = segmentsOf(path);
  for (let i = 1; i < segments.length; i += 1) {
    const prefix = segments.slice(0, i).join('/');
    if (links.has(prefix)) return prefix;
  }
  return null;
}

/** Why the archive's links, followed through one another, break the rules; null when they do not. */
function linksProblem(links: Map<string, string>, floor: number): string | null {
  for (const [path, target] of links) {
    const segments = path.split('/');
    const resolved = resolveInArchive(links, segments.slice(0, -1), target, floor);
    if (resolved === 'loop') return `symbolic link "${path}" is part of a loop of links (${target})`;
    if (resolved === 'escape') {
      return `symbolic link "${path}" points outside the archive through other links (${target})`;
    }
  }
  return null;
}

function isAbsolute(path: string): boolean {
  return path.startsWith('/') || path.startsWith('\\') || /^[A-Za-z]:/.test(path);
}

function climbs(path: string): boolean {
  return path.split(/[/\\]/).includes('..');
}

/** Why an entry breaks the rules, or null when it is fine. */
function entryProblem(entry: ReadEntry): string | null {
  const path = entry.path;
  if (isAbsolute(path)) return `entry "${path}" has an absolute path`;
  if (climbs(path)) return `entry "${path}" climbs out of the archive root with ".."`;
  switch (entry.type) {
    case 'File':
    case 'OldFile':
    case 'ContiguousFile':
    case 'Directory':
      return null;
    case 'SymbolicLink': {
      const target = entry.linkpath ?? '';
      if (isAbsolute(target)) return `symbolic link "${path}" points outside the archive (${target})`;
      const resolved = posix.normalize(posix.join(posix.dirname(path), target));
      if (resolved === '..' || resolved.startsWith('../')) {
        return `symbolic link "${path}" points outside the archive (${target})`;
      }
      return null;
    }
    case 'Link': {
      const target = entry.linkpath ?? '';
      if (isAbsolute(target) || climbs(target))
        return `hard link "${path}" points outside the archive (${target})`;
      return null;
    }
    default:
      return `entry "${path}" is a ${entry.type}; only files, directories and links are allowed`;
  }
}

async function isGzip(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(2), 0, 2, 0);
    return bytesRead === 2 && buffer[0] === 0x1f && buffer[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

/** Reads the archive through once and returns its summary, or throws a 422 naming the first broken rule. */
export async function inspectArchive(
  file: string,
  limits: ArchiveLimits = DEFAULT_LIMITS,
): Promise<ArchiveSummary> {
  if (!(await isGzip(file))) throw reject('is not gzip-compressed: send a .tar.gz archive');
  const summary: ArchiveSummary = { files: 0, entries: 0, unpackedBytes: 0 };
  let broken: ApiError | null = null;

  const input = createReadStream(file);
  const gunzip = createGunzip();
  const { Parser } = await import('tar');
  const parser = new Parser({ strict: true });
  // Headers and padding add at most 1.5 KiB per entry to the unpacked bytes.
  const maxTarBytes = limits.maxUnpackedBytes + (limits.maxEntries + 2) * 1536 + 10240;
  let tarBytes = 0;
  /** Symbolic links by path (`a/b`), the last entry of a path winning as on extraction. */
  const links = new Map<string, string>();
  const top = new TopLevel();
  const stop = (error: ApiError) => {
    broken ??= error;
    input.destroy();
    gunzip.destroy();
  };

  parser.on('entry', (entry: ReadEntry) => {
    entry.resume();
    if (broken) return;
    summary.entries += 1;
    if (summary.entries > limits.maxEntries)
      return stop(reject(`has more than ${limits.maxEntries} entries`));
    const problem = entryProblem(entry);
    if (problem) return stop(reject(problem));
    const through = linkOnTheWay(links, entry.path);
    if (through !== null) {
      return stop(reject(`entry "${entry.path}" lies behind the symbolic link "${through}"`));
    }
    const path = segmentsOf(entry.path).join('/');
    top.add(entry.path, entry.type);
    if (entry.type === 'SymbolicLink') links.set(path, entry.linkpath ?? '');
    else links.delete(path);
    if (entry.type === 'Link') {
      const target = entry.linkpath ?? '';
      const via = links.has(segmentsOf(target).join('/'))
        ? segmentsOf(target).join('/')
        : linkOnTheWay(links, target);
      if (via !== null) {
        return stop(
          reject(`hard link "${entry.path}" points through the symbolic link "${via}" (${target})`),
        );
      }
    }
    summary.unpackedBytes += entry.size ?? 0;
    if (summary.unpackedBytes > limits.maxUnpackedBytes) {
      return stop(reject(`unpacks to more than ${limits.maxUnpackedBytes / 1024 / 1024 / 1024} GiB`));
    }
    if (entry.type === 'File' || entry.type === 'OldFile' || entry.type === 'ContiguousFile')
      summary.files += 1;
  });

  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      tarBytes += chunk.length;
      if (tarBytes > maxTarBytes) {
        stop(reject(`unpacks to more than ${limits.maxUnpackedBytes / 1024 / 1024 / 1024} GiB`));
        callback();
      } else callback(null, chunk);
    },
  });

  try {
    await pipeline(input, gunzip, counter, parser as unknown as NodeJS.WritableStream);
  } catch (error) {
    if (broken) throw broken;
    throw reject(`is not a valid .tar.gz archive (${(error as Error).message})`);
  }
  if (broken) throw broken;
  if (summary.entries === 0) throw reject('is empty: the archive has no entries');
  const linked = linksProblem(links, top.folder === null ? 0 : 1);
  if (linked) throw reject(linked);
  return summary;
}
