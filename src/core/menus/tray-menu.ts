// The tray menu as plain data: what the desktop app's tray shows (online state, the projects with their
// status, a deploy action and their URLs, quit), built from what the Engine reports. No Electron here: src/main/tray.ts turns
// this model into an Electron Menu, and the model itself is unit-tested under plain Node.
import type { Project, ProjectStatus } from '../../shared/api/index.js';
import type { PlatformStatus, Sourced } from '../../shared/bridge.js';

/** What clicking an item does; src/main/tray.ts carries it out. */
export type TrayAction =
  | { kind: 'show-window' }
  | { kind: 'open-project'; projectId: string }
  | { kind: 'deploy-project'; projectId: string }
  | { kind: 'open-url'; url: string }
  | { kind: 'quit' };

export interface TrayMenuItem {
  type: 'item';
  /** Stable across rebuilds, so the host can tell items apart (and tests can find them). */
  id: string;
  label: string;
  enabled: boolean;
  /** Null for informational items that do nothing. */
  action: TrayAction | null;
}

export interface TrayMenuSubmenu {
  type: 'submenu';
  id: string;
  label: string;
  items: TrayMenuEntry[];
}

export interface TrayMenuSeparator {
  type: 'separator';
}

/** A disabled line of text that titles the items below it. */
export interface TrayMenuHeader {
  type: 'header';
  label: string;
}

export type TrayMenuEntry = TrayMenuItem | TrayMenuSubmenu | TrayMenuSeparator | TrayMenuHeader;

export interface TrayMenuInput {
  status: PlatformStatus;
  /** Null while the list has not been fetched yet (or could not be, and nothing is cached). */
  projects: Project[] | null;
  /** Where the projects came from: `cache` means the Mirror, while the platform is unreachable. */
  source: Sourced['source'] | null;
  /** How many projects to list before "N more…"; the rest are one click away in the window. */
  maxProjects?: number;
}

export const TRAY_MAX_PROJECTS = 15;

/** One glyph per status, so the state reads at a glance even in a monochrome menu. */
export const STATUS_GLYPHS: Record<ProjectStatus, string> = {
  running: '●',
  building: '◐',
  created: '◌',
  stopped: '○',
  failed: '✕',
};

const STATUS_ORDER: Record<ProjectStatus, number> = {
  failed: 0,
  building: 1,
  running: 2,
  created: 3,
  stopped: 4,
};

/** The tooltip of the tray icon: the app's name and whether the platform answers. */
export function trayTooltip(status: PlatformStatus): string {
  return status.online ? `Wharf: online (${hostOf(status.platformUrl)})` : 'Wharf: offline';
}

export function buildTrayMenu(input: TrayMenuInput): TrayMenuEntry[] {
  const { status, projects, source } = input;
  const max = Math.max(0, input.maxProjects ?? TRAY_MAX_PROJECTS);
  const entries: TrayMenuEntry[] = [];

  entries.push({ type: 'header', label: statusLine(status) });
  if (!status.online && status.problem) {
    entries.push({ type: 'header', label: truncate(status.problem, 80) });
  }
  entries.push(item('show-window', 'Open Wharf', { kind: 'show-window' }));
  entries.push({ type: 'separator' });

  entries.push({ type: 'header', label: source === 'cache' ? 'Projects (cached, offline)' : 'Projects' });
  if (projects === null) {
    entries.push(info('projects-none', status.online ? 'Loading projects…' : 'Projects unavailable offline'));
  } else if (projects.length === 0) {
    entries.push(info('projects-none', 'No projects yet'));
  } else {
    const sorted = [...projects].sort(
      (a, b) => STATUS_ORDER[a.status] - STATUS_ORDER[b.status] || a.name.localeCompare(b.name),
    );
    // Deploying needs the platform: not from the offline cache.
    const canDeploy = status.online && source !== 'cache';
    for (const project of sorted.slice(0, max)) entries.push(projectEntry(project, canDeploy));
    const hidden = sorted.length - Math.min(max, sorted.length);
    if (hidden > 0) {
      entries.push(
        item('projects-more', `${hidden} more ${hidden === 1 ? 'project' : 'projects'}…`, {
          kind: 'show-window',
        }),
      );
    }
  }

  entries.push({ type: 'separator' });
  entries.push(item('quit', 'Quit Wharf', { kind: 'quit' }));
  return entries;
}

function statusLine(status: PlatformStatus): string {
  const where = status.mode === 'local' ? 'local platform' : hostOf(status.platformUrl);
  return status.online ? `● Online: ${where}` : `○ Offline: ${where}`;
}

function projectEntry(project: Project, canDeploy: boolean): TrayMenuSubmenu {
  const building = project.status === 'building';
  const items: TrayMenuEntry[] = [
    item(`project:${project.id}:open`, 'Show in Wharf', { kind: 'open-project', projectId: project.id }),
    {
      type: 'item',
      id: `project:${project.id}:deploy`,
      label: building ? 'Deploying…' : project.last_deploy_at === null ? 'Deploy' : 'Redeploy',
      enabled: canDeploy && !building,
      action: { kind: 'deploy-project', projectId: project.id },
    },
  ];
  const urls = projectUrls(project);
  if (urls.length > 0) {
    items.push({ type: 'separator' });
    const live = project.status === 'running';
    for (const { name, url } of urls) {
      items.push({
        type: 'item',
        id: `project:${project.id}:url:${name ?? ''}`,
        label: name ? `Open ${name}: ${url}` : `Open ${url}`,
        // A URL of an app that is not running would only show an error page.
        enabled: live,
        action: { kind: 'open-url', url },
      });
    }
  }
  return {
    type: 'submenu',
    id: `project:${project.id}`,
    label: `${STATUS_GLYPHS[project.status]} ${project.name} (${project.status})`,
    items,
  };
}

/** The project's URL, then each service's own, keeping only http(s) ones and no duplicates. */
function projectUrls(project: Project): Array<{ name: string | null; url: string }> {
  const seen = new Set<string>();
  const out: Array<{ name: string | null; url: string }> = [];
  const add = (name: string | null, url: string) => {
    if (!isHttpUrl(url) || seen.has(url)) return;
    seen.add(url);
    out.push({ name, url });
  };
  add(null, project.url);
  for (const [name, url] of Object.entries(project.service_urls).sort(([a], [b]) => a.localeCompare(b)))
    add(name, url);
  return out;
}

function item(id: string, label: string, action: TrayAction): TrayMenuItem {
  return { type: 'item', id, label, enabled: true, action };
}

function info(id: string, label: string): TrayMenuItem {
  return { type: 'item', id, label, enabled: false, action: null };
}

export function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
