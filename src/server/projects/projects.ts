// Projects of API.md §4: the rules the schema cannot see (reserved and taken host names, service host
// lengths: project-hosts.ts), storage, and the project object with its URLs. Every query is scoped to
// the calling account; another account's project is simply not found.
//
// Every write to a project goes through this class: it keeps each account's serialized project list
// (with its ETag) so that the list, which the app polls for live status, costs no query or JSON work
// until something changes.
//
// Credentials in a repo_url (`https://user:TOKEN@host/…`) are never stored or shown as given: the
// column holds the masked URL (`https://***@host/…`, what every reader sees) and the userinfo is
// sealed apart with the own AI keys' cipher (AES-256-GCM under the server secret), bound to the
// project's id; cloneUrl() puts it back for the clone alone.
import { sql } from 'kysely';
import { createHash } from 'node:crypto';
import {
  type BuildConfig as BuildConfigType,
  type CreateProjectRequest,
  type DeploySource,
  EMPTY_BUILD_CONFIG,
  type EnvVars,
  normalizeBuildConfig,
  type Project,
  type ProjectStatus,
  type RegistryCredentials,
  type RegistryCredentialsRequest,
} from '../../shared/api/projects.js';
import { serviceLabel } from '../../shared/dns-label.js';
import { type PlatformConfig, edgeUrl } from '../config.js';
import { ApiError, notFound, validationError } from '../errors.js';
import { newId } from '../ids.js';
import { type Store, dialectOf } from '../store/open.js';
import { deriveKeyEncryptionKey, openAiKey, sealAiKey, type SealedKey } from '../ai/keys.js';
import { maskRepoUrl, refusedRepoTarget, refusedRepoUrl, splitUserinfo, unmaskRepoUrl } from './repo-url.js';
import type { ProjectsTable } from '../store/schema.js';
import { refusedServicePorts } from './ports.js';
import {
  assertHostFree,
  checkServiceHosts,
  checkSubdomain,
  claimHost,
  claimServiceHosts,
} from './project-hosts.js';
import { accountLimits } from '../limits.js';

export interface SerializedList {
  json: string;
  etag: string;
}

/** What another part of the platform does when a project is deleted (its rows are gone by then). */
export type ProjectDeleteHook = (projectId: string, accountId: string) => void | Promise<void>;

export class ProjectService {
  private readonly listCache = new Map<string, SerializedList>();
  /** Bumped by every change: a list read while one was being written is not kept. */
  private listGeneration = 0;
  /**
   * Other nodes write to the same database without telling this one in time for a read that follows
   * at once (NOTIFY arrives later), so in a cluster the list is read every time.
   */
  private readonly cacheLists: boolean;
  private readonly deleteHooks: ProjectDeleteHook[] = [];
  private readonly kek: Buffer;

  constructor(
    private readonly db: Store,
    private readonly config: PlatformConfig,
    secret: Uint8Array | string,
  ) {
    this.kek = deriveKeyEncryptionKey(secret);
    this.cacheLists = config.nodeUrl === null;
  }

  /** Called once a project's hosts were claimed (created, services changed): certificates follow. */
  onHostsChanged: (() => void) | null = null;

  /**
   * Seals the userinfo of repo_urls stored before it was kept apart (migration 0009), masks it in the
   * log lines and deploy errors of those projects (older deploys logged the URL as given), and
   * overwrites the freed bytes so that the database file no longer holds it. Run at start, before
   * serving.
   */
  async sealStoredRepoCredentials(): Promise<number> {
    const rows = await this.db
      .selectFrom('projects')
      .select(['id', 'repo_url'])
      .where('repo_url', 'like', '%@%')
      .where('repo_url_secret', 'is', null)
      .execute();
    const legacy = rows.filter(
      (row) => row.repo_url !== null && splitUserinfo(row.repo_url).userinfo !== null,
    );
    if (legacy.length === 0) return 0;
    // SQLite: the old values' bytes are zeroed in the file as they are replaced, and the WAL emptied
    // after. (PostgreSQL keeps old row versions until VACUUM: its operator vacuums the table.)
    const sqlite = dialectOf(this.db) === 'sqlite';
    if (sqlite) await sql`PRAGMA secure_delete = ON`.execute(this.db);
    try {
      for (const row of legacy) {
        const sealed = this.sealUserinfo(row.id, row.repo_url!);
        const exposed = `${splitUserinfo(row.repo_url!).userinfo!}@`;
        await this.db.transaction().execute(async (trx) => {
          await trx
            .updateTable('projects')
            .set({
              repo_url: sealed.repo_url,
              repo_url_secret: sealed.repo_url_secret,
              last_deploy_error: sql<string | null>`replace(last_deploy_error, ${exposed}, '***@')`,
            })
            .where('id', '=', row.id)
            .execute();
          await trx
            .updateTable('project_logs')
            .set({ line: sql<string>`replace(line, ${exposed}, '***@')` })
            .where('project_id', '=', row.id)
            // The lines that hold it (instr() is SQLite's, strpos() PostgreSQL's; this is both's).
            .where(sql<boolean>`replace(line, ${exposed}, '') <> line`)
            .execute();
        });
      }
      if (sqlite) await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(this.db);
    } finally {
      if (sqlite) await sql`PRAGMA secure_delete = OFF`.execute(this.db);
    }
    this.listGeneration++;
    this.listCache.clear();
    return legacy.length;
  }

