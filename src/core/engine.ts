// The Engine: everything the client side does, in plain Node, implementing the Bridge once. The CLI
// (`wharf app`) and the Electron main process are two thin hosts of it. It resolves which platform to
// talk to (the embedded local one, or a remote one with its key from the SecretStore), calls it through
// PlatformClient, keeps what it saw in the Mirror, and answers from the Mirror while the platform is
// unreachable. While anyone listens to its events it polls the project list (cheaply, with ETags; every
// second while a project builds) and reports changes, online/offline transitions and the end of each
// deploy it sees. Followed logs come from one platform stream per project (api-client/log-follower.ts).
// It owns the tunnels it starts (TunnelClient): their states go out as `tunnels` events, every exchange
// they capture is stored in the Mirror's traffic history and goes out, batched, as `traffic` events;
// replays go straight to the tunnel's local port, never through the platform.
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Account, type CapturedRequestDetail, type Project } from '../shared/api/index.js';
import {
  BRIDGE_EVENTS,
  BridgeError,
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
  type ReplayInput,
  type SettingsView,
} from '../shared/bridge.js';
import { type CheckedInput, isBridgeOperation, parseBridgeInput } from '../shared/bridge-inputs.js';
import { LogFollowers } from './api-client/log-follower.js';
import { PlatformClient } from './api-client/platform-client.js';
import { toDetail } from './capture/capture.js';
import { toCurl } from './capture/curl.js';
import { toHar } from './capture/har.js';
import { Mirror, type MirrorScope } from './mirror/mirror.js';
import { Tunnels } from './tunnel/tunnels.js';
import { AgentRuns } from './agent-runs.js';
import { checkReplayInput, replayExchange } from './replay.js';
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
  /**
   * A platform for this session only, instead of the saved setting (`wharf http --platform --api-key`):
   * `local`, or a remote origin with its key. Settings cannot be changed while one is given.
   */
  platformOverride?: { mode: 'local' } | { mode: 'remote'; origin: string; apiKey: string };
  /** The most the traffic history may hold, in bytes (default 256 MiB); the oldest exchanges go first. */
  trafficHistoryBytes?: number;
  /** How long captured exchanges gather before they are stored and sent as a `traffic` event. */
  trafficFlushMs?: number;
  /** The first reconnect delay of tunnels (doubling up to 15 s). */
  tunnelBackoffMs?: number;
  /** How often a tunnel's local port is checked again while nothing listens on it (default 3 s). */
  tunnelPortCheckMs?: number;
  /** Wharf's version, for the HAR creator. */
  version?: string;
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
  apiKey: string | null;
}

/** Events that need the platform polled while someone listens; tunnel, traffic and agent events do not. */
const POLLED_EVENTS: readonly BridgeEventName[] = BRIDGE_EVENTS.filter(
  (event) => event !== 'tunnels' && event !== 'traffic' && event !== 'ai-agent',
);

