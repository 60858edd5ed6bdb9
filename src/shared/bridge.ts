// The Bridge: the one typed interface between the UI and the Engine. `BridgeRequests` maps each
// operation to its input and output, `BridgeEvents` each event stream to its payload. The Engine
// implements it once (src/core/engine.ts); two transports carry it: Electron IPC (src/main/ipc.ts and
// window.wharf from src/preload) and HTTP + WebSocket (src/core/inspector). The renderer sees only
// this contract: never the API key, never the platform's address book.
import type {
  Account,
  ApiKeyInfo,
  CreateKeyRequest,
  CreatedKey,
  CreateProjectRequest,
  EnvVars,
  Project,
  LogLine,
  Release,
  Upload,
  BuildConfigInput,
  CapturedRequest,
  CapturedRequestDetail,
  HeaderList,
  CreateDomainRequest,
  CreatedDomain,
  Domain,
  DomainVerification,
  EmailBatchResult,
  EmailVerification,
  UsageEntry,
  VerifyEmailBatchRequest,
  VerifyEmailRequest,
  AgentStreamEvent,
  AiBuildRequest,
  AiBuildResponse,
  AiEditRequest,
  AiEngine,
  MaskedAiKey,
  PutAiKeyRequest,
  PlatformInfo,
} from './api/index.js';
import type { ErrorCode, FieldError } from './errors.js';

/** Where the Engine's platform is: the embedded one on this machine, or a remote server. */
export type PlatformMode = 'local' | 'remote';

/** How the API key is kept: Electron safeStorage, a 0600 file (CLI, browser mode), or nothing yet. */
export type KeyStorage = 'safe-storage' | 'file' | 'none';

export interface SettingsView {
  mode: PlatformMode;
  /** The platform's base URL (`http://127.0.0.1:8787`); for `local`, the embedded platform's. */
  platformUrl: string;
  hasApiKey: boolean;
  keyStorage: KeyStorage;
  /** A warning to show next to the key, e.g. that the OS keyring is unavailable. */
  keyStorageWarning: string | null;
}

export interface SettingsUpdate {
  /** `local` for the embedded platform, else a remote platform's http(s) URL. */
  platform?: 'local' | string;
  /** A new API key; `null` forgets the stored one. Ignored for `local` (it has its own key). */
  apiKey?: string | null;
}

export interface ConnectionTest {
  ok: boolean;
  latencyMs: number | null;
  account: Account | null;
  error: BridgeErrorShape | null;
}

export interface PlatformStatus {
  mode: PlatformMode;
  platformUrl: string;
  /** Whether the last call to the platform got an answer. */
  online: boolean;
  /** When the platform last answered. */
  lastContactAt: string | null;
  /** Why the platform is offline or refusing us, in words. */
  problem: string | null;
}

/** Data that may come from the Mirror when the platform cannot be reached. */
export interface Sourced {
  source: 'live' | 'cache';
  /** When this data was fetched from the platform. */
  fetchedAt: string | null;
}

export interface ProjectList extends Sourced {
  projects: Project[];
}

export interface ProjectView extends Sourced {
  project: Project;
  logs: LogLine[];
}

export interface UploadInput {
  id: string;
  fileName: string;
  /** The .tar.gz bytes. */
  data: Uint8Array;
}

export interface LogsInput {
  id: string;
  /** Only lines strictly after this ISO time. */
  since?: string;
  /** At most this many lines, the newest ones (the platform's default is 500). */
  limit?: number;
}

/**
 * A batch of a followed project's new log lines. The Engine numbers the lines it delivers with one
 * counter that never goes back: the first line of the batch has `from`, the next `from + 1`, and so on.
 * Together with `next` of `logs.follow` this lets a listener drop what it already has, whichever of the
 * answer and the events arrives first.
 */
export interface ProjectLogsEvent {
  projectId: string;
  lines: LogLine[];
  from: number;
}

/** What `logs.follow` answers: the lines the Engine holds for the project so far, and where they end. */
export interface LogFollow {
  projectId: string;
  /** The most recent lines, oldest first (at most 1,000). */
  lines: LogLine[];
  /** The number of the first line that events will deliver after `lines`; `lines` end at `next - 1`. */
  next: number;
}

export interface LogUnfollow {
  projectId: string;
  /** How many subscribers still follow the project; the stream is closed at 0. */
  followers: number;
}

export type DeployOutcome = 'running' | 'failed';

/** A deploy ended: `failed` also when a redeploy failed while the previous version keeps serving. */
export interface DeployFinishedEvent {
  project: Project;
  outcome: DeployOutcome;
}

