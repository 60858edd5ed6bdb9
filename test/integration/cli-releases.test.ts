// `wharf releases` and `wharf rollback` as a user runs them: the built bin/wharf.js in a child process
// with its own WHARF_HOME, against a real platform (sandbox runtime) with its edge: the table and its
// JSON, the default rollback target, --follow to the outcome, and every refusal in one readable line.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Project, ProjectDetail, Release } from '../../src/shared/api/projects.js';
import { type CliResult, assertBuilt, runWharf } from '../helpers/cli.js';
import {
  archiveOf,
  createProject,
  deploy,
  deployFiles,
  gitRepo,
  nodeApp,
  settled,
  upload,
  viaEdge,
  waitFor,
} from '../helpers/deploy.js';
import { type TestPlatform, call, startPlatform } from '../helpers/platform.js';

const dirs: string[] = [];
let t: TestPlatform;
let origin: string;
let repos: string;

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wharf-cli-releases-'));
  dirs.push(dir);
  return dir;
}

beforeAll(async () => {
  assertBuilt();
  repos = tempDir();
  t = await startPlatform({ runtime: 'sandbox', healthTimeoutMs: 15_000 });
  origin = new URL(t.api).origin;
});

afterAll(async () => {
  await t?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** `wharf <args>` against the test platform, in a home of its own. */
function wharf(args: string[], timeoutMs = 20_000): Promise<CliResult> {
  return runWharf([...args, '--platform', origin, '--api-key', t.key], { home: tempDir(), timeoutMs });
}

async function releasesOf(id: string): Promise<Release[]> {
  const result = await call<Release[]>(`${t.api}/projects/${id}/releases`, { key: t.key });
  expect(result.status).toBe(200);
  return result.body;
}

const time = String.raw`\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}`;

/** An upload project deployed once per version, each answering `<version> <path>`. */
async function deployedVersions(subdomain: string, versions: string[]): Promise<Project> {
  const project = await createProject(t, { name: subdomain, subdomain, deploy_source: 'upload' });
  for (const version of versions) await deployFiles(t, project.id, nodeApp(version));
  return project;
}

describe('wharf releases', () => {
  it('prints a table newest first: * on the current one, status, time, source with its short commit', async () => {
    const url = gitRepo(repos, 'cli-rel', nodeApp('git one'));
    const project = await createProject(t, { name: 'Cli rel', subdomain: 'cli-rel', repo_url: url });
    await deploy(t, project.id);
    expect((await waitFor(t, project.id, settled)).project.status).toBe('running');
    gitRepo(repos, 'cli-rel', nodeApp('git two'));
    await deploy(t, project.id);
    expect((await waitFor(t, project.id, settled)).project.status).toBe('running');
    const [newest, oldest] = await releasesOf(project.id);

    const result = await wharf(['releases', project.subdomain]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    // No image column: the sandbox runs apps on the host.
    expect(lines[0]).toMatch(/^ {3}RELEASE +STATUS +CREATED +SOURCE$/);
    expect(lines[1]).toMatch(
      new RegExp(`^\\*  ${newest!.id}  running +${time}  git ${url} main @ ${newest!.commit!.slice(0, 7)}$`),
    );
    expect(lines[2]).toMatch(
      new RegExp(`^ {3}${oldest!.id}  retired +${time}  git ${url} main @ ${oldest!.commit!.slice(0, 7)}$`),
    );
    expect(lines[2]!.indexOf('retired')).toBe(lines[0]!.indexOf('STATUS'));

    const json = await wharf(['releases', project.subdomain, '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(await releasesOf(project.id));
  }, 60_000);

  it('says so for a project never deployed, and prints [] with --json', async () => {
    const project = await createProject(t, {
      name: 'Never',
      subdomain: 'cli-never',
      deploy_source: 'upload',
    });
    const result = await wharf(['releases', 'cli-never']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      `cli-never ("Never") has no releases yet: each deploy makes one (wharf deploy ${project.subdomain}).\n`,
    );
    const json = await wharf(['releases', 'Never', '--json']);
    expect(JSON.parse(json.stdout)).toEqual([]);
  });

  it('shows a failed deploy as failed, below nothing and above the release that keeps serving', async () => {
    const project = await deployedVersions('cli-marks', ['marks one']);
    await upload(t, project.id, archiveOf({ 'package.json': '{"scripts":{"build":"exit 3","start":"x"}}' }));
    await call(`${t.api}/projects/${project.id}/deploy`, { key: t.key, method: 'POST' });
    await waitFor(t, project.id, (p) => p.status !== 'building');
    const result = await wharf(['releases', project.subdomain]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[1]).toMatch(/^ {3}rel_\w+ +failed +/);
    expect(lines[2]).toMatch(/^\* +rel_\w+ +running +/);
  }, 30_000);

  it('refuses an unknown project with the close matches', async () => {
    await createProject(t, { name: 'Spelled', subdomain: 'cli-spelled', deploy_source: 'upload' });
    const result = await wharf(['releases', 'cli-speled']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('wharf: no project "cli-speled"; did you mean cli-spelled ("Spelled")?\n');
  });
});

describe('wharf rollback', () => {
  it('--follow goes back to the newest kept release before the current one, prints its log and exits 0', async () => {
    const project = await deployedVersions('cli-back', ['back one', 'back two', 'back three']);
    const [, two] = await releasesOf(project.id);

    const result = await wharf(['rollback', project.subdomain, '--follow'], 40_000);
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      new RegExp(`^Rolling back cli-back to ${two!.id} \\(deployed ${time}, upload upl_[A-Za-z0-9]+\\)$`),
    );
    expect(lines).toContainEqual(
      `rollback to release ${two!.id} started: no build, its files and env vars as they were`,
    );
    expect(lines).toContainEqual(expect.stringMatching(/^listening on \d+$/));
    // No build step ran.
    expect(lines.filter((l) => l.startsWith('$ '))).toEqual([]);
    expect(lines.at(-1)).toBe(`cli-back is running at ${project.url}`);
    expect(result.stderr).toBe('');
    expect((await viaEdge(t.edgePort, 'cli-back.localhost', '/')).body).toBe('back two /');

    // Once more: from two back to one.
    const again = await wharf(['rollback', project.subdomain, '--follow'], 40_000);
    expect(again.code, again.stderr + again.stdout).toBe(0);
    expect((await viaEdge(t.edgePort, 'cli-back.localhost', '/')).body).toBe('back one /');
  }, 90_000);

  it('rolls back to a named release without --follow, saying how to follow it', async () => {
    const project = await deployedVersions('cli-named', ['named one', 'named two']);
    const [, one] = await releasesOf(project.id);
    const result = await wharf(['rollback', project.id, one!.id, '--no-follow']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(
        `^Rolling back cli-named to ${one!.id} \\(deployed ${time}, upload upl_[A-Za-z0-9]+\\)… \\(wharf logs cli-named -f to follow\\)\\n$`,
      ),
    );
    const { project: done } = await waitFor(t, project.id, settled);
    expect(done.status).toBe('running');
    expect((await viaEdge(t.edgePort, 'cli-named.localhost', '/')).body).toBe('named one /');
  }, 60_000);

  it('says there is nothing to roll back to from the oldest kept release, pointing to newer ones', async () => {
    const project = await deployedVersions('cli-oldest', ['oldest one', 'oldest two']);
    const [, one] = await releasesOf(project.id);
    await call(`${t.api}/projects/${project.id}/rollback`, { key: t.key, body: { release_id: one!.id } });
    await waitFor(t, project.id, settled);

    const result = await wharf(['rollback', project.subdomain]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `wharf: nothing to roll back to: no release of cli-oldest older than the one serving now (${one!.id}) is kept; name a newer one to go forward (wharf releases cli-oldest lists them)\n`,
    );
  }, 60_000);

  it('says there is nothing to roll back to for a project with one release, none, or none serving', async () => {
    const single = await deployedVersions('cli-single', ['single one']);
    const once = await wharf(['rollback', single.subdomain]);
    expect(once.code).toBe(1);
    expect(once.stderr).toMatch(
      /^wharf: nothing to roll back to: no release of cli-single older than the one serving now \(rel_\w+\) is kept\n$/,
    );

    await createProject(t, { name: 'Empty', subdomain: 'cli-empty', deploy_source: 'upload' });
    const none = await wharf(['rollback', 'cli-empty']);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe(
      'wharf: nothing to roll back to: cli-empty ("Empty") has no releases yet (wharf deploy cli-empty makes one)\n',
    );

    await call(`${t.api}/projects/${single.id}/stop`, { key: t.key, method: 'POST' });
    const stopped = await wharf(['rollback', single.subdomain]);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toBe(
      'wharf: nothing serves cli-single now, so there is no version to roll back from: name the release to start (wharf releases cli-single lists them)\n',
    );
  }, 30_000);

  it('refuses an unknown project, a release it does not have, and a word that is no release id', async () => {
    const project = await deployedVersions('cli-refuse', ['refuse one', 'refuse two']);

    const unknownProject = await wharf(['rollback', 'cli-nope-nope-nope']);
    expect(unknownProject.code).toBe(1);
    expect(unknownProject.stderr).toMatch(/^wharf: no project "cli-nope-nope-nope"/);

    const unknownRelease = await wharf(['rollback', project.subdomain, 'rel_0000000000000000000']);
    expect(unknownRelease.code).toBe(1);
    expect(unknownRelease.stderr).toBe(
      'wharf: no release rel_0000000000000000000 in cli-refuse: wharf releases cli-refuse lists them\n',
    );

    const notAnId = await wharf(['rollback', project.subdomain, 'yesterday']);
    expect(notAnId.code).toBe(2);
    expect(notAnId.stderr).toBe(
      'wharf: "yesterday" is not a release id: they look like rel_0Vc0U6g700MpKQdNXSIx (wharf releases <project> lists them)\n',
    );
    const detail = await call<ProjectDetail>(`${t.api}/projects/${project.id}`, { key: t.key });
    expect(detail.body.project.status).toBe('running');
  }, 60_000);

  it("passes the platform's refusal on: the current release, and one that never served", async () => {
    const project = await deployedVersions('cli-conflict', ['conflict one']);
    await upload(t, project.id, archiveOf({ 'package.json': '{"scripts":{"build":"exit 3","start":"x"}}' }));
    await call(`${t.api}/projects/${project.id}/deploy`, { key: t.key, method: 'POST' });
    await waitFor(t, project.id, (p) => p.status !== 'building');
    const [failed, current] = await releasesOf(project.id);

    const toCurrent = await wharf(['rollback', project.subdomain, current!.id]);
    expect(toCurrent.code).toBe(1);
    expect(toCurrent.stderr).toBe(
      `wharf: cannot roll cli-conflict back: release ${current!.id} is the one serving the project already\n`,
    );
    const toFailed = await wharf(['rollback', project.subdomain, failed!.id]);
    expect(toFailed.code).toBe(1);
    expect(toFailed.stderr).toBe(
      `wharf: cannot roll cli-conflict back: release ${failed!.id} never served (its deploy failed): roll back to one that did\n`,
    );
  }, 30_000);

  it('--follow exits 1 with the reason when the rollback fails, the current version serving on', async () => {
    const project = await deployedVersions('cli-gone', ['gone one', 'gone two']);
    const [, one] = await releasesOf(project.id);
    rmSync(join(t.dataDir, 'apps', project.id, one!.id), { recursive: true, force: true });
    const result = await wharf(['rollback', project.subdomain, '--follow'], 40_000);
    expect(result.code, result.stdout).toBe(1);
    expect(result.stdout).toContain(`rollback failed: the files of release ${one!.id} are gone`);
    expect(result.stderr).toBe(
      `wharf: the rollback of cli-gone failed: the new version failed (the files of release ${one!.id} are gone); the previous version keeps serving\n`,
    );
    expect((await viaEdge(t.edgePort, 'cli-gone.localhost', '/')).body).toBe('gone two /');
  }, 60_000);
});
