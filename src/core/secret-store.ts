// Where the Engine keeps secrets (API keys). One interface, one implementation per runtime: this file
// for plain Node (the CLI and `wharf app`: a 0600 JSON file in the Wharf home), and
// src/main/safe-storage-secret-store.ts for the desktop app (Electron safeStorage).
import { readFileSync } from 'node:fs';
import type { KeyStorage } from '../shared/bridge.js';
import { writeFileAtomic } from './private-file.js';

export interface SecretStore {
  readonly kind: KeyStorage;
  /** Shown beside the key in Settings, e.g. when the OS keyring is not really protecting it. */
  readonly warning: string | null;
  get(name: string): string | null;
  set(name: string, value: string): void;
  delete(name: string): void;
}

/**
 * A store that keeps every secret in one file, read whole and written whole (atomically): what the
 * file holds, and how a value is kept there, are the subclass's.
 */
export abstract class SecretFile {
  protected abstract read(): Record<string, string>;
  protected abstract write(all: Record<string, string>): void;

  /** Keeps `stored` (the value as the file holds it) under `name`. */
  protected put(name: string, stored: string): void {
    this.write({ ...this.read(), [name]: stored });
  }

  delete(name: string): void {
    const all = this.read();
    if (!(name in all)) return;
    delete all[name];
    this.write(all);
  }
}

/** Secrets in a JSON file readable only by its owner (mode 0600), written atomically. */
export class FileSecretStore extends SecretFile implements SecretStore {
  readonly kind = 'file' as const;
  readonly warning = null;

  constructor(private readonly file: string) {
    super();
  }

  get(name: string): string | null {
    return this.read()[name] ?? null;
  }

  set(name: string, value: string): void {
    this.put(name, value);
  }

  protected read(): Record<string, string> {
    try {
      const parsed: unknown = JSON.parse(readFileSync(this.file, 'utf8'));
      return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, string>) : {};
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw new Error(`cannot read the secrets file ${this.file}: ${(error as Error).message}`);
    }
  }

  protected write(all: Record<string, string>): void {
    writeFileAtomic(this.file, JSON.stringify(all, null, 2) + '\n');
  }
}
