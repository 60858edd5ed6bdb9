// Which file:// repositories a project may name (src/server/projects/repo-url.ts), on real folders and
// symlinks in a temporary directory.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  maskRepoUrl,
  maskUrlsIn,
  refusedRepoTarget,
  refusedRepoUrl,
  repoHost,
  splitUserinfo,
  unmaskRepoUrl,
} from '../../../src/server/projects/repo-url.js';

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

  it("takes the AI builder's own repository of the same project with local repositories off, and only that", () => {
    const off = { dataDir, localRepos: false };
    const mine = `file://${join(dataDir, 'ai-repos', 'prj_mine')}`;
    expect(refusedRepoUrl(off, mine, 'prj_mine')).toBeNull();
    expect(refusedRepoUrl(off, mine, 'prj_other')).toMatch(/--no-local-repos/);
    expect(refusedRepoUrl(off, mine)).toMatch(/--no-local-repos/);
    expect(
      refusedRepoUrl(off, `file://${join(root, 'shortcut', 'ai-repos', 'prj_mine')}`, 'prj_other'),
    ).toMatch(/--no-local-repos/);
  });

  it('refuses a file:// URL naming another host', () => {
    expect(refusedRepoUrl(on, 'file://fileserver/share/repo.git')).toMatch(/file:\/\/\/path\/to\/repo/);
  });
});

describe('repo_url userinfo', () => {
  it('masks the userinfo of a URL, up to its last @ before the path, and nothing else', () => {
    expect(maskRepoUrl('https://user:TOKEN@github.com/a/b.git')).toBe('https://***@github.com/a/b.git');
    expect(maskRepoUrl('https://TOKEN@github.com/a/b.git')).toBe('https://***@github.com/a/b.git');
    expect(maskRepoUrl('https://user:p@ss@host/x@y.git')).toBe('https://***@host/x@y.git');
    expect(maskRepoUrl('ssh://git@host:22/a.git')).toBe('ssh://***@host:22/a.git');
    expect(maskRepoUrl('https://github.com/a/b@c.git')).toBe('https://github.com/a/b@c.git');
    expect(maskRepoUrl('git@github.com:a/b.git')).toBe('git@github.com:a/b.git');
  });

  it('splits the userinfo off and puts it back', () => {
    const url = 'https://user:p@ss$1@host/a.git';
    const { bare, userinfo } = splitUserinfo(url);
    expect(bare).toBe('https://host/a.git');
    expect(userinfo).toBe('user:p@ss$1');
    expect(unmaskRepoUrl(maskRepoUrl(url), userinfo!)).toBe(url);
    expect(splitUserinfo('https://host/a.git')).toEqual({ bare: 'https://host/a.git', userinfo: null });
  });

  it('masks every URL in a line of text', () => {
    expect(
      maskUrlsIn(
        "fatal: unable to access 'https://u:T0K@host/a.git/': 401; also ssh://me@h/x and https://h/y",
      ),
    ).toBe("fatal: unable to access 'https://***@host/a.git/': 401; also ssh://***@h/x and https://h/y");
  });
});

describe('repoHost', () => {
  it('finds the host of every URL form a repo_url may take', () => {
    expect(repoHost('https://user:t@git.example.com:8443/a/b.git')).toBe('git.example.com');
    expect(repoHost('ssh://git@[::1]:22/a.git')).toBe('::1');
    expect(repoHost('git@example.org:owner/repo.git')).toBe('example.org');
    expect(repoHost('git://10.0.0.5/repo')).toBe('10.0.0.5');
    expect(repoHost('file:///srv/repo.git')).toBeNull();
  });
});

describe('refusedRepoTarget', () => {
  const shared = { localRepos: false };
  const resolver = (table: Record<string, string[]>) => async (host: string) => {
    const addresses = table[host];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address }));
  };

  it('refuses hosts on loopback, private, link-local and other special-purpose addresses', async () => {
    const dns = resolver({
      'metadata.internal': ['169.254.169.254'],
      'intranet.example': ['10.1.2.3'],
      'split.example': ['93.184.216.34', '192.168.1.10'],
      'nat64.example': ['64:ff9b::a00:1'],
    });
    for (const url of [
      'http://127.0.0.1:8080/repo.git',
      'https://metadata.internal/latest',
      'git@intranet.example:team/app.git',
      'https://split.example/a.git',
      'https://nat64.example/a.git',
      'ssh://git@[::1]/a.git',
    ]) {
      expect(await refusedRepoTarget(shared, url, dns), url).toMatch(/loopback or private address/);
    }
  });

  it('lets public hosts, names that do not resolve, and any host on a platform with local repos on through', async () => {
    const dns = resolver({ 'git.example.com': ['93.184.216.34', '2606:2800:220:1::1'] });
    expect(await refusedRepoTarget(shared, 'https://git.example.com/a.git', dns)).toBeNull();
    expect(await refusedRepoTarget(shared, 'https://nowhere.invalid/a.git', dns)).toBeNull();
    expect(await refusedRepoTarget({ localRepos: true }, 'http://127.0.0.1/a.git', dns)).toBeNull();
  });
});
