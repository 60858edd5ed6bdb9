// The Engine's platform: which one it talks to (settings.json, or the one given for this session), the
// PlatformClient for it with its API key, and whether it answers. Every call to the platform goes
// through `call`, which keeps the online status (`platform-status` events) in step with what happened;
// the Mirror scope (platform and account) under which what it answered is kept is learned here too.
import { PlatformClient } from './api-client/platform-client.js';
import type { MirrorScope, Mirror } from './mirror/mirror.js';
import { resolvePlatformTarget } from './platform-target.js';
import type { SecretStore } from './secret-store.js';
import {
  DEFAULT_LOCAL_PLATFORM_URL,
  apiKeySecretName,
  normalizePlatformUrl,
  readSettings,
  writeSettings,
  type StoredSettings,
} from './settings.js';
import type { Account } from '../shared/api/index.js';
import {
  BridgeError,
  toBridgeError,
  type ConnectionTest,
  type PlatformStatus,
  type SettingsView,
} from '../shared/bridge.js';
import type { CheckedInput } from '../shared/bridge-inputs.js';

export interface LocalPlatformInfo {
  /** The embedded platform's origin, e.g. `http://127.0.0.1:8787`. */
  url: string;
  apiKey: string;
}

export interface PlatformConnectionOptions {
  home: string;
  secrets: SecretStore;
  /** Provides the embedded platform for `local` mode (see EngineOptions.localPlatform). */
  localPlatform?: () => Promise<LocalPlatformInfo>;
  /** A platform for this session only (see EngineOptions.platformOverride). */
  platformOverride?: { mode: 'local' } | { mode: 'remote'; origin: string; apiKey: string };
  /** Where the account last seen on each platform is remembered. */
  mirror: Pick<Mirror, 'rememberAccount' | 'lastAccount'>;
  /** The status changed in what it says (online, problem, address, mode). */
  statusChanged(status: PlatformStatus): void;
}

interface Connection {
  mode: 'local' | 'remote';
  origin: string;
  client: PlatformClient;
  hasKey: boolean;
  apiKey: string | null;
}

/** An API key shape the platform issues: `wk_` and 32 letters and digits. */
const API_KEY = /^wk_[A-Za-z0-9]{32}$/;

export const notConfigured = (origin: string) =>
  new BridgeError('not_configured', 401, `no API key is saved for ${origin}: add one in Settings`);

export function isOffline(error: unknown): boolean {
  return error instanceof BridgeError && error.code === 'offline';
}

/** A platform URL's origin, or a 422 on `platform` saying what it must be. */
function originOf(url: string, message: string): string {
  const origin = normalizePlatformUrl(url);
  if (origin) return origin;
  throw new BridgeError('validation_failed', 422, 'the platform URL must be an http:// or https:// address', [
    { path: 'platform', message },
  ]);
}

export class PlatformConnection {
  private settings: StoredSettings;
  private connection: Connection | null = null;
  private localInfo: Promise<LocalPlatformInfo> | null = null;
  private accountId: string | null = null;
  private current: PlatformStatus;

  constructor(private readonly options: PlatformConnectionOptions) {
    const override = options.platformOverride;
    this.settings = override
      ? { platform: override.mode === 'local' ? 'local' : override.origin }
      : readSettings(options.home);
    this.current = this.freshStatus();
  }

  get status(): PlatformStatus {
    return this.current;
  }

  /** The platform's client, when an API key for it is known (else a 401 `not_configured`). */
  async client(): Promise<PlatformClient> {
    const connection = await this.connect();
    if (!connection.hasKey) throw notConfigured(connection.origin);
    return connection.client;
  }

  /** The platform's origin and API key, for what connects on its own (tunnels). */
  async credentials(): Promise<{ origin: string; apiKey: string }> {
    const connection = await this.connect();
    if (!connection.apiKey) throw notConfigured(connection.origin);
    return { origin: connection.origin, apiKey: connection.apiKey };
  }

  /** Calls the platform, keeping the online status in step with what happened. */
  async call<T>(call: (client: PlatformClient) => Promise<T>): Promise<T> {
    let connection: Connection;
    try {
      connection = await this.connect();
    } catch (error) {
      const bridgeError = toBridgeError(error);
      this.setStatus({ ...this.current, online: false, problem: bridgeError.detail });
      throw bridgeError;
    }
    if (!connection.hasKey) {
      const error = notConfigured(connection.origin);
      this.setStatus({ ...this.current, online: false, problem: error.detail });
      throw error;
    }
    try {
      const result = await call(connection.client);
      this.answered(null);
      return result;
    } catch (error) {
      const bridgeError = toBridgeError(error);
      if (bridgeError.code === 'offline')
        this.setStatus({ ...this.current, online: false, problem: bridgeError.detail });
      else if (bridgeError.code === 'unauthorized')
        this.answered(`the platform refused the API key: ${bridgeError.detail}`);
      else this.answered(null);
      throw bridgeError;
    }
  }

  /** The Mirror scope of the current platform and account, learning the account once if needed. */
  async scope(): Promise<MirrorScope | null> {
    const connection = await this.connect();
    if (this.accountId === null) {
      const account: Account = await this.call((client) => client.account());
      this.accountId = account.id;
      this.options.mirror.rememberAccount(connection.origin, account.id);
    }
    return { platform: connection.origin, accountId: this.accountId };
  }

  /** The scope to read cached data from while offline: the account last seen on this platform. */
  cachedScope(): MirrorScope | null {
    const origin = this.connection?.origin ?? this.configuredOrigin();
    const accountId = this.accountId ?? this.options.mirror.lastAccount(origin);
    return accountId ? { platform: origin, accountId } : null;
  }

