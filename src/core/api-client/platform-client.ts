// PlatformClient: the typed /api/v1 client. Every response is checked against the src/shared schemas;
// a problem+json answer becomes a BridgeError with the platform's code, detail and field errors; a
// platform that cannot be reached becomes a BridgeError with code `offline`.
import { z } from 'zod';
import {
  Account,
  ApiKeyInfo,
  CreatedKey,
  type CreateKeyRequest,
  AiBuildResponse,
  AiDeployResponse,
  AiEditResponse,
  MaskedAiKey,
  type AgentRequest,
  type AiBuildRequest,
  type AiDeployRequest,
  type AiEditRequest,
  type PutAiKeyRequest,
  CreatedDomain,
  Domain,
  DomainVerification,
  EmailBatchResult,
  EmailVerification,
  UsageEntry,
  type CreateDomainRequest,
  type LinkDomainRequest,
  type VerifyEmailBatchRequest,
  type VerifyEmailRequest,
  type CreateProjectRequest,
  type EnvVars,
  LogLine,
  PlatformInfo,
  Problem,
  Project,
  ProjectDetail,
  Release,
  Upload,
  type BuildConfigInput,
} from '../../shared/api/index.js';
import { BridgeError } from '../../shared/bridge.js';
import { fetchWithinOrigin, offlineError } from './reach.js';

export interface PlatformClientOptions {
  /** The platform's origin, e.g. `http://127.0.0.1:8787`. */
  baseUrl: string;
  apiKey: string | null;
  timeoutMs?: number;
}

export interface ConditionalList {
  notModified: boolean;
  projects: Project[];
  etag: string | null;
}

export interface LogsQuery {
  /** Only lines strictly after this ISO time. */
  since?: string;
  limit?: number;
}

const ProjectList = z.array(Project);
const LogLines = z.array(LogLine);
const ReleaseList = z.array(Release);
const Deleted = z.object({ id: z.string(), deleted: z.literal(true) });
const DomainList = z.array(Domain);
const UsageList = z.array(UsageEntry);

const AiKeyDeleted = z.object({ deleted: z.literal(true) });
/** A platform older than `current` leaves it out: none of its keys is then known as this app's own. */
const KeyList = z.array(ApiKeyInfo.extend({ current: z.boolean().default(false) }));

/** A build generates the app before it answers: with a model, that takes a while. */
const AI_GENERATE_TIMEOUT_MS = 5 * 60_000;

/** A DNS look-up may wait for slow name servers. */
const DOMAIN_VERIFY_TIMEOUT_MS = 30_000;
/** An SMTP probe talks to mail servers that may be slow on purpose (greylisting, tarpits). */
const EMAIL_VERIFY_TIMEOUT_MS = 60_000;
/** A batch of up to 100 addresses, each possibly probed over SMTP. */
const EMAIL_BATCH_TIMEOUT_MS = 5 * 60_000;

export class PlatformClient {
  readonly baseUrl: string;
  private readonly apiKey: string | null;
  private readonly timeoutMs: number;

