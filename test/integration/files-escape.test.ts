// Tenants' files must never let the edge serve anything outside their own site (issue 13, item 1).
// A second account tries, as an attacker would, to read the platform's data folder (its JWT secret,
// the local account's key, the database) through symbolic links: chained relative links in an upload
// that each look harmless on their own, plain links in a git repository, links a build writes. Each
// is refused, and the platform keeps serving another account's site throughout.
import { spawn } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Project, ProjectDetail } from '../../src/shared/api/projects.js';
import { newId } from '../../src/server/ids.js';
import { gitRepo, settled, viaEdge, waitFor } from '../helpers/deploy.js';
import { type TestPlatform, call, expectProblem, startPlatform } from '../helpers/platform.js';
import { tarball } from '../fixtures/tarball.js';

let tp: TestPlatform;
let attacker: string;
let secret: string;
let localKey: string;
const repos = mkdtempSync(join(tmpdir(), 'wharf-escape-repos-'));

beforeAll(async () => {
  // Several deploys follow one another quickly here: more than the default concurrent builds.
  tp = await startPlatform({ healthTimeoutMs: 15_000, limits: { builds: 20 } });
  attacker = (await tp.newAccount()).key;
  secret = readFileSync(join(tp.dataDir, 'secret'), 'utf8').trim();
  localKey = tp.key;
  // The victim: the local account's static site.
  const victim = await create(tp.key, { name: 'Victim', subdomain: 'victim', deploy_source: 'upload' });
  await upload(tp.key, victim.id, tarball([{ path: 'index.html', content: '<h1>victim site</h1>' }]));
  await deployAndSettle(tp.key, victim.id, 'running');
}, 60_000);

afterAll(async () => {
  await tp?.close();
  rmSync(repos, { recursive: true, force: true });
});

