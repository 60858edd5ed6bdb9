// The platform's configuration: one plain object, filled with defaults by resolveConfig, from which
// buildPlatform builds everything. The CLI maps flags and WHARF_* variables onto it.
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { AiProvider } from '../shared/api/account.js';

export interface Plan {
  /** What the plan grants each calendar month (UTC), in US dollars. */
  allowance_usd: number;
  /** Memory of one project's processes or container, in MiB (0: no limit); absent: `sandbox.memoryMiB`. */
  memory_mib?: number;
  /** CPU cores one project may use (0.5: half of one; 0: no limit); absent: `sandbox.cpus`. */
  cpus?: number;
  /** Processes and threads of one project at once (0: no limit); absent: `sandbox.pids`. */
  pids?: number;
}

/** What metered work costs, in US dollars (the ledger keeps integer micro-dollars). */
export interface Prices {
  /** One email verification without the SMTP probe (syntax, lists, DNS). */
  email_verification_usd: number;
  /** One email verification with the SMTP probe. */
  email_smtp_probe_usd: number;
}

/** The AI builder and agent's engines (API.md §3, §8). */
export interface AiConfig {
  /** The included engine (the service's own key); null: no included engine. */
  provider: AiProvider | null;
  /** The included engine's model; null: the provider's default. */
  model: string | null;
  /** The included engine's key (WHARF_AI_KEY). */
  key: string | null;
  /** Base URL per provider, for both engines (e.g. an OpenAI-compatible gateway); else the provider's own. */
  baseUrls: Partial<Record<AiProvider, string>>;
  /** The model an own key of each provider uses; else the provider's default. */
  ownKeyModels: Partial<Record<AiProvider, string>>;
  /** AI calls per account per minute. */
  ratePerMinute: number;
  /** What the included engine costs, in US dollars per million tokens. */
  prices: { input_per_mtok_usd: number; output_per_mtok_usd: number };
  /** An admin connection URL of the PostgreSQL server that AI apps get databases on (WHARF_POSTGRES_URL). */
  postgresUrl: string | null;
  /** Tool calls the agent may make in one run. */
  maxSteps: number;
  /** How often the agent's event stream sends a `: keep-alive` comment (15 s; shorter in tests). */
  agentHeartbeatMs: number;
}

/** How the email verifier talks to mail servers (API.md §6). */
export interface EmailConfig {
  /** The port MX hosts are probed on (25 in the world; tests use a local one). */
  smtpPort: number;
  /** The name given in EHLO/HELO. */
  heloName: string;
  /** The reverse path of the probe's MAIL FROM. */
  mailFrom: string;
  /** How long a connection to an MX host may take. */
  connectTimeoutMs: number;
  /** How long the banner and each reply may take. */
  replyTimeoutMs: number;
  /** Probes at once per mail domain. */
  perDomainConcurrency: number;
  /** Probes at once per MX provider (MX hosts under one registrable domain, e.g. google.com). */
  perProviderConcurrency: number;
  /** Probe MX hosts on loopback or private addresses (refused by default: the probe must not reach internal hosts). */
  allowPrivate: boolean;
}

/**
 * What one account may hold at once (docs/SECURITY.md): past a count, a request is refused with 429
 * `limit_reached`; capture memory is shared out instead, and a body over the limit is answered 413.
 */
export interface LimitsConfig {
  /** Tunnels connected at once (a reconnect of the same subdomain takes its slot over). */
  tunnels: number;
  /** Projects. */
  projects: number;
  /** Projects being deployed (status `building`) at once. */
  builds: number;
  /** Event streams and WebSockets open at once: log follows, agent streams, traffic feeds, tunnels. */
  streams: number;
  /** Capture memory (request and response bodies) of one tunnel, in bytes. */
  captureBytesPerTunnel: number;
  /** Capture memory of all of an account's tunnels, the offline ones still kept included, in bytes. */
  captureBytesPerAccount: number;
  /** A request body through the app and tunnel edge, in bytes. */
  bodyBytes: number;
}