  constructor(options: PlatformClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  account(): Promise<Account> {
    return this.json('GET', '/account', Account);
  }

  /**
   * How the platform runs apps: its runtime, why, and how many releases it keeps. Any key may ask; a
   * platform older than the route answers 404.
   */
  platformInfo(): Promise<PlatformInfo> {
    return this.json('GET', '/platform', PlatformInfo);
  }

  async listProjects(etag?: string | null): Promise<ConditionalList> {
    const response = await this.send('GET', '/projects', { headers: etag ? { 'if-none-match': etag } : {} });
    if (response.status === 304) return { notModified: true, projects: [], etag: etag ?? null };
    const projects = await this.parse(response, ProjectList);
    return { notModified: false, projects, etag: response.headers.get('etag') };
  }

  getProject(id: string): Promise<ProjectDetail> {
    return this.json('GET', `/projects/${encodeURIComponent(id)}`, ProjectDetail);
  }

  createProject(body: CreateProjectRequest): Promise<Project> {
    return this.json('POST', '/projects', Project, body);
  }

  setEnvVars(id: string, envVars: EnvVars): Promise<Project> {
    return this.json('PUT', `/projects/${encodeURIComponent(id)}`, Project, { env_vars: envVars });
  }

  setBuildConfig(id: string, config: BuildConfigInput): Promise<Project> {
    return this.json('PUT', `/projects/${encodeURIComponent(id)}/build-config`, Project, config);
  }

  async uploadArchive(id: string, data: Uint8Array): Promise<Upload> {
    const response = await this.send('POST', `/projects/${encodeURIComponent(id)}/upload`, {
      headers: { 'content-type': 'application/gzip' },
      body: data,
      timeoutMs: Math.max(this.timeoutMs, 5 * 60_000),
    });
    return this.parse(response, Upload);
  }

  deleteProject(id: string): Promise<{ id: string; deleted: true }> {
    return this.json('DELETE', `/projects/${encodeURIComponent(id)}`, Deleted);
  }

  /** Starts a deploy: the platform answers 202 with the project, now `building`. */
  deploy(id: string): Promise<Project> {
    return this.json('POST', `/projects/${encodeURIComponent(id)}/deploy`, Project);
  }

  stop(id: string): Promise<Project> {
    return this.json('POST', `/projects/${encodeURIComponent(id)}/stop`, Project);
  }

  /** The project's releases, newest first: every deploy, what it ran and how it ended. */
  releases(id: string): Promise<Release[]> {
    return this.json('GET', `/projects/${encodeURIComponent(id)}/releases`, ReleaseList);
  }

  /**
   * Starts a kept release again without a build: the platform answers 202 with the project, now
   * `building`, and the release's env vars become the project's.
   */
  rollback(id: string, releaseId: string): Promise<Project> {
    return this.json('POST', `/projects/${encodeURIComponent(id)}/rollback`, Project, {
      release_id: releaseId,
    });
  }

  /** The project's log lines, oldest first. */
  logs(id: string, query: LogsQuery = {}): Promise<LogLine[]> {
    return this.json('GET', `/projects/${encodeURIComponent(id)}/logs${logsSearch(query)}`, LogLines);
  }

  /**
   * Opens `GET /projects/:id/logs?follow=1` for readSse to read (see openEventStream).
   */
  followLogs(id: string, query: LogsQuery, signal: AbortSignal): Promise<Response> {
    return this.openEventStream(
      `/projects/${encodeURIComponent(id)}/logs${logsSearch({ ...query, follow: true })}`,
      { method: 'GET' },
      signal,
      { what: 'the log stream', connectTimeoutMs: this.timeoutMs },
    );
  }

  /**
   * A server-sent event stream's response once its headers are in. Only the wait for the headers has a
   * time limit; the stream lasts until `signal` aborts it or the platform ends it. A refusal (or an
   * answer that is not a stream) becomes a BridgeError like any other answer.
   */
  private async openEventStream(
    path: string,
    init: { method: string; body?: string },
    signal: AbortSignal,
    options: { what: string; connectTimeoutMs: number },
  ): Promise<Response> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    if (this.apiKey) headers['x-api-key'] = this.apiKey;
    const connect = new AbortController();
    const timer = setTimeout(
      () => connect.abort(new DOMException('no answer in time', 'TimeoutError')),
      options.connectTimeoutMs,
    );
    let response: Response;
    try {
      response = await fetchWithinOrigin(`${this.baseUrl}/api/v1${path}`, {
        ...init,
        headers,
        signal: AbortSignal.any([signal, connect.signal]),
      });
    } catch (error) {
      if (error instanceof BridgeError) throw error;
      if (signal.aborted) throw error;
      throw offlineError(this.baseUrl, connect.signal.aborted ? connect.signal.reason : error);
    } finally {
      clearTimeout(timer);
    }
    const type = response.headers.get('content-type') ?? '';
    if (!response.ok || !type.startsWith('text/event-stream') || !response.body) {
      // Not a stream: parse() turns the problem (or the odd answer) into a BridgeError.
      await this.parse(response, z.never());
      throw new BridgeError(
        'bad_request',
        502,
        `the platform answered ${options.what} with ${type || 'no content type'}, not text/event-stream`,
      );
    }
    return response;
  }

  /** The account's ledger: charges and top-ups, newest first. */
  usage(): Promise<UsageEntry[]> {
    return this.json('GET', '/account/usage', UsageList);
  }

  listDomains(): Promise<Domain[]> {
    return this.json('GET', '/domains', DomainList);
  }

  createDomain(body: CreateDomainRequest): Promise<CreatedDomain> {
    return this.json('POST', '/domains', CreatedDomain, body);
  }

  /** Links the domain to another project of the account, or to none (`null`); it stays verified. */
  linkDomain(id: string, body: LinkDomainRequest): Promise<Domain> {
    return this.json('PATCH', `/domains/${encodeURIComponent(id)}`, Domain, body);
  }

  async verifyDomain(id: string): Promise<DomainVerification> {
    const response = await this.send('POST', `/domains/${encodeURIComponent(id)}/verify`, {
      timeoutMs: Math.max(this.timeoutMs, DOMAIN_VERIFY_TIMEOUT_MS),
    });
    return this.parse(response, DomainVerification);
  }

  deleteDomain(id: string): Promise<{ id: string; deleted: true }> {
    return this.json('DELETE', `/domains/${encodeURIComponent(id)}`, Deleted);
  }

