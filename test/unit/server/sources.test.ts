// Sources on real tools: a shallow clone of a local bare repository (file://), and upload archives.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SourceError,
  TENANT_SSH_COMMAND,
  assertLinksInside,
  cloneRepository,
  extractUpload,
} from '../../../src/server/runtime/sources.js';
import { nodeAppTarball, tarball } from '../../fixtures/tarball.js';

const dir = mkdtempSync(join(tmpdir(), 'wharf-sources-'));
let bare: string;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@e.x',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@e.x',
    },
  });

beforeAll(() => {
  const work = join(dir, 'work');
  mkdirSync(work);
  git(work, 'init', '-q', '-b', 'main');
  writeFileSync(join(work, 'index.js'), 'console.log("main")\n');
  git(work, 'add', '.');
  git(work, 'commit', '-qm', 'first');
  git(work, 'checkout', '-qb', 'feature');
  writeFileSync(join(work, 'index.js'), 'console.log("feature")\n');
  git(work, 'commit', '-qam', 'second');
  bare = join(dir, 'repo.git');
  git(dir, 'clone', '-q', '--bare', work, bare);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('cloneRepository', () => {
  it('clones the asked branch, shallow', async () => {
    const dest = join(dir, 'clone-feature');
    await cloneRepository({ url: `file://${bare}`, branch: 'feature', dest, onLine: () => undefined });
    expect(readFileSync(join(dest, 'index.js'), 'utf8')).toContain('feature');
    expect(git(dest, 'rev-list', '--count', 'HEAD').toString().trim()).toBe('1');
  });

  it('says which branch is missing', async () => {
    const lines: string[] = [];
    const error = await cloneRepository({
      url: `file://${bare}`,
      branch: 'nope',
      dest: join(dir, 'clone-nope'),
      onLine: (l) => lines.push(l),
    }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SourceError);
    expect((error as Error).message).toMatch(/branch nope.*(not found|Remote branch)/);
    expect(lines.length).toBeGreaterThan(0);
  });

  it('fails clearly for a repository that does not exist', async () => {
    await expect(
      cloneRepository({
        url: `file://${join(dir, 'missing.git')}`,
        branch: 'main',
        dest: join(dir, 'clone-missing'),
        onLine: () => undefined,
      }),
    ).rejects.toThrow(/git clone of .*missing\.git .*failed/);
  });
});

describe('cloneRepository with nothing of the platform’s', () => {
  it('runs ssh with none of the platform user’s keys, agent or ssh config', async () => {
    // A stand-in ssh first on PATH records how git runs it.
    const bin = mkdtempSync(join(dir, 'bin-'));
    const record = join(dir, 'ssh-args.txt');
    writeFileSync(
      join(bin, 'ssh'),
      `#!/bin/sh\nprintf '%s\\n' "$@" > ${record}\necho "SSH_AUTH_SOCK=$SSH_AUTH_SOCK" >> ${record}\nexit 1\n`,
      { mode: 0o755 },
    );
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    process.env.SSH_AUTH_SOCK = '/tmp/platform-agent.sock';
    try {
      await expect(
        cloneRepository({
          url: 'ssh://git@example.invalid/owner/repo.git',
          branch: 'main',
          dest: join(dir, 'ssh'),
          onLine: () => undefined,
        }),
      ).rejects.toThrow(SourceError);
    } finally {
      process.env.PATH = path;
      delete process.env.SSH_AUTH_SOCK;
    }
    const args = readFileSync(record, 'utf8').split('\n');
    for (const option of [
      'IdentityFile=/dev/null',
      'IdentitiesOnly=yes',
      'IdentityAgent=none',
      'BatchMode=yes',
    ]) {
      expect(args).toContain(option);
    }
    expect(args.slice(0, 2)).toEqual(['-F', '/dev/null']);
    expect(args).toContain('SSH_AUTH_SOCK=');
  });

  it('gives ssh no identity but /dev/null, as ssh itself resolves its options', () => {
    const ssh = execFileSync('sh', ['-c', 'command -v ssh || true']).toString().trim();
    if (ssh === '') return; // no OpenSSH client: git could not clone over ssh either
    const resolved = (command: string) =>
      execFileSync('sh', ['-c', `${command} -G git@example.invalid`], { stdio: ['ignore', 'pipe', 'ignore'] })
        .toString()
        .split('\n');
    // Plain ssh would offer the platform user's own keys…
    expect(resolved('ssh').filter((l) => l.startsWith('identityfile ')).length).toBeGreaterThan(1);
    // …the tenants' offers none.
    const tenant = resolved(TENANT_SSH_COMMAND);
    expect(tenant.filter((l) => l.startsWith('identityfile '))).toEqual(['identityfile /dev/null']);
    expect(tenant).toContain('identityagent none');
    expect(tenant).toContain('batchmode yes');
  });

  it('refuses the ext:: transport, which would run a command', async () => {
    const mark = join(dir, 'ext-ran');
    await expect(
      cloneRepository({
        url: `ext::sh -c touch% ${mark}`,
        branch: 'main',
        dest: join(dir, 'ext'),
        onLine: () => undefined,
      }),
    ).rejects.toThrow(SourceError);
    expect(existsSync(mark)).toBe(false);
  });
});

describe('extractUpload', () => {
  it('unpacks an archive holding one folder from inside that folder', async () => {
    const archive = join(dir, 'folder.tar.gz');
    writeFileSync(archive, nodeAppTarball());
    const dest = join(dir, 'x-folder');
    const lines: string[] = [];
    await extractUpload({ archive, dest, onLine: (l) => lines.push(l) });
    expect(existsSync(join(dest, 'package.json'))).toBe(true);
    expect(existsSync(join(dest, 'app'))).toBe(false);
    expect(lines.at(-1)).toMatch(/from its folder app\//);
  });

  it('unpacks files at the root as they are', async () => {
    const archive = join(dir, 'root.tar.gz');
    writeFileSync(
      archive,
      tarball([
        { path: 'index.html', content: '<h1>hi</h1>' },
        { path: 'css/site.css', content: 'h1{}' },
      ]),
    );
    const dest = join(dir, 'x-root');
    await extractUpload({ archive, dest, onLine: () => undefined });
    expect(readFileSync(join(dest, 'index.html'), 'utf8')).toBe('<h1>hi</h1>');
    expect(existsSync(join(dest, 'css', 'site.css'))).toBe(true);
  });
});

describe('assertLinksInside', () => {
  let n = 0;
  /** A fresh tree under `<dir>/links-<n>/src`, with a secret beside it (outside). */
  function tree(build: (root: string) => void): string {
    const base = join(dir, `links-${n++}`);
    const root = join(base, 'src');
    mkdirSync(root, { recursive: true });
    writeFileSync(join(base, 'secret'), 'outside');
    writeFileSync(join(root, 'index.html'), 'inside');
    build(root);
    return root;
  }
  const problem = (root: string) => {
    try {
      assertLinksInside(root);
      return null;
    } catch (error) {
      expect(error).toBeInstanceOf(SourceError);
      return (error as Error).message;
    }
  };

  it('takes links that stay inside, dangling ones included', () => {
    const root = tree((r) => {
      mkdirSync(join(r, 'lib'));
      symlinkSync('.', join(r, 's'));
      symlinkSync('../index.html', join(r, 'lib', 'up'));
      symlinkSync('s/lib/later.js', join(r, 'dangling'));
    });
    expect(problem(root)).toBeNull();
  });

  it('names an absolute link, a climbing one, a chained one and a dangling chained one', () => {
    expect(problem(tree((r) => symlinkSync(join(r, '..', 'secret'), join(r, 'abs'))))).toMatch(
      /^symbolic link "abs" \(-> .*secret\) leaves the source: its target is an absolute path$/,
    );
    expect(problem(tree((r) => symlinkSync('../secret', join(r, 'up'))))).toMatch(
      /^symbolic link "up" \(-> \.\.\/secret\) leaves the source: its target climbs out/,
    );
    const chained = tree((r) => {
      symlinkSync('.', join(r, 's'));
      symlinkSync('s/../secret', join(r, 'u'));
    });
    expect(problem(chained)).toMatch(/^symbolic link "u" \(-> s\/\.\.\/secret\) leaves the source: through/);
    const dangling = tree((r) => {
      symlinkSync('.', join(r, 's'));
      symlinkSync('s/../not-yet', join(r, 'u'));
    });
    expect(problem(dangling)).toMatch(/^symbolic link "u" .* leaves the source: through/);
  });

  it('names a loop of links and a hard link whose file has a name outside', () => {
    const loop = tree((r) => {
      symlinkSync('b', join(r, 'a'));
      symlinkSync('a', join(r, 'b'));
    });
    expect(problem(loop)).toMatch(/^symbolic link "a" .*loop of links$/);
    const hard = tree((r) => linkSync(join(r, '..', 'secret'), join(r, 'copy')));
    expect(problem(hard)).toBe('hard link "copy" leaves the source: its file also has a name outside it');
    const inner = tree((r) => linkSync(join(r, 'index.html'), join(r, 'again.html')));
    expect(problem(inner)).toBeNull();
  });
});