/** Certificates over ACME (RFC 8555) for the edge's HTTPS (tls/). */
export interface AcmeConfig {
  /** The CA's directory: Let's Encrypt by default; its staging, or any RFC 8555 CA (`--acme-directory`). */
  directoryUrl: string;
  /** The ACME account's contact (`--acme-email`); the CA writes there about expiring certificates. */
  email: string | null;
  /** A PEM file of an extra CA trusted for the directory's own HTTPS, e.g. Pebble's (`--acme-ca-file`). */
  caFile: string | null;
  /** DNS-01 through the operator's command: `<hook> add|remove <name> <value>` (`--acme-dns-hook`). */
  dnsHook: string | null;
  /** DNS-01 through the built-in responder listening on `host:port` (`--acme-dns-listen`). */
  dnsListen: string | null;
  /** How long before expiry a certificate is renewed. */
  renewBeforeMs: number;
  /** The first retry after a failed order; each next waits twice as long, up to retryMaxMs. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** How often the names are looked over (renewals due, retries, new hosts). */
  checkIntervalMs: number;
  /** How long a TLS handshake for a host with no certificate yet waits for one ordered on demand. */
  onDemandTimeoutMs: number;
  /** On-demand orders (tunnel hosts without a wildcard) one account may cause in a day. */
  onDemandPerAccountPerDay: number;
}

export interface TlsConfig {
  /** The edge's public HTTPS port (`--https-port`); null: the edge speaks plain HTTP only. */
  httpsPort: number | null;
  acme: AcmeConfig;
}

export const LETS_ENCRYPT_DIRECTORY = 'https://acme-v02.api.letsencrypt.org/directory';

export interface PlatformConfig {
  /** Where platform.db, uploads and the server secret live. */
  dataDir: string;
  /**
   * The store: null for `<dataDir>/platform.db` (SQLite), or a postgres:// URL of a PostgreSQL database
   * that several platform nodes may share. Never shown with its password.
   */
  databaseUrl: string | null;
  /**
   * How the other platform nodes reach this one (its edge, e.g. `http://10.0.0.5:8788`), when several
   * share the database (cluster/): null for a platform of one node.
   */
  nodeUrl: string | null;
  /** Apps are served at `<subdomain>.<baseDomain>`. */
  baseDomain: string;
  /** Tunnels are served at `<subdomain>.<tunnelDomain>`. */
  tunnelDomain: string;
  /** The edge's public port, used in the URLs the API hands out (omitted when 80). */
  edgePort: number;
  /**
   * What takes the edge's public ports: `none`, the Node edge itself (nothing more to install), or
   * `haproxy`, HAProxy in front of it, routing apps straight to their ports (front/).
   */
  front: FrontKind;
  /** 32 bytes or more that sign tokens; read from (or created in) `<dataDir>/secret` when absent. */
  secret?: string;
  tokenTtlSeconds: number;
  plans: Record<string, Plan>;
  defaultPlan: string;
  emailDailyCap: number;
  /** Create the verified local account and `<dataDir>/local-account.json` when missing. */
  localAccount: boolean;
  /** Fastify request logging. */
  logger: boolean;
  /**
   * How deployed apps run: `sandbox` (bwrap), `process` (plain process groups as the platform's user:
   * one person's machine only), or `auto`, the strongest one this machine has.
   */
  runtime: RuntimeKind;
  /**
   * The sandbox runtime's per-project users, and the resources of a project whose plan does not set
   * its own (both the sandbox's and the container runtime's).
   */
  sandbox: SandboxConfig;
  /** The base images of Dockerfiles the container runtime writes (`--node-image`, `--python-image`). */
  images: { node: string; python: string };
  /**
   * The swarm runtime's image registry (`--registry host[:port]`): each built image is pushed there and
   * its services run it from there, so every machine of the Swarm can pull it. The login, if any, from
   * WHARF_REGISTRY_USER and WHARF_REGISTRY_PASSWORD (never stored). Null: images stay on the deploying
   * node's engine (a Swarm of one machine).
   */
  registry: RegistryConfig | null;
  /**
   * How often the registry is asked again for the deletes it missed while it did not answer (the
   * images of releases gone, the repositories of projects deleted meanwhile).
   */
  registrySweepMs: number;
  /**
   * Whether a platform shutting down stops its apps' containers too. Off: they keep serving while it
   * is down, and the next start follows them again without a restart.
   */
  stopContainersOnExit: boolean;
  /** `git_host_repo` (`owner/repo`) is cloned from `<gitHostUrl>/owner/repo`. */
  gitHostUrl: string;
  /**
   * Whether `repo_url` may be a `file://` repository on this machine (never one inside `dataDir`). On for
   * the embedded platform, where deploying a local repository is handy; off for a platform several
   * accounts share, where it would let one account deploy (and read) whatever git repository the
   * server can see.
   */
  localRepos: boolean;
  /** How long a started app has to accept connections on its port. */
  healthTimeoutMs: number;
  /** How long a worker (no port) must stay up to count as started. */
  workerGraceMs: number;
  /** How many times in a row a crashed app is restarted (with backoff) before it is marked failed. */
  restartLimit: number;
  /** The first restart's delay; each next one doubles, up to 30 s. */
  restartBackoffMs: number;
  /** How many of a project's releases that served keep their image or files for a rollback. */
  keepReleases: number;
  /** DNS servers (`host` or `host:port`) for domain verification and email checks; null: the system's. */
  dnsServers: string[] | null;
  /** How long one DNS query may take. */
  dnsTimeoutMs: number;
  /** What custom domains point their CNAME at (an apex: its A/AAAA records must match this name's). */
  cnameTarget: string;
  /** An unverified custom domain is re-checked in the background this long after it was added… */
  domainRecheckMs: number;
  /** …then after twice as long each time, up to this long… */
  domainRecheckMaxMs: number;
  /** …until this long after it was added; then only a manual verify checks it. */
  domainRecheckWindowMs: number;
  prices: Prices;
  email: EmailConfig;
  ai: AiConfig;
  limits: LimitsConfig;
  tls: TlsConfig;
}

