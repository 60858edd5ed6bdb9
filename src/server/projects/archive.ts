// Receiving and checking uploaded `.tar.gz` archives (API.md §4). An upload is streamed to a temporary
// file with its size counted, then read once through gunzip and a tar parser that enforces the rules
// before anything is kept: no absolute paths, no `..`, no links escaping the root, no device files,
// at most 10,000 entries and 1 GiB unpacked. Reading stops at the first broken rule, so a gzip bomb
// costs at most the unpacked limit.
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { posix } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
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
  const parser = new Parser({ strict: true });
  // Headers and padding add at most 1.5 KiB per entry to the unpacked bytes.
  const maxTarBytes = limits.maxUnpackedBytes + (limits.maxEntries + 2) * 1536 + 10240;
  let tarBytes = 0;
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
  return summary;
}