  /** The URL to clone: repo_url with its credentials, for git alone (never logged, stored or shown). */
  cloneUrl(row: Pick<ProjectsTable, 'id' | 'repo_url' | 'repo_url_secret'>): string {
    if (row.repo_url === null) throw new Error(`project ${row.id} has no repo_url`);
    if (row.repo_url_secret === null) return row.repo_url;
    let userinfo: string;
    try {
      userinfo = openAiKey(this.kek, repoSecretContext(row.id), JSON.parse(row.repo_url_secret) as SealedKey);
    } catch {
      throw new ApiError(
        'unavailable',
        'the credentials of repo_url can no longer be decrypted (the server secret changed since the project was created): create the project again with its repo_url',
      );
    }
    return unmaskRepoUrl(row.repo_url, userinfo);
  }

  /** Saves the login an image source is pulled with (sealed, bound to the project). */
  async setRegistryCredentials(
    accountId: string,
    id: string,
    body: RegistryCredentialsRequest,
  ): Promise<RegistryCredentials> {
    const row = await this.imageRow(accountId, id);
    const sealed = sealAiKey(this.kek, registrySecretContext(id), JSON.stringify(body));
    await this.db
      .updateTable('projects')
      .set({ registry_auth_secret: JSON.stringify(sealed), updated_at: new Date().toISOString() })
      .where('id', '=', id)
      .execute();
    return { registry: registryOf(row.image!), username: body.username };
  }

  async getRegistryCredentials(accountId: string, id: string): Promise<RegistryCredentials> {
    const row = await this.imageRow(accountId, id);
    const auth = this.registryAuth(row);
    if (!auth) throw notFound('registry credentials for this project');
    return { registry: registryOf(row.image!), username: auth.username };
  }

  async deleteRegistryCredentials(accountId: string, id: string): Promise<void> {
    await this.imageRow(accountId, id);
    await this.db.updateTable('projects').set({ registry_auth_secret: null }).where('id', '=', id).execute();
  }

  /** The login to pull an image source with, for the engine alone (never logged, stored or shown). */
  registryAuth(
    row: Pick<ProjectsTable, 'id' | 'image' | 'registry_auth_secret'>,
  ): { username: string; password: string; serveraddress: string } | null {
    if (row.registry_auth_secret === null || row.image === null) return null;
    let login: RegistryCredentialsRequest;
    try {
      login = JSON.parse(
        openAiKey(this.kek, registrySecretContext(row.id), JSON.parse(row.registry_auth_secret) as SealedKey),
      ) as RegistryCredentialsRequest;
    } catch {
      throw new ApiError(
        'unavailable',
        'the registry credentials can no longer be decrypted (the server secret changed since they were saved): save them again',
      );
    }
    return { ...login, serveraddress: registryAddress(registryOf(row.image)) };
  }

  private async imageRow(accountId: string, id: string): Promise<ProjectsTable> {
    const row = await this.row(accountId, id);
    if (row.deploy_source !== 'image' || row.image === null) {
      throw new ApiError(
        'conflict',
        'registry credentials are for image sources only: this project builds its image',
      );
    }
    return row;
  }

  private sealUserinfo(projectId: string, url: string): Pick<ProjectsTable, 'repo_url' | 'repo_url_secret'> {
    const { userinfo } = splitUserinfo(url);
    if (userinfo === null) return { repo_url: url, repo_url_secret: null };
    const sealed = sealAiKey(this.kek, repoSecretContext(projectId), userinfo);
    return { repo_url: maskRepoUrl(url), repo_url_secret: JSON.stringify(sealed) };
  }

  /** The account's project list as JSON, newest first, with a strong ETag. */
  async listJson(accountId: string): Promise<SerializedList> {
    const cached = this.listCache.get(accountId);
    if (cached) return cached;
    const generation = this.listGeneration;
    const json = JSON.stringify(await this.list(accountId));
    const entry = { json, etag: `"${createHash('sha256').update(json).digest('base64url').slice(0, 27)}"` };
    // A change committed while the rows were read may be missing from them: such a list is not kept.
    if (this.cacheLists && generation === this.listGeneration) this.listCache.set(accountId, entry);
    return entry;
  }

