// Databases for apps (`POST /ai/deploy` with `database: "postgres"`): one database and one login role per
// project on the PostgreSQL server of WHARF_POSTGRES_URL (an admin connection), the role owning its
// database and the public kept out of it. Asking again for the same project keeps the data and gives
// the role a new password. The app receives the connection URL as DATABASE_URL. Each database is
// recorded in the store; deleting the project drops it with its role, and a drop that could not be done
// then (the server was unreachable) is done at the next start.
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { ApiError } from '../errors.js';
import { randomBase62 } from '../ids.js';
import type { PlatformConfig } from '../config.js';
import type { Store } from '../store/open.js';

const CONNECT_TIMEOUT_MS = 10_000;
const NO_SERVER =
  'no PostgreSQL server is configured: start the platform with WHARF_POSTGRES_URL=postgres://user:password@host:5432/postgres (a role allowed to create databases and roles)';

/** The database (and role) name of a project: lowercase, so it needs no quoting in psql either. */
export function databaseName(projectId: string): string {
  const tag = createHash('sha256').update(projectId).digest('hex').slice(0, 6);
  return `wharf_${projectId.toLowerCase().replace(/[^a-z0-9_]/g, '_')}_${tag}`;
}

export interface AppDatabasesOptions {
  /** A background drop that failed (it is tried again at the next start). */
  onError?: (error: Error) => void;
}

export class AppDatabases {
  constructor(
    private readonly db: Store,
    private readonly config: Pick<PlatformConfig, 'ai'>,
    private readonly options: AppDatabasesOptions = {},
  ) {}

  /** WHARF_POSTGRES_URL, read at each use. */
  private get adminUrl(): string | null {
    return this.config.ai.postgresUrl;
  }

  /** Creates (or re-keys) the project's database and role; returns the app's DATABASE_URL. */
  async provision(projectId: string): Promise<string> {
    const adminUrl = this.adminUrl;
    if (!adminUrl) throw new ApiError('unavailable', NO_SERVER);
    const name = databaseName(projectId);
    // Recorded first: a database made just before a crash is still one this platform drops later.
    await this.db
      .insertInto('app_databases')
      .values({ name, project_id: projectId, created_at: new Date().toISOString() })
      .onConflict((c) => c.doNothing())
      .execute();
    return provisionDatabase(adminUrl, projectId);
  }

  /** Drops the databases made for a deleted project, in the background; failures are retried at start. */
  forget(projectId: string): void {
    void this.dropWhere(projectId);
  }

  /** Drops the databases of projects deleted while their drop could not be done. Run once at start. */
  async sweep(): Promise<void> {
    await this.dropWhere(null);
  }

  private async dropWhere(projectId: string | null): Promise<void> {
    try {
      let query = this.db
        .selectFrom('app_databases')
        .select(['name', 'project_id'])
        .where('project_id', 'not in', (eb) => eb.selectFrom('projects').select('id'));
      if (projectId !== null) query = query.where('project_id', '=', projectId);
      const rows = await query.execute();
      if (rows.length === 0) return;
      const adminUrl = this.adminUrl;
      if (!adminUrl) {
        throw new Error(
          `${rows.length} app database(s) of deleted projects remain (${rows.map((r) => r.name).join(', ')}): start the platform with WHARF_POSTGRES_URL to drop them`,
        );
      }
      for (const row of rows) {
        await dropDatabase(adminUrl, row.name);
        await this.db.deleteFrom('app_databases').where('name', '=', row.name).execute();
      }
    } catch (error) {
      this.options.onError?.(error as Error);
    }
  }
}

/** `host:port` of the admin URL, for messages (never its credentials). */
function serverOf(adminUrl: string): string {
  const admin = new URL(adminUrl);
  return `${admin.hostname || 'localhost'}:${admin.port || '5432'}`;
}

async function connectAdmin(adminUrl: string): Promise<pg.Client> {
  // pg loads with the first database asked for: most platforms never ask.
  const { Client } = (await import('pg')).default;
  const client = new Client({ connectionString: adminUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  // A dropped connection after connect() surfaces here, not as an unhandled 'error' event.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    throw new ApiError(
      'unavailable',
      `could not connect to the PostgreSQL server at ${serverOf(adminUrl)} (WHARF_POSTGRES_URL): ${(error as Error).message}`,
    );
  }
  return client;
}

/** Creates (or re-keys) the project's database and role; returns the app's DATABASE_URL. */
async function provisionDatabase(adminUrl: string, projectId: string): Promise<string> {
  const name = databaseName(projectId);
  const password = randomBase62(32);
  const client = await connectAdmin(adminUrl);
  try {
    const role = client.escapeIdentifier(name);
    const secret = client.escapeLiteral(password);
    const roleExists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name]);
    await client.query(
      roleExists.rowCount
        ? `ALTER ROLE ${role} WITH LOGIN PASSWORD ${secret}`
        : `CREATE ROLE ${role} WITH LOGIN PASSWORD ${secret}`,
    );
    const dbExists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!dbExists.rowCount) await client.query(`CREATE DATABASE ${role} OWNER ${role}`);
    await client.query(`REVOKE ALL ON DATABASE ${role} FROM PUBLIC`);
    await client.query(`GRANT ALL ON DATABASE ${role} TO ${role}`);
  } catch (error) {
    throw new ApiError(
      'unavailable',
      `the PostgreSQL server at ${serverOf(adminUrl)} refused to create the app's database: ${(error as Error).message} (the WHARF_POSTGRES_URL role needs CREATEDB and CREATEROLE)`,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
  const url = new URL(adminUrl);
  url.username = name;
  url.password = password;
  url.pathname = `/${name}`;
  return url.href;
}

/** Drops a database (closing its connections: the app using it is stopped already) and its role. */
async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const client = await connectAdmin(adminUrl);
  try {
    const role = client.escapeIdentifier(name);
    await client.query(`DROP DATABASE IF EXISTS ${role} WITH (FORCE)`);
    await client.query(`DROP ROLE IF EXISTS ${role}`);
  } catch (error) {
    throw new Error(
      `could not drop the app database ${name} on ${serverOf(adminUrl)}: ${(error as Error).message}`,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}
