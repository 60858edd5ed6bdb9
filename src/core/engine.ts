// The Engine: everything the client side does, in plain Node, implementing the Bridge once. The CLI
// (`wharf app`) and the Electron main process are two thin hosts of it. It resolves which platform to
// talk to (the embedded local one, or a remote one with its key from the SecretStore), calls it through
// PlatformClient, keeps what it saw in the Mirror, and answers from the Mirror while the platform is
// unreachable. While anyone listens to its events it polls the project list (cheaply, with ETags; every
// second while a project builds) and reports changes, online/offline transitions and the end of each
// deploy it sees. Followed logs come from one platform stream per project (api-client/log-follower.ts).
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Account, Project } from '../shared/api/index.js';
import {
  BRIDGE_EVENTS,
  BridgeError,
  isBridgeOperation,
  toBridgeError,
  type Bridge,
  type BridgeEventName,
  type BridgeEvents,
  type BridgeInput,
  type BridgeOperation,
  type BridgeOutput,
  type BridgeRequests,
  type ConnectionTest,
  type DeployOutcome,
  type PlatformStatus,
  type ProjectList,
  type SettingsView,
} from '../shared/bridge.js';
import { LogFollowers } from './api-client/log-follower.js';
import { PlatformClient } from './api-client/platform-client.js';
import { Mirror, type MirrorScope } from './mirror/mirror.js';
import type { SecretStore } from './secret-store.js';
import {
  DEFAULT_LOCAL_PLATFORM_URL,
  apiKeySecretName,
  normalizePlatformUrl,
  readSettings,
  writeSettings,
  type StoredSettings,
} from './settings.js';

export interface LocalPlatformInfo {
  /** The embedded platform's origin, e.g. `http://127.0.0.1:8787`. */
  url: string;
  apiKey: string;
}

export interface EngineOptions {
  /** The Wharf home (`~/.wharf` or WHARF_HOME): settings.json, mirror.db, platform/. */
  home: string;
  secrets: SecretStore;
  /**
   * Provides the embedded platform for `local` mode, starting it if needed. Without one, `local`
   * means a `wharf platform` already running at the default address with its data in `<home>/platform`.
   */
  localPlatform?: () => Promise<LocalPlatformInfo>;
  /** Defaults to `<home>/mirror.db`; `:memory:` in tests. */
  mirrorFile?: string;
  /** How often to refresh while someone listens to events. */
  pollIntervalMs?: number;
  /** How often to refresh while a project is building (at most pollIntervalMs). */
  buildingPollIntervalMs?: number;
  /** How long followed log lines gather before a `project-logs` event. */
  logFlushMs?: number;
}

/** What tells whether a deploy ended between two looks at a project. */
export type DeployState = Pick<Project, 'status' | 'last_deploy_at' | 'last_deploy_error'>;

/**
 * Whether a project seen as `before`, then as `after`, finished a deploy, and how. `building` ending
 * in `running` or `failed` is the usual case; a whole deploy that happened between two looks shows as
 * a new `last_deploy_at`, or as `last_deploy_error` appearing. A redeploy that failed while the previous
 * version keeps serving stays `running` with `last_deploy_error` set: that is a failed deploy.
 */
export function deployOutcome(before: DeployState, after: DeployState): DeployOutcome | null {
  if (after.status !== 'running' && after.status !== 'failed') return null;
  const outcome: DeployOutcome =
    after.status === 'failed' || after.last_deploy_error !== null ? 'failed' : 'running';
  if (before.status === 'building') return outcome;
  if (after.last_deploy_at !== null && after.last_deploy_at !== before.last_deploy_at) return outcome;
  if (before.last_deploy_error === null && after.last_deploy_error !== null) return 'failed';
  return null;
}

interface Connection {
  mode: 'local' | 'remote';
  origin: string;
  client: PlatformClient;
  hasKey: boolean;
}

type Handlers = { [K in BridgeOperation]: (input: BridgeInput<K>) => Promise<BridgeOutput<K>> };

const notConfigured = (origin: string) =>
  new BridgeError('not_configured', 401, `no API key is saved for ${origin}: add one in Settings`);

