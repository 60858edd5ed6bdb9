// The bounded line reader every tenant's output goes through, and the script that carries a project's
// variables into the sandbox.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { commandScript, toolchainDirs } from '../../../src/server/runtime/drivers/host.js';
import { CONTINUED_MARK, CUT_MARK, LineSplitter, readLines } from '../../../src/server/runtime/lines.js';

function split(chunks: Array<string | Buffer>, max = 8): string[] {
  const lines: string[] = [];
  const splitter = new LineSplitter((line) => lines.push(line), max);
  for (const chunk of chunks) splitter.push(chunk);
  splitter.end();
  return lines;
}

describe('LineSplitter', () => {
  it('splits on \\n and \\r\\n, across chunks, and keeps a last line without a newline', () => {
    expect(split(['ab\ncd', '\r\nef\n', 'g'], 64)).toEqual(['ab', 'cd', 'ef', 'g']);
  });

  it('cuts a line longer than the limit into marked pieces of at most the limit', () => {
    expect(split(['abcdefghijklmnopqrst\nxy\n'])).toEqual([
      `abcdefgh${CUT_MARK}`,
      `${CONTINUED_MARK}ijklmnop${CUT_MARK}`,
      `${CONTINUED_MARK}qrst`,
      'xy',
    ]);
  });

  it('holds no more than the limit of an endless line, however it arrives', () => {
    const pieces: string[] = [];
    const splitter = new LineSplitter((line) => pieces.push(line), 1024);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    for (let i = 0; i < 160; i++) splitter.push(chunk); // 10 MiB, no newline
    splitter.end();
    expect(pieces).toHaveLength(10 * 1024);
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThanOrEqual(
      1024 + CUT_MARK.length + CONTINUED_MARK.length,
    );
  });

  it('never splits a UTF-8 character at a cut', () => {
    const lines = split([Buffer.from('ééééé\n')], 3); // each é is 2 bytes
    expect(lines.join('').replaceAll(CUT_MARK, '').replaceAll(CONTINUED_MARK, '')).toBe('ééééé');
    expect(lines.join('')).not.toContain('\ufffd');
  });

  it('readLines turns a stream error into a last line instead of throwing', async () => {
    const lines: string[] = [];
    const input = new Readable({ read() {} });
    readLines(input, (line) => lines.push(line));
    input.push('half a line');
    input.destroy(new Error('pipe broke'));
    await new Promise((r) => setImmediate(r));
    expect(lines).toEqual(['half a line', '(output could not be read: pipe broke)']);
  });
});

describe('commandScript', () => {
  it('hands every value to the command as it is, quotes and dollars included', () => {
    const env = { PLAIN: 'a b', QUOTED: `it's "x" $HOME \`id\` \\ ; rm -rf /`, EMPTY: '', LINES: 'one\ntwo' };
    const script = commandScript('printf "%s|" "$PLAIN" "$QUOTED" "$EMPTY" "$LINES"', env);
    const out = execFileSync('/bin/sh', ['-c', script], { encoding: 'utf8', env: {} });
    expect(out).toBe(`a b|${env.QUOTED}||one\ntwo|`);
  });
});

describe('toolchainDirs', () => {
  const home = mkdtempSync(join(tmpdir(), 'wharf-home-'));
  const make = (...parts: string[]) => {
    const dir = join(home, ...parts);
    mkdirSync(dir, { recursive: true });
    return dir;
  };
  const nvm = make('.nvm', 'versions', 'node', 'v20.19.0', 'bin');
  const shims = make('.pyenv', 'shims');
  const localBin = make('.local', 'bin');
  const ownBin = make('bin');
  const data = make('.wharf', 'platform');
  const dataBin = make('.wharf', 'bin');
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('shows the toolchains a hidden home holds, read-only, and nothing of the platform’s data', () => {
    const path = [nvm, shims, localBin, ownBin, dataBin, '/usr/bin', 'relative/bin', join(home, 'gone')].join(
      ':',
    );
    expect(toolchainDirs(path, [home], [join(home, '.wharf')]).sort()).toEqual(
      [join(home, '.nvm', 'versions', 'node', 'v20.19.0'), join(home, '.pyenv'), localBin, ownBin].sort(),
    );
    expect(toolchainDirs(path, [home], [data])).not.toContain(join(home, '.wharf'));
  });
});