/** A tunnel this Engine runs: a local port on a public URL. */
export interface LocalTunnel {
  /** The platform's tunnel id once connected (`tun_…`); a local id (`local_…`) before. */
  id: string;
  localPort: number;
  /** `preserve` (the public Host), `rewrite` (`localhost:<port>`) or a fixed host name. */
  hostHeader: string;
  subdomain: string | null;
  url: string | null;
  state: 'connecting' | 'online' | 'reconnecting' | 'stopped';
  /** Why it is reconnecting or stopped, when it is. */
  detail: string | null;
  /**
   * Whether something accepts connections on its local port (checked when it starts, when it comes
   * back online, and every few seconds while nothing does); null until known, and once stopped.
   */
  listening: boolean | null;
  startedAt: string;
}

export interface StartTunnelInput {
  port: number;
  subdomain?: string;
  hostHeader?: string;
}

/** Filters of the traffic history (the Mirror); all optional, combined with AND. */
export interface TrafficQuery {
  tunnelId?: string;
  /** Full-text search over method, path, headers and text bodies (SQLite FTS5 syntax is escaped). */
  q?: string;
  methods?: string[];
  /** Status classes (`2xx`…`5xx`), exact codes (`404`), or `error` for exchanges without a response. */
  statuses?: string[];
  /** Substring of the path. */
  path?: string;
  /** `name` or `name: value substring`. */
  header?: string;
  minDurationMs?: number;
  maxDurationMs?: number;
  /** Only requests older than this id (paging backwards); newest first. */
  before?: string;
  /** Default 200, at most 1,000. */
  limit?: number;
}

export interface TrafficPage {
  requests: CapturedRequest[];
  /** How many match in all (for the list's scroll height). */
  total: number;
}

/** A tunnel the traffic history holds requests of, by the name the user knows it. */
export interface TrafficTunnel {
  /** Its subdomain: the first label of its public host, and a `TrafficQuery.tunnelId` that lists it. */
  subdomain: string;
  /** The local port its newest request went to. */
  localPort: number | null;
  /** How many requests of it the history holds. */
  requests: number;
}

/** A replay, optionally edited; unedited fields are the original's. */
export interface ReplayInput {
  id: string;
  method?: string;
  path?: string;
  headers?: HeaderList;
  /** base64 */
  body?: string | null;
}

/** A batch of new exchanges captured by this Engine's tunnels (sent at most every 50 ms). */
export interface TrafficEvent {
  requests: CapturedRequest[];
}

/** What `ai.deploy` takes: the secrets an AI project needs, and whether to create its database. */
export interface AiDeployInput {
  project_id: string;
  env?: Record<string, string>;
  database?: 'postgres' | null;
}

/** An agent conversation to answer, streamed as `ai-agent` events. */
export interface AgentStartInput {
  messages: Array<{ role: 'user' | 'assistant'; content: string }>;
  engine?: AiEngine;
  /**
   * The run's id, chosen by the caller (`run_` + 8–64 letters, digits, `_` or `-`) so it can listen
   * for the run's events before the call answers; the Engine makes one up otherwise.
   */
  runId?: string;
}

/**
 * One event of an agent run: an event of `POST /ai/agent/stream` (API.md §8) as it arrived, or
 * `closed`, which the Engine sends last for every run it started, however it ended: after `done`
 * (`done`), after `ai.agent.stop` (`stopped`), or when the stream broke (`failed`, after an `error`).
 */
export type AiAgentEvent = { runId: string } & (
  AgentStreamEvent | { event: 'closed'; data: { reason: 'done' | 'stopped' | 'failed' } }
);

