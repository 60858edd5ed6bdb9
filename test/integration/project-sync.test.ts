// The Engine's ProjectSync alone (with its DeployWatch), against a real platform: the list live and kept
// in the Mirror, from the Mirror when the platform is gone (never another platform's), writes and
// removals, changes told once per change, deploys that end, polling sooner while one builds, close().
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { PlatformClient } from '../../src/core/api-client/platform-client.js';
import { Mirror } from '../../src/core/mirror/mirror.js';
import { PlatformConnection, type PlatformConnectionOptions } from '../../src/core/platform-connection.js';
import { ProjectSync } from '../../src/core/project-sync.js';
import { FileSecretStore } from '../../src/core/secret-store.js';
import type { Project } from '../../src/shared/api/projects.js';
import type { DeployFinishedEvent, ProjectList } from '../../src/shared/bridge.js';
import { rejection } from '../helpers/bridge-error.js';
import { archiveOf, nodeApp } from '../helpers/deploy.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';
import { quietFor, until } from '../helpers/poll.js';
import { quietPort } from '../helpers/ports.js';

let tp: TestPlatform;
const dirs: string[] = [];
const syncs: ProjectSync[] = [];
const mirrors: Mirror[] = [];

beforeAll(async () => {
  tp = await startPlatform({ healthTimeoutMs: 15_000, workerGraceMs: 300 });
});
afterEach(async () => {
  vi.restoreAllMocks();
  for (const sync of syncs.splice(0)) await sync.close();
  for (const mirror of mirrors.splice(0)) mirror.close();
});
afterAll(async () => {
  await tp?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const originOf = (platform: TestPlatform) => platform.api.replace(/\/api\/v1$/, '');

interface Setup {
  /** The platform and key the connection uses (default: the test platform's local account). */
  platform?: PlatformConnectionOptions['platformOverride'];
  mirror?: Mirror;
  pollIntervalMs?: number;
  buildingPollIntervalMs?: number;
}

/** A ProjectSync on its own PlatformConnection and Mirror, with what it told recorded. */
function syncFor(setup: Setup = {}) {
  const home = mkdtempSync(join(tmpdir(), 'wharf-sync-'));
  dirs.push(home);
  const mirror = setup.mirror ?? new Mirror(':memory:');
  if (!setup.mirror) mirrors.push(mirror);
  const platform = new PlatformConnection({
    home,
    secrets: new FileSecretStore(join(home, 'secrets.json')),
    mirror,
    statusChanged: () => undefined,
    localPlatform: async () => ({ url: originOf(tp), apiKey: tp.key }),
    ...(setup.platform ? { platformOverride: setup.platform } : {}),
  });
  const changes: ProjectList[] = [];
  const finished: DeployFinishedEvent[] = [];
  const state = { watched: true };
  const sync = new ProjectSync({
    platform,
    mirror,
    changed: (list) => changes.push(list),
    finished: (event) => finished.push(event),
    watched: () => state.watched,
    ...(setup.pollIntervalMs === undefined ? {} : { pollIntervalMs: setup.pollIntervalMs }),
    ...(setup.buildingPollIntervalMs === undefined
      ? {}
      : { buildingPollIntervalMs: setup.buildingPollIntervalMs }),
  });
  syncs.push(sync);
  return { sync, platform, mirror, changes, finished, state, home };
}

/** A ProjectSync for a new account of its own on `platform` (its list holds only what the test made). */
async function accountSync(platform = tp, setup: Setup = {}) {
  const account = await platform.newAccount();
  const parts = syncFor({
    ...setup,
    platform: { mode: 'remote', origin: originOf(platform), apiKey: account.key },
  });
  return { ...parts, account, scope: { platform: originOf(platform), accountId: account.accountId } };
}

let serial = 0;
/** Creates a project straight on the platform (elsewhere, as far as the sync knows). */
async function createElsewhere(key: string, platform = tp, body: Record<string, unknown> = {}) {
  serial++;
  const created = await call<Project>(`${platform.api}/projects`, {
    key,
    body: {
      name: `Sync ${serial}`,
      subdomain: `sync-${serial}-${Date.now() % 100_000}`,
      image: 'nginx',
      ...body,
    },
  });
  expect(created.status).toBe(201);
  return created.body;
}

const ids = (projects: readonly Project[]) => projects.map((p) => p.id).sort();

async function deadOrigin(): Promise<string> {
  return `http://127.0.0.1:${await quietPort()}`;
}

describe('ProjectSync live', () => {
  it('lists live and keeps the list in the Mirror, telling a change only when the list’s ETag changes', async () => {
    const { sync, mirror, changes, account, scope } = await accountSync();
    const first = await createElsewhere(account.key);
    const list = await sync.list();
    expect(list).toMatchObject({ source: 'live', fetchedAt: expect.any(String) });
    expect(ids(list.projects)).toEqual([first.id]);
    expect(mirror.projects(scope)).toEqual({ projects: list.projects, fetchedAt: list.fetchedAt });
    expect(changes).toEqual([]);

    // Asked again with the ETag: 304, nothing told.
    const lists = vi.spyOn(PlatformClient.prototype, 'listProjects');
    await sync.refresh();
    expect(lists).toHaveBeenCalledTimes(1);
    expect(lists.mock.calls[0]![0]).toMatch(/.+/);
    await expect(lists.mock.results[0]!.value).resolves.toMatchObject({ notModified: true });
    expect(changes).toEqual([]);

    const second = await createElsewhere(account.key);
    await sync.refresh();
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({ source: 'live', fetchedAt: expect.any(String) });
    expect(ids(changes[0]!.projects)).toEqual(ids([first, second]));
    expect(ids(mirror.projects(scope).projects)).toEqual(ids([first, second]));
    await sync.refresh();
    expect(changes).toHaveLength(1);

    // Another platform saved: the old ETag no longer counts, so the same list is told again.
    sync.reset();
    await sync.refresh();
    expect(changes).toHaveLength(2);
    expect(ids(changes[1]!.projects)).toEqual(ids([first, second]));
  });

  it('gets a project live with its logs, keeping it in the Mirror; another account’s is not found', async () => {
    const { sync, mirror, account, scope } = await accountSync();
    const mine = await createElsewhere(account.key);
    const view = await sync.get(mine.id);
    expect(view).toMatchObject({ source: 'live', project: { id: mine.id }, logs: expect.any(Array) });
    expect(mirror.project(scope, mine.id)).toMatchObject({ id: mine.id });

    const theirs = await createElsewhere(tp.key);
    const error = await rejection(sync.get(theirs.id));
    expect(error).toMatchObject({ code: 'not_found', status: 404 });
    expect(mirror.project(scope, theirs.id)).toBeNull();
    expect(ids((await sync.list()).projects)).toEqual([mine.id]);
    expect((await rejection(sync.get('../projects'))).code).toBe('not_found');
  });

  it('writes and remembers projects, and removes deleted ones, from the Mirror and the list', async () => {
    const { sync, platform, mirror, changes, account, scope } = await accountSync();
    const created = await sync.write((client) =>
      client.createProject({
        name: 'Written',
        subdomain: `sync-written-${Date.now() % 100_000}`,
        image: 'nginx',
      }),
    );
    expect(mirror.project(scope, created.id)).toMatchObject({ id: created.id, name: 'Written' });
    expect(changes).toHaveLength(1);
    expect(ids(changes[0]!.projects)).toEqual([created.id]);

    const configured = await sync.write((client) => client.setEnvVars(created.id, { A: '1' }));
    expect(mirror.project(scope, created.id)?.env_vars).toEqual({ A: '1' });
    expect(changes.at(-1)?.projects.find((p) => p.id === created.id)?.env_vars).toEqual({ A: '1' });
    expect(configured.env_vars).toEqual({ A: '1' });

    // A bad write is the platform's 422, and changes nothing.
    const told = changes.length;
    const invalid = await rejection(
      sync.write((client) => client.createProject({ name: '', subdomain: 'Nope', image: 'nginx' })),
    );
    expect(invalid).toMatchObject({ code: 'validation_failed', status: 422 });
    expect(invalid.errors?.map((e) => e.path)).toEqual(expect.arrayContaining(['name', 'subdomain']));
    expect(ids(mirror.projects(scope).projects)).toEqual([created.id]);
    expect(changes).toHaveLength(told);

    const elsewhere = await createElsewhere(account.key);
    await sync.remember(elsewhere);
    expect(mirror.project(scope, elsewhere.id)).toMatchObject({ id: elsewhere.id });
    expect(ids(changes.at(-1)!.projects)).toEqual(ids([created, elsewhere]));

    await platform.call((client) => client.deleteProject(created.id));
    await sync.removed(created.id);
    expect(mirror.project(scope, created.id)).toBeNull();
    expect(ids(changes.at(-1)!.projects)).toEqual([elsewhere.id]);
  });

  it('throws not_configured rather than answering from the cache when no key is saved', async () => {
    const home = mkdtempSync(join(tmpdir(), 'wharf-sync-'));
    dirs.push(home);
    const mirror = new Mirror(':memory:');
    mirrors.push(mirror);
    const platform = new PlatformConnection({
      home,
      secrets: new FileSecretStore(join(home, 'secrets.json')),
      mirror,
      statusChanged: () => undefined,
    });
    platform.update({ platform: originOf(tp) });
    const changes: ProjectList[] = [];
    const sync = new ProjectSync({
      platform,
      mirror,
      changed: (list) => changes.push(list),
      finished: () => undefined,
      watched: () => true,
    });
    syncs.push(sync);
    expect(await rejection(sync.list())).toMatchObject({ code: 'not_configured', status: 401 });
    await sync.refresh();
    expect(changes).toEqual([]);
    expect(platform.status.problem).toMatch(/no API key is saved/);
  });
});

describe('ProjectSync offline', () => {
  it('answers from the Mirror once the platform is gone, telling the switch to the cache once', async () => {
    const own = await startPlatform();
    try {
      const { sync, changes, state, platform, account } = await accountSync(own);
      const project = await createElsewhere(account.key, own);
      const live = await sync.list();
      expect(ids(live.projects)).toEqual([project.id]);
      const late = await createElsewhere(account.key, own);
      await own.close();

      const cached = await sync.list();
      expect(cached).toEqual({ projects: live.projects, source: 'cache', fetchedAt: live.fetchedAt });
      expect(platform.status).toMatchObject({
        online: false,
        problem: expect.stringMatching(/cannot reach/),
      });
      const detail = await sync.get(project.id);
      expect(detail).toEqual({
        project: live.projects[0],
        logs: [],
        source: 'cache',
        fetchedAt: live.fetchedAt,
      });
      expect((await rejection(sync.get('prj_never_seen'))).code).toBe('offline');

      // Told only to someone watching, and once.
      state.watched = false;
      await sync.refresh();
      expect(changes).toEqual([]);
      state.watched = true;
      await sync.refresh();
      expect(changes).toEqual([{ projects: live.projects, source: 'cache', fetchedAt: live.fetchedAt }]);
      await sync.refresh();
      expect(changes).toHaveLength(1);
      expect((await rejection(sync.write((client) => client.deploy(project.id)))).code).toBe('offline');

      // What the platform answered just before it went is kept, and what it deleted goes, though the
      // list cannot be fetched after it.
      await sync.remember(late);
      expect(ids((await sync.list()).projects)).toEqual(ids([project, late]));
      await sync.removed(project.id);
      expect(ids((await sync.list()).projects)).toEqual([late.id]);
      expect(changes).toHaveLength(1);
    } finally {
      await own.close().catch(() => undefined);
    }
  });

  it('lists nothing cached for a platform it never reached, never another platform’s projects', async () => {
    const mirror = new Mirror(':memory:');
    mirrors.push(mirror);
    const seen = await accountSync(tp, { mirror });
    const project = await createElsewhere(seen.account.key);
    expect(ids((await seen.sync.list()).projects)).toEqual([project.id]);

    // The same Mirror (and the same key), another platform that cannot be reached.
    const { sync, changes } = syncFor({
      mirror,
      platform: { mode: 'remote', origin: await deadOrigin(), apiKey: seen.account.key },
    });
    expect(await sync.list()).toEqual({ projects: [], source: 'cache', fetchedAt: null });
    await sync.refresh();
    expect(changes).toEqual([]);
    expect((await rejection(sync.get(project.id))).code).toBe('offline');
  });
});

describe('ProjectSync deploys and polling', () => {
  const failingApp = {
    'package.json': JSON.stringify({ name: 'broken', scripts: { start: 'node server.js' } }),
    'server.js': "console.error('missing DATABASE_URL'); process.exit(3);\n",
  };

  async function uploaded(sync: ProjectSync, platform: PlatformConnection, files: Record<string, string>) {
    serial++;
    const project = await sync.write((client) =>
      client.createProject({
        name: `Sync deploy ${serial}`,
        subdomain: `sync-deploy-${serial}-${Date.now() % 100_000}`,
        deploy_source: 'upload',
      }),
    );
    await platform.call((client) => client.uploadArchive(project.id, new Uint8Array(archiveOf(files))));
    return project;
  }
  it(
    'polls sooner while a project builds, and tells each deploy that ended once, running or failed',
    { timeout: 60_000 },
    async () => {
      // Polling every minute, every 50 ms while building: the deploys' ends are seen only at the faster pace.
      const { sync, platform, finished } = syncFor({ pollIntervalMs: 60_000, buildingPollIntervalMs: 50 });
      const good = await uploaded(sync, platform, nodeApp('hello from the sync'));
      const bad = await uploaded(sync, platform, failingApp);
      const lists = vi.spyOn(PlatformClient.prototype, 'listProjects');

      // Nothing builds: no refresh within half a second.
      sync.startPolling();
      await quietFor(500);
      expect(lists).not.toHaveBeenCalled();
      sync.stopPolling();

      expect((await sync.write((client) => client.deploy(good.id))).status).toBe('building');
      expect((await sync.write((client) => client.deploy(bad.id))).status).toBe('building');
      sync.startPolling();
      await until(() => finished.length >= 2, 'both deploys to finish', 30_000);
      const byId = new Map(finished.map((event) => [event.project.id, event]));
      expect(byId.get(good.id)).toMatchObject({
        outcome: 'running',
        project: { status: 'running', last_deploy_error: null },
      });
      expect(byId.get(bad.id)).toMatchObject({
        outcome: 'failed',
        project: { status: 'failed', last_deploy_error: expect.any(String) },
      });

      // Nothing builds any more: back to the slow pace, and no deploy told twice.
      const calls = lists.mock.calls.length;
      await quietFor(500);
      expect(lists.mock.calls.length).toBeLessThanOrEqual(calls + 1);
      await sync.refresh();
      await sync.list();
      await sync.get(good.id);
      expect(finished).toHaveLength(2);
    },
  );

  it('close() stops polling for good, once the refresh under way has ended', async () => {
    const { sync } = await accountSync(tp, { pollIntervalMs: 20 });
    await sync.list();
    const listProjects = PlatformClient.prototype.listProjects;
    let underWay = 0;
    let calls = 0;
    vi.spyOn(PlatformClient.prototype, 'listProjects').mockImplementation(async function (
      this: PlatformClient,
      etag,
    ) {
      calls++;
      underWay++;
      try {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return await listProjects.call(this, etag);
      } finally {
        underWay--;
      }
    });
    sync.startPolling();
    await until(() => underWay > 0, 'a refresh under way');
    await sync.close();
    expect(underWay).toBe(0);
    const after = calls;
    sync.startPolling();
    await quietFor(200);
    expect(calls).toBe(after);
  });
});