  async list(accountId: string): Promise<Project[]> {
    const rows = await this.db
      .selectFrom('projects')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('id', 'desc')
      .execute();
    return rows.map((row) => this.toProject(row));
  }

  async get(accountId: string, id: string): Promise<Project> {
    return this.toProject(await this.row(accountId, id));
  }

  async row(accountId: string, id: string): Promise<ProjectsTable> {
    const row = await this.db
      .selectFrom('projects')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!row) throw notFound(`project ${id}`);
    return row;
  }

  /**
   * `options.ownRepo`: the caller made `repo_url` itself (the AI builder's repository in the data
   * folder), so it is not held to the rule for the repositories accounts name.
   */
  /**
   * Creates a project (from the API, the AI builder or the agent alike), within the account's project
   * limit: one creation at a time per account, so two at once cannot both take the last slot.
   */
  create(
    accountId: string,
    body: CreateProjectRequest,
    options: { ownRepo?: boolean } = {},
  ): Promise<Project> {
    return accountLimits(this.config).createProject(this.db, accountId, () =>
      this.createNow(accountId, body, options),
    );
  }

  private async createNow(
    accountId: string,
    body: CreateProjectRequest,
    options: { ownRepo?: boolean },
  ): Promise<Project> {
    const buildConfig = normalizeBuildConfig(body.build_config ?? EMPTY_BUILD_CONFIG);
    const refused =
      body.repo_url !== undefined && !options.ownRepo ? refusedRepoUrl(this.config, body.repo_url) : null;
    if (refused) throw validationError([{ path: 'repo_url', message: refused }]);
    const target =
      body.repo_url !== undefined && !options.ownRepo
        ? await refusedRepoTarget(this.config, body.repo_url)
        : null;
    if (target) throw validationError([{ path: 'repo_url', message: target }]);
    checkSubdomain(this.config, body.subdomain);
    checkServiceHosts(body.subdomain, buildConfig, ['build_config']);
    const source: DeploySource =
      body.image !== undefined ? 'image' : body.deploy_source === 'upload' ? 'upload' : 'git';
    const portErrors = await refusedServicePorts(this.db, null, buildConfig, ['build_config'], source);
    if (portErrors.length > 0) throw validationError(portErrors);
    const now = new Date().toISOString();
    const id = newId('prj');
    const repo =
      body.repo_url === undefined
        ? { repo_url: null, repo_url_secret: null }
        : this.sealUserinfo(id, body.repo_url);
    const row: ProjectsTable = {
      id,
      account_id: accountId,
      name: body.name,
      subdomain: body.subdomain,
      deploy_source: source,
      ...repo,
      git_host_repo: body.git_host_repo ?? null,
      branch: source === 'git' ? (body.branch ?? 'main') : null,
      image: body.image ?? null,
      env_vars: JSON.stringify(body.env_vars ?? {}),
      build_config: JSON.stringify(buildConfig),
      status: 'created' satisfies ProjectStatus,
      created_at: now,
      updated_at: now,
      last_deploy_at: null,
      release: null,
      last_deploy_error: null,
      registry_auth_secret: null,
    };
    await this.changing(accountId, () =>
      this.db.transaction().execute(async (trx) => {
        await assertHostFree(trx, body.subdomain, row.id, `the subdomain "${body.subdomain}" is taken`);
        await trx.insertInto('projects').values(row).execute();
        await claimHost(trx, body.subdomain, row.id, `the subdomain "${body.subdomain}" is taken`);
        await claimServiceHosts(trx, row.id, body.subdomain, buildConfig);
      }),
    );
    this.onHostsChanged?.();
    return this.toProject(row);
  }

  async setEnvVars(accountId: string, id: string, envVars: EnvVars): Promise<Project> {
    const row = await this.row(accountId, id);
    const updated = { ...row, env_vars: JSON.stringify(envVars), updated_at: new Date().toISOString() };
    await this.changing(accountId, () =>
      this.db
        .updateTable('projects')
        .set({ env_vars: updated.env_vars, updated_at: updated.updated_at })
        .where('id', '=', id)
        .execute(),
    );
    return this.toProject(updated);
  }

  async setBuildConfig(accountId: string, id: string, given: BuildConfigType): Promise<Project> {
    const config = normalizeBuildConfig(given);
    const row = await this.row(accountId, id);
    checkServiceHosts(row.subdomain, config, []);
    const portErrors = await refusedServicePorts(this.db, id, config, [], row.deploy_source as DeploySource);
    if (portErrors.length > 0) throw validationError(portErrors);
    const updated = { ...row, build_config: JSON.stringify(config), updated_at: new Date().toISOString() };
    await this.changing(accountId, () =>
      this.db.transaction().execute(async (trx) => {
        await trx
          .deleteFrom('project_hosts')
          .where('project_id', '=', id)
          .where('label', '!=', row.subdomain)
          .execute();
        await claimServiceHosts(trx, id, row.subdomain, config);
        await trx
          .updateTable('projects')
          .set({ build_config: updated.build_config, updated_at: updated.updated_at })
          .where('id', '=', id)
          .execute();
      }),
    );
    this.onHostsChanged?.();
    return this.toProject(updated);
  }

  /**
   * What the runtime records about a project: its status, serving release and last deploy. Not an edit
   * by the user, so updated_at stays as it is.
   */
  /** Drops the account's cached project list (after a change made outside this service). */
  forgetList(accountId: string): void {
    this.listGeneration++;
    this.listCache.delete(accountId);
  }

  /** Runs a write to the account's projects; the cached list goes once it is done (or failed). */
  private async changing<T>(accountId: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } finally {
      this.forgetList(accountId);
    }
  }

  /**
   * The runtime's side of a project (runtime/status.ts is the only caller): applied only while its
   * status is one of `from`; false when it was not (or the project is gone).
   */
  async setRuntimeState(
    id: string,
    patch: Partial<Pick<ProjectsTable, 'status' | 'release' | 'last_deploy_at' | 'last_deploy_error'>>,
    from: readonly string[],
  ): Promise<boolean> {
    const row = await this.db
      .updateTable('projects')
      .set(patch)
      .where('id', '=', id)
      .where('status', 'in', [...from])
      .returning('account_id')
      .executeTakeFirst();
    if (row) this.forgetList(row.account_id);
    return row !== undefined;
  }

  /** Registers cleanup to run each time a project is deleted, in the order registered. */
  onDelete(hook: ProjectDeleteHook): void {
    this.deleteHooks.push(hook);
  }

  /**
   * Deletes the project's rows, then runs the delete hooks (e.g. the AI builder removes the project's
   * repository); the caller removes the files it keeps itself.
   */
  async delete(accountId: string, id: string): Promise<ProjectsTable> {
    const row = await this.row(accountId, id);
    await this.changing(accountId, () => this.db.deleteFrom('projects').where('id', '=', id).execute());
    for (const hook of this.deleteHooks) await hook(row.id, accountId);
    return row;
  }

  toProject(row: ProjectsTable): Project {
    // Stored configs were validated (and given their defaults) when they were written.
    const stored = JSON.parse(row.build_config) as BuildConfigType;
    // Configs stored before port_override (or replicas) existed lack it.
    const buildConfig = {
      ...stored,
      port_override: stored.port_override ?? null,
      replicas: stored.replicas ?? 1,
    };
    const host = (label: string) => `${label}.${this.config.baseDomain}`;
    return {
      id: row.id,
      name: row.name,
      subdomain: row.subdomain,
      repo_url: row.repo_url === null ? '' : maskRepoUrl(row.repo_url),
      git_host_repo: row.git_host_repo ?? '',
      branch: row.branch ?? '',
      image: row.image ?? '',
      deploy_source: row.deploy_source as DeploySource,
      env_vars: JSON.parse(row.env_vars) as Record<string, string>,
      build_config: buildConfig,
      status: row.status as ProjectStatus,
      url: edgeUrl(this.config, host(row.subdomain)),
      service_urls: Object.fromEntries(
        // Workers serve no HTTP, so they have no URL.
        buildConfig.services
          .filter((s) => s.kind !== 'worker')
          .map((s) => [s.name, edgeUrl(this.config, host(serviceLabel(row.subdomain, s.name)))]),
      ),
      created_at: row.created_at,
      updated_at: row.updated_at,
      last_deploy_at: row.last_deploy_at,
      last_deploy_error: row.last_deploy_error,
    };
  }
}

/** The registry credentials' associated data: bound to the project like repo_url's. */
function registrySecretContext(projectId: string): string {
  return `registry:${projectId}`;
}

/** The registry of an image reference: its first part when that names a host, else Docker Hub. */
export function registryOf(image: string): string {
  const slash = image.indexOf('/');
  const first = slash < 0 ? '' : image.slice(0, slash);
  return first.includes('.') || first.includes(':') || first === 'localhost' ? first : 'docker.io';
}

/** What the engine expects as `serveraddress` for a registry (Docker Hub's is historical). */
function registryAddress(registry: string): string {
  return registry === 'docker.io' ? 'https://index.docker.io/v1/' : registry;
}

/** The associated data a repo_url's sealed userinfo is bound to: copied to another row, it fails. */
function repoSecretContext(projectId: string): string {
  return `repo_url:${projectId}`;
}