/** The sandbox runtime (runtime/drivers/host.ts). */
export interface SandboxConfig {
  /** When the platform runs as root, each project runs as a uid of its own, from this one up. */
  uidBase: number;
  /** Memory of one project's processes together, in MiB; 0: no limit. A plan's `memory_mib` wins. */
  memoryMiB: number;
  /** Processes and threads of one project at once; 0: no limit. */
  pids: number;
  /** CPU cores one project may use (0.5: half of one); 0: no limit. */
  cpus: number;
}

export interface RegistryConfig {
  /** `host[:port]`, as image references are prefixed with it. */
  host: string;
  username: string | null;
  password: string | null;
  /** Where Docker's engine keeps the CAs it trusts for registries (registry-api.ts); /etc/docker/certs.d. */
  certsDir?: string;
}

/** `host[:port]` of a registry: a DNS name or IPv4 address, and a port, no scheme nor path. */
export const REGISTRY_HOST =
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*(?::\d{1,5})?$/i;

/** What buildPlatform and resolveConfig take: any field, nested ones in part. */
export type PlatformConfigInput = Partial<
  Omit<PlatformConfig, 'email' | 'prices' | 'ai' | 'limits' | 'sandbox' | 'images' | 'tls'>
> & {
  tls?: { httpsPort?: number | null; acme?: Partial<AcmeConfig> };
  sandbox?: Partial<SandboxConfig>;
  images?: Partial<PlatformConfig['images']>;
  email?: Partial<EmailConfig>;
  prices?: Partial<Prices>;
  ai?: Partial<AiConfig>;
  limits?: Partial<LimitsConfig>;
};

export const RUNTIME_KINDS = ['auto', 'container', 'swarm', 'sandbox', 'process'] as const;
export const FRONT_KINDS = ['none', 'haproxy'] as const;
export type FrontKind = (typeof FRONT_KINDS)[number];

/** The official slim images: the defaults of --node-image and --python-image. */
export const DEFAULT_IMAGES = { node: 'node:22-slim', python: 'python:3.12-slim' };
export type RuntimeKind = (typeof RUNTIME_KINDS)[number];

export { LOCAL_ACCOUNT_FILE } from '../shared/platform-files.js';

export const DEFAULT_API_PORT = 8787;
export const DEFAULT_EDGE_PORT = 8788;

export function wharfHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.WHARF_HOME || join(homedir(), '.wharf');
}