export interface BridgeRequests {
  'settings.get': { input: void; output: SettingsView };
  'settings.update': { input: SettingsUpdate; output: SettingsView };
  'settings.testConnection': {
    input: { platform: 'local' | string; apiKey?: string };
    output: ConnectionTest;
  };
  'platform.status': { input: void; output: PlatformStatus };
  /**
   * How the platform of the saved settings runs apps (`GET /platform`): its runtime, why, and how many
   * releases it keeps for a rollback. A platform older than that route answers `not_found` (404).
   */
  'platform.info': { input: void; output: PlatformInfo };
  'account.get': { input: void; output: Account };
  'projects.list': { input: void; output: ProjectList };
  'projects.get': { input: { id: string }; output: ProjectView };
  'projects.create': { input: CreateProjectRequest; output: Project };
  'projects.setEnvVars': { input: { id: string; env_vars: EnvVars }; output: Project };
  'projects.setBuildConfig': { input: { id: string; build_config: BuildConfigInput }; output: Project };
  'projects.upload': { input: UploadInput; output: Upload };
  'projects.delete': { input: { id: string }; output: { id: string; deleted: true } };
  'projects.deploy': { input: { id: string }; output: Project };
  'projects.stop': { input: { id: string }; output: Project };
  /** The project's releases, newest first: every deploy, what it ran, how it ended. */
  'projects.releases': { input: { id: string }; output: Release[] };
  /**
   * Starts a kept release again without a build; the answer is the project, now `building`, with the
   * release's env vars as its own. The deploy-finished event tells how it ended.
   */
  'projects.rollback': { input: { id: string; release_id: string }; output: Project };
  'projects.logs': { input: LogsInput; output: LogLine[] };
  /** Starts (or joins) following a project's logs: `project-logs` events until `logs.unfollow`. */
  'logs.follow': { input: { id: string }; output: LogFollow };
  'logs.unfollow': { input: { id: string }; output: LogUnfollow };
  'tunnels.list': { input: void; output: LocalTunnel[] };
  /** Resolves once the tunnel is online (or rejects with why the platform refused it). */
  'tunnels.start': { input: StartTunnelInput; output: LocalTunnel };
  'tunnels.stop': { input: { id: string }; output: LocalTunnel };
  'traffic.list': { input: TrafficQuery; output: TrafficPage };
  'traffic.get': { input: { id: string }; output: CapturedRequestDetail };
  /** The tunnels the history holds requests of, the most recently used first. */
  'traffic.tunnels': { input: void; output: TrafficTunnel[] };
  /** Sends the request straight to the tunnel's local port again; the new exchange is captured too. */
  'traffic.replay': { input: ReplayInput; output: CapturedRequestDetail };
  'traffic.clear': { input: { tunnelId?: string }; output: { deleted: number } };
  /** HAR 1.2 of the given exchanges, as JSON text. */
  'traffic.har': { input: { ids: string[] }; output: string };
  'traffic.curl': { input: { id: string }; output: string };
  /** The account's ledger (API.md §3): charges and top-ups, newest first. */
  'account.usage': { input: void; output: UsageEntry[] };
  'domains.list': { input: void; output: Domain[] };
  /** Adds a custom domain; the answer names the two records to create: the CNAME and the TXT proof. */
  'domains.create': { input: CreateDomainRequest; output: CreatedDomain };
  /**
   * Changes a domain in place (PATCH): the project it routes to, or none (a verified one stays
   * verified), and whether its HTTPS answers send Strict-Transport-Security.
   */
  'domains.link': { input: { id: string; project_id?: string | null; hsts?: boolean }; output: Domain };
  /** Looks the domain's TXT proof and CNAME up now; `verified` says whether both are right. */
  'domains.verify': { input: { id: string }; output: DomainVerification };
  'domains.delete': { input: { id: string }; output: { id: string; deleted: true } };
  /** Checks one address (costs credits unless the result is `unknown` or `invalid_syntax`). */
  'email.verify': { input: VerifyEmailRequest; output: EmailVerification };
  /** Checks 1–100 addresses; the results come in input order. */
  'email.verifyBatch': { input: VerifyEmailBatchRequest; output: EmailBatchResult };
  /** Saves the account's own AI key (encrypted on the platform); the answer shows it masked. */
  'account.setAiKey': { input: PutAiKeyRequest; output: MaskedAiKey };
  'account.deleteAiKey': { input: void; output: { deleted: true } };
  /**
   * The account's active API keys (never the keys themselves), newest first; `current` marks the key
   * this app signs in with. Needs a key with the `full` scope.
   */
  'keys.list': { input: void; output: ApiKeyInfo[] };
  /** Creates a key: the answer holds the key itself, shown this once and never again. */
  'keys.create': { input: CreateKeyRequest; output: CreatedKey };
  /** Revokes a key at once; refused (409) for the key this app signs in with, which would lock it out. */
  'keys.revoke': { input: { id: string }; output: { id: string; deleted: true } };
  /** Generates an app and deploys it, or answers `needs_setup` with the secrets it needs first. */
  'ai.build': { input: AiBuildRequest; output: AiBuildResponse };
  /** Deploys an AI project that needed setup, with its secrets (and a database when asked). */
  'ai.deploy': { input: AiDeployInput; output: Extract<AiBuildResponse, { status: 'building' }> };
  /** Changes an AI project by an instruction and redeploys it; the answer names the files changed. */
  'ai.edit': {
    input: AiEditRequest;
    output: { status: 'building'; project: Project; changed_files: string[] };
  };
  /**
   * Starts an agent run: resolves once the platform accepted it (or rejects with why it did not: 402,
   * 429, 503…); its events follow as `ai-agent` events with this runId, `closed` last.
   */
  'ai.agent.start': { input: AgentStartInput; output: { runId: string } };
  /** Stops a run: its stream is closed and `closed` (`stopped`) follows. */
  'ai.agent.stop': { input: { runId: string }; output: { runId: string; stopped: boolean } };
}

