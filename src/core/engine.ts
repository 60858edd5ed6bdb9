// The Engine: everything the client side does, in plain Node, implementing the Bridge once; the CLI
// (`wharf app`) and the Electron main process are two thin hosts of it. A facade: each operation's
// input is checked (shared/bridge-inputs.ts) and handed to the part that does it, and the parts' news
// goes out as Bridge events. The parts: the platform and its settings (platform-connection.ts), the
// project list kept in the Mirror and the deploys that end (project-sync.ts, deploy-watch.ts), followed
// logs (api-client/log-follower.ts), the tunnels it runs and their captures (tunnel/tunnels.ts, the
// Mirror's traffic history), replays straight to a tunnel's local port (replay.ts) and agent runs
// (agent-runs.ts).
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import type { CapturedRequestDetail } from '../shared/api/index.js';
import {
  BRIDGE_EVENTS,
  BridgeError,
  type Bridge,
  type BridgeEventName,
  type BridgeEvents,
  type BridgeInput,
  type BridgeOperation,
  type BridgeOutput,
  type BridgeRequests,
  type ReplayInput,
} from '../shared/bridge.js';
import { type CheckedInput, isBridgeOperation, parseBridgeInput } from '../shared/bridge-inputs.js';
import { LogFollowers } from './api-client/log-follower.js';
import { toDetail } from './capture/capture.js';
import { toCurl } from './capture/curl.js';
import { toHar } from './capture/har.js';
import { TrafficHistory } from './mirror/history-thread.js';
import { Mirror } from './mirror/mirror.js';
import { wharfPackage } from './package-root.js';
import { AgentRuns } from './agent-runs.js';
import { type LocalPlatformInfo, PlatformConnection } from './platform-connection.js';
import { ProjectSync } from './project-sync.js';
import { checkReplayInput, replayExchange } from './replay.js';
import type { SecretStore } from './secret-store.js';
import { Tunnels } from './tunnel/tunnels.js';

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
  /**
   * The traffic history's built writer thread (history-writer.js): by default the command's, in the
   * package's dist/; the desktop app passes the one built beside its main process.
   */
  historyWriter?: string;
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

/** Events that need the platform polled while someone listens; tunnel, traffic and agent events do not. */
const POLLED_EVENTS: readonly BridgeEventName[] = BRIDGE_EVENTS.filter(
  (event) => event !== 'tunnels' && event !== 'traffic' && event !== 'ai-agent',
);

type Handlers = { [K in BridgeOperation]: (input: CheckedInput<K>) => Promise<BridgeOutput<K>> };

export class Engine implements Bridge {
  private readonly events = new EventEmitter();
  private readonly mirror: Mirror;
  /** The traffic history, written and read in a thread of its own (history-thread.ts). */
  private readonly history: TrafficHistory;
  private readonly platform: PlatformConnection;
  private readonly sync: ProjectSync;
  private closed = false;
  private readonly follows: LogFollowers;
  private readonly tunnels: Tunnels;
  private readonly agentRuns = new AgentRuns({
    open: (body, signal) => this.platform.call((client) => client.agentStream(body, signal)),
    emit: (event) => this.emit('ai-agent', event),
  });

