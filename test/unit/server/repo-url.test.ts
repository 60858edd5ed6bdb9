// Which file:// repositories a project may name (src/server/projects/repo-url.ts), on real folders and
// symlinks in a temporary directory.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { refusedRepoUrl } from '../../../src/server/projects/repo-url.js';

const root = mkdtempSync(join(tmpdir(), 'wharf-repo-url-'));
const dataDir = join(root, 'platform');
mkdirSync(join(dataDir, 'ai-repos', 'prj_mine'), { recursive: true });
mkdirSync(join(root, 'work', 'shop.git'), { recursive: true });
symlinkSync(dataDir, join(root, 'shortcut'));
const on = { dataDir, localRepos: true };

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('refusedRepoUrl', () => {
  it('takes every URL that is not file://', () => {
    for (const url of ['https://github.com/a/b.git', 'ssh://git@host/a.git', 'git@github.com:a/b.git']) {
      expect(refusedRepoUrl({ dataDir, localRepos: false }, url)).toBeNull();
    }
  });

  it('takes a local repository outside the data folder, even one that does not exist yet', () => {
    expect(refusedRepoUrl(on, `file://${join(root, 'work', 'shop.git')}`)).toBeNull();
    expect(refusedRepoUrl(on, `file://${join(root, 'work', 'later.git')}`)).toBeNull();
    // A sibling whose name merely starts like the data folder's is outside it.
    expect(refusedRepoUrl(on, `file://${dataDir}-old/repo.git`)).toBeNull();
  });

  it('refuses the data folder and anything in it, through symlinks, dot-dots and missing parts', () => {
    for (const path of [
      dataDir,
      join(dataDir, 'ai-repos', 'prj_other'),
      `${join(root, 'work')}/../platform/uploads`,
      join(root, 'shortcut', 'ai-repos', 'prj_other'),
      join(root, 'shortcut', 'not', 'there', 'yet'),
    ]) {
      expect(refusedRepoUrl(on, `file://${path}`), path).toMatch(
        /must not point into the platform's data folder/,
      );
    }
  });

  it("takes the AI builder's own repository of the same project only", () => {
    const mine = `file://${join(dataDir, 'ai-repos', 'prj_mine')}`;
    expect(refusedRepoUrl(on, mine, 'prj_mine')).toBeNull();
    expect(refusedRepoUrl(on, mine, 'prj_other')).toMatch(/data folder/);
    expect(refusedRepoUrl(on, mine)).toMatch(/data folder/);
  });

  it('refuses every file:// URL when local repositories are off, and says how they were turned off', () => {
    expect(
      refusedRepoUrl({ dataDir, localRepos: false }, `file://${join(root, 'work', 'shop.git')}`),
    ).toMatch(/--no-local-repos/);
  });

  it('refuses a file:// URL naming another host', () => {
    expect(refusedRepoUrl(on, 'file://fileserver/share/repo.git')).toMatch(/file:\/\/\/path\/to\/repo/);
  });
});