  async verifyEmail(body: VerifyEmailRequest): Promise<EmailVerification> {
    const response = await this.send('POST', '/email/verify', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      timeoutMs: Math.max(this.timeoutMs, EMAIL_VERIFY_TIMEOUT_MS),
    });
    return this.parse(response, EmailVerification);
  }

  async verifyEmailBatch(body: VerifyEmailBatchRequest): Promise<EmailBatchResult> {
    const response = await this.send('POST', '/email/verify/batch', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      timeoutMs: Math.max(this.timeoutMs, EMAIL_BATCH_TIMEOUT_MS),
    });
    return this.parse(response, EmailBatchResult);
  }

  setAiKey(body: PutAiKeyRequest): Promise<MaskedAiKey> {
    return this.json('PUT', '/account/ai-key', MaskedAiKey, body);
  }

  deleteAiKey(): Promise<{ deleted: true }> {
    return this.json('DELETE', '/account/ai-key', AiKeyDeleted);
  }

  /** The account's active API keys, `current` marking the one this client sends (needs `full`). */
  listKeys(): Promise<ApiKeyInfo[]> {
    return this.json('GET', '/keys', KeyList);
  }

  /** Creates an API key: the answer is the only time the key itself is ever shown. */
  createKey(body: CreateKeyRequest): Promise<CreatedKey> {
    return this.json('POST', '/keys', CreatedKey, body);
  }

  revokeKey(id: string): Promise<{ id: string; deleted: true }> {
    return this.json('DELETE', `/keys/${encodeURIComponent(id)}`, Deleted);
  }

  /** `POST /ai/build`: answers 202 once the app is generated (building, or needs_setup). */
  aiBuild(body: AiBuildRequest): Promise<AiBuildResponse> {
    return this.slowJson('POST', '/ai/build', AiBuildResponse, body);
  }

  aiDeploy(body: AiDeployRequest): Promise<z.infer<typeof AiDeployResponse>> {
    return this.slowJson('POST', '/ai/deploy', AiDeployResponse, body);
  }

  aiEdit(body: AiEditRequest): Promise<z.infer<typeof AiEditResponse>> {
    return this.slowJson('POST', '/ai/edit', AiEditResponse, body);
  }

  /**
   * Opens `POST /ai/agent/stream` for readSse to read (see openEventStream); the platform ends it after
   * `done`, and a refusal (402, 429, 503…) is a BridgeError.
   */
  agentStream(body: AgentRequest, signal: AbortSignal): Promise<Response> {
    return this.openEventStream('/ai/agent/stream', { method: 'POST', body: JSON.stringify(body) }, signal, {
      what: 'the agent stream',
      connectTimeoutMs: Math.max(this.timeoutMs, 30_000),
    });
  }

  /** Whether a Wharf platform answers at this origin (no key needed). */
  async health(): Promise<boolean> {
    try {
      const response = await this.send('GET', '/health', { timeoutMs: 2_000, anonymous: true });
      return response.ok;
    } catch {
      return false;
    }
  }

  private async json<T>(method: string, path: string, schema: z.ZodType<T>, body?: unknown): Promise<T> {
    const response = await this.send(method, path, {
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
    return this.parse(response, schema);
  }

  private async slowJson<T>(method: string, path: string, schema: z.ZodType<T>, body: unknown): Promise<T> {
    const response = await this.send(method, path, {
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
      timeoutMs: Math.max(this.timeoutMs, AI_GENERATE_TIMEOUT_MS),
    });
    return this.parse(response, schema);
  }

  private async send(
    method: string,
    path: string,
    options: {
      headers?: Record<string, string>;
      body?: string | Uint8Array;
      timeoutMs?: number;
      anonymous?: boolean;
    } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (this.apiKey && !options.anonymous) headers['x-api-key'] = this.apiKey;
    const url = `${this.baseUrl}/api/v1${path}`;
    try {
      return await fetchWithinOrigin(url, {
        method,
        headers,
        ...(options.body === undefined ? {} : { body: options.body }),
        signal: AbortSignal.timeout(options.timeoutMs ?? this.timeoutMs),
      });
    } catch (error) {
      if (error instanceof BridgeError) throw error;
      throw offlineError(this.baseUrl, error);
    }
  }

  private async parse<T>(response: Response, schema: z.ZodType<T>): Promise<T> {
    const text = await response.text().catch((error: unknown) => {
      throw offlineError(this.baseUrl, error);
    });
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      throw new BridgeError(
        'bad_request',
        502,
        `${this.baseUrl} answered ${response.status} with something other than JSON: is it a Wharf platform?`,
      );
    }
    if (!response.ok) {
      const problem = Problem.safeParse(body);
      if (problem.success) {
        throw new BridgeError(
          problem.data.code as BridgeError['code'],
          problem.data.status,
          problem.data.detail,
          problem.data.errors,
        );
      }
      throw new BridgeError(
        'bad_request',
        response.status,
        `${this.baseUrl} answered ${response.status} ${response.statusText}: is it a Wharf platform?`,
      );
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      throw new BridgeError(
        'bad_request',
        502,
        `the platform's answer does not match the API: ${parsed.error.issues[0]?.message ?? 'unexpected shape'}`,
      );
    }
    return parsed.data;
  }
}

function logsSearch(query: LogsQuery & { follow?: boolean }): string {
  const params = new URLSearchParams();
  if (query.since !== undefined) params.set('since', query.since);
  if (query.limit !== undefined) params.set('limit', String(query.limit));
  if (query.follow) params.set('follow', '1');
  const search = params.toString();
  return search ? `?${search}` : '';
}
