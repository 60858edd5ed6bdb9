// Schema migrations, kept in code so the platform can migrate its own database on start.
import { type Kysely, type Migration, sql } from 'kysely';
import { dialectOf } from './dialect.js';

/**
 * The integer column type: 64-bit in both databases (SQLite's INTEGER is; PostgreSQL's is 32-bit, and
 * micro-dollars pass 2^31 at $2,147). SQLite keeps the type it always had, so its schema is unchanged.
 */
function intType(db: Kysely<unknown>): 'integer' | 'bigint' {
  return dialectOf(db) === 'postgres' ? 'bigint' : 'integer';
}

export const migrations: Record<string, Migration> = {
  '0001_accounts_keys_projects': {
    async up(db: Kysely<unknown>) {
      const int = intType(db);
      await db.schema
        .createTable('accounts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('email', 'text', (c) => c.notNull().unique())
        .addColumn('email_verified', int, (c) => c.notNull().defaultTo(0))
        .addColumn('plan', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('scopes', 'text', (c) => c.notNull())
        .addColumn('hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text')
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema.createIndex('api_keys_account').on('api_keys').columns(['account_id', 'id']).execute();

      await db.schema
        .createTable('projects')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('subdomain', 'text', (c) => c.notNull().unique())
        .addColumn('deploy_source', 'text', (c) => c.notNull())
        .addColumn('repo_url', 'text')
        .addColumn('git_host_repo', 'text')
        .addColumn('branch', 'text')
        .addColumn('image', 'text')
        .addColumn('env_vars', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('build_config', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addColumn('last_deploy_at', 'text')
        .execute();
      await db.schema.createIndex('projects_account').on('projects').columns(['account_id', 'id']).execute();

      await db.schema
        .createTable('project_hosts')
        .addColumn('label', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .execute();
      await db.schema.createIndex('project_hosts_project').on('project_hosts').column('project_id').execute();

      await db.schema
        .createTable('uploads')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) =>
          c.notNull().unique().references('projects.id').onDelete('cascade'),
        )
        .addColumn('size_bytes', int, (c) => c.notNull())
        .addColumn('files', int, (c) => c.notNull())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('uploaded_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('project_logs')
        .addColumn('seq', int, (c) =>
          // SQLite: INTEGER PRIMARY KEY AUTOINCREMENT (seq never reused); PostgreSQL: an identity.
          dialectOf(db) === 'postgres'
            ? c.primaryKey().generatedByDefaultAsIdentity()
            : c.primaryKey().autoIncrement(),
        )
        .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('ts', 'text', (c) => c.notNull())
        .addColumn('stream', 'text', (c) => c.notNull())
        .addColumn('service', 'text')
        .addColumn('line', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('project_logs_project')
        .on('project_logs')
        .columns(['project_id', 'seq'])
        .execute();
    },
  },
  '0002_project_releases': {
    async up(db: Kysely<unknown>) {
      // The release that serves the project (its workspace and resolved commands, as JSON), so that a
      // platform restart can start it again without rebuilding; and why the last deploy failed.
      await db.schema.alterTable('projects').addColumn('release', 'text').execute();
      await db.schema.alterTable('projects').addColumn('last_deploy_error', 'text').execute();
    },
  },
  '0003_tunnel_subdomains': {
    async up(db: Kysely<unknown>) {
      // Which account holds each tunnel subdomain: reconnecting takes it back, another account gets 409.
      await db.schema
        .createTable('tunnel_subdomains')
        .addColumn('subdomain', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('reserved_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0004_billing_domains': {
    async up(db: Kysely<unknown>) {
      const int = intType(db);
      // The billing ledger: append-only entries in integer micro-dollars, with the part each one took
      // from (or gave to) the monthly allowance and the top-up; the per-account idempotency key makes
      // retried charges and the monthly grant happen once.
      await db.schema
        .createTable('ledger_entries')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('amount_micros', int, (c) => c.notNull())
        .addColumn('allowance_micros', int, (c) => c.notNull())
        .addColumn('topup_micros', int, (c) => c.notNull())
        .addColumn('period', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('idempotency_key', 'text', (c) => c.notNull())
        .addUniqueConstraint('ledger_entries_idempotency', ['account_id', 'idempotency_key'])
        .execute();
      await db.schema
        .createIndex('ledger_entries_account')
        .on('ledger_entries')
        .columns(['account_id', 'at', 'id'])
        .execute();
      // What the entries add up to, per account, written in the same transaction as each entry.
      await db.schema
        .createTable('balances')
        .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
        .addColumn('period', 'text')
        .addColumn('allowance_micros', int, (c) => c.notNull().defaultTo(0))
        .addColumn('allowance_used_micros', int, (c) => c.notNull().defaultTo(0))
        .addColumn('topup_micros', int, (c) => c.notNull().defaultTo(0))
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('email_daily_counts')
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('count', int, (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint('email_daily_counts_pk', ['account_id', 'day'])
        .execute();

      // Custom domains: unique platform-wide; a project deleted leaves its domains unlinked.
      await db.schema
        .createTable('domains')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('domain', 'text', (c) => c.notNull().unique())
        .addColumn('project_id', 'text', (c) => c.references('projects.id').onDelete('set null'))
        .addColumn('verified', int, (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('verified_at', 'text')
        .addColumn('checked_at', 'text')
        .addColumn('check_detail', 'text')
        .addColumn('check_attempts', int, (c) => c.notNull().defaultTo(0))
        .addColumn('next_check_at', 'text')
        .execute();
      await db.schema.createIndex('domains_account').on('domains').columns(['account_id', 'id']).execute();
      await db.schema.createIndex('domains_next_check').on('domains').column('next_check_at').execute();
    },
  },
  '0005_ai_keys': {
    async up(db: Kysely<unknown>) {
      // Own AI keys (API.md §3), one per account, AES-256-GCM sealed (src/server/ai/keys.ts): the
      // ciphertext, IV and tag in base64, and the masked form every read shows.
      await db.schema
        .createTable('ai_keys')
        .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('ciphertext', 'text', (c) => c.notNull())
        .addColumn('iv', 'text', (c) => c.notNull())
        .addColumn('tag', 'text', (c) => c.notNull())
        .addColumn('masked', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0006_ai_projects': {
    async up(db: Kysely<unknown>) {
      // Projects the AI builder made: which generator, and what the app needs before it can run (the
      // env vars and database of a needs_setup answer, as JSON). Their git history lives in
      // <dataDir>/ai-repos/<project_id>.
      await db.schema
        .createTable('ai_projects')
        .addColumn('project_id', 'text', (c) => c.primaryKey().references('projects.id').onDelete('cascade'))
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('generator', 'text', (c) => c.notNull())
        .addColumn('needs', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0007_app_databases': {
    async up(db: Kysely<unknown>) {
      // The PostgreSQL databases made for apps (POST /ai/deploy with a database). No foreign key: a row
      // outlives its project until the database is dropped, so a drop that failed (the server was
      // unreachable) is retried at the next start instead of leaving the database behind unnoticed.
      await db.schema
        .createTable('app_databases')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('app_databases_project').on('app_databases').column('project_id').execute();
    },
  },
  '0008_domain_ownership': {
    async up(db: Kysely<unknown>) {
      const int = intType(db);
      // Ownership of custom domains (API.md §5): several accounts may hold a name pending, one at most
      // verified (a partial unique index, so two proofs racing cannot both win), one row per account and
      // name. SQLite cannot drop a column's UNIQUE: the table is rebuilt without it.
      await db.schema
        .createTable('domains_next')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('domain', 'text', (c) => c.notNull())
        .addColumn('project_id', 'text', (c) => c.references('projects.id').onDelete('set null'))
        .addColumn('verified', int, (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('verified_at', 'text')
        .addColumn('checked_at', 'text')
        .addColumn('check_detail', 'text')
        .addColumn('check_attempts', int, (c) => c.notNull().defaultTo(0))
        .addColumn('next_check_at', 'text')
        .execute();
      // Domains verified before by their CNAME alone proved nothing about who owns them: they go back
      // to pending until their owner adds the TXT record.
      await sql`INSERT INTO domains_next (id, account_id, domain, project_id, verified, created_at,
          verified_at, checked_at, check_detail, check_attempts, next_check_at)
        SELECT id, account_id, domain, project_id, 0, created_at, NULL, checked_at,
          CASE WHEN verified = 1
            THEN 'verified before the TXT ownership record was required: add the TXT record, then verify again'
            ELSE check_detail END,
          check_attempts, next_check_at
        FROM domains`.execute(db);
      await db.schema.dropTable('domains').execute();
      await sql`ALTER TABLE domains_next RENAME TO domains`.execute(db);
      await db.schema.createIndex('domains_account').on('domains').columns(['account_id', 'id']).execute();
      await db.schema.createIndex('domains_next_check').on('domains').column('next_check_at').execute();
      await db.schema
        .createIndex('domains_account_domain')
        .unique()
        .on('domains')
        .columns(['account_id', 'domain'])
        .execute();
      await db.schema
        .createIndex('domains_verified_domain')
        .unique()
        .on('domains')
        .column('domain')
        .where(sql.ref('verified'), '=', 1)
        .execute();
      // The TXT value each account must publish for each name it adds: random, kept when the domain is
      // removed, so adding it again asks for the record already made.
      await db.schema
        .createTable('domain_challenges')
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('domain', 'text', (c) => c.notNull())
        .addColumn('token', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('domain_challenges_pk', ['account_id', 'domain'])
        .execute();
    },
  },
  '0010_idempotency': {
    async up(db: Kysely<unknown>) {
      const int = intType(db);
      // Requests named by an Idempotency-Key, per account and endpoint: reserved (`in_flight`) before any
      // work, then the stored answer (`done`) until `expires_at`. See src/server/billing/idempotency.ts.
      await db.schema
        .createTable('idempotency_keys')
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('endpoint', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('body_hash', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('status', int)
        .addColumn('response', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('idempotency_keys_pk', ['account_id', 'endpoint', 'key'])
        .execute();
      await db.schema
        .createIndex('idempotency_keys_expiry')
        .on('idempotency_keys')
        .column('expires_at')
        .execute();
    },
  },
  '0011_sandbox_users': {
    async up(db: Kysely<unknown>) {
      const int = intType(db);
      // The uid each project's commands run as in the sandbox of a root platform. Never reused: a row
      // stays after its project is deleted, so a new project never inherits files an old one left.
      await db.schema
        .createTable('sandbox_users')
        .addColumn('uid', int, (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0012_releases': {
    async up(db: Kysely<unknown>) {
      const int = intType(db);
      // Every deploy of a project, what it ran (the runtime's plan, the image, the env vars) and how it
      // ended: the history behind GET /projects/:id/releases and what a rollback starts again.
      await db.schema
        .createTable('releases')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('commit', 'text')
        .addColumn('image', 'text')
        .addColumn('env_vars', 'text', (c) => c.notNull())
        .addColumn('plan', 'text')
        .addColumn('kept', int, (c) => c.notNull().defaultTo(0))
        .addColumn('error', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('finished_at', 'text')
        .execute();
      await db.schema
        .createIndex('releases_by_project')
        .on('releases')
        .columns(['project_id', 'created_at'])
        .execute();
    },
  },
  '0013_registry_credentials': {
    async up(db: Kysely<unknown>) {
      // An image source's registry login ({ username, password } as JSON), sealed with the server
      // secret and bound to the project id (like repo_url_secret); null when the image is public.
      await db.schema.alterTable('projects').addColumn('registry_auth_secret', 'text').execute();
    },
  },
  '0014_tls': {
    async up(db: Kysely<unknown>) {
      const int = intType(db);
      // The ACME account of each directory this platform has used: its key sealed with the server
      // secret, and the account URL the CA gave it.
      await db.schema
        .createTable('acme_accounts')
        .addColumn('directory_url', 'text', (c) => c.primaryKey())
        .addColumn('key_secret', 'text', (c) => c.notNull())
        .addColumn('account_url', 'text')
        .addColumn('email', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      // One certificate per name it is for (a host, or `*.<domain>` for a wildcard): pending while the
      // CA is asked, issued with its chain and key (sealed), failed with the CA's reason and when to
      // try again.
      await db.schema
        .createTable('tls_certificates')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('challenge', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('cert_pem', 'text')
        .addColumn('key_secret', 'text')
        .addColumn('not_before', 'text')
        .addColumn('not_after', 'text')
        .addColumn('error', 'text')
        .addColumn('failures', int, (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      // HSTS is opt-in per custom domain: once sent, browsers refuse plain HTTP for it for a long time.
      await db.schema
        .alterTable('domains')
        .addColumn('hsts', int, (c) => c.notNull().defaultTo(0))
        .execute();
    },
  },
  // Several platform nodes on one database (cluster/): the nodes alive (each says so every few
  // seconds), and which node holds each connected tunnel, for the others to forward its traffic to.
  '0015_cluster': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('cluster_nodes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('started_at', 'text', (c) => c.notNull())
        .addColumn('seen_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('tunnel_holders')
        .addColumn('subdomain', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('tunnel_id', 'text', (c) => c.notNull())
        .addColumn('node_id', 'text', (c) => c.notNull())
        .addColumn('connected_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('tunnel_holders_node').on('tunnel_holders').column('node_id').execute();
    },
  },
  // The files a release's static sites serve, for the nodes of a cluster that did not build it
  // (runtime/release-files.ts): a gzipped tar in chunks, in order.
  '0016_release_files': {
    async up(db: Kysely<unknown>) {
      const int = intType(db);
      await db.schema
        .createTable('release_files')
        .addColumn('release_id', 'text', (c) => c.notNull().references('releases.id').onDelete('cascade'))
        .addColumn('seq', int, (c) => c.notNull())
        .addColumn('data', dialectOf(db) === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
        .addPrimaryKeyConstraint('release_files_pk', ['release_id', 'seq'])
        .execute();
    },
  },
  // Which node runs an in-flight metered request: another node frees its reservation once that node
  // is dead (a retry of a request a killed node was running is not answered 409 for an hour).
  '0017_idempotency_node': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('idempotency_keys')
        .addColumn('node_id', 'text', (c) => c.notNull().defaultTo(''))
        .execute();
    },
  },
  // An upload's archive, for the nodes of a cluster that did not receive it (store/chunks.ts).
  '0018_upload_chunks': {
    async up(db: Kysely<unknown>) {
      const int = intType(db);
      await db.schema
        .createTable('upload_chunks')
        .addColumn('upload_id', 'text', (c) => c.notNull().references('uploads.id').onDelete('cascade'))
        .addColumn('seq', int, (c) => c.notNull())
        .addColumn('data', dialectOf(db) === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
        .addPrimaryKeyConstraint('upload_chunks_pk', ['upload_id', 'seq'])
        .execute();
    },
  },
  // The deploy under way for each project in a cluster, and the node running it: another node ends
  // those of a node that died (their project would say `building` for ever, holding a build slot).
  '0019_project_deploys': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('project_deploys')
        .addColumn('project_id', 'text', (c) => c.primaryKey().references('projects.id').onDelete('cascade'))
        .addColumn('build_id', 'text', (c) => c.notNull())
        .addColumn('node_id', 'text', (c) => c.notNull())
        .addColumn('started_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  // Which node copies the output of each serving release's Swarm service into the project log, and up
  // to which line: another node takes the copying over from there when that node dies.
  '0020_release_output_copiers': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('release_output_copiers')
        .addColumn('release_id', 'text', (c) => c.primaryKey().references('releases.id').onDelete('cascade'))
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('node_id', 'text', (c) => c.notNull())
        .addColumn('since_at', 'text', (c) => c.notNull())
        .addColumn('copied_until', 'text')
        .execute();
    },
  },
  // The AI builder's repositories, shared by the nodes of a cluster (ai/shared-repos.ts): a git bundle
  // of each in chunks, and the head it holds.
  '0021_ai_repo_chunks': {
    async up(db: Kysely<unknown>) {
      const int = intType(db);
      await db.schema
        .createTable('ai_repo_chunks')
        .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('seq', int, (c) => c.notNull())
        .addColumn('data', dialectOf(db) === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
        .addPrimaryKeyConstraint('ai_repo_chunks_pk', ['project_id', 'seq'])
        .execute();
      await db.schema.alterTable('ai_projects').addColumn('repo_head', 'text').execute();
    },
  },
  // ACME challenges in a cluster (tls/challenges.ts): the CA's check may reach any node, not only the
  // one that ordered.
  '0022_acme_challenges': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('acme_challenges')
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('domain', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('acme_challenges_pk', ['kind', 'key', 'value'])
        .execute();
    },
  },
  // Deleted projects whose images the platform's registry may still hold (runtime.ts, remove): the
  // repository of each is emptied at the next start.
  '0023_registry_leftovers': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('registry_leftovers')
        .addColumn('project_id', 'text', (c) => c.primaryKey())
        .addColumn('deleted_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  // On-demand certificate orders counted per account in the store (tls/certificates.ts), not in each
  // node's memory: the daily budget holds across a cluster's nodes and through restarts.
  '0024_certificate_orders': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('certificate_orders')
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('host', 'text', (c) => c.notNull())
        .addColumn('ordered_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('certificate_orders_account')
        .on('certificate_orders')
        .columns(['account_id', 'ordered_at'])
        .execute();
    },
  },
  // An account's open streams counted per node in a cluster (cluster/streams.ts): its stream limit is
  // the account's across the nodes.
  '0025_account_streams': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('account_streams')
        .addColumn('node_id', 'text', (c) => c.notNull())
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('count', intType(db), (c) => c.notNull())
        .addPrimaryKeyConstraint('account_streams_pk', ['node_id', 'account_id'])
        .execute();
    },
  },
  // The userinfo of repo_url (`https://user:TOKEN@…`) moves to this column, sealed with the server
  // secret. A migration cannot read that secret: ProjectService.sealStoredRepoCredentials() seals the
  // rows stored before this column, at each start, before anything reads them.
  '0009_repo_url_secret': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('projects').addColumn('repo_url_secret', 'text').execute();
    },
  },
};