export type BridgeOperation = keyof BridgeRequests;
export type BridgeInput<K extends BridgeOperation> = BridgeRequests[K]['input'];
export type BridgeOutput<K extends BridgeOperation> = BridgeRequests[K]['output'];

export interface BridgeEvents {
  /** The platform went online or offline, or its settings changed. */
  'platform-status': PlatformStatus;
  /** The project list changed (a write through the Bridge, or a refresh found changes). */
  projects: ProjectList;
  /** New log lines of a project someone follows (`logs.follow`), in batches. */
  'project-logs': ProjectLogsEvent;
  /** A project went from `building` to `running` or `failed` (or a redeploy failed while running). */
  'deploy-finished': DeployFinishedEvent;
  /** The Engine's tunnels changed (started, online, reconnecting, stopped). */
  tunnels: LocalTunnel[];
  /** New exchanges through this Engine's tunnels. */
  traffic: TrafficEvent;
  /** The events of the agent runs this Engine streams (`ai.agent.start`), each with its run's id. */
  'ai-agent': AiAgentEvent;
}

export type BridgeEventName = keyof BridgeEvents;

export const BRIDGE_EVENTS = [
  'platform-status',
  'projects',
  'project-logs',
  'deploy-finished',
  'tunnels',
  'traffic',
  'ai-agent',
] as const satisfies readonly BridgeEventName[];

/** Codes of errors that do not come from the platform's API. */
export type BridgeOnlyCode =
  'offline' | 'not_configured' | 'bad_request' | 'unknown_operation' | 'token_refused';

/** An error as it crosses the Bridge: a problem+json from the platform, or one of the Engine's own. */
export interface BridgeErrorShape {
  code: ErrorCode | BridgeOnlyCode;
  status: number;
  detail: string;
  errors?: FieldError[];
}

export class BridgeError extends Error implements BridgeErrorShape {
  constructor(
    readonly code: BridgeErrorShape['code'],
    readonly status: number,
    readonly detail: string,
    readonly errors?: FieldError[],
  ) {
    super(detail);
    this.name = 'BridgeError';
  }

  static from(shape: BridgeErrorShape): BridgeError {
    return new BridgeError(shape.code, shape.status, shape.detail, shape.errors);
  }

  toJSON(): BridgeErrorShape {
    return {
      code: this.code,
      status: this.status,
      detail: this.detail,
      ...(this.errors ? { errors: this.errors } : {}),
    };
  }
}

export function isBridgeErrorShape(value: unknown): value is BridgeErrorShape {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as BridgeErrorShape).code === 'string' &&
    typeof (value as BridgeErrorShape).status === 'number' &&
    typeof (value as BridgeErrorShape).detail === 'string'
  );
}

/** How a result crosses a transport: errors as data, since IPC and JSON drop Error subclasses. */
export type BridgeResult<T = unknown> = { ok: true; value: T } | { ok: false; error: BridgeErrorShape };

/** What a transport carries: `window.wharf` in Electron, the inspector's /bridge routes over HTTP. */
export interface RawBridge {
  invoke(operation: string, input: unknown): Promise<BridgeResult>;
  on(event: string, listener: (payload: unknown) => void): () => void;
}

/** Any error as a BridgeError: ours pass through, anything else is an internal error with its message. */
export function toBridgeError(error: unknown): BridgeError {
  if (error instanceof BridgeError) return error;
  return new BridgeError('internal', 500, (error as Error | undefined)?.message ?? String(error));
}

/** A failed BridgeResult for any error, as transports send it. */
export function bridgeFailure(error: unknown): BridgeResult {
  return { ok: false, error: toBridgeError(error).toJSON() };
}

export function isBridgeEvent(value: unknown): value is BridgeEventName {
  return typeof value === 'string' && (BRIDGE_EVENTS as readonly string[]).includes(value);
}

/** What both transports give the renderer (`window.wharf` in Electron, the HTTP bridge in a browser). */
export interface Bridge {
  invoke<K extends BridgeOperation>(operation: K, input: BridgeInput<K>): Promise<BridgeOutput<K>>;
  on<E extends BridgeEventName>(event: E, listener: (payload: BridgeEvents[E]) => void): () => void;
}
