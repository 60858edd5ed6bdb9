// The Engine's PlatformConnection alone, against a real platform: which platform and key it uses, the
// status `call` keeps in step, the Mirror scope it learns, and the settings it checks, saves and tests.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { PlatformClient } from '../../src/core/api-client/platform-client.js';
import { Mirror } from '../../src/core/mirror/mirror.js';
import { PlatformConnection, type PlatformConnectionOptions } from '../../src/core/platform-connection.js';
import { FileSecretStore } from '../../src/core/secret-store.js';
import { apiKeySecretName, DEFAULT_LOCAL_PLATFORM_URL } from '../../src/core/settings.js';
import type { PlatformStatus } from '../../src/shared/bridge.js';
import { rejection, thrown } from '../helpers/bridge-error.js';
import { LOCAL_ACCOUNT_FILE, RUNNING_FILE } from '../../src/shared/platform-files.js';
import { startPlatform, type TestPlatform } from '../helpers/platform.js';
import { quietPort } from '../helpers/ports.js';

let tp: TestPlatform;
/** The test platform's origin (its API without /api/v1). */
let origin: string;
const dirs: string[] = [];
const mirrors: Mirror[] = [];

beforeAll(async () => {
  tp = await startPlatform();
  origin = tp.api.replace(/\/api\/v1$/, '');
});
afterEach(() => {
  for (const mirror of mirrors.splice(0)) mirror.close();
  vi.restoreAllMocks();
});
afterAll(async () => {
  await tp?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempHome(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wharf-connection-'));
  dirs.push(dir);
  return dir;
}

function newMirror(file = ':memory:'): Mirror {
  const mirror = new Mirror(file);
  mirrors.push(mirror);
  return mirror;
}

interface Setup {
  home?: string;
  mirror?: Mirror;
  /** Settings saved before the connection starts: `local` or a remote origin (with its key, if any). */
  saved?: { platform: string; apiKey?: string };
  options?: Partial<Pick<PlatformConnectionOptions, 'localPlatform' | 'platformOverride'>>;
}

/** A PlatformConnection on a temp home (the test platform as its `local` one) and the statuses it told. */
function connect(setup: Setup = {}) {
  const home = setup.home ?? tempHome();
  const secrets = new FileSecretStore(join(home, 'secrets.json'));
  if (setup.saved) {
    writeFileSync(join(home, 'settings.json'), JSON.stringify({ platform: setup.saved.platform }));
    if (setup.saved.apiKey) secrets.set(apiKeySecretName(setup.saved.platform), setup.saved.apiKey);
  }
  const mirror = setup.mirror ?? newMirror();
  const told: PlatformStatus[] = [];
  const connection = new PlatformConnection({
    home,
    secrets,
    mirror,
    statusChanged: (status) => told.push(status),
    localPlatform: async () => ({ url: origin, apiKey: tp.key }),
    ...setup.options,
  });
  return { connection, home, secrets, mirror, told };
}

/** An origin nothing listens on. */
async function deadOrigin(): Promise<string> {
  return `http://127.0.0.1:${await quietPort()}`;
}

const wrongKey = `wk_${'x'.repeat(32)}`;

describe('PlatformConnection: which platform, and its status', () => {
  it('reaches the local platform, going online once with its address and the time of contact', async () => {
    const { connection, told } = connect();
    expect(connection.status).toEqual({
      mode: 'local',
      platformUrl: DEFAULT_LOCAL_PLATFORM_URL,
      online: false,
      lastContactAt: null,
      problem: null,
    });
    const before = Date.now();
    const account = await connection.call((client) => client.account());
    expect(account.id).toBe(tp.accountId);
    expect(connection.status).toMatchObject({
      mode: 'local',
      platformUrl: origin,
      online: true,
      problem: null,
    });
    expect(Date.parse(connection.status.lastContactAt!)).toBeGreaterThanOrEqual(before - 1000);
    // The address learned, then online: each told once; another answer changes nothing worth telling.
    await connection.call((client) => client.account());
    expect(told.map((s) => [s.platformUrl, s.online])).toEqual([
      [origin, false],
      [origin, true],
    ]);
    expect(await connection.credentials()).toEqual({ origin, apiKey: tp.key });
    expect((await connection.client()).baseUrl).toBe(origin);
  });

  it('stays online with a problem when the platform refuses the key, and clears it once a call works', async () => {
    const { connection, told } = connect({ saved: { platform: origin, apiKey: wrongKey } });
    const refused = await rejection(connection.call((client) => client.account()));
    expect(refused).toMatchObject({ code: 'unauthorized', status: 401 });
    expect(connection.status).toMatchObject({ mode: 'remote', platformUrl: origin, online: true });
    expect(connection.status.problem).toMatch(/^the platform refused the API key: /);
    expect(connection.status.lastContactAt).not.toBeNull();
    expect(told.at(-1)).toEqual(connection.status);

    // Any other answer is an answer: online, and no problem.
    const other = await tp.newAccount();
    connection.update({ apiKey: other.key });
    const notFound = await rejection(connection.call((client) => client.getProject('prj_nope')));
    expect(notFound.code).toBe('not_found');
    expect(connection.status).toMatchObject({ online: true, problem: null });
    expect((await connection.call((client) => client.account())).id).toBe(other.accountId);
  });

  it('goes offline, saying why, when nothing listens at the platform’s address', async () => {
    const dead = await deadOrigin();
    const { connection, told } = connect({ saved: { platform: dead, apiKey: wrongKey } });
    const error = await rejection(connection.call((client) => client.account()));
    expect(error.code).toBe('offline');
    expect(connection.status).toMatchObject({ platformUrl: dead, online: false, lastContactAt: null });
    expect(connection.status.problem).toMatch(/nothing is listening there/);
    expect(told).toEqual([connection.status]);
    // The same failure again tells nothing new.
    await rejection(connection.call((client) => client.account()));
    expect(told).toHaveLength(1);
  });

  it('says a remote platform has no key yet, without calling it', async () => {
    const { connection, told } = connect({ saved: { platform: origin } });
    const asked = vi.fn();
    const error = await rejection(connection.call(async () => asked()));
    expect(error).toMatchObject({ code: 'not_configured', status: 401 });
    expect(error.detail).toBe(`no API key is saved for ${origin}: add one in Settings`);
    expect(asked).not.toHaveBeenCalled();
    expect(connection.status).toMatchObject({ online: false, problem: error.detail });
    expect(told).toHaveLength(1);
    expect((await rejection(connection.client())).code).toBe('not_configured');
    expect((await rejection(connection.credentials())).code).toBe('not_configured');
  });

  it('finds a `wharf platform` of its home as the CLI does, when no local platform is given', async () => {
    const home = tempHome();
    const { connection, told } = connect({ home, options: { localPlatform: undefined } });
    const missing = await rejection(connection.call((client) => client.account()));
    expect(missing.code).toBe('offline');
    expect(missing.detail).toMatch(/the local platform is not set up: run `wharf platform`/);
    expect(connection.status).toMatchObject({ online: false, problem: missing.detail });
    expect(told).toHaveLength(1);

    // Once it runs (its account and address written), the next call finds it: the failure was not kept.
    mkdirSync(join(home, 'platform'));
    writeFileSync(
      join(home, 'platform', LOCAL_ACCOUNT_FILE),
      JSON.stringify({ account_id: tp.accountId, api_key: tp.key }),
    );
    writeFileSync(
      join(home, 'platform', RUNNING_FILE),
      JSON.stringify({ origin, edge_origin: `http://127.0.0.1:${tp.edgePort}`, pid: process.pid }),
    );
    expect((await connection.call((client) => client.account())).id).toBe(tp.accountId);
    expect(connection.status).toMatchObject({
      mode: 'local',
      platformUrl: origin,
      online: true,
      problem: null,
    });
  });

  it('uses a platform given for the session with its key, whatever settings.json says', async () => {
    const other = await tp.newAccount();
    const { connection, home } = connect({
      saved: { platform: await deadOrigin(), apiKey: wrongKey },
      options: { platformOverride: { mode: 'remote', origin, apiKey: other.key } },
    });
    expect((await connection.call((client) => client.account())).id).toBe(other.accountId);
    expect(connection.status).toMatchObject({ mode: 'remote', platformUrl: origin, online: true });

    const local = connect({
      home,
      options: { platformOverride: { mode: 'local' } },
    }).connection;
    expect((await local.call((client) => client.account())).id).toBe(tp.accountId);
    expect(local.status.mode).toBe('local');
  });
});

describe('PlatformConnection: the Mirror scope', () => {
  it('learns the account once, remembering it in the Mirror for this platform', async () => {
    const other = await tp.newAccount();
    const mirror = newMirror();
    const { connection } = connect({ mirror, saved: { platform: origin, apiKey: other.key } });
    expect(connection.cachedScope()).toBeNull();
    const account = vi.spyOn(PlatformClient.prototype, 'account');

    const scope = await connection.scope();
    expect(scope).toEqual({ platform: origin, accountId: other.accountId });
    expect(await connection.scope()).toEqual(scope);
    expect(account).toHaveBeenCalledTimes(1);
    expect(mirror.lastAccount(origin)).toBe(other.accountId);
    expect(connection.cachedScope()).toEqual(scope);
    expect(connection.status.online).toBe(true);
  });

  it('gives the cached scope of the account last seen on this platform, and none for another', async () => {
    const other = await tp.newAccount();
    const file = join(tempHome(), 'mirror.db');
    const first = connect({ mirror: newMirror(file), saved: { platform: origin, apiKey: other.key } });
    await first.connection.scope();
    mirrors.splice(mirrors.indexOf(first.mirror), 1);
    first.mirror.close();

    // An app restart with the platform unreachable: the account comes from the Mirror, not the platform.
    const mirror = newMirror(file);
    const again = connect({ home: first.home, mirror });
    const account = vi.spyOn(PlatformClient.prototype, 'account');
    expect(again.connection.cachedScope()).toEqual({ platform: origin, accountId: other.accountId });
    expect(account).not.toHaveBeenCalled();

    const elsewhere = connect({ mirror, saved: { platform: await deadOrigin(), apiKey: other.key } });
    expect(elsewhere.connection.cachedScope()).toBeNull();
    const offline = await rejection(elsewhere.connection.scope());
    expect(offline.code).toBe('offline');
    expect(elsewhere.connection.cachedScope()).toBeNull();
  });
});

describe('PlatformConnection: settings', () => {
  it('views the local platform, a remote one with or without its key, and one given for the session', async () => {
    const local = connect().connection;
    expect(await local.view()).toEqual({
      mode: 'local',
      platformUrl: origin,
      hasApiKey: true,
      keyStorage: 'file',
      keyStorageWarning: null,
    });
    const remote = connect({ saved: { platform: origin, apiKey: wrongKey } }).connection;
    expect(await remote.view()).toEqual({
      mode: 'remote',
      platformUrl: origin,
      hasApiKey: true,
      keyStorage: 'file',
      keyStorageWarning: null,
    });
    const keyless = connect({ saved: { platform: origin } }).connection;
    expect(await keyless.view()).toMatchObject({ mode: 'remote', hasApiKey: false });
    const given = connect({
      options: { platformOverride: { mode: 'remote', origin, apiKey: wrongKey } },
    }).connection;
    expect(await given.view()).toEqual({
      mode: 'remote',
      platformUrl: origin,
      hasApiKey: true,
      keyStorage: 'none',
      keyStorageWarning: 'the API key was given on the command line',
    });
    // A local platform that cannot be started yet: still viewed, at its default address.
    const absent = connect({
      options: { localPlatform: () => Promise.reject(new Error('no platform here')) },
    }).connection;
    expect(await absent.view()).toMatchObject({
      mode: 'local',
      platformUrl: DEFAULT_LOCAL_PLATFORM_URL,
      hasApiKey: false,
    });
  });

  it('saves a platform as its origin and its key in the secret store, and starts the status afresh', async () => {
    const other = await tp.newAccount();
    const { connection, home, secrets, mirror, told } = connect();
    await connection.scope();
    expect(connection.status.online).toBe(true);

    connection.update({ platform: `  ${origin}/some/path?x=1 `, apiKey: `  ${other.key}  ` });
    expect(JSON.parse(readFileSync(join(home, 'settings.json'), 'utf8'))).toEqual({ platform: origin });
    expect(readFileSync(join(home, 'settings.json'), 'utf8')).not.toContain(other.key);
    expect(secrets.get(apiKeySecretName(origin))).toBe(other.key);
    expect(connection.status).toEqual({
      mode: 'remote',
      platformUrl: origin,
      online: false,
      lastContactAt: null,
      problem: null,
    });
    expect(told.at(-1)).toEqual(connection.status);
    // The account is learned again, for the new key.
    expect(await connection.scope()).toEqual({ platform: origin, accountId: other.accountId });
    expect(mirror.lastAccount(origin)).toBe(other.accountId);

    // A blank key or null forgets it; a key for `local` is not stored anywhere.
    connection.update({ apiKey: '   ' });
    expect(secrets.get(apiKeySecretName(origin))).toBeNull();
    secrets.set(apiKeySecretName(origin), other.key);
    connection.update({ apiKey: null });
    expect(secrets.get(apiKeySecretName(origin))).toBeNull();
    expect((await rejection(connection.client())).code).toBe('not_configured');
    connection.update({ platform: 'local', apiKey: other.key });
    expect(JSON.parse(readFileSync(join(home, 'settings.json'), 'utf8'))).toEqual({ platform: 'local' });
    expect(readFileSync(join(home, 'secrets.json'), 'utf8')).not.toContain(other.key);
    expect((await connection.call((client) => client.account())).id).toBe(tp.accountId);
  });

  it('refuses a URL that is not http(s) and a key of the wrong shape with 422s naming the field, saving nothing', async () => {
    const { connection, home, secrets, told } = connect();
    for (const platform of ['ftp://example.com', 'not a url', 'http://user:pw@example.com', '']) {
      const error = thrown(() => connection.update({ platform }));
      expect(error).toMatchObject({ code: 'validation_failed', status: 422 });
      expect(error.errors).toEqual([{ path: 'platform', message: expect.any(String) }]);
    }
    for (const apiKey of [
      'hunter2',
      `wk_${'a'.repeat(31)}`,
      `wk_${'a'.repeat(31)}!`,
      `WK_${'a'.repeat(32)}`,
    ]) {
      const error = thrown(() => connection.update({ platform: origin, apiKey }));
      expect(error).toMatchObject({ code: 'validation_failed', status: 422 });
      expect(error.errors).toEqual([{ path: 'apiKey', message: expect.any(String) }]);
      expect(JSON.stringify(error.toJSON())).not.toContain(apiKey);
    }
    expect(existsSync(join(home, 'settings.json'))).toBe(false);
    expect(existsSync(join(home, 'secrets.json'))).toBe(false);
    expect(secrets.get(apiKeySecretName(origin))).toBeNull();
    expect(told).toEqual([]);
    expect(connection.status.mode).toBe('local');
  });

  it('refuses to change settings while a platform is given for the session', async () => {
    const { connection, home } = connect({
      options: { platformOverride: { mode: 'remote', origin, apiKey: wrongKey } },
    });
    for (const update of [{ platform: 'local' }, { apiKey: null }, {}]) {
      const error = thrown(() => connection.update(update));
      expect(error).toMatchObject({ code: 'bad_request', status: 400 });
      expect(error.detail).toMatch(/given on the command line/);
    }
    expect(existsSync(join(home, 'settings.json'))).toBe(false);
    expect(connection.status).toMatchObject({ mode: 'remote', platformUrl: origin });
  });

  it('tests a platform with the saved key, a given one, or the local one, leaving the status alone', async () => {
    const other = await tp.newAccount();
    const { connection, told } = connect({ saved: { platform: origin, apiKey: other.key } });

    const saved = await connection.test({ platform: `${origin}/` });
    expect(saved).toMatchObject({ ok: true, error: null, account: { id: other.accountId } });
    expect(saved.latencyMs).toBeGreaterThanOrEqual(0);
    const given = await connection.test({ platform: origin, apiKey: ` ${tp.key} ` });
    expect(given).toMatchObject({ ok: true, account: { id: tp.accountId } });
    const local = await connection.test({ platform: 'local' });
    expect(local).toMatchObject({ ok: true, account: { id: tp.accountId } });

    const refused = await connection.test({ platform: origin, apiKey: wrongKey });
    expect(refused).toMatchObject({
      ok: false,
      latencyMs: null,
      account: null,
      error: { code: 'unauthorized', status: 401 },
    });
    const nowhere = await connection.test({ platform: await deadOrigin(), apiKey: other.key });
    expect(nowhere).toMatchObject({ ok: false, error: { code: 'offline' } });
    const keyless = await connection.test({ platform: await deadOrigin() });
    expect(keyless).toMatchObject({ ok: false, error: { code: 'not_configured', status: 401 } });
    const bad = await connection.test({ platform: 'ftp://example.com', apiKey: other.key });
    expect(bad).toMatchObject({
      ok: false,
      error: { code: 'validation_failed', status: 422, errors: [{ path: 'platform' }] },
    });
    expect(JSON.stringify(bad)).not.toContain(other.key);

    expect(told).toEqual([]);
    expect(connection.status).toMatchObject({ online: false, lastContactAt: null });
  });
});
