// The Engine's settings: which platform it talks to, kept in `<home>/settings.json`. The API key of a
// remote platform is not in this file but in the SecretStore, filed under the platform's origin, so
// switching platforms never sends one platform's key to another.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from './private-file.js';

export const DEFAULT_LOCAL_PLATFORM_URL = 'http://127.0.0.1:8787';

export interface StoredSettings {
  /** `local` (the embedded platform) or a remote platform's origin. */
  platform: 'local' | string;
}

export const DEFAULT_SETTINGS: StoredSettings = { platform: 'local' };

export function settingsFile(home: string): string {
  return join(home, 'settings.json');
}

export function readSettings(home: string): StoredSettings {
  try {
    const parsed = JSON.parse(readFileSync(settingsFile(home), 'utf8')) as Partial<StoredSettings>;
    const platform =
      typeof parsed.platform === 'string' && parsed.platform !== '' ? parsed.platform : 'local';
    return { platform: platform === 'local' ? 'local' : (normalizePlatformUrl(platform) ?? 'local') };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { ...DEFAULT_SETTINGS };
    if (error instanceof SyntaxError) return { ...DEFAULT_SETTINGS };
    throw error;
  }
}

export function writeSettings(home: string, settings: StoredSettings): void {
  writeFileAtomic(settingsFile(home), JSON.stringify(settings, null, 2) + '\n', 0o644);
}

/** A platform URL reduced to its origin (`http://host:port`), or null when it is not an http(s) URL. */
export function normalizePlatformUrl(value: string): string | null {
  try {
    const url = new URL(value.trim());
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    if (url.username || url.password) return null;
    return url.origin;
  } catch {
    return null;
  }
}

export function apiKeySecretName(platformOrigin: string): string {
  return `api-key:${platformOrigin}`;
}
