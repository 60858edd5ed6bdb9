// Which platform and key the project commands use (the Engine's rules, src/core/platform-target.ts),
// the --platform / --api-key values they accept, and how connection errors are explained.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { afterEach, describe, expect, it } from 'vitest';
import { PlatformClient } from '../../../src/core/api-client/platform-client.js';
import {
  localAccountFile,
  localPlatformOrigin,
  readLocalApiKey,
  resolvePlatformTarget,
} from '../../../src/core/platform-target.js';
import { FileSecretStore } from '../../../src/core/secret-store.js';
import { apiKeySecretName, writeSettings } from '../../../src/core/settings.js';
import { BridgeError } from '../../../src/shared/bridge.js';
import { explain, localPort, parseApiKey, parsePlatform, type Connection } from '../../../src/cli/connect.js';
import { UsageError } from '../../../src/cli/io.js';

const KEY = 'wk_' + 'a'.repeat(32);
const OTHER_KEY = 'wk_' + 'b'.repeat(32);
const homes: string[] = [];

function home(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wharf-target-'));
  homes.push(dir);
  return dir;
}

afterEach(() => {
  for (const dir of homes.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function withLocalAccount(dir: string, apiKey = KEY): void {
  mkdirSync(join(dir, 'platform'));
  writeFileSync(localAccountFile(dir), JSON.stringify({ account_id: 'acc_1', api_key: apiKey }));
}

describe('resolvePlatformTarget', () => {
  it('defaults to the local platform with the key from its local-account.json', () => {
    const dir = home();
    const secrets = new FileSecretStore(join(dir, 'secrets.json'));
    expect(resolvePlatformTarget({ home: dir, secrets })).toEqual({
      mode: 'local',
      origin: 'http://127.0.0.1:8787',
      apiKey: null,
      keySource: join(dir, 'platform', 'local-account.json'),
    });
    withLocalAccount(dir);
    expect(resolvePlatformTarget({ home: dir, secrets, localPort: 9000 })).toMatchObject({
      origin: 'http://127.0.0.1:9000',
      apiKey: KEY,
    });
  });

  it('uses the saved remote platform and its key from the secret store', () => {
    const dir = home();
    const secrets = new FileSecretStore(join(dir, 'secrets.json'));
    writeSettings(dir, { platform: 'https://wharf.example.com' });
    expect(resolvePlatformTarget({ home: dir, secrets })).toMatchObject({
      mode: 'remote',
      origin: 'https://wharf.example.com',
      apiKey: null,
    });
    secrets.set(apiKeySecretName('https://wharf.example.com'), KEY);
    secrets.set(apiKeySecretName('https://other.example.com'), OTHER_KEY);
    expect(resolvePlatformTarget({ home: dir, secrets }).apiKey).toBe(KEY);
    // An override picks that platform's own key, never another platform's.
    expect(resolvePlatformTarget({ home: dir, secrets, platform: 'https://other.example.com' }).apiKey).toBe(
      OTHER_KEY,
    );
    withLocalAccount(dir);
    expect(resolvePlatformTarget({ home: dir, secrets, platform: 'local' })).toMatchObject({
      mode: 'local',
      apiKey: KEY,
    });
  });

  it('reads no key from a missing or broken local-account.json', () => {
    const dir = home();
    expect(readLocalApiKey(dir)).toBeNull();
    mkdirSync(join(dir, 'platform'));
    writeFileSync(localAccountFile(dir), '{"api_key": ');
    expect(readLocalApiKey(dir)).toBeNull();
    expect(localPlatformOrigin()).toBe('http://127.0.0.1:8787');
  });
});

describe('option values', () => {
  it('takes "local" or an http(s) URL reduced to its origin', () => {
    expect(parsePlatform('local')).toBe('local');
    expect(parsePlatform('https://wharf.example.com/api/v1/')).toBe('https://wharf.example.com');
    expect(parsePlatform('http://127.0.0.1:8787')).toBe('http://127.0.0.1:8787');
    for (const bad of ['ftp://x', 'wharf.example.com', 'https://user:pw@x.example.com', ''])
      expect(() => parsePlatform(bad), bad).toThrow(InvalidArgumentError);
  });

  it('takes keys shaped like the platform issues them', () => {
    expect(parseApiKey(` ${KEY} `)).toBe(KEY);
    for (const bad of ['wk_short', 'sk-' + 'a'.repeat(32), KEY + 'a'])
      expect(() => parseApiKey(bad)).toThrow(InvalidArgumentError);
  });

  it('reads the local port from WHARF_PORT', () => {
    expect(localPort({})).toBeUndefined();
    expect(localPort({ WHARF_PORT: '9100' })).toBe(9100);
    expect(() => localPort({ WHARF_PORT: 'eighty' })).toThrow(UsageError);
    expect(() => localPort({ WHARF_PORT: '70000' })).toThrow(UsageError);
  });
});

describe('explain', () => {
  const connection = (mode: 'local' | 'remote', keyGiven = false): Connection => ({
    target: {
      mode,
      origin: 'http://127.0.0.1:8787',
      apiKey: KEY,
      keySource: mode === 'local' ? '/home/u/.wharf/platform/local-account.json' : 'the saved key',
    },
    client: new PlatformClient({ baseUrl: 'http://127.0.0.1:8787', apiKey: KEY }),
    keyGiven,
  });
  const offline = new BridgeError(
    'offline',
    0,
    'cannot reach the platform at http://127.0.0.1:8787: nothing',
  );
  const refused = new BridgeError('unauthorized', 401, 'the API key is not valid');

  it('says how to start a local platform that does not answer', () => {
    expect((explain(offline, connection('local')) as Error).message).toBe(
      'no platform is running at http://127.0.0.1:8787: start one with `wharf platform` (or open the app)',
    );
    expect(explain(offline, connection('remote'))).toBe(offline);
  });

  it('names the key that was refused and what to do', () => {
    expect((explain(refused, connection('remote')) as Error).message).toBe(
      'the platform at http://127.0.0.1:8787 refused the saved API key (the API key is not valid): run `wharf login --platform http://127.0.0.1:8787 --api-key KEY` with a valid one',
    );
    expect((explain(refused, connection('remote', true)) as Error).message).toContain(
      'refused the API key given with --api-key or WHARF_API_KEY',
    );
    expect((explain(refused, connection('local')) as Error).message).toContain(
      "refused the local account's key from /home/u/.wharf/platform/local-account.json",
    );
  });

  it('leaves other errors as they are', () => {
    const conflict = new BridgeError('upload_required', 409, 'upload first');
    expect(explain(conflict, connection('local'))).toBe(conflict);
    const plain = new Error('x');
    expect(explain(plain, connection('local'))).toBe(plain);
  });
});