async function create(key: string, body: Record<string, unknown>): Promise<Project> {
  const created = await call<Project>(`${tp.api}/projects`, { key, body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

function upload(key: string, id: string, archive: Buffer) {
  return call(`${tp.api}/projects/${id}/upload`, {
    key,
    body: archive,
    headers: { 'content-type': 'application/gzip' },
  });
}

async function deployAndSettle(
  key: string,
  id: string,
  expected: 'running' | 'failed',
): Promise<ProjectDetail> {
  const started = await call(`${tp.api}/projects/${id}/deploy`, { key, method: 'POST' });
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  const detail = await waitFor({ ...tp, key }, id, settled, 40_000);
  expect(detail.project.status, detail.logs.map((l) => l.line).join('\n')).toBe(expected);
  return detail;
}

/** Nothing the edge answers for `host` may carry the platform's secrets. */
async function expectNoLeak(host: string, paths: string[]): Promise<void> {
  for (const path of paths) {
    const answer = await viaEdge(tp.edgePort, host, path);
    expect(answer.body, `${host}${path}`).not.toContain(secret);
    expect(answer.body, `${host}${path}`).not.toContain(localKey);
    expect(answer.body, `${host}${path}`).not.toContain('SQLite format');
    expect(answer.status, `${host}${path}`).not.toBe(200);
  }
}

async function expectVictimServed(): Promise<void> {
  const page = await viaEdge(tp.edgePort, 'victim.localhost', '/');
  expect(page.status).toBe(200);
  expect(page.body).toBe('<h1>victim site</h1>');
}

/** `s -> .`, then `u1 -> s/..`, `u2 -> u1/..`, `u3 -> u2/..`: each looks like `.` when read alone. */
const CHAIN = [
  { path: 's', type: 'SymbolicLink' as const, linkpath: '.' },
  { path: 'u1', type: 'SymbolicLink' as const, linkpath: 's/..' },
  { path: 'u2', type: 'SymbolicLink' as const, linkpath: 'u1/..' },
  { path: 'u3', type: 'SymbolicLink' as const, linkpath: 'u2/..' },
];
const CHAIN_PATHS = ['/u3/secret', '/u3/local-account.json', '/u3/platform.db', '/u1/', '/u2/'];

describe('an upload of chained relative symbolic links', () => {
  it('is refused with 422 naming the link that climbs out, and the edge serves nothing outside', async () => {
    const project = await create(attacker, {
      name: 'Chain',
      subdomain: 'att-chain',
      deploy_source: 'upload',
    });
    const refused = await upload(
      attacker,
      project.id,
      tarball([{ path: 'index.html', content: '<h1>mine</h1>' }, ...CHAIN]),
    );
    const problem = expectProblem(refused, 422, 'validation_failed');
    expect(problem.errors).toContainEqual({
      path: 'file',
      message: expect.stringMatching(/symbolic link "u1" .*outside the archive/),
    });
    await expectNoLeak('att-chain.localhost', CHAIN_PATHS);
    await expectVictimServed();
  });

  it('fails the deploy naming the link when such an archive was stored before the check existed', async () => {
    const project = await create(attacker, { name: 'Old', subdomain: 'att-stored', deploy_source: 'upload' });
    // An upload accepted by an older platform: written where uploads live, past today's upload check.
    const dir = join(tp.dataDir, 'uploads', project.id);
    mkdirSync(dir, { recursive: true });
    const id = newId('upl');
    const path = join(dir, `${id}.tar.gz`);
    writeFileSync(path, tarball([{ path: 'index.html', content: '<h1>mine</h1>' }, ...CHAIN]));
    await tp.platform.db
      .insertInto('uploads')
      .values({
        id,
        project_id: project.id,
        size_bytes: 1,
        files: 1,
        path,
        uploaded_at: new Date().toISOString(),
      })
      .execute();

    const detail = await deployAndSettle(attacker, project.id, 'failed');
    expect(detail.project.last_deploy_error).toMatch(/symbolic link "u1" .*leaves the source/);
    expect(detail.logs.map((l) => l.line)).toContainEqual(
      expect.stringMatching(/^deploy failed: .*symbolic link "u1" \(-> s\/\.\.\) leaves the source/),
    );
    await expectNoLeak('att-stored.localhost', CHAIN_PATHS);
    await expectVictimServed();
  });
});

describe('a git repository with symbolic links out of its checkout', () => {
  it('fails the deploy naming the link to the secret, and the edge serves nothing outside', async () => {
    const url = gitRepo(repos, 'leaky', { 'index.html': '<h1>leaky</h1>' });
    // gitRepo writes plain files: add the links with a second commit made by hand.
    const work = mkdtempSync(join(tmpdir(), 'wharf-escape-work-'));
    try {
      const { execFileSync } = await import('node:child_process');
      const git = (...args: string[]) =>
        execFileSync('git', args, {
          cwd: work,
          stdio: 'pipe',
          env: {
            ...process.env,
            GIT_AUTHOR_NAME: 't',
            GIT_AUTHOR_EMAIL: 't@t.invalid',
            GIT_COMMITTER_NAME: 't',
            GIT_COMMITTER_EMAIL: 't@t.invalid',
          },
        });
      git('clone', '--quiet', url, '.');
      symlinkSync(join(tp.dataDir, 'secret'), join(work, 'leak'));
      git('add', '-A');
      git('commit', '--quiet', '-m', 'a link');
      git('push', '--quiet', 'origin', 'main');
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    const project = await create(attacker, { name: 'Leaky', subdomain: 'att-git', repo_url: url });
    const detail = await deployAndSettle(attacker, project.id, 'failed');
    expect(detail.logs.map((l) => l.line)).toContainEqual(
      expect.stringMatching(/^deploy failed: .*symbolic link "leak" .*absolute/),
    );
    await expectNoLeak('att-git.localhost', ['/leak', '/leak/', '/']);
    await expectVictimServed();
  });

  it('fails the deploy for a relative link that climbs out with ..', async () => {
    const work = mkdtempSync(join(tmpdir(), 'wharf-escape-work-'));
    const { execFileSync } = await import('node:child_process');
    const bare = join(repos, 'climb.git');
    const env = {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t.invalid',
    };
    try {
      execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch', 'main', bare], { env });
      execFileSync('git', ['init', '--quiet', '--initial-branch', 'main'], { cwd: work, env });
      writeFileSync(join(work, 'index.html'), '<h1>climb</h1>');
      mkdirSync(join(work, 'assets'));
      symlinkSync('../../../..', join(work, 'assets', 'up'));
      execFileSync('git', ['add', '-A'], { cwd: work, env });
      execFileSync('git', ['commit', '--quiet', '-m', 'climb'], { cwd: work, env });
      execFileSync('git', ['push', '--quiet', bare, 'main:main'], { cwd: work, env });
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    const project = await create(attacker, {
      name: 'Climb',
      subdomain: 'att-climb',
      repo_url: `file://${bare}`,
    });
    const detail = await deployAndSettle(attacker, project.id, 'failed');
    expect(detail.project.last_deploy_error).toMatch(
      /symbolic link "assets\/up" \(-> \.\.\/\.\.\/\.\.\/\.\.\)/,
    );
    await expectNoLeak('att-climb.localhost', ['/assets/up/secret', '/assets/up/local-account.json']);
    await expectVictimServed();
  });
});

describe('links a build writes into a static site', () => {
  it('are answered 404 while the rest of the site, its inner links and SPA fallback, still work', async () => {
    const project = await create(attacker, {
      name: 'Built links',
      subdomain: 'att-build',
      deploy_source: 'upload',
      build_config: {
        build_cmd: [
          'mkdir -p dist/assets',
          "printf '<h1>built</h1>' > dist/index.html",
          "printf 'body{}' > dist/assets/app.css",
          'ln -s assets/app.css dist/alias.css',
          'ln -s ../.. dist/up',
          `ln -s ${join(tp.dataDir, 'secret')} dist/direct.txt`,
          `ln -s ${tp.dataDir} dist/data`,
          'ln -s . dist/s && ln -s s/.. dist/u1',
        ].join(' && '),
      },
    });
    await upload(attacker, project.id, tarball([{ path: 'README.md', content: 'built at deploy' }]));
    await deployAndSettle(attacker, project.id, 'running');
    const host = 'att-build.localhost';
    await expectNoLeak(host, [
      '/direct.txt',
      '/data/secret',
      '/data/local-account.json',
      '/data/platform.db',
      '/up/',
      '/up/local-account.json',
      '/u1/',
      '/u1/README.md',
      '/s/../direct.txt',
    ]);
    const css = await viaEdge(tp.edgePort, host, '/alias.css');
    expect(css.status).toBe(200);
    expect(css.body).toBe('body{}');
    const spa = await viaEdge(tp.edgePort, host, '/some/route');
    expect(spa.status).toBe(200);
    expect(spa.body).toBe('<h1>built</h1>');
    const dir = await viaEdge(tp.edgePort, host, '/s/');
    expect(dir.body).toBe('<h1>built</h1>');
    await expectVictimServed();
  });

  it('never serves an index.html that is itself a link out of the site, not even as the SPA fallback', async () => {
    const project = await create(attacker, {
      name: 'Index link',
      subdomain: 'att-index',
      deploy_source: 'upload',
      build_config: {
        build_cmd: `mkdir -p dist && printf x > dist/real.txt && ln -s ${join(tp.dataDir, 'local-account.json')} dist/index.html`,
      },
    });
    await upload(attacker, project.id, tarball([{ path: 'README.md', content: 'index link' }]));
    await deployAndSettle(attacker, project.id, 'running');
    await expectNoLeak('att-index.localhost', ['/', '/index.html', '/some/route']);
    expect((await viaEdge(tp.edgePort, 'att-index.localhost', '/real.txt')).body).toBe('x');
    await expectVictimServed();
  });
});

describe('a file swapped for a link while the edge serves it', () => {
  it('is never served from outside the site, however the swaps and the reads interleave', async () => {
    const project = await create(attacker, {
      name: 'Swapper',
      subdomain: 'att-swap',
      deploy_source: 'upload',
      build_config: {
        build_cmd: "mkdir -p dist && printf plain > dist/swap.txt && printf '<h1>s</h1>' > dist/index.html",
      },
    });
    await upload(attacker, project.id, tarball([{ path: 'README.md', content: 'swap' }]));
    await deployAndSettle(attacker, project.id, 'running');
    const appDir = join(tp.dataDir, 'apps', project.id);
    const release = readdirSync(appDir).find((name) => name.startsWith('rel_'))!;
    const dist = join(appDir, release, 'dist');
    // What a worker of the tenant's, writing into its own release, would do: swap the file for a link
    // to the secret and back, as fast as it can, with atomic renames.
    const swapper = spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('fs'); const [dist, secret] = process.argv.slice(1);
         for (let i = 0; ; i++) {
           try { fs.unlinkSync(dist + '/.l'); } catch {}
           fs.symlinkSync(secret, dist + '/.l'); fs.renameSync(dist + '/.l', dist + '/swap.txt');
           fs.writeFileSync(dist + '/.f', 'plain'); fs.renameSync(dist + '/.f', dist + '/swap.txt');
         }`,
        dist,
        join(tp.dataDir, 'secret'),
      ],
      { stdio: 'ignore' },
    );
    try {
      const answers: Array<{ status: number; body: string }> = [];
      const deadline = Date.now() + 4_000;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (Date.now() < deadline)
            answers.push(await viaEdge(tp.edgePort, 'att-swap.localhost', '/swap.txt'));
        }),
      );
      for (const answer of answers) expect(answer.body).not.toContain(secret);
      // The file itself is served whenever it is the file: the check refuses only the link.
      expect(answers.filter((a) => a.status === 200 && a.body === 'plain').length).toBeGreaterThan(0);
      expect(answers.every((a) => a.status === 200 || a.status === 404)).toBe(true);
    } finally {
      swapper.kill('SIGKILL');
    }
    await expectVictimServed();
  }, 60_000);
});