export class Engine implements Bridge {
  private readonly events = new EventEmitter();
  private readonly mirror: Mirror;
  private settings: StoredSettings;
  private connection: Connection | null = null;
  private localInfo: Promise<LocalPlatformInfo> | null = null;
  private accountId: string | null = null;
  private listEtag: string | null = null;
  private status: PlatformStatus;
  private pollTimer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private closed = false;
  /** The deploy state of each project last seen on the current platform. */
  private seen = new Map<string, DeployState>();
  private readonly follows: LogFollowers;

  constructor(private readonly options: EngineOptions) {
    this.mirror = new Mirror(options.mirrorFile ?? join(options.home, 'mirror.db'));
    this.settings = readSettings(options.home);
    this.status = {
      mode: this.settings.platform === 'local' ? 'local' : 'remote',
      platformUrl: this.settings.platform === 'local' ? DEFAULT_LOCAL_PLATFORM_URL : this.settings.platform,
      online: false,
      lastContactAt: null,
      problem: null,
    };
    this.events.setMaxListeners(100);
    this.follows = new LogFollowers({
      client: async () => {
        const connection = await this.connect();
        if (!connection.hasKey) throw notConfigured(connection.origin);
        return connection.client;
      },
      emit: (batch) => this.emit('project-logs', batch),
      ...(options.logFlushMs === undefined ? {} : { flushMs: options.logFlushMs }),
    });
  }

  async invoke<K extends BridgeOperation>(operation: K, input: BridgeInput<K>): Promise<BridgeOutput<K>> {
    if (!isBridgeOperation(operation)) {
      throw new BridgeError('unknown_operation', 404, `unknown operation ${String(operation)}`);
    }
    if (this.closed) throw new BridgeError('unavailable', 503, 'the Engine is shutting down');
    const handler = this.handlers[operation] as (input: BridgeInput<K>) => Promise<BridgeOutput<K>>;
    return handler(input);
  }

