import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { inspectArchive } from '../../../src/server/projects/archive.js';
import { ApiError } from '../../../src/server/errors.js';
import { nodeAppTarball, tarball, type TarEntrySpec } from '../../fixtures/tarball.js';

const dir = mkdtempSync(join(tmpdir(), 'wharf-archive-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function write(content: Buffer): string {
  const file = join(dir, `a${n++}.tar.gz`);
  writeFileSync(file, content);
  return file;
}

async function rejection(
  entries: TarEntrySpec[] | Buffer,
  limits?: { maxEntries: number; maxUnpackedBytes: number },
) {
  const file = write(Buffer.isBuffer(entries) ? entries : tarball(entries));
  const error = await inspectArchive(file, limits).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  const apiError = error as ApiError;
  expect(apiError.status).toBe(422);
  expect(apiError.fields?.[0]?.path).toBe('file');
  return apiError.fields![0]!.message;
}

describe('inspectArchive', () => {
  it('counts the files of a valid archive with directories and an inner symlink', async () => {
    const summary = await inspectArchive(write(nodeAppTarball()));
    expect(summary.files).toBe(2);
    expect(summary.entries).toBe(4);
    expect(summary.unpackedBytes).toBeGreaterThan(0);
  });

  it('rejects an absolute path', async () => {
    expect(await rejection([{ path: '/etc/passwd', content: 'x' }])).toMatch(/absolute path/);
  });

  it('rejects a path climbing out with ..', async () => {
    expect(await rejection([{ path: 'app/../../evil.sh', content: 'x' }])).toMatch(/climbs out/);
  });

  it('rejects a symlink pointing outside the root, relative or absolute', async () => {
    expect(await rejection([{ path: 'app/link', type: 'SymbolicLink', linkpath: '../../etc' }])).toMatch(
      /points outside/,
    );
    expect(await rejection([{ path: 'link', type: 'SymbolicLink', linkpath: '/etc/shadow' }])).toMatch(
      /points outside/,
    );
  });

  it('accepts a symlink that stays inside the root', async () => {
    const summary = await inspectArchive(
      write(tarball([{ path: 'a/b/link', type: 'SymbolicLink', linkpath: '../c' }])),
    );
    expect(summary.entries).toBe(1);
  });

  it('rejects a hard link to a path outside the root', async () => {
    expect(await rejection([{ path: 'h', type: 'Link', linkpath: '../outside' }])).toMatch(/hard link/);
  });

  it('rejects device files and FIFOs', async () => {
    expect(await rejection([{ path: 'dev', type: 'CharacterDevice' }])).toMatch(/CharacterDevice/);
  });

  it('rejects more entries than the limit', async () => {
    const entries = Array.from({ length: 6 }, (_, i) => ({ path: `f${i}`, content: 'x' }));
    expect(await rejection(entries, { maxEntries: 5, maxUnpackedBytes: 1 << 20 })).toMatch(
      /more than 5 entries/,
    );
  });

  it('rejects an archive that unpacks past the size limit, without reading it all', async () => {
    const big = Buffer.alloc(4096, 0);
    const entries = Array.from({ length: 3 }, (_, i) => ({ path: `f${i}`, content: big }));
    expect(await rejection(entries, { maxEntries: 100, maxUnpackedBytes: 10_000 })).toMatch(
      /unpacks to more than/,
    );
  });

  it('rejects data that is not gzip, and gzip that is not tar', async () => {
    expect(await rejection(Buffer.from('plain text, not an archive'))).toMatch(/not gzip/);
    expect(await rejection(gzipSync(Buffer.from('x'.repeat(2000))))).toMatch(/not a valid|empty/);
  });

  it('rejects an empty archive', async () => {
    expect(await rejection([])).toMatch(/empty|not a valid/);
  });
});