  constructor(private readonly options: EngineOptions) {
    const mirrorFile = options.mirrorFile ?? join(options.home, 'mirror.db');
    // Opened (and migrated) here first: the writer thread then opens a file of the current version.
    this.mirror = new Mirror(mirrorFile);
    this.history = new TrafficHistory({
      file: mirrorFile,
      writerScript: options.historyWriter ?? join(wharfPackage().root, 'dist', 'history-writer.js'),
      captures: {
        ...(options.trafficHistoryBytes === undefined ? {} : { limitBytes: options.trafficHistoryBytes }),
        ...(options.trafficFlushMs === undefined ? {} : { flushMs: options.trafficFlushMs }),
      },
    });
    this.history.on('stored', (requests) => this.emit('traffic', { requests }));
    // A batch that could not be written is lost for the history; the tunnel itself carries on.
    this.history.on('failed', () => undefined);
    this.platform = new PlatformConnection({
      home: options.home,
      secrets: options.secrets,
      mirror: this.mirror,
      statusChanged: (status) => this.emit('platform-status', status),
      ...(options.localPlatform ? { localPlatform: options.localPlatform } : {}),
      ...(options.platformOverride ? { platformOverride: options.platformOverride } : {}),
    });
    this.sync = new ProjectSync({
      platform: this.platform,
      mirror: this.mirror,
      changed: (list) => this.emit('projects', list),
      finished: (event) => this.emit('deploy-finished', event),
      watched: () => this.events.listenerCount('projects') > 0,
      ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
      ...(options.buildingPollIntervalMs === undefined
        ? {}
        : { buildingPollIntervalMs: options.buildingPollIntervalMs }),
    });
    this.events.setMaxListeners(100);
    this.follows = new LogFollowers({
      client: () => this.platform.client(),
      emit: (batch) => this.emit('project-logs', batch),
      ...(options.logFlushMs === undefined ? {} : { flushMs: options.logFlushMs }),
    });
    this.tunnels = new Tunnels({
      platform: () => this.platform.credentials(),
      store: (exchange, origin) => this.history.add(exchange, origin),
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
    if (POLLED_EVENTS.includes(event)) this.sync.startPolling();
    return () => {
      this.events.off(event, listener);
      if (this.pollingListeners() === 0) this.sync.stopPolling();
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
    const polled = this.sync.close();
    await this.tunnels.stopAll();
    await polled;
    // Stores what the tunnels captured last (and sends it) before the listeners go.
    await this.history.flush().catch(() => undefined);
    this.events.removeAllListeners();
    await this.history.close();
    this.mirror.close();
  }

  private readonly handlers: Handlers = {
    'settings.get': async () => this.platform.view(),
    'settings.update': async (input) => {
      this.platform.update(input);
      // What was kept of the old platform goes: its list's ETag, its deploys, its followed logs.
      this.sync.reset();
      this.follows.closeAll();
      await this.sync.refresh();
      return this.platform.view();
    },
    'settings.testConnection': async (input) => this.platform.test(input),
    'platform.status': async () => {
      const { status } = this.platform;
      if (status.lastContactAt === null && status.problem === null) await this.sync.refresh();
      return this.platform.status;
    },
    'platform.info': async () => this.platform.call((client) => client.platformInfo()),
    'account.get': async () => this.platform.call((client) => client.account()),
    'projects.list': async () => this.sync.list(),
    'projects.get': async ({ id }) => this.sync.get(id),
    'projects.create': async (input) => this.sync.write((client) => client.createProject(input)),
    'projects.setEnvVars': async ({ id, env_vars: envVars }) =>
      this.sync.write((client) => client.setEnvVars(id, envVars)),
    'projects.setBuildConfig': async ({ id, build_config: buildConfig }) =>
      this.sync.write((client) => client.setBuildConfig(id, buildConfig)),
    'projects.upload': async ({ id, data }) => this.platform.call((client) => client.uploadArchive(id, data)),
    'projects.delete': async ({ id }) => {
      const deleted = await this.platform.call((client) => client.deleteProject(id));
      await this.sync.removed(id);
      return deleted;
    },
    'projects.deploy': async ({ id }) => this.sync.write((client) => client.deploy(id)),
    'projects.stop': async ({ id }) => this.sync.write((client) => client.stop(id)),
    'projects.releases': async ({ id }) => this.platform.call((client) => client.releases(id)),
    'projects.rollback': async ({ id, release_id: releaseId }) =>
      this.sync.write((client) => client.rollback(id, releaseId)),
    'projects.logs': async ({ id, since, limit }) => {
      return this.platform.call((client) =>
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
      this.history.list(query, query.tunnelId === undefined ? undefined : this.tunnels.names(query.tunnelId)),
    'traffic.get': async ({ id }) => this.captured(id),
    'traffic.tunnels': async () => this.history.tunnels(),
    'traffic.replay': async (input) => this.replay(input),
    'traffic.clear': async ({ tunnelId }) => {
      return {
        deleted: await this.history.clear(tunnelId === undefined ? undefined : this.tunnels.names(tunnelId)),
      };
    },
    'traffic.har': async ({ ids }) => {
      const requests = await Promise.all(ids.map((id) => this.captured(id)));
      return JSON.stringify(toHar(requests, { version: this.options.version ?? 'dev' }), null, 2);
    },
    'traffic.curl': async ({ id }) => toCurl(await this.captured(id)),
    'account.usage': async () => this.platform.call((client) => client.usage()),
    'domains.list': async () => this.platform.call((client) => client.listDomains()),
    'domains.create': async ({ domain, project_id: projectId }) =>
      this.platform.call((client) =>
        client.createDomain({ domain, ...(projectId === undefined ? {} : { project_id: projectId }) }),
      ),
    'domains.link': async ({ id, project_id: projectId, hsts }) =>
      this.platform.call((client) =>
        client.linkDomain(id, {
          ...(projectId === undefined ? {} : { project_id: projectId }),
          ...(hsts === undefined ? {} : { hsts }),
        }),
      ),
    'domains.verify': async ({ id }) => this.platform.call((client) => client.verifyDomain(id)),
    'domains.delete': async ({ id }) => this.platform.call((client) => client.deleteDomain(id)),
    'email.verify': async ({ email, smtp_probe: probe }) =>
      this.platform.call((client) => client.verifyEmail({ email, ...smtpProbeOf(probe) })),
    'email.verifyBatch': async ({ emails, smtp_probe: probe }) =>
      this.platform.call((client) => client.verifyEmailBatch({ emails, ...smtpProbeOf(probe) })),
    'account.setAiKey': async (input) => this.platform.call((client) => client.setAiKey(input)),
    'account.deleteAiKey': async () => this.platform.call((client) => client.deleteAiKey()),
    'keys.list': async () => this.platform.call((client) => client.listKeys()),
    'keys.create': async (input) => this.platform.call((client) => client.createKey(input)),
    'keys.revoke': async ({ id }) => {
      return this.platform.call(async (client) => {
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
      const answer = await this.platform.call((client) => client.aiBuild(input));
      await this.sync.remember(answer.project);
      return answer;
    },
    'ai.deploy': async ({ project_id: projectId, env, database }) => {
      const answer = await this.platform.call((client) =>
        client.aiDeploy({
          project_id: projectId,
          env: env ?? {},
          ...(database === undefined ? {} : { database }),
        }),
      );
      await this.sync.remember(answer.project);
      return answer;
    },
    'ai.edit': async (input) => {
      const answer = await this.platform.call((client) => client.aiEdit(input));
      await this.sync.remember(answer.project);
      return answer;
    },
    'ai.agent.start': async (input) => this.agentRuns.start(input),
    'ai.agent.stop': async ({ runId }) => this.agentRuns.stop(runId),
  };

  // --- traffic --------------------------------------------------------------------------------

  private async captured(id: string): Promise<CapturedRequestDetail> {
    const stored = await this.history.get(id);
    if (!stored) throw new BridgeError('not_found', 404, `request ${id} is not in the traffic history`);
    return stored.detail;
  }

  /** Replays a request of the history at its tunnel's local port (see replay.ts) and stores the answer. */
  private async replay(input: ReplayInput): Promise<CapturedRequestDetail> {
    const { id } = input;
    const stored = await this.history.get(id);
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
    this.history.add(captured, {
      tunnelKey: running?.key ?? stored.tunnelKey,
      subdomain: running?.view.subdomain ?? stored.subdomain,
      localPort: port,
      hostHeader: hostMode,
    });
    // Stored (and sent to listeners) now, so the answer can be looked up at once.
    await this.history.flush();
    return toDetail(captured);
  }

  // --- events ---------------------------------------------------------------------------------

  private emit<E extends BridgeEventName>(event: E, payload: BridgeEvents[E]): void {
    this.events.emit(event, payload);
  }

  /** Listeners of the events that need polling. */
  private pollingListeners(): number {
    return POLLED_EVENTS.reduce((sum, event) => sum + this.events.listenerCount(event), 0);
  }
}

/** `smtp_probe` as the platform takes it: left out unless the UI gave one. */
function smtpProbeOf(probe: boolean | undefined): { smtp_probe?: boolean } {
  return probe === undefined ? {} : { smtp_probe: probe };
}

export type { BridgeRequests, LocalPlatformInfo };
