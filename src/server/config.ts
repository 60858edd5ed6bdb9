// The platform's configuration: one plain object, filled with defaults by resolveConfig, from which
// buildPlatform builds everything. The CLI maps flags and WHARF_* variables onto it.
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface Plan {
  /** What the plan grants each calendar month (UTC), in US dollars. */
  allowance_usd: number;
}

export interface PlatformConfig {
  /** Where platform.db, uploads and the server secret live. */
  dataDir: string;
  /** Apps are served at `<subdomain>.<baseDomain>`. */
  baseDomain: string;
  /** Tunnels are served at `<subdomain>.<tunnelDomain>`. */
  tunnelDomain: string;
  /** The edge's public port, used in the URLs the API hands out (omitted when 80). */
  edgePort: number;
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
  /** How deployed apps run: plain process groups, or the same inside bwrap. */
  runtime: RuntimeKind;
  /** `git_host_repo` (`owner/repo`) is cloned from `<gitHostUrl>/owner/repo`. */
  gitHostUrl: string;
  /** How long a started app has to accept connections on its port. */
  healthTimeoutMs: number;
  /** How long a worker (no port) must stay up to count as started. */
  workerGraceMs: number;
  /** How many times in a row a crashed app is restarted (with backoff) before it is marked failed. */
  restartLimit: number;
  /** The first restart's delay; each next one doubles, up to 30 s. */
  restartBackoffMs: number;
}

export const RUNTIME_KINDS = ['process', 'sandbox'] as const;
export type RuntimeKind = (typeof RUNTIME_KINDS)[number];

/** Where a platform writes its local account's key: `<dataDir>/local-account.json`. */
export const LOCAL_ACCOUNT_FILE = 'local-account.json';

export const DEFAULT_API_PORT = 8787;
export const DEFAULT_EDGE_PORT = 8788;

export function wharfHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.WHARF_HOME || join(homedir(), '.wharf');
}

export function resolveConfig(partial: Partial<PlatformConfig> = {}): PlatformConfig {
  return {
    dataDir: partial.dataDir ?? join(wharfHome(), 'platform'),
    baseDomain: partial.baseDomain ?? 'localhost',
    tunnelDomain: partial.tunnelDomain ?? 'tunnel.localhost',
    edgePort: partial.edgePort ?? DEFAULT_EDGE_PORT,
    ...(partial.secret === undefined ? {} : { secret: partial.secret }),
    tokenTtlSeconds: partial.tokenTtlSeconds ?? 3600,
    plans: partial.plans ?? { free: { allowance_usd: 5 }, pro: { allowance_usd: 50 } },
    defaultPlan: partial.defaultPlan ?? 'free',
    emailDailyCap: partial.emailDailyCap ?? 1000,
    localAccount: partial.localAccount ?? true,
    logger: partial.logger ?? false,
    runtime: partial.runtime ?? 'process',
    gitHostUrl: (partial.gitHostUrl ?? 'https://github.com').replace(/\/+$/, ''),
    healthTimeoutMs: partial.healthTimeoutMs ?? 60_000,
    workerGraceMs: partial.workerGraceMs ?? 2_000,
    restartLimit: partial.restartLimit ?? 5,
    restartBackoffMs: partial.restartBackoffMs ?? 1_000,
  };
}

/** The public URL of a host label on the app edge. */
export function edgeUrl(config: Pick<PlatformConfig, 'edgePort'>, host: string): string {
  return config.edgePort === 80 ? `http://${host}` : `http://${host}:${config.edgePort}`;
}
