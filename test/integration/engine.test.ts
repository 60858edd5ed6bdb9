// The Engine against a real platform: live data, the Mirror while offline, settings and secrets.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/core/engine.js';
import { FileSecretStore } from '../../src/core/secret-store.js';
import type { BridgeEvents, PlatformStatus } from '../../src/shared/bridge.js';
import { rejection } from '../helpers/bridge-error.js';
import { startPlatform, type TestPlatform } from '../helpers/platform.js';

const dirs: string[] = [];
const engines: Engine[] = [];
function tempHome(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wharf-engine-'));
  dirs.push(dir);
  return dir;
}

function engineFor(platform: TestPlatform, home = tempHome(), pollIntervalMs = 100): Engine {
  const engine = new Engine({
    home,
    secrets: new FileSecretStore(join(home, 'secrets.json')),
    localPlatform: async () => ({ url: platform.api.replace(/\/api\/v1$/, ''), apiKey: platform.key }),
    pollIntervalMs,
  });
  engines.push(engine);
  return engine;
}

function nextEvent<E extends keyof BridgeEvents>(
  engine: Engine,
  event: E,
  accept: (p: BridgeEvents[E]) => boolean,
) {
  return new Promise<BridgeEvents[E]>((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no ${event} event`));
    }, 5_000);
    const off = engine.on(event, (payload) => {
      if (!accept(payload)) return;
      clearTimeout(timer);
      off();
      resolve(payload);
    });
  });
}

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startPlatform();
});
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
});
afterAll(async () => {
  await platform.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('Engine with the local platform', () => {
  it('lists, creates, configures and deletes projects live, keeping the Mirror in step', async () => {
    const engine = engineFor(platform);
    const created = await engine.invoke('projects.create', {
      name: 'Engine',
      subdomain: 'engine-a',
      image: 'nginx:1.27',
    });
    expect(created.subdomain).toBe('engine-a');
    const list = await engine.invoke('projects.list', undefined);
    expect(list.source).toBe('live');
    expect(list.projects.map((p) => p.id)).toContain(created.id);

    const withEnv = await engine.invoke('projects.setEnvVars', { id: created.id, env_vars: { A: '1' } });
    expect(withEnv.env_vars).toEqual({ A: '1' });
    const configured = await engine.invoke('projects.setBuildConfig', {
      id: created.id,
      build_config: { services: [{ name: 'web', start_cmd: 'node server.js' }] },
    });
    expect(Object.keys(configured.service_urls)).toEqual(['web']);
    const view = await engine.invoke('projects.get', { id: created.id });
    expect(view).toMatchObject({ source: 'live', logs: [] });

    await engine.invoke('projects.delete', { id: created.id });
    const after = await engine.invoke('projects.list', undefined);
    expect(after.projects.map((p) => p.id)).not.toContain(created.id);
  });

  it('passes the platform’s validation errors through with their field paths', async () => {
    const engine = engineFor(platform);
    const error = await rejection(
      engine.invoke('projects.create', { name: '', subdomain: 'Nope', image: 'nginx' }),
    );
    expect(error.code).toBe('validation_failed');
    expect(error.status).toBe(422);
    expect(error.errors?.map((e) => e.path)).toEqual(expect.arrayContaining(['name', 'subdomain']));
  });

  it('uploads an archive to an upload project', async () => {
    const { nodeAppTarball } = await import('../fixtures/tarball.js');
    const engine = engineFor(platform);
    const project = await engine.invoke('projects.create', {
      name: 'Up',
      subdomain: 'engine-up',
      deploy_source: 'upload',
    });
    const upload = await engine.invoke('projects.upload', {
      id: project.id,
      fileName: 'app.tar.gz',
      data: new Uint8Array(nodeAppTarball()),
    });
    expect(upload).toMatchObject({ files: 2, id: expect.stringMatching(/^upl_/) });
    const empty = await rejection(
      engine.invoke('projects.upload', { id: project.id, fileName: 'x', data: new Uint8Array() }),
    );
    expect(empty.code).toBe('validation_failed');
  });

  it('says how the platform runs apps (platform.info), as GET /platform does', async () => {
    const engine = engineFor(platform);
    const info = await engine.invoke('platform.info', undefined);
    expect(info).toEqual({
      runtime: 'sandbox',
      runtime_notes: platform.platform.runtimeNotes,
      keep_releases: platform.platform.config.keepReleases,
      ai_included: null,
      ai_own_key_models: platform.platform.engines.offered().ai_own_key_models,
    });
  });

  it('answers platform.info with not_found from a platform older than GET /platform', async () => {
    // What an older Wharf answers for a route it does not have (its not-found handler).
    const older = createServer((request, response) => {
      response.writeHead(404, { 'content-type': 'application/problem+json' });
      response.end(
        JSON.stringify({
          type: 'https://wharf.dev/problems/not_found',
          title: 'Not Found',
          status: 404,
          code: 'not_found',
          detail: `no route for ${request.method} ${request.url}`,
        }),
      );
    });
    await new Promise<void>((resolve) => older.listen(0, '127.0.0.1', resolve));
    try {
      const engine = engineFor(platform);
      const origin = `http://127.0.0.1:${(older.address() as AddressInfo).port}`;
      await engine.invoke('settings.update', { platform: origin, apiKey: `wk_${'a'.repeat(32)}` });
      const error = await rejection(engine.invoke('platform.info', undefined));
      expect(error).toMatchObject({ code: 'not_found', status: 404 });
      expect(error.detail).toBe('no route for GET /api/v1/platform');

      await new Promise<void>((resolve) => older.close(() => resolve()));
      const gone = await rejection(engine.invoke('platform.info', undefined));
      expect(gone.code).toBe('offline');
    } finally {
      older.close();
    }
  });

  it('lists, creates and revokes API keys (keys.*), refusing to revoke the key it signs in with', async () => {
    const engine = engineFor(platform);
    const before = await engine.invoke('keys.list', undefined);
    const own = before.filter((key) => key.current);
    expect(own.map((key) => key.name)).toEqual(['local']);

    const created = await engine.invoke('keys.create', { scopes: ['deploy'], name: '  engine key  ' });
    expect(created).toMatchObject({ name: 'engine key', scopes: ['deploy'] });
    expect(created.key).toMatch(/^wk_[A-Za-z0-9]{32}$/);
    const listed = await engine.invoke('keys.list', undefined);
    expect(listed.find((key) => key.id === created.id)).toMatchObject({ current: false, last_used_at: null });
    expect(JSON.stringify(listed)).not.toContain(created.key);

    const refused = await rejection(engine.invoke('keys.revoke', { id: own[0]!.id }));
    expect(refused).toMatchObject({ code: 'conflict', status: 409 });
    expect(refused.detail).toMatch(/key this app signs in with/);
    expect((await engine.invoke('keys.list', undefined)).some((key) => key.id === own[0]!.id)).toBe(true);

    expect(await engine.invoke('keys.revoke', { id: created.id })).toEqual({ id: created.id, deleted: true });
    const revoked = await fetch(`${platform.api}/account`, { headers: { 'x-api-key': created.key } });
    expect(revoked.status).toBe(401);
    const gone = await rejection(engine.invoke('keys.revoke', { id: created.id }));
    expect(gone.code).toBe('not_found');
  });

  it('checks keys.create and keys.revoke input before asking the platform', async () => {
    const engine = engineFor(platform);
    for (const input of [{}, { scopes: [] }, { scopes: 'full' }, { scopes: [1] }]) {
      const error = await rejection(engine.invoke('keys.create', input as never));
      expect(error.code).toBe('validation_failed');
      expect(error.errors?.[0]?.path).toBe('scopes');
    }
    const blank = await rejection(engine.invoke('keys.create', { scopes: ['email'], name: '   ' }));
    expect(blank.errors?.[0]?.path).toBe('name');
    const unknown = await rejection(engine.invoke('keys.create', { scopes: ['admin' as never], name: 'x' }));
    expect(unknown).toMatchObject({ code: 'validation_failed', status: 422 });
    expect(unknown.errors?.[0]?.path).toBe('scopes[0]');
    const noId = await rejection(engine.invoke('keys.revoke', {} as never));
    expect(noId).toMatchObject({ code: 'validation_failed', status: 422, errors: [{ path: 'id' }] });
  });

  it('tells listeners about projects created elsewhere, by polling', async () => {
    const engine = engineFor(platform);
    await engine.invoke('projects.list', undefined);
    const seen = nextEvent(engine, 'projects', (p) =>
      p.projects.some((x) => x.subdomain === 'engine-elsewhere'),
    );
    await fetch(`${platform.api}/projects`, {
      method: 'POST',
      headers: { 'x-api-key': platform.key, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Elsewhere', subdomain: 'engine-elsewhere', image: 'nginx' }),
    });
    expect((await seen).source).toBe('live');
  });
});

