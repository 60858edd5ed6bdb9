// Databases for apps (`POST /ai/deploy` with `database: "postgres"`): one database and one login role per
// project on the PostgreSQL server of WHARF_POSTGRES_URL (an admin connection), the role owning its
// database and the public kept out of it. Asking again for the same project keeps the data and gives
// the role a new password. The app receives the connection URL as DATABASE_URL.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { ApiError } from '../errors.js';
import { randomBase62 } from '../ids.js';

const CONNECT_TIMEOUT_MS = 10_000;

/** The database (and role) name of a project: lowercase, so it needs no quoting in psql either. */
export function databaseName(projectId: string): string {
  const tag = createHash('sha256').update(projectId).digest('hex').slice(0, 6);
  return `wharf_${projectId.toLowerCase().replace(/[^a-z0-9_]/g, '_')}_${tag}`;
}

/** Creates (or re-keys) the project's database and role; returns the app's DATABASE_URL. */
export async function provisionDatabase(adminUrl: string | null, projectId: string): Promise<string> {
  if (!adminUrl) {
    throw new ApiError(
      'unavailable',
      'no PostgreSQL server is configured: start the platform with WHARF_POSTGRES_URL=postgres://user:password@host:5432/postgres (a role allowed to create databases and roles)',
    );
  }
  const admin = new URL(adminUrl);
  const where = `${admin.hostname || 'localhost'}:${admin.port || '5432'}`;
  const name = databaseName(projectId);
  const password = randomBase62(32);
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  // A dropped connection after connect() surfaces here, not as an unhandled 'error' event.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    throw new ApiError(
      'unavailable',
      `could not connect to the PostgreSQL server at ${where} (WHARF_POSTGRES_URL): ${(error as Error).message}`,
    );
  }
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
      `the PostgreSQL server at ${where} refused to create the app's database: ${(error as Error).message} (the WHARF_POSTGRES_URL role needs CREATEDB and CREATEROLE)`,
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