  on<E extends BridgeEventName>(event: E, listener: (payload: BridgeEvents[E]) => void): () => void {
    this.events.on(event, listener);
    this.schedulePoll();
    return () => {
      this.events.off(event, listener);
      if (this.listenerCount() === 0) this.stopPolling();
      // Nobody can receive followed lines any more (every window or page left without unfollowing).
      if (event === 'project-logs' && this.events.listenerCount('project-logs') === 0)
        this.follows.closeAll();
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.follows.closeAll();
    this.stopPolling();
    await this.polling?.catch(() => undefined);
    this.events.removeAllListeners();
    this.mirror.close();
  }

  private readonly handlers: Handlers = {
    'settings.get': async () => this.settingsView(),
    'settings.update': async (input) => this.updateSettings(input),
    'settings.testConnection': async (input) => this.testConnection(input),
    'platform.status': async () => {
      if (this.status.lastContactAt === null && this.status.problem === null) await this.refreshProjects();
      return this.status;
    },
    'account.get': async () => this.live((client) => client.account()),
    'projects.list': async () => this.listProjects(),
    'projects.get': async (input) => {
      const id = requireId(input);
      try {
        const detail = await this.live((client) => client.getProject(id));
        const scope = await this.scope();
        if (scope) this.mirror.upsertProject(scope, detail.project);
        this.observe([detail.project], false);
        return { ...detail, source: 'live' as const, fetchedAt: new Date().toISOString() };
      } catch (error) {
        const scope = this.cachedScope();
        const cached = isOffline(error) && scope ? this.mirror.project(scope, id) : null;
        if (!cached || !scope) throw error;
        return {
          project: cached,
          logs: [],
          source: 'cache' as const,
          fetchedAt: this.mirror.fetchedAt(scope, 'projects'),
        };
      }
    },
    'projects.create': async (input) => this.write((client) => client.createProject(input)),
    'projects.setEnvVars': async (input) =>
      this.write((client) => client.setEnvVars(requireId(input), input.env_vars)),
    'projects.setBuildConfig': async (input) =>
      this.write((client) => client.setBuildConfig(requireId(input), input.build_config)),
    'projects.upload': async (input) => {
      const id = requireId(input);
      if (!(input.data instanceof Uint8Array) || input.data.length === 0) {
        throw new BridgeError('validation_failed', 422, 'choose a non-empty .tar.gz file', [
          { path: 'file', message: 'is empty' },
        ]);
      }
      const upload = await this.live((client) => client.uploadArchive(id, input.data));
      return upload;
    },
    'projects.delete': async (input) => {
      const id = requireId(input);
      const deleted = await this.live((client) => client.deleteProject(id));
      const scope = await this.scope();
      if (scope) this.mirror.removeProject(scope, id);
      await this.refreshProjects();
      this.seen.delete(id);
      return deleted;
    },
    'projects.deploy': async (input) => {
      const id = requireId(input);
      return this.write((client) => client.deploy(id));
    },
    'projects.stop': async (input) => {
      const id = requireId(input);
      return this.write((client) => client.stop(id));
    },
    'projects.logs': async (input) => {
      const id = requireId(input);
      const { since, limit } = input;
      return this.live((client) =>
        client.logs(id, {
          ...(since === undefined ? {} : { since }),
          ...(limit === undefined ? {} : { limit }),
        }),
      );
    },
    'logs.follow': async (input) => this.follows.follow(requireId(input)),
    'logs.unfollow': async (input) => this.follows.unfollow(requireId(input)),
  };

  // --- settings -------------------------------------------------------------------------------

  private async settingsView(): Promise<SettingsView> {
    const connection = await this.connect().catch(() => null);
    const local = this.settings.platform === 'local';
    return {
      mode: local ? 'local' : 'remote',
      platformUrl: connection?.origin ?? (local ? DEFAULT_LOCAL_PLATFORM_URL : this.settings.platform),
      hasApiKey: connection?.hasKey ?? false,
      keyStorage: local ? 'file' : this.options.secrets.kind,
      keyStorageWarning: local ? null : this.options.secrets.warning,
    };
  }

  private async updateSettings(update: BridgeInput<'settings.update'>): Promise<SettingsView> {
    let platform = this.settings.platform;
    if (update.platform !== undefined) {
      if (update.platform === 'local') platform = 'local';
      else {
        const origin = normalizePlatformUrl(update.platform);
        if (!origin) {
          throw new BridgeError(
            'validation_failed',
            422,
            'the platform URL must be an http:// or https:// address',
            [
              {
                path: 'platform',
                message: 'must be an http:// or https:// URL, such as https://wharf.example.com',
              },
            ],
          );
        }
        platform = origin;
      }
    }
    if (update.apiKey !== undefined && platform !== 'local') {
      const name = apiKeySecretName(platform);
      if (update.apiKey === null || update.apiKey.trim() === '') this.options.secrets.delete(name);
      else {
        const key = update.apiKey.trim();
        if (!/^wk_[A-Za-z0-9]{32}$/.test(key)) {
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
    this.listEtag = null;
    this.seen.clear();
    // Followed projects belong to the platform left behind.
    this.follows.closeAll();
    this.setStatus({
      mode: platform === 'local' ? 'local' : 'remote',
      platformUrl: platform === 'local' ? DEFAULT_LOCAL_PLATFORM_URL : platform,
      online: false,
      lastContactAt: null,
      problem: null,
    });
    await this.refreshProjects();
    return this.settingsView();
  }

  private async testConnection(input: BridgeInput<'settings.testConnection'>): Promise<ConnectionTest> {
    let client: PlatformClient;
    try {
      if (input.platform === 'local') {
        const local = await this.local();
        client = new PlatformClient({ baseUrl: local.url, apiKey: local.apiKey });
      } else {
        const origin = normalizePlatformUrl(input.platform);
        if (!origin) {
          throw new BridgeError(
            'validation_failed',
            422,
            'the platform URL must be an http:// or https:// address',
            [{ path: 'platform', message: 'must be an http:// or https:// URL' }],
          );
        }
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

  // --- connection -----------------------------------------------------------------------------

  private local(): Promise<LocalPlatformInfo> {
    this.localInfo ??= (
      this.options.localPlatform
        ? this.options.localPlatform()
        : Promise.resolve().then(() => {
            const file = join(this.options.home, 'platform', 'local-account.json');
            try {
              const parsed = JSON.parse(readFileSync(file, 'utf8')) as { api_key: string };
              return { url: DEFAULT_LOCAL_PLATFORM_URL, apiKey: parsed.api_key };
            } catch {
              throw new BridgeError(
                'offline',
                0,
                `the local platform is not set up: run \`wharf platform\` (no ${file} yet)`,
              );
            }
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
      };
    } else {
      const origin = this.settings.platform;
      const key = this.options.secrets.get(apiKeySecretName(origin));
      this.connection = {
        mode: 'remote',
        origin,
        client: new PlatformClient({ baseUrl: origin, apiKey: key }),
        hasKey: key !== null,
      };
    }
    if (this.status.platformUrl !== this.connection.origin)
      this.setStatus({ ...this.status, platformUrl: this.connection.origin });
    return this.connection;
  }

  /** Calls the platform, keeping the online status in step with what happened. */
  private async live<T>(call: (client: PlatformClient) => Promise<T>): Promise<T> {
    let connection: Connection;
    try {
      connection = await this.connect();
    } catch (error) {
      const bridgeError = toBridgeError(error);
      this.setStatus({ ...this.status, online: false, problem: bridgeError.detail });
      throw bridgeError;
    }
    if (!connection.hasKey) {
      const error = notConfigured(connection.origin);
      this.setStatus({ ...this.status, online: false, problem: error.detail });
      throw error;
    }
    try {
      const result = await call(connection.client);
      this.setStatus({
        ...this.status,
        online: true,
        lastContactAt: new Date().toISOString(),
        problem: null,
      });
      return result;
    } catch (error) {
      const bridgeError = toBridgeError(error);
      if (bridgeError.code === 'offline')
        this.setStatus({ ...this.status, online: false, problem: bridgeError.detail });
      else if (bridgeError.code === 'unauthorized') {
        this.setStatus({
          ...this.status,
          online: true,
          lastContactAt: new Date().toISOString(),
          problem: `the platform refused the API key: ${bridgeError.detail}`,
        });
      } else
        this.setStatus({
          ...this.status,
          online: true,
          lastContactAt: new Date().toISOString(),
          problem: null,
        });
      throw bridgeError;
    }
  }

  /** The Mirror scope of the current platform and account, learning the account once if needed. */
  private async scope(): Promise<MirrorScope | null> {
    const connection = await this.connect();
    if (this.accountId === null) {
      const account: Account = await this.live((client) => client.account());
      this.accountId = account.id;
      this.mirror.rememberAccount(connection.origin, account.id);
    }
    return { platform: connection.origin, accountId: this.accountId };
  }

  /** The scope to read cached data from while offline: the account last seen on this platform. */
  private cachedScope(): MirrorScope | null {
    const origin =
      this.connection?.origin ??
      (this.settings.platform === 'local' ? DEFAULT_LOCAL_PLATFORM_URL : this.settings.platform);
    const accountId = this.accountId ?? this.mirror.lastAccount(origin);
    return accountId ? { platform: origin, accountId } : null;
  }

  // --- projects -------------------------------------------------------------------------------

  private async listProjects(): Promise<ProjectList> {
    try {
      const { projects, source, fetchedAt, changed } = await this.fetchProjects(false);
      if (changed) this.observe(projects, true);
      return { projects, source, fetchedAt };
    } catch (error) {
      const scope = this.cachedScope();
      if (!isOffline(error) || !scope) throw error;
      const cached = this.mirror.projects(scope);
      return { projects: cached.projects, source: 'cache', fetchedAt: cached.fetchedAt };
    }
  }

  /** Fetches the list (conditionally when `conditional`), stores it, and says whether it changed. */
  private async fetchProjects(conditional: boolean): Promise<ProjectList & { changed: boolean }> {
    const scope = await this.scope();
    if (!scope) throw notConfigured(this.status.platformUrl);
    const result = await this.live((client) => client.listProjects(conditional ? this.listEtag : null));
    const fetchedAt = new Date().toISOString();
    if (result.notModified) {
      return { ...this.mirror.projects(scope), source: 'live', fetchedAt, changed: false };
    }
    const changed = result.etag === null || result.etag !== this.listEtag;
    this.listEtag = result.etag;
    this.mirror.replaceProjects(scope, result.projects, fetchedAt);
    return { projects: result.projects, source: 'live', fetchedAt, changed };
  }

  /** Refreshes the list and tells listeners when it changed; failures only change the status. */
  private async refreshProjects(): Promise<void> {
    try {
      const list = await this.fetchProjects(true);
      if (list.changed) {
        this.emit('projects', { projects: list.projects, source: 'live', fetchedAt: list.fetchedAt });
        this.observe(list.projects, true);
      }
    } catch (error) {
      if (!isOffline(error)) return;
      const scope = this.cachedScope();
      if (scope && this.events.listenerCount('projects') > 0 && this.listEtag !== 'offline') {
        // Tell the UI once that what it shows now comes from the cache.
        this.listEtag = 'offline';
        const cached = this.mirror.projects(scope);
        this.emit('projects', { projects: cached.projects, source: 'cache', fetchedAt: cached.fetchedAt });
      }
    }
  }

  private async write(call: (client: PlatformClient) => Promise<Project>): Promise<Project> {
    const project = await this.live(call);
    const scope = await this.scope();
    if (scope) this.mirror.upsertProject(scope, project);
    await this.refreshProjects();
    this.observe([project], false);
    return project;
  }

  /**
   * Remembers the projects' deploy state and reports each deploy that ended since the last look.
   * `complete` when `projects` is the whole list (projects missing from it are forgotten).
   */
  private observe(projects: Project[], complete: boolean): void {
    const finished: Array<{ project: Project; outcome: DeployOutcome }> = [];
    for (const project of projects) {
      const before = this.seen.get(project.id);
      this.seen.set(project.id, {
        status: project.status,
        last_deploy_at: project.last_deploy_at,
        last_deploy_error: project.last_deploy_error,
      });
      const outcome = before ? deployOutcome(before, project) : null;
      if (outcome) finished.push({ project, outcome });
    }
    if (complete) {
      const ids = new Set(projects.map((p) => p.id));
      for (const id of this.seen.keys()) if (!ids.has(id)) this.seen.delete(id);
    }
    for (const event of finished) this.emit('deploy-finished', event);
  }

  // --- events ---------------------------------------------------------------------------------

  private emit<E extends BridgeEventName>(event: E, payload: BridgeEvents[E]): void {
    this.events.emit(event, payload);
  }

  private setStatus(next: PlatformStatus): void {
    const before = this.status;
    this.status = next;
    if (
      before.online !== next.online ||
      before.problem !== next.problem ||
      before.platformUrl !== next.platformUrl ||
      before.mode !== next.mode
    ) {
      this.emit('platform-status', next);
    }
  }

  private listenerCount(): number {
    return BRIDGE_EVENTS.reduce((sum, event) => sum + this.events.listenerCount(event), 0);
  }

  private schedulePoll(): void {
    if (this.pollTimer || this.closed) return;
    const base = this.options.pollIntervalMs ?? 3000;
    const whileBuilding = Math.min(base, this.options.buildingPollIntervalMs ?? 1000);
    const tick = () => {
      const building = [...this.seen.values()].some((state) => state.status === 'building');
      const interval = building ? whileBuilding : base;
      this.pollTimer = setTimeout(() => {
        this.polling = this.refreshProjects().finally(() => {
          this.polling = null;
          if (this.pollTimer && !this.closed) tick();
        });
      }, interval);
      this.pollTimer.unref();
    };
    tick();
  }

  private stopPolling(): void {
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = null;
  }
}

function requireId(input: unknown): string {
  const id = (input as { id?: unknown } | null)?.id;
  if (typeof id !== 'string' || id === '')
    throw new BridgeError('bad_request', 400, 'a project id is required');
  return id;
}

function isOffline(error: unknown): boolean {
  return error instanceof BridgeError && error.code === 'offline';
}

export type { BridgeRequests };
