// The AI builder's repositories as the nodes of a cluster share them (ai/shared-repos.ts): two nodes
// (two data folders) on one store. What one commits the other reads, with its history; a change made
// on top of a head another node has moved is refused (409) and loses nothing of the other's; a
// repository only one node has is shared at its start, and until then the others say so (503).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AiRepo } from '../../src/server/ai/git.js';
import { SharedRepos } from '../../src/server/ai/shared-repos.js';
import { ApiError } from '../../src/server/errors.js';
import { type Store, openStore } from '../../src/server/store/open.js';
import { insertTestProject, testStoreLocation } from '../helpers/test-store.js';

const dir = mkdtempSync(join(tmpdir(), 'wharf-shared-repos-'));
let db: Store;
let drop: () => Promise<void>;
let a: SharedRepos;
let b: SharedRepos;
let made = 0;

beforeAll(async () => {
  const location = await testStoreLocation(dir);
  drop = location.drop;
  db = await openStore(location.location);
  for (const node of ['a', 'b']) mkdirSync(join(dir, node), { recursive: true });
  a = new SharedRepos(db, join(dir, 'a'));
  b = new SharedRepos(db, join(dir, 'b'));
});

afterAll(async () => {
  await db?.destroy();
  await drop?.();
  rmSync(dir, { recursive: true, force: true });
});

/** An AI project row (no repository yet): what ai_repo_chunks rows belong to. */
async function newAiProject(): Promise<string> {
  const projectId = await insertTestProject(db, `repos${++made}`, { deploy_source: 'git', branch: 'main' });
  const { account_id: accountId } = await db
    .selectFrom('projects')
    .select('account_id')
    .where('id', '=', projectId)
    .executeTakeFirstOrThrow();
  const now = new Date().toISOString();
  await db
    .insertInto('ai_projects')
    .values({ project_id: projectId, account_id: accountId, generator: 'web', needs: '{}', created_at: now })
    .execute();
  return projectId;
}

/** Builds on node `shared` as the AI builder does: a first commit, then shared. */
async function built(shared: SharedRepos, projectId: string, files: Record<string, string>) {
  const repo = shared.repo(projectId);
  await repo.init();
  await repo.commitFiles(files, 'Generate web app');
  await shared.push(projectId, repo, null);
  return repo;
}

function change(repo: AiRepo, files: Record<string, string>, message: string) {
  return repo.exclusive(async () => {
    const now = await repo.readHead();
    await repo.commitFiles({ ...now, ...files }, message);
  });
}

describe('AI repositories shared by the nodes of a cluster', () => {
  it('gives another node the repository, history included, and each change on top of the last', async () => {
    const id = await newAiProject();
    await built(a, id, { 'server.js': 'v1', 'package.json': '{}' });

    const onB = b.repo(id);
    await change(onB, { 'server.js': 'v2' }, 'Edit: v2');
    expect(readFileSync(join(onB.dir, 'server.js'), 'utf8')).toBe('v2');
    expect(await onB.log()).toEqual(['Edit: v2', 'Generate web app']);

    const onA = a.repo(id);
    await change(onA, { 'README.md': 'hi' }, 'Edit: readme');
    expect(await onA.readHead()).toEqual({ 'server.js': 'v2', 'package.json': '{}', 'README.md': 'hi' });
    expect(await onA.log()).toEqual(['Edit: readme', 'Edit: v2', 'Generate web app']);
    const row = await db
      .selectFrom('ai_projects')
      .select('repo_head')
      .where('project_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.repo_head).toBe(await onA.head());
    // A read-only look brings B up to date too, and leaves nothing behind beside the repositories.
    await onB.exclusive(async () => undefined);
    expect(await onB.head()).toBe(row.repo_head);
    expect(execFileSync('git', ['-C', onB.dir, 'remote'], { encoding: 'utf8' })).toBe('');
    for (const node of ['a', 'b']) {
      expect(execFileSync('ls', ['-A', join(dir, node, 'ai-repos')], { encoding: 'utf8' }).trim()).toBe(id);
    }
  });

  it('refuses a change made on top of a head another node moved (409), keeping that node’s change', async () => {
    const id = await newAiProject();
    const onA = await built(a, id, { 'server.js': 'v1' });
    const onB = b.repo(id);
    await onB.exclusive(async () => undefined); // B has v1
    const base = await onB.head();

    await change(onA, { 'server.js': 'from A' }, 'Edit: A');
    // B commits on the v1 it had, as a node that read before A's change was stored would.
    await new AiRepo(onB.dir).commitFiles({ 'server.js': 'from B' }, 'Edit: B');
    const refused = await b.push(id, onB, base).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 409 });
    expect((refused as Error).message).toMatch(/changed through another node meanwhile.*try again/);

    // A's change is what every node gets; B's copy follows it at its next look.
    await onB.exclusive(async () => undefined);
    expect(await onB.readHead()).toEqual({ 'server.js': 'from A' });
    expect(await onB.log()).toEqual(['Edit: A', 'Generate web app']);
  });

  it('says a repository only its building node has is not shared yet (503), until that node shares it', async () => {
    const id = await newAiProject();
    // Built on A before it ran as a cluster: on A's disk, not in the store.
    const local = AiRepo.at(join(dir, 'a'), id);
    await local.init();
    await local.commitFiles({ 'index.html': 'old' }, 'Generate landing app');

    const refused = await b
      .repo(id)
      .exclusive(async () => undefined)
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 503 });
    expect((refused as Error).message).toMatch(/still only on the node that built it/);

    expect(await a.shareLocal()).toBe(1);
    expect(await a.shareLocal()).toBe(0); // once
    const onB = b.repo(id);
    await onB.exclusive(async () => undefined);
    expect(await onB.readHead()).toEqual({ 'index.html': 'old' });
  });

  it('drops the shared repository with its project, and a change then stores nothing', async () => {
    const id = await newAiProject();
    const onA = await built(a, id, { 'server.js': 'v1' });
    await db.deleteFrom('projects').where('id', '=', id).execute();
    const chunks = () => db.selectFrom('ai_repo_chunks').select('seq').where('project_id', '=', id).execute();
    expect(await chunks()).toEqual([]);
    await new AiRepo(onA.dir).commitFiles({ 'server.js': 'v2' }, 'Edit');
    await a.push(id, onA, null);
    expect(await chunks()).toEqual([]);
  });
});
