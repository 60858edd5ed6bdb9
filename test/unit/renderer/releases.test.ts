// How a release reads in the Releases section: its source, and which env vars a rollback changes.
import { describe, expect, it } from 'vitest';
import { envChanges, sourceLabel } from '../../../src/renderer/src/views/projects/releases.js';

describe('sourceLabel', () => {
  it('reads an upload as an uploaded archive, and shows any other source as the platform wrote it', () => {
    expect(sourceLabel('upload upl_0Vc0nD8w00vZGqTXUtg2')).toEqual({
      text: 'Uploaded archive upl_0Vc0nD8w00vZGqTXUtg2',
      mono: false,
    });
    expect(sourceLabel('the latest upload')).toEqual({ text: 'An uploaded archive', mono: false });
    expect(sourceLabel('git https://***@github.com/acme/shop.git main')).toEqual({
      text: 'git https://***@github.com/acme/shop.git main',
      mono: true,
    });
  });
});

describe('envChanges', () => {
  it('names what is added, removed and changed, sorted, and leaves equal values out', () => {
    expect(
      envChanges({ B: '1', A: 'x', SAME: 's', GONE: 'g' }, { A: 'y', B: '1', SAME: 's', NEW: 'n', C: 'c' }),
    ).toEqual({ added: ['C', 'NEW'], removed: ['GONE'], changed: ['A'] });
  });

  it('finds nothing between equal sets, and counts names like constructor as their own', () => {
    expect(envChanges({ A: '1' }, { A: '1' })).toEqual({ added: [], removed: [], changed: [] });
    expect(envChanges({}, { constructor: 'x' })).toEqual({
      added: ['constructor'],
      removed: [],
      changed: [],
    });
    expect(envChanges({ toString: 'x' }, {})).toEqual({ added: [], removed: ['toString'], changed: [] });
  });
});
