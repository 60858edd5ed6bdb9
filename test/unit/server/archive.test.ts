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

  it('rejects chained links that each read as "." alone, naming the first that climbs out', async () => {
    expect(
      await rejection([
        { path: 's', type: 'SymbolicLink', linkpath: '.' },
        { path: 'u1', type: 'SymbolicLink', linkpath: 's/..' },
        { path: 'u2', type: 'SymbolicLink', linkpath: 'u1/..' },
      ]),
    ).toBe('symbolic link "u1" points outside the archive through other links (s/..)');
  });

  it('rejects a link climbing out of the one folder the archive is unpacked from', async () => {
    expect(
      await rejection([
        { path: 'app/', type: 'Directory' },
        { path: 'app/index.html', content: 'x' },
        { path: 'app/up', type: 'SymbolicLink', linkpath: '..' },
      ]),
    ).toMatch(/symbolic link "app\/up" points outside the archive/);
  });

  it('rejects a loop of links, an entry behind a link and a hard link through one', async () => {
    expect(
      await rejection([
        { path: 'a', type: 'SymbolicLink', linkpath: 'b/x' },
        { path: 'b', type: 'SymbolicLink', linkpath: 'a/y' },
      ]),
    ).toMatch(/loop of links/);
    expect(
      await rejection([
        { path: 'd', type: 'SymbolicLink', linkpath: '.' },
        { path: 'd/evil.sh', content: 'x' },
      ]),
    ).toBe('entry "d/evil.sh" lies behind the symbolic link "d"');
    expect(
      await rejection([
        { path: 'd', type: 'SymbolicLink', linkpath: '.' },
        { path: 'h', type: 'Link', linkpath: 'd/index.html' },
      ]),
    ).toMatch(/hard link "h" points through the symbolic link "d"/);
  });

  it('takes links that stay inside through other links', async () => {
    const summary = await inspectArchive(
      write(
        tarball([
          { path: 'lib/', type: 'Directory' },
          { path: 'lib/x.js', content: 'x' },
          { path: 'bin/', type: 'Directory' },
          { path: 'here', type: 'SymbolicLink', linkpath: '.' },
          { path: 'bin/x', type: 'SymbolicLink', linkpath: '../here/lib/x.js' },
        ]),
      ),
    );
    expect(summary.entries).toBe(5);
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