  async view(): Promise<SettingsView> {
    const connection = await this.connect().catch(() => null);
    const local = this.settings.platform === 'local';
    const given = this.options.platformOverride?.mode === 'remote';
    return {
      mode: local ? 'local' : 'remote',
      platformUrl: connection?.origin ?? this.configuredOrigin(),
      hasApiKey: connection?.hasKey ?? false,
      keyStorage: local ? 'file' : given ? 'none' : this.options.secrets.kind,
      keyStorageWarning: local
        ? null
        : given
          ? 'the API key was given on the command line'
          : this.options.secrets.warning,
    };
  }

  /**
   * Saves another platform or key: the connection, the account and the status start afresh (the
   * caller forgets what it kept of the old platform).
   */
  update(update: CheckedInput<'settings.update'>): void {
    if (this.options.platformOverride) {
      throw new BridgeError(
        'bad_request',
        400,
        'this session uses the platform given on the command line: change settings in `wharf app` or the desktop app',
      );
    }
    let platform = this.settings.platform;
    if (update.platform !== undefined) {
      if (update.platform === 'local') platform = 'local';
      else {
        platform = originOf(
          update.platform,
          'must be an http:// or https:// URL, such as https://wharf.example.com',
        );
      }
    }
    if (update.apiKey !== undefined && platform !== 'local') {
      const name = apiKeySecretName(platform);
      if (update.apiKey === null || update.apiKey.trim() === '') this.options.secrets.delete(name);
      else {
        const key = update.apiKey.trim();
        if (!API_KEY.test(key)) {
          throw new BridgeError(
            'validation_failed',
            422,
            'an API key looks like wk_ followed by 32 letters and digits',
            [{ path: 'apiKey', message: 'must look like wk_ followed by 32 letters and digits' }],
          );
        }
        this.options.secrets.set(name, key);
      }
    }
    this.settings = { platform };
    writeSettings(this.options.home, this.settings);
    this.connection = null;
    this.accountId = null;
    this.setStatus(this.freshStatus());
  }

  /** Asks a platform (the saved one, or another about to be saved) for its account, and how fast. */
  async test(input: CheckedInput<'settings.testConnection'>): Promise<ConnectionTest> {
    let client: PlatformClient;
    try {
      if (input.platform === 'local') {
        const local = await this.local();
        client = new PlatformClient({ baseUrl: local.url, apiKey: local.apiKey });
      } else {
        const origin = originOf(input.platform, 'must be an http:// or https:// URL');
        const key = input.apiKey?.trim() || this.options.secrets.get(apiKeySecretName(origin));
        if (!key) throw notConfigured(origin);
        client = new PlatformClient({ baseUrl: origin, apiKey: key });
      }
      const started = performance.now();
      const account = await client.account();
      return { ok: true, latencyMs: Math.round(performance.now() - started), account, error: null };
    } catch (error) {
      return { ok: false, latencyMs: null, account: null, error: toBridgeError(error).toJSON() };
    }
  }

  /** The platform's address as configured (before connecting: the local one's default address). */
  private configuredOrigin(): string {
    return this.settings.platform === 'local' ? DEFAULT_LOCAL_PLATFORM_URL : this.settings.platform;
  }

  private freshStatus(): PlatformStatus {
    return {
      mode: this.settings.platform === 'local' ? 'local' : 'remote',
      platformUrl: this.configuredOrigin(),
      online: false,
      lastContactAt: null,
      problem: null,
    };
  }

  /** The embedded platform: the app's, or a `wharf platform` of this home found the way the CLI finds it. */
  private local(): Promise<LocalPlatformInfo> {
    this.localInfo ??= (
      this.options.localPlatform
        ? this.options.localPlatform()
        : Promise.resolve().then(() => {
            const target = resolvePlatformTarget({
              home: this.options.home,
              secrets: this.options.secrets,
              platform: 'local',
            });
            if (target.apiKey === null) {
              throw new BridgeError(
                'offline',
                0,
                `the local platform is not set up: run \`wharf platform\` (no ${target.keySource} yet)`,
              );
            }
            return { url: target.origin, apiKey: target.apiKey };
          })
    ).catch((error: unknown) => {
      this.localInfo = null;
      throw toBridgeError(error);
    });
    return this.localInfo;
  }

  private async connect(): Promise<Connection> {
    if (this.connection) return this.connection;
    if (this.settings.platform === 'local') {
      const local = await this.local();
      this.connection = {
        mode: 'local',
        origin: local.url,
        client: new PlatformClient({ baseUrl: local.url, apiKey: local.apiKey }),
        hasKey: true,
        apiKey: local.apiKey,
      };
    } else {
      const origin = this.settings.platform;
      const override = this.options.platformOverride;
      const key =
        override?.mode === 'remote'
          ? override.apiKey
          : resolvePlatformTarget({
              home: this.options.home,
              secrets: this.options.secrets,
              platform: origin,
            }).apiKey;
      this.connection = {
        mode: 'remote',
        origin,
        client: new PlatformClient({ baseUrl: origin, apiKey: key }),
        hasKey: key !== null,
        apiKey: key,
      };
    }
    if (this.current.platformUrl !== this.connection.origin)
      this.setStatus({ ...this.current, platformUrl: this.connection.origin });
    return this.connection;
  }

  /** The platform answered (a refusal is an answer too): online, with the problem it gave, if any. */
  private answered(problem: string | null): void {
    this.setStatus({ ...this.current, online: true, lastContactAt: new Date().toISOString(), problem });
  }

  private setStatus(next: PlatformStatus): void {
    const before = this.current;
    this.current = next;
    if (
      before.online !== next.online ||
      before.problem !== next.problem ||
      before.platformUrl !== next.platformUrl ||
      before.mode !== next.mode
    ) {
      this.options.statusChanged(next);
    }
  }
}
