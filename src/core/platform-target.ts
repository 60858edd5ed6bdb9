// Which platform a client host talks to, and with which API key, by the rules the Engine follows:
// settings.json's `platform` is either `local` (the platform on this machine, whose key it wrote itself
// to <home>/platform/local-account.json) or a remote origin, whose key is in the SecretStore under
// apiKeySecretName(origin). The `wharf` commands resolve their platform here without starting one.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNNING_FILE, type RunningPlatform, parseRunningPlatform } from '../shared/platform-files.js';
import type { SecretStore } from './secret-store.js';
import { DEFAULT_LOCAL_PLATFORM_URL, apiKeySecretName, readSettings } from './settings.js';

export interface PlatformTarget {
  mode: 'local' | 'remote';
  /** The platform's origin, e.g. `http://127.0.0.1:8787`. */
  origin: string;
  /** Null when none is saved (remote) or the local platform has not written its account yet. */
  apiKey: string | null;
  /** Where the key comes from, for messages: the local account file, or the secret store. */
  keySource: string;
}

/** The local platform's origin: the default one, or the same host on another port (WHARF_PORT). */
export function localPlatformOrigin(port?: number): string {
  return port === undefined ? DEFAULT_LOCAL_PLATFORM_URL : `http://127.0.0.1:${port}`;
}

/**
 * The platform serving `<home>/platform` as it said where it listens, while its process lives (the
 * app's embedded one may have taken other ports than the defaults); null when none runs.
 */
export function runningLocalPlatform(home: string): RunningPlatform | null {
  let running: RunningPlatform | null;
  try {
    running = parseRunningPlatform(readFileSync(join(home, 'platform', RUNNING_FILE), 'utf8'));
  } catch {
    return null;
  }
  if (running === null) return null;
  try {
    process.kill(running.pid, 0);
  } catch (error) {
    // EPERM: it lives, as another user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return null;
  }
  return running;
}

export function localAccountFile(home: string): string {
  return join(home, 'platform', 'local-account.json');
}

/** The local account's key as the local platform wrote it, or null when there is none (yet). */
export function readLocalApiKey(home: string): string | null {
  try {
    const parsed = JSON.parse(readFileSync(localAccountFile(home), 'utf8')) as { api_key?: unknown };
    return typeof parsed.api_key === 'string' && parsed.api_key !== '' ? parsed.api_key : null;
  } catch {
    return null;
  }
}

export interface PlatformTargetOptions {
  home: string;
  secrets: SecretStore;
  /** `local` or a normalized origin instead of the saved setting. */
  platform?: 'local' | string;
  /** The local platform's port when it is not the default one. */
  localPort?: number;
}

export function resolvePlatformTarget(options: PlatformTargetOptions): PlatformTarget {
  const platform = options.platform ?? readSettings(options.home).platform;
  if (platform === 'local') {
    return {
      mode: 'local',
      origin:
        options.localPort === undefined
          ? (runningLocalPlatform(options.home)?.origin ?? localPlatformOrigin())
          : localPlatformOrigin(options.localPort),
      apiKey: readLocalApiKey(options.home),
      keySource: localAccountFile(options.home),
    };
  }
  return {
    mode: 'remote',
    origin: platform,
    apiKey: options.secrets.get(apiKeySecretName(platform)),
    keySource: `the saved key for ${platform}`,
  };
}