export function resolveConfig(partial: PlatformConfigInput = {}): PlatformConfig {
  return {
    dataDir: partial.dataDir ?? join(wharfHome(), 'platform'),
    databaseUrl: partial.databaseUrl ?? null,
    nodeUrl: partial.nodeUrl ?? null,
    baseDomain: partial.baseDomain ?? 'localhost',
    tunnelDomain: partial.tunnelDomain ?? 'tunnel.localhost',
    edgePort: partial.edgePort ?? DEFAULT_EDGE_PORT,
    front: partial.front ?? 'none',
    ...(partial.secret === undefined ? {} : { secret: partial.secret }),
    tokenTtlSeconds: partial.tokenTtlSeconds ?? 3600,
    plans: partial.plans ?? { free: { allowance_usd: 5 }, pro: { allowance_usd: 50 } },
    defaultPlan: partial.defaultPlan ?? 'free',
    emailDailyCap: partial.emailDailyCap ?? 1000,
    localAccount: partial.localAccount ?? true,
    logger: partial.logger ?? false,
    runtime: partial.runtime ?? 'auto',
    sandbox: { uidBase: 200_000, memoryMiB: 2048, pids: 1024, cpus: 1, ...partial.sandbox },
    images: { ...DEFAULT_IMAGES, ...partial.images },
    registry: partial.registry ?? null,
    registrySweepMs: partial.registrySweepMs ?? 5 * 60_000,
    stopContainersOnExit: partial.stopContainersOnExit ?? false,
    gitHostUrl: (partial.gitHostUrl ?? 'https://github.com').replace(/\/+$/, ''),
    localRepos: partial.localRepos ?? true,
    healthTimeoutMs: partial.healthTimeoutMs ?? 60_000,
    workerGraceMs: partial.workerGraceMs ?? 2_000,
    restartLimit: partial.restartLimit ?? 5,
    restartBackoffMs: partial.restartBackoffMs ?? 1_000,
    keepReleases: partial.keepReleases ?? 5,
    dnsServers: partial.dnsServers ?? null,
    dnsTimeoutMs: partial.dnsTimeoutMs ?? 5_000,
    cnameTarget: partial.cnameTarget ?? `cname.${partial.baseDomain ?? 'localhost'}`,
    domainRecheckMs: partial.domainRecheckMs ?? 60_000,
    domainRecheckMaxMs: partial.domainRecheckMaxMs ?? 3_600_000,
    domainRecheckWindowMs: partial.domainRecheckWindowMs ?? 72 * 3_600_000,
    prices: { email_verification_usd: 0.001, email_smtp_probe_usd: 0.004, ...partial.prices },
    email: {
      smtpPort: 25,
      heloName: 'verify.wharf.localhost',
      mailFrom: 'verify@wharf.localhost',
      connectTimeoutMs: 10_000,
      replyTimeoutMs: 15_000,
      perDomainConcurrency: 2,
      perProviderConcurrency: 6,
      allowPrivate: false,
      ...partial.email,
    },
    ai: {
      provider: null,
      model: null,
      key: null,
      baseUrls: {},
      ownKeyModels: {},
      ratePerMinute: 20,
      prices: { input_per_mtok_usd: 3, output_per_mtok_usd: 15 },
      postgresUrl: null,
      maxSteps: 12,
      agentHeartbeatMs: 15_000,
      ...partial.ai,
    },
    limits: {
      tunnels: 10,
      projects: 100,
      builds: 3,
      streams: 20,
      captureBytesPerTunnel: 64 * 1024 * 1024,
      captureBytesPerAccount: 256 * 1024 * 1024,
      bodyBytes: 100 * 1024 * 1024,
      ...partial.limits,
    },
    tls: {
      httpsPort: partial.tls?.httpsPort ?? null,
      acme: {
        directoryUrl: LETS_ENCRYPT_DIRECTORY,
        email: null,
        caFile: null,
        dnsHook: null,
        dnsListen: null,
        renewBeforeMs: 30 * 24 * 3_600_000,
        retryBaseMs: 60_000,
        retryMaxMs: 24 * 3_600_000,
        checkIntervalMs: 3_600_000,
        onDemandTimeoutMs: 30_000,
        onDemandPerAccountPerDay: 20,
        ...partial.tls?.acme,
      },
    },
  };
}

/** The public URL of a host on the app edge: HTTPS when the edge speaks it, the port left out when default. */
export function edgeUrl(config: Pick<PlatformConfig, 'edgePort' | 'tls'>, host: string): string {
  const https = config.tls.httpsPort;
  if (https !== null) return https === 443 ? `https://${host}` : `https://${host}:${https}`;
  return config.edgePort === 80 ? `http://${host}` : `http://${host}:${config.edgePort}`;
}
