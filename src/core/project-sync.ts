// Project sync: the platform's project list kept in the Mirror, so the app shows it offline; asked
// again (conditionally, with the list's ETag) every few seconds while someone listens, sooner while a
// project builds; a change told as a `projects` event, each deploy that ended as `deploy-finished`
// (deploy-watch.ts), and the list read from the Mirror, marked `cache`, when the platform is gone.
import type { Project } from '../shared/api/index.js';
import type { DeployFinishedEvent, ProjectList, ProjectView } from '../shared/bridge.js';
import type { PlatformClient } from './api-client/platform-client.js';
import { DeployWatch } from './deploy-watch.js';
import type { Mirror } from './mirror/mirror.js';
import { type PlatformConnection, isOffline, notConfigured } from './platform-connection.js';

export interface ProjectSyncOptions {
  platform: PlatformConnection;
  mirror: Mirror;
  /** The list changed, or now comes from the cache. */
  changed(list: ProjectList): void;
  finished(event: DeployFinishedEvent): void;
  /** Whether anyone shows the list (the switch to the cache is told only to them). */
  watched(): boolean;
  /** How often to refresh while polling (default 3 s). */
  pollIntervalMs?: number;
  /** How often while a project is building (default 1 s, at most pollIntervalMs). */
  buildingPollIntervalMs?: number;
}

export class ProjectSync {
  private readonly deploys = new DeployWatch();
  /** The list's ETag as last answered; `offline` once the cache was told instead. */
  private listEtag: string | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: ProjectSyncOptions) {}

  /** The list, live, or from the Mirror when the platform cannot be reached. */
  async list(): Promise<ProjectList> {
    try {
      const { projects, source, fetchedAt, changed } = await this.fetch(false);
      if (changed) this.observe(projects, true);
      return { projects, source, fetchedAt };
    } catch (error) {
      if (!isOffline(error)) throw error;
      // A platform never reached has nothing cached: an empty copy from no time, not another's.
      const scope = this.options.platform.cachedScope();
      const cached = scope ? this.options.mirror.projects(scope) : { projects: [], fetchedAt: null };
      return { projects: cached.projects, source: 'cache', fetchedAt: cached.fetchedAt };
    }
  }

  /** One project with its logs, live, or as the Mirror last saw it when the platform cannot be reached. */
  async get(id: string): Promise<ProjectView> {
    const { platform, mirror } = this.options;
    try {
      const detail = await platform.call((client) => client.getProject(id));
      const scope = await platform.scope();
      if (scope) mirror.upsertProject(scope, detail.project);
      this.observe([detail.project], false);
      return { ...detail, source: 'live' as const, fetchedAt: new Date().toISOString() };
    } catch (error) {
      const scope = platform.cachedScope();
      const cached = isOffline(error) && scope ? mirror.project(scope, id) : null;
      if (!cached || !scope) throw error;
      return {
        project: cached,
        logs: [],
        source: 'cache' as const,
        fetchedAt: mirror.fetchedAt(scope, 'projects'),
      };
    }
  }

  /** A call that answers with a project: the project kept, the list refreshed, its deploy watched. */
  async write(call: (client: PlatformClient) => Promise<Project>): Promise<Project> {
    const project = await this.options.platform.call(call);
    await this.remember(project);
    return project;
  }

  /** A project the platform just answered with: stored in the Mirror, the list refreshed, its deploy watched. */
  async remember(project: Project): Promise<void> {
    const scope = await this.options.platform.scope();
    if (scope) this.options.mirror.upsertProject(scope, project);
    await this.refresh();
    this.observe([project], false);
  }

  /** A project deleted on the platform: gone from the Mirror and the list. */
  async removed(id: string): Promise<void> {
    const scope = await this.options.platform.scope();
    if (scope) this.options.mirror.removeProject(scope, id);
    await this.refresh();
    this.deploys.forget(id);
  }

  /** Refreshes the list and tells listeners when it changed; failures only change the status. */
  async refresh(): Promise<void> {
    try {
      const list = await this.fetch(true);
      if (list.changed) {
        this.options.changed({ projects: list.projects, source: 'live', fetchedAt: list.fetchedAt });
        this.observe(list.projects, true);
      }
    } catch (error) {
      if (!isOffline(error)) return;
      const scope = this.options.platform.cachedScope();
      if (scope && this.options.watched() && this.listEtag !== 'offline') {
        // Tell the UI once that what it shows now comes from the cache.
        this.listEtag = 'offline';
        const cached = this.options.mirror.projects(scope);
        this.options.changed({ projects: cached.projects, source: 'cache', fetchedAt: cached.fetchedAt });
      }
    }
  }

  /** Another platform was saved: nothing seen on the old one counts. */
  reset(): void {
    this.listEtag = null;
    this.deploys.clear();
  }

  /** Refreshes every few seconds (sooner while a project builds) until `stopPolling`. */
  startPolling(): void {
    if (this.pollTimer || this.stopped) return;
    const base = this.options.pollIntervalMs ?? 3000;
    const whileBuilding = Math.min(base, this.options.buildingPollIntervalMs ?? 1000);
    const tick = () => {
      this.pollTimer = setTimeout(
        () => {
          this.polling = this.refresh().finally(() => {
            this.polling = null;
            if (this.pollTimer && !this.stopped) tick();
          });
        },
        this.deploys.building ? whileBuilding : base,
      );
      this.pollTimer.unref();
    };
    tick();
  }

  stopPolling(): void {
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = null;
  }

  /** Stops polling for good; resolves once a refresh under way has ended. */
  async close(): Promise<void> {
    this.stopped = true;
    this.stopPolling();
    await this.polling?.catch(() => undefined);
  }

  /** Fetches the list (conditionally when `conditional`), stores it, and says whether it changed. */
  private async fetch(conditional: boolean): Promise<ProjectList & { changed: boolean }> {
    const { platform, mirror } = this.options;
    const scope = await platform.scope();
    if (!scope) throw notConfigured(platform.status.platformUrl);
    const result = await platform.call((client) => client.listProjects(conditional ? this.listEtag : null));
    const fetchedAt = new Date().toISOString();
    if (result.notModified) return { ...mirror.projects(scope), source: 'live', fetchedAt, changed: false };
    const changed = result.etag === null || result.etag !== this.listEtag;
    this.listEtag = result.etag;
    mirror.replaceProjects(scope, result.projects, fetchedAt);
    return { projects: result.projects, source: 'live', fetchedAt, changed };
  }

  private observe(projects: readonly Project[], complete: boolean): void {
    for (const event of this.deploys.observe(projects, complete)) this.options.finished(event);
  }
}