describe('Engine offline', () => {
  it('answers from the Mirror once the platform is gone, and says it is offline', async () => {
    const own = await startPlatform();
    const home = tempHome();
    const engine = engineFor(own, home);
    const project = await engine.invoke('projects.create', {
      name: 'Cached',
      subdomain: 'cached',
      image: 'nginx',
    });
    await engine.invoke('projects.list', undefined);
    const wentOffline = nextEvent(engine, 'platform-status', (s: PlatformStatus) => !s.online);
    await own.close();

    const list = await engine.invoke('projects.list', undefined);
    expect(list.source).toBe('cache');
    expect(list.projects.map((p) => p.id)).toEqual([project.id]);
    expect(list.fetchedAt).not.toBeNull();
    const status = await wentOffline;
    expect(status.problem).toMatch(/cannot reach the platform/);
    const detail = await engine.invoke('projects.get', { id: project.id });
    expect(detail.source).toBe('cache');
    const write = await rejection(
      engine.invoke('projects.create', { name: 'No', subdomain: 'nope', image: 'x' }),
    );
    expect(write.code).toBe('offline');
    await engine.close();
    engines.splice(engines.indexOf(engine), 1);

    // A new Engine on the same home (an app restart) still shows the cache without the platform.
    const restarted = engineFor(own, home);
    const again = await restarted.invoke('projects.list', undefined);
    expect(again).toMatchObject({ source: 'cache' });
    expect(again.projects.map((p) => p.subdomain)).toEqual(['cached']);
  });
  it('lists nothing cached for a platform it never reached, never another platform’s projects', async () => {
    const engine = engineFor(platform, tempHome());
    await engine.invoke('projects.create', {
      name: 'Mine',
      subdomain: 'engine-not-elsewhere',
      image: 'nginx',
    });
    expect((await engine.invoke('projects.list', undefined)).source).toBe('live');
    const dead = await new Promise<Server>((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => resolve(server));
    });
    const origin = `http://127.0.0.1:${(dead.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => dead.close(() => resolve()));

    await engine.invoke('settings.update', { platform: origin, apiKey: `wk_${'a'.repeat(32)}` });
    const list = await engine.invoke('projects.list', undefined);
    expect(list).toEqual({ projects: [], source: 'cache', fetchedAt: null });
    const status = await engine.invoke('platform.status', undefined);
    expect(status).toMatchObject({ platformUrl: origin, online: false });
    expect(status.problem).toMatch(/nothing is listening there/);
  });
});

describe('Engine settings', () => {
  it('keeps a remote key in the 0600 secrets file, never in settings.json, and tests the connection', async () => {
    const home = tempHome();
    const engine = engineFor(platform, home);
    const origin = platform.api.replace(/\/api\/v1$/, '');
    const other = await platform.newAccount({ scopes: ['deploy'] });

    const view = await engine.invoke('settings.update', {
      platform: `${origin}/some/path`,
      apiKey: other.key,
    });
    expect(view).toMatchObject({ mode: 'remote', platformUrl: origin, hasApiKey: true, keyStorage: 'file' });
    expect(readFileSync(join(home, 'settings.json'), 'utf8')).not.toContain(other.key);
    expect(readFileSync(join(home, 'secrets.json'), 'utf8')).toContain(other.key);
    expect(statSync(join(home, 'secrets.json')).mode & 0o777).toBe(0o600);
    expect((await engine.invoke('account.get', undefined)).id).toBe(other.accountId);

    const good = await engine.invoke('settings.testConnection', { platform: origin });
    expect(good).toMatchObject({ ok: true, account: { id: other.accountId } });
    expect(good.latencyMs).toBeGreaterThanOrEqual(0);
    const bad = await engine.invoke('settings.testConnection', {
      platform: origin,
      apiKey: `wk_${'x'.repeat(32)}`,
    });
    expect(bad).toMatchObject({ ok: false, error: { code: 'unauthorized' } });
    const nowhere = await engine.invoke('settings.testConnection', {
      platform: 'http://127.0.0.1:9',
      apiKey: other.key,
    });
    expect(nowhere).toMatchObject({ ok: false, error: { code: 'offline' } });

    const back = await engine.invoke('settings.update', { platform: 'local' });
    expect(back).toMatchObject({ mode: 'local', hasApiKey: true });
    expect((await engine.invoke('account.get', undefined)).id).toBe(platform.accountId);
  });

  it('refuses a URL that is not http(s) and a key of the wrong shape, changing nothing', async () => {
    const home = tempHome();
    const engine = engineFor(platform, home);
    const url = await rejection(engine.invoke('settings.update', { platform: 'ftp://example.com' }));
    expect(url.errors).toEqual([{ path: 'platform', message: expect.any(String) }]);
    const key = await rejection(
      engine.invoke('settings.update', { platform: 'http://127.0.0.1:1', apiKey: 'hunter2' }),
    );
    expect(key.errors?.[0]?.path).toBe('apiKey');
    expect((await engine.invoke('settings.get', undefined)).mode).toBe('local');
  });

  it('says clearly when a remote platform has no key yet', async () => {
    const engine = engineFor(platform);
    await engine.invoke('settings.update', { platform: 'http://127.0.0.1:1' });
    const error = await rejection(engine.invoke('account.get', undefined));
    expect(error.code).toBe('not_configured');
    expect(error.detail).toMatch(/no API key is saved/);
  });

  it('rejects an unknown operation', async () => {
    const engine = engineFor(platform);
    const error = await rejection(engine.invoke('projects.explode' as 'projects.list', undefined));
    expect(error.code).toBe('unknown_operation');
  });
});