type Handlers = { [K in BridgeOperation]: (input: CheckedInput<K>) => Promise<BridgeOutput<K>> };

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
  private readonly tunnels: Tunnels;
  private readonly agentRuns = new AgentRuns({
    open: (body, signal) => this.onPlatform((client) => client.agentStream(body, signal)),
    emit: (event) => this.emit('ai-agent', event),
  });

  constructor(private readonly options: EngineOptions) {
    this.mirror = new Mirror(options.mirrorFile ?? join(options.home, 'mirror.db'), {
      captures: {
        ...(options.trafficHistoryBytes === undefined ? {} : { limitBytes: options.trafficHistoryBytes }),
        ...(options.trafficFlushMs === undefined ? {} : { flushMs: options.trafficFlushMs }),
      },
    });
    this.mirror.captures.on('stored', (requests) => this.emit('traffic', { requests }));
    // A batch that could not be written is lost for the history; the tunnel itself carries on.
    this.mirror.captures.on('failed', () => undefined);
    const override = options.platformOverride;
    this.settings = override
      ? { platform: override.mode === 'local' ? 'local' : override.origin }
      : readSettings(options.home);
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
    this.tunnels = new Tunnels({
      platform: async () => {
        const connection = await this.connect();
        if (!connection.apiKey) throw notConfigured(connection.origin);
        return { origin: connection.origin, apiKey: connection.apiKey };
      },
      store: (exchange, origin) => this.mirror.captures.add(exchange, origin),
      changed: () => this.emit('tunnels', this.tunnels.views()),
      closing: () => this.closed,
      ...(options.tunnelBackoffMs === undefined ? {} : { backoffMs: options.tunnelBackoffMs }),
      ...(options.tunnelPortCheckMs === undefined ? {} : { portCheckMs: options.tunnelPortCheckMs }),
    });
  }

  async invoke<K extends BridgeOperation>(operation: K, input: BridgeInput<K>): Promise<BridgeOutput<K>> {
    if (!isBridgeOperation(operation)) {
      throw new BridgeError('unknown_operation', 404, `unknown operation ${String(operation)}`);
    }
    if (this.closed) throw new BridgeError('unavailable', 503, 'the Engine is shutting down');
    const handler = this.handlers[operation] as (input: CheckedInput<K>) => Promise<BridgeOutput<K>>;
    return handler(parseBridgeInput(operation, input));
  }

  on<E extends BridgeEventName>(event: E, listener: (payload: BridgeEvents[E]) => void): () => void {
    this.events.on(event, listener);
    if (POLLED_EVENTS.includes(event)) this.schedulePoll();
    return () => {
      this.events.off(event, listener);
      if (this.listenerCount() === 0) this.stopPolling();
      // Nobody can receive followed lines any more (every window or page left without unfollowing).
      if (event === 'project-logs' && this.events.listenerCount('project-logs') === 0)
        this.follows.closeAll();
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.follows.closeAll();
    this.agentRuns.stopAll();
    this.stopPolling();
    await this.tunnels.stopAll();
    await this.polling?.catch(() => undefined);
    // Stores what the tunnels captured last (and sends it) before the listeners go.
    this.mirror.captures.flush();
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
    'platform.info': async () => this.onPlatform((client) => client.platformInfo()),
    'account.get': async () => this.onPlatform((client) => client.account()),
    'projects.list': async () => this.listProjects(),
    'projects.get': async ({ id }) => {
      try {
        const detail = await this.onPlatform((client) => client.getProject(id));
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
    'projects.setEnvVars': async ({ id, env_vars: envVars }) =>
      this.write((client) => client.setEnvVars(id, envVars)),
    'projects.setBuildConfig': async ({ id, build_config: buildConfig }) =>
      this.write((client) => client.setBuildConfig(id, buildConfig)),
    'projects.upload': async ({ id, data }) => this.onPlatform((client) => client.uploadArchive(id, data)),
    'projects.delete': async ({ id }) => {
      const deleted = await this.onPlatform((client) => client.deleteProject(id));
      const scope = await this.scope();
      if (scope) this.mirror.removeProject(scope, id);
      await this.refreshProjects();
      this.seen.delete(id);
      return deleted;
    },
    'projects.deploy': async ({ id }) => this.write((client) => client.deploy(id)),
    'projects.stop': async ({ id }) => this.write((client) => client.stop(id)),
    'projects.releases': async ({ id }) => this.onPlatform((client) => client.releases(id)),
    'projects.rollback': async ({ id, release_id: releaseId }) =>
      this.write((client) => client.rollback(id, releaseId)),
    'projects.logs': async ({ id, since, limit }) => {
      return this.onPlatform((client) =>
        client.logs(id, {
          ...(since === undefined ? {} : { since }),
          ...(limit === undefined ? {} : { limit }),
        }),
      );
    },
    'logs.follow': async ({ id }) => this.follows.follow(id),
    'logs.unfollow': async ({ id }) => this.follows.unfollow(id),
    'tunnels.list': async () => this.tunnels.views(),
    'tunnels.start': async (input) => this.tunnels.start(input),
    'tunnels.stop': async ({ id }) => {
      const tunnel = this.tunnels.find(id);
      if (!tunnel) throw new BridgeError('not_found', 404, `no tunnel ${id} runs in this app`);
      return this.tunnels.stop(tunnel);
    },
    'traffic.list': async (query) =>
      this.mirror.captures.list(
        query,
        query.tunnelId === undefined ? undefined : this.tunnels.names(query.tunnelId),
      ),
    'traffic.get': async ({ id }) => this.captured(id),
    'traffic.tunnels': async () => this.mirror.captures.tunnels(),
    'traffic.replay': async (input) => this.replay(input),
    'traffic.clear': async ({ tunnelId }) => {
      return {
        deleted: this.mirror.captures.clear(
          tunnelId === undefined ? undefined : this.tunnels.names(tunnelId),
        ),
      };
    },
    'traffic.har': async ({ ids }) => {
      const requests = ids.map((id) => this.captured(id));
      return JSON.stringify(toHar(requests, { version: this.options.version ?? 'dev' }), null, 2);
    },
    'traffic.curl': async ({ id }) => toCurl(this.captured(id)),
    'account.usage': async () => this.onPlatform((client) => client.usage()),
    'domains.list': async () => this.onPlatform((client) => client.listDomains()),
    'domains.create': async ({ domain, project_id: projectId }) =>
      this.onPlatform((client) =>
        client.createDomain({ domain, ...(projectId === undefined ? {} : { project_id: projectId }) }),
      ),
    'domains.link': async ({ id, project_id: projectId, hsts }) =>
      this.onPlatform((client) =>
        client.linkDomain(id, {
          ...(projectId === undefined ? {} : { project_id: projectId }),
          ...(hsts === undefined ? {} : { hsts }),
        }),
      ),
    'domains.verify': async ({ id }) => this.onPlatform((client) => client.verifyDomain(id)),
    'domains.delete': async ({ id }) => this.onPlatform((client) => client.deleteDomain(id)),
    'email.verify': async ({ email, smtp_probe: probe }) =>
      this.onPlatform((client) => client.verifyEmail({ email, ...smtpProbeOf(probe) })),
    'email.verifyBatch': async ({ emails, smtp_probe: probe }) =>
      this.onPlatform((client) => client.verifyEmailBatch({ emails, ...smtpProbeOf(probe) })),
    'account.setAiKey': async (input) => this.onPlatform((client) => client.setAiKey(input)),
    'account.deleteAiKey': async () => this.onPlatform((client) => client.deleteAiKey()),
    'keys.list': async () => this.onPlatform((client) => client.listKeys()),
    'keys.create': async (input) => this.onPlatform((client) => client.createKey(input)),
    'keys.revoke': async ({ id }) => {
      return this.onPlatform(async (client) => {
        // The platform lets a key revoke itself; this app would then be locked out of its platform.
        const own = (await client.listKeys()).find((key) => key.id === id && key.current);
        if (own) {
          throw new BridgeError(
            'conflict',
            409,
            `"${own.name}" is the key this app signs in with: revoking it would lock the app out. Save another key with the full scope in Settings first, or revoke it from the CLI`,
          );
        }
        return client.revokeKey(id);
      });
    },
    'ai.build': async (input) => {
      const answer = await this.onPlatform((client) => client.aiBuild(input));
      await this.rememberProject(answer.project);
      return answer;
    },
    'ai.deploy': async ({ project_id: projectId, env, database }) => {
      const answer = await this.onPlatform((client) =>
        client.aiDeploy({
          project_id: projectId,
          env: env ?? {},
          ...(database === undefined ? {} : { database }),
        }),
      );
      await this.rememberProject(answer.project);
      return answer;
    },
    'ai.edit': async (input) => {
      const answer = await this.onPlatform((client) => client.aiEdit(input));
      await this.rememberProject(answer.project);
      return answer;
    },
    'ai.agent.start': async (input) => this.agentRuns.start(input),
    'ai.agent.stop': async ({ runId }) => this.agentRuns.stop(runId),
  };

  // --- AI -------------------------------------------------------------------------------------

  /** A project the platform just answered with: stored in the Mirror, the list refreshed, its deploy watched. */
  private async rememberProject(project: Project): Promise<void> {
    const scope = await this.scope();
    if (scope) this.mirror.upsertProject(scope, project);
    await this.refreshProjects();
    this.observe([project], false);
  }

  // --- settings -------------------------------------------------------------------------------

  private async settingsView(): Promise<SettingsView> {
    const connection = await this.connect().catch(() => null);
    const local = this.settings.platform === 'local';
    const given = this.options.platformOverride?.mode === 'remote';
    return {
      mode: local ? 'local' : 'remote',
      platformUrl: connection?.origin ?? (local ? DEFAULT_LOCAL_PLATFORM_URL : this.settings.platform),
      hasApiKey: connection?.hasKey ?? false,
      keyStorage: local ? 'file' : given ? 'none' : this.options.secrets.kind,
      keyStorageWarning: local
        ? null
        : given
          ? 'the API key was given on the command line'
          : this.options.secrets.warning,
    };
  }

  private async updateSettings(update: BridgeInput<'settings.update'>): Promise<SettingsView> {
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
        apiKey: local.apiKey,
      };
    } else {
      const origin = this.settings.platform;
      const override = this.options.platformOverride;
      const key =
        override?.mode === 'remote' ? override.apiKey : this.options.secrets.get(apiKeySecretName(origin));
      this.connection = {
        mode: 'remote',
        origin,
        client: new PlatformClient({ baseUrl: origin, apiKey: key }),
        hasKey: key !== null,
        apiKey: key,
      };
    }
    if (this.status.platformUrl !== this.connection.origin)
      this.setStatus({ ...this.status, platformUrl: this.connection.origin });
    return this.connection;
  }

  /** Calls the platform, keeping the online status in step with what happened. */
  private async onPlatform<T>(call: (client: PlatformClient) => Promise<T>): Promise<T> {
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
      const account: Account = await this.onPlatform((client) => client.account());
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
      if (!isOffline(error)) throw error;
      // A platform never reached has nothing cached: an empty copy from no time, not another's.
      const scope = this.cachedScope();
      const cached = scope ? this.mirror.projects(scope) : { projects: [], fetchedAt: null };
      return { projects: cached.projects, source: 'cache', fetchedAt: cached.fetchedAt };
    }
  }

  /** Fetches the list (conditionally when `conditional`), stores it, and says whether it changed. */
  private async fetchProjects(conditional: boolean): Promise<ProjectList & { changed: boolean }> {
    const scope = await this.scope();
    if (!scope) throw notConfigured(this.status.platformUrl);
    const result = await this.onPlatform((client) => client.listProjects(conditional ? this.listEtag : null));
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
    const project = await this.onPlatform(call);
    await this.rememberProject(project);
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

  // --- traffic --------------------------------------------------------------------------------

  private captured(id: string): CapturedRequestDetail {
    const stored = this.mirror.captures.get(id);
    if (!stored) throw new BridgeError('not_found', 404, `request ${id} is not in the traffic history`);
    return stored.detail;
  }

  /** Replays a request of the history at its tunnel's local port (see replay.ts) and stores the answer. */
  private async replay(input: ReplayInput): Promise<CapturedRequestDetail> {
    const { id } = input;
    const stored = this.mirror.captures.get(id);
    if (!stored) throw new BridgeError('not_found', 404, `request ${id} is not in the traffic history`);
    const original = stored.detail;
    const running =
      (stored.tunnelKey ? this.tunnels.get(stored.tunnelKey) : undefined) ??
      this.tunnels.find(original.tunnel_id) ??
      undefined;
    const port = running?.view.localPort ?? stored.localPort;
    if (!port) {
      throw new BridgeError(
        'bad_request',
        400,
        `request ${id} did not come through a tunnel of this machine: its local port is unknown`,
      );
    }
    const hostMode = running?.view.hostHeader ?? stored.hostHeader ?? 'preserve';
    const captured = await replayExchange(original, checkReplayInput(input), {
      port,
      hostMode,
      tunnelId: running?.client.info?.id ?? original.tunnel_id,
    });
    if (captured.request.error?.startsWith('nothing is listening')) void running?.port.check();
    this.mirror.captures.add(captured, {
      tunnelKey: running?.key ?? stored.tunnelKey,
      subdomain: running?.view.subdomain ?? stored.subdomain,
      localPort: port,
      hostHeader: hostMode,
    });
    // Stored (and sent to listeners) now, so the answer can be looked up at once.
    this.mirror.captures.flush();
    return toDetail(captured);
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

  /** Listeners of the events that need polling. */
  private listenerCount(): number {
    return POLLED_EVENTS.reduce((sum, event) => sum + this.events.listenerCount(event), 0);
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

/** `smtp_probe` as the platform takes it: left out unless the UI gave one. */
function smtpProbeOf(probe: boolean | undefined): { smtp_probe?: boolean } {
  return probe === undefined ? {} : { smtp_probe: probe };
}

function isOffline(error: unknown): boolean {
  return error instanceof BridgeError && error.code === 'offline';
}

export type { BridgeRequests };
