// Schema migrations, kept in code so the platform can migrate its own database on start.
import type { Kysely, Migration } from 'kysely';

export const migrations: Record<string, Migration> = {
  '0001_accounts_keys_projects': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('accounts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('email', 'text', (c) => c.notNull().unique())
        .addColumn('email_verified', 'integer', (c) => c.notNull().defaultTo(0))
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
        .addColumn('size_bytes', 'integer', (c) => c.notNull())
        .addColumn('files', 'integer', (c) => c.notNull())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('uploaded_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('project_logs')
        .addColumn('seq', 'integer', (c) => c.primaryKey().autoIncrement())
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
};
