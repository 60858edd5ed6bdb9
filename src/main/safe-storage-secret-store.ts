// The desktop app's SecretStore: API keys encrypted with Electron safeStorage (the macOS Keychain,
// Windows DPAPI, or the Linux Secret Service / KWallet) and kept as base64 in
// `<home>/secrets.safe.json`, mode 0600, written atomically. The CLI's counterpart is FileSecretStore in
// src/core/secret-store.ts.
//
// On Linux without a keyring, Chromium falls back to the `basic_text` backend: a hard-coded key that only
// obfuscates. We still store the key there (the Engine needs it to work at all), but say so through
// `warning`, which Settings shows beside the key. When encryption is not available at all, we refuse to
// store rather than writing the key in plain text.
import { readFileSync } from 'node:fs';
import { safeStorage } from 'electron';
import { BridgeError } from '../shared/bridge.js';
import { writeFileAtomic } from '../core/private-file.js';
import { SecretFile, type SecretStore } from '../core/secret-store.js';

/** The part of Electron's safeStorage this store uses (injectable for tests). */
export type SafeStorageLike = Pick<
  typeof safeStorage,
  'isEncryptionAvailable' | 'encryptString' | 'decryptString' | 'getSelectedStorageBackend'
>;

export const SECRETS_FILE_NAME = 'secrets.safe.json';

const FILE_VERSION = 1;

interface SecretsFile {
  version: typeof FILE_VERSION;
  /** name → base64 of safeStorage.encryptString(value) */
  secrets: Record<string, string>;
}

export class SafeStorageSecretStore extends SecretFile implements SecretStore {
  readonly kind = 'safe-storage' as const;
  readonly warning: string | null;

  /** Must be created after the app's `ready` event: before it, Linux reports no encryption. */
  constructor(
    private readonly file: string,
    private readonly storage: SafeStorageLike = safeStorage,
    platform: NodeJS.Platform = process.platform,
  ) {
    super();
    this.warning = storageWarning(storage, platform, file);
  }

  get(name: string): string | null {
    const sealed = this.read()[name];
    if (sealed === undefined || !this.storage.isEncryptionAvailable()) return null;
    try {
      return this.storage.decryptString(Buffer.from(sealed, 'base64'));
    } catch {
      // Encrypted under another OS user or a keyring that has since been reset: as good as absent,
      // and Settings will ask for the key again.
      return null;
    }
  }

  set(name: string, value: string): void {
    if (!this.storage.isEncryptionAvailable()) {
      throw new BridgeError(
        'unavailable',
        503,
        'this system offers no way to encrypt the API key (Electron safeStorage is unavailable), so it was not saved',
      );
    }
    this.put(name, this.storage.encryptString(value).toString('base64'));
  }

  protected read(): Record<string, string> {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw new Error(`cannot read the secrets file ${this.file}: ${(error as Error).message}`);
    }
    try {
      const parsed = JSON.parse(text) as Partial<SecretsFile> | null;
      const secrets = parsed?.secrets;
      if (typeof secrets !== 'object' || secrets === null) return {};
      return Object.fromEntries(
        Object.entries(secrets).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
      );
    } catch {
      // A damaged file holds nothing we could decrypt anyway; the next write replaces it.
      return {};
    }
  }

  protected write(secrets: Record<string, string>): void {
    const content: SecretsFile = { version: FILE_VERSION, secrets };
    writeFileAtomic(this.file, JSON.stringify(content, null, 2) + '\n');
  }
}

/** Why the stored key is less protected than the user would assume, or null when it is protected. */
export function storageWarning(
  storage: SafeStorageLike,
  platform: NodeJS.Platform,
  file: string,
): string | null {
  if (!storage.isEncryptionAvailable()) {
    return 'No way to encrypt secrets is available on this system, so an API key cannot be saved.';
  }
  if (platform !== 'linux') return null;
  const backend = storage.getSelectedStorageBackend();
  if (backend === 'basic_text' || backend === 'unknown') {
    return (
      `No system keyring (GNOME Keyring, KWallet) is available (Electron safeStorage backend: ${backend}), ` +
      `so the API key in ${file} is only obfuscated, not encrypted: anyone who can read that file can ` +
      'recover it. Install and unlock a keyring, then save the key again.'
    );
  }
  return null;
}
