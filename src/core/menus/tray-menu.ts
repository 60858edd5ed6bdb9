// The tray menu as plain data: what the desktop app's tray shows (online state, the projects with their
// status, a deploy action and their URLs, the tunnels with Copy URL and Stop, "Share port N" for the
// ports shared lately, quit), built from what the Engine reports. No Electron here: src/main/tray.ts
// turns this model into an Electron Menu, and the model itself is unit-tested under plain Node. A tray
// has no room for a form, so a port not shared before is started from the window.
import type { Project, ProjectStatus } from '../../shared/api/index.js';
import type { BridgeErrorShape, LocalTunnel, PlatformStatus, Sourced } from '../../shared/bridge.js';

/** What clicking an item does; src/main/tray.ts carries it out. */
export type TrayAction =
  | { kind: 'show-window' }
  | { kind: 'open-project'; projectId: string }
  | { kind: 'deploy-project'; projectId: string }
  | { kind: 'open-url'; url: string }
  | { kind: 'start-tunnel'; port: number }
  | { kind: 'stop-tunnel'; tunnelId: string }
  | { kind: 'copy-text'; text: string }
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
  /** The tunnels the Engine runs; null (or absent) while not known yet. */
  tunnels?: LocalTunnel[] | null;
  /** Local ports shared lately, most recent first (see rememberPort): each one a "Share port N". */
  recentPorts?: readonly number[];
}

export const TRAY_MAX_PROJECTS = 15;
/** How many recently shared ports the tray offers. */
export const TRAY_RECENT_PORTS = 3;

export const TUNNEL_GLYPHS: Record<LocalTunnel['state'], string> = {
  online: '●',
  connecting: '◐',
  reconnecting: '◐',
  stopped: '○',
};

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
  entries.push(...tunnelEntries(input.tunnels ?? null, input.recentPorts ?? [], status.online));

  entries.push({ type: 'separator' });
  entries.push(item('quit', 'Quit Wharf', { kind: 'quit' }));
  return entries;
}

/** The tunnels running (a submenu each), then "Share port N" for recent ports not running. */
function tunnelEntries(
  tunnels: LocalTunnel[] | null,
  recentPorts: readonly number[],
  online: boolean,
): TrayMenuEntry[] {
  const entries: TrayMenuEntry[] = [{ type: 'header', label: 'Tunnels' }];
  const running = (tunnels ?? []).filter((tunnel) => tunnel.state !== 'stopped');
  for (const tunnel of running) entries.push(tunnelEntry(tunnel));
  const busy = new Set(running.map((tunnel) => tunnel.localPort));
  for (const port of recentPorts.filter((p) => !busy.has(p)).slice(0, TRAY_RECENT_PORTS)) {
    entries.push({
      type: 'item',
      id: `tunnel-share:${port}`,
      label: `Share port ${port}`,
      // A tunnel needs the platform.
      enabled: online,
      action: { kind: 'start-tunnel', port },
    });
  }
  entries.push(
    item(
      'tunnel-share-other',
      running.length + recentPorts.length > 0 ? 'Share another port…' : 'Share a local port…',
      {
        kind: 'show-window',
      },
    ),
  );
  return entries;
}

function tunnelEntry(tunnel: LocalTunnel): TrayMenuSubmenu {
  const prefix = `tunnel:${tunnel.id}`;
  const items: TrayMenuEntry[] = [];
  if (tunnel.detail) items.push({ type: 'header', label: truncate(tunnel.detail, 80) });
  const url = tunnel.url && isHttpUrl(tunnel.url) ? tunnel.url : null;
  items.push({
    type: 'item',
    id: `${prefix}:copy`,
    label: 'Copy URL',
    enabled: url !== null,
    action: url ? { kind: 'copy-text', text: url } : null,
  });
  items.push({
    type: 'item',
    id: `${prefix}:open`,
    label: 'Open in Browser',
    enabled: url !== null && tunnel.state === 'online',
    action: url ? { kind: 'open-url', url } : null,
  });
  items.push({ type: 'separator' });
  items.push(item(`${prefix}:stop`, 'Stop', { kind: 'stop-tunnel', tunnelId: tunnel.id }));
  const where = url
    ? hostOf(url)
    : tunnel.state === 'connecting'
      ? 'connecting…'
      : 'waiting for the platform';
  return {
    type: 'submenu',
    id: prefix,
    label: `${TUNNEL_GLYPHS[tunnel.state]} Port ${tunnel.localPort} → ${where}`,
    items,
  };
}

/** `port` first, then the other recent ports, at most `max`. */
export function rememberPort(recent: readonly number[], port: number, max = TRAY_RECENT_PORTS * 2): number[] {
  return [port, ...recent.filter((p) => p !== port)].slice(0, max);
}

/** What the tray says once a port it shared is online; whether its URL was put on the clipboard. */
export function tunnelStartedNotice(tunnel: LocalTunnel, copied: boolean): { title: string; body: string } {
  return {
    title: `Port ${tunnel.localPort} is shared`,
    body: tunnel.url
      ? `${tunnel.url}${copied ? ' (copied to the clipboard)' : ''}`
      : 'The tunnel is up; its URL shows in Wharf.',
  };
}

/** What the tray says when starting or stopping a tunnel failed. */
export function tunnelFailedNotice(
  what: 'start' | 'stop',
  port: number | null,
  error: BridgeErrorShape,
): { title: string; body: string } {
  const subject = port === null ? 'the tunnel' : `port ${port}`;
  return {
    title: what === 'start' ? `Could not share ${subject}` : `Could not stop ${subject}`,
    body: truncate(
      error.detail ? error.detail[0]!.toUpperCase() + error.detail.slice(1) : 'Unknown error',
      200,
    ),
  };
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
