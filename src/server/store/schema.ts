// The platform database's tables as Kysely sees them. JSON columns are TEXT holding JSON; booleans are
// 0/1 integers; times are ISO 8601 strings (they sort as they should).
import type { Generated } from 'kysely';

export interface AccountsTable {
  id: string;
  email: string;
  email_verified: number;
  plan: string;
  created_at: string;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string;
  scopes: string;
  hash: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface ProjectsTable {
  id: string;
  account_id: string;
  name: string;
  subdomain: string;
  deploy_source: string;
  /** Masked (`https://***@host/…`) when the URL had userinfo; that userinfo is in repo_url_secret. */
  repo_url: string | null;
  /** JSON of the userinfo sealed with AES-256-GCM (ai/keys.ts), bound to the project id; else null. */
  repo_url_secret: string | null;
  /** An image source's registry login, sealed the same way; else null. */
  registry_auth_secret: string | null;
  git_host_repo: string | null;
  branch: string | null;
  image: string | null;
  env_vars: string;
  build_config: string;
  status: string;
  created_at: string;
  updated_at: string;
  last_deploy_at: string | null;
  /** JSON of the runtime's Release that serves the project, null when none does. */
  release: string | null;
  last_deploy_error: string | null;
}

/** Every host label a project answers at (its subdomain and `<subdomain>-<service>`), unique platform-wide. */
export interface ProjectHostsTable {
  label: string;
  project_id: string;
}

export interface UploadsTable {
  id: string;
  project_id: string;
  size_bytes: number;
  files: number;
  path: string;
  uploaded_at: string;
}

export interface ProjectLogsTable {
  seq: Generated<number>;
  project_id: string;
  ts: string;
  stream: string;
  service: string | null;
  line: string;
}

export interface TunnelSubdomainsTable {
  subdomain: string;
  account_id: string;
  reserved_at: string;
}

/** One append-only billing entry; amounts in integer micro-dollars (negative: usage). */
export interface LedgerEntriesTable {
  id: string;
  account_id: string;
  at: string;
  /** `allowance_grant`, `allowance_expiry`, `topup`, or a usage kind such as `email_verification`. */
  kind: string;
  amount_micros: number;
  /** The part of amount_micros that went to or came from the monthly allowance. */
  allowance_micros: number;
  /** The part of amount_micros that went to or came from the top-up. */
  topup_micros: number;
  /** The allowance period (`YYYY-MM`, UTC) the entry belongs to. */
  period: string;
  description: string;
  idempotency_key: string;
}

/** What an account's ledger entries add up to, kept in step with them. */
export interface BalancesTable {
  account_id: string;
  /** The allowance period (`YYYY-MM`) last granted; null before the first grant. */
  period: string | null;
  allowance_micros: number;
  allowance_used_micros: number;
  topup_micros: number;
  updated_at: string;
}

export interface EmailDailyCountsTable {
  account_id: string;
  /** `YYYY-MM-DD`, UTC. */
  day: string;
  count: number;
}

export interface DomainsTable {
  id: string;
  account_id: string;
  domain: string;
  project_id: string | null;
  verified: number;
  created_at: string;
  verified_at: string | null;
  checked_at: string | null;
  check_detail: string | null;
  /** Background checks so far (they back off with each). */
  check_attempts: number;
  /** When the background checker looks again; null: it does not. */
  next_check_at: string | null;
  /** 1: HTTPS answers send Strict-Transport-Security for this domain (opt-in). */
  hsts: Generated<number>;
}

/** The TXT value (`_wharf-challenge.<domain>`) an account must publish to prove it owns a domain. */
export interface DomainChallengesTable {
  account_id: string;
  domain: string;
  token: string;
  created_at: string;
}

/** An account's own AI key, sealed with AES-256-GCM (base64 parts); `masked` is what reads show. */
export interface AiKeysTable {
  account_id: string;
  provider: string;
  ciphertext: string;
  iv: string;
  tag: string;
  masked: string;
  updated_at: string;
}

/** A project the AI builder generated; its git history is in `<dataDir>/ai-repos/<project_id>`. */
export interface AiProjectsTable {
  project_id: string;
  account_id: string;
  generator: string;
  /** JSON `{ env: [{ name, description }], database: "postgres" | null }`. */
  needs: string;
  created_at: string;
  /** In a cluster, the commit of the repository shared in ai_repo_chunks (null: not shared yet). */
  repo_head: string | null;
}

export interface SandboxUsersTable {
  uid: number;
  project_id: string;
  created_at: string;
}

export interface AppDatabasesTable {
  /** The database's name, also its login role's (see databaseName in src/server/ai/postgres.ts). */
  name: string;
  project_id: string;
  created_at: string;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  projects: ProjectsTable;
  project_hosts: ProjectHostsTable;
  uploads: UploadsTable;
  project_logs: ProjectLogsTable;
  tunnel_subdomains: TunnelSubdomainsTable;
  ledger_entries: LedgerEntriesTable;
  balances: BalancesTable;
  email_daily_counts: EmailDailyCountsTable;
  domains: DomainsTable;
  domain_challenges: DomainChallengesTable;
  ai_keys: AiKeysTable;
  ai_projects: AiProjectsTable;
  app_databases: AppDatabasesTable;
  sandbox_users: SandboxUsersTable;
  idempotency_keys: IdempotencyKeysTable;
  releases: ReleasesTable;
  release_files: ReleaseFilesTable;
  upload_chunks: UploadChunksTable;
  ai_repo_chunks: AiRepoChunksTable;
  project_deploys: ProjectDeploysTable;
  release_output_copiers: ReleaseOutputCopiersTable;
  acme_accounts: AcmeAccountsTable;
  acme_challenges: AcmeChallengesTable;
  tls_certificates: TlsCertificatesTable;
  cluster_nodes: ClusterNodesTable;
  tunnel_holders: TunnelHoldersTable;
  registry_leftovers: RegistryLeftoversTable;
  certificate_orders: CertificateOrdersTable;
  account_streams: AccountStreamsTable;
}

/** How many streams each node of a cluster has open for an account (cluster/streams.ts). */
export interface AccountStreamsTable {
  node_id: string;
  account_id: string;
  count: number;
}

/**
 * An on-demand certificate order counted against an account (tls/certificates.ts): its daily budget is
 * the account's across the nodes and through restarts. Rows of more than a day ago are deleted.
 */
export interface CertificateOrdersTable {
  account_id: string;
  host: string;
  ordered_at: string;
}

/**
 * A deleted project whose images may still be in the platform's registry (its delete could not be made
 * then): its repository is emptied at the next start, and the row goes once it is.
 */
export interface RegistryLeftoversTable {
  /** The project's id; no foreign key: the project is gone. */
  project_id: string;
  deleted_at: string;
}

/** A platform node sharing this database (cluster/nodes.ts): alive while `seen_at` is recent. */
export interface ClusterNodesTable {
  id: string;
  /** How the other nodes reach it (`--node-url`). */
  url: string;
  started_at: string;
  seen_at: string;
}

/** A chunk of a release's static files, for the other nodes of a cluster (runtime/release-files.ts). */
export interface ReleaseFilesTable {
  release_id: string;
  seq: number;
  data: Uint8Array;
}

/** A chunk of an upload's archive, for the other nodes of a cluster (store/chunks.ts). */
export interface UploadChunksTable {
  upload_id: string;
  seq: number;
  data: Uint8Array;
}

/** A chunk of an AI project's repository (a git bundle), for the nodes of a cluster (ai/shared-repos.ts). */
export interface AiRepoChunksTable {
  project_id: string;
  seq: number;
  data: Uint8Array;
}

/** The deploy (or rollback) under way for a project in a cluster, and the node running it. */
export interface ProjectDeploysTable {
  project_id: string;
  /** Names one deploy: a node removes the row of its own deploy only. */
  build_id: string;
  node_id: string;
  started_at: string;
}

/** The node copying a serving release's service output into the project log, and how far it got. */
export interface ReleaseOutputCopiersTable {
  release_id: string;
  project_id: string;
  node_id: string;
  /** When this node started copying (where another starts when no line was copied yet). */
  since_at: string;
  /** The timestamp (RFC 3339, nanoseconds) of the last line copied, written every few seconds. */
  copied_until: string | null;
}

/** The node a connected tunnel's client is connected to (cluster/tunnels.ts). */
export interface TunnelHoldersTable {
  subdomain: string;
  account_id: string;
  tunnel_id: string;
  node_id: string;
  connected_at: string;
}

/** The ACME account of one directory (tls/acme.ts). */
/** An ACME challenge pending in a cluster, which every node answers (tls/challenges.ts). */
export interface AcmeChallengesTable {
  /** `http-01` or `dns-01`. */
  kind: string;
  /** HTTP-01: the token; DNS-01: the record's name (`_acme-challenge.<domain>`). */
  key: string;
  /** The key authorization (HTTP-01) or the TXT value (DNS-01). */
  value: string;
  domain: string;
  created_at: string;
}

export interface AcmeAccountsTable {
  directory_url: string;
  /** The account's private key (PEM), sealed with the server secret. */
  key_secret: string;
  account_url: string | null;
  email: string | null;
  created_at: string;
}

/** A certificate for one name, a host or `*.<domain>` (tls/certificates.ts). */
export interface TlsCertificatesTable {
  name: string;
  /** http-01 | dns-01 */
  challenge: string;
  /** pending | issued | failed */
  status: string;
  /** The certificate and its chain, once issued (kept while a renewal is pending or failed). */
  cert_pem: string | null;
  /** Its private key (PEM), sealed with the server secret. */
  key_secret: string | null;
  not_before: string | null;
  not_after: string | null;
  /** Why the last attempt failed (the CA's words). */
  error: string | null;
  /** Failed attempts in a row: the next waits longer. */
  failures: number;
  /** When it is asked for (again); null: not until it is due for renewal. */
  next_attempt_at: string | null;
  created_at: string;
  updated_at: string;
}

/** One deploy of a project (runtime/releases.ts). */
export interface ReleasesTable {
  id: string;
  project_id: string;
  /** building | running | failed | cancelled | retired */
  status: string;
  source: string;
  commit: string | null;
  image: string | null;
  /** JSON: the env vars it was deployed with. */
  env_vars: string;
  /** JSON of the runtime's ReleasePlan once built, else null. */
  plan: string | null;
  /** 1 while its image or release folder is kept (a rollback can start it), else 0. */
  kept: number;
  error: string | null;
  created_at: string;
  finished_at: string | null;
}

/** A request named by an `Idempotency-Key`: reserved while it runs, then its stored answer. */
export interface IdempotencyKeysTable {
  account_id: string;
  /** The endpoint the key is scoped to, e.g. `email/verify`. */
  endpoint: string;
  key: string;
  /** Random: names the request's ledger entry, so a key used again after expiry is charged anew. */
  id: string;
  /** SHA-256 of the canonical request body. */
  body_hash: string;
  state: 'in_flight' | 'done';
  /** The platform node running the request while in flight (cluster/cluster.ts's node id). */
  node_id: string;
  /** The stored answer's HTTP status and JSON; null while in flight. */
  status: number | null;
  response: string | null;
  created_at: string;
  expires_at: string;
}
