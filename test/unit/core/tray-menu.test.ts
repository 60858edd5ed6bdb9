// The tray menu model: plain data built from the platform status and the project list.
import { describe, expect, it } from 'vitest';
import type { Project, ProjectStatus } from '../../../src/shared/api/index.js';
import type { LocalTunnel, PlatformStatus } from '../../../src/shared/bridge.js';
import {
  STATUS_GLYPHS,
  TRAY_MAX_PROJECTS,
  TRAY_RECENT_PORTS,
  TUNNEL_GLYPHS,
  buildTrayMenu,
  rememberPort,
  trayTooltip,
  tunnelFailedNotice,
  tunnelStartedNotice,
  type TrayMenuEntry,
  type TrayMenuItem,
  type TrayMenuSubmenu,
} from '../../../src/core/menus/tray-menu.js';

const online: PlatformStatus = {
  mode: 'local',
  platformUrl: 'http://127.0.0.1:8787',
  online: true,
  lastContactAt: '2025-01-01T00:00:00.000Z',
  problem: null,
};

const offline: PlatformStatus = {
  mode: 'remote',
  platformUrl: 'https://wharf.example.com',
  online: false,
  lastContactAt: null,
  problem: 'cannot reach https://wharf.example.com: connection refused',
};

let serial = 0;
function project(name: string, status: ProjectStatus, extra: Partial<Project> = {}): Project {
  serial += 1;
  const id = `prj_${String(serial).padStart(8, '0')}`;
  return {
    id,
    name,
    subdomain: name,
    repo_url: '',
    git_host_repo: '',
    branch: '',
    image: '',
    deploy_source: 'upload',
    env_vars: {},
    build_config: {
      root_dir: '.',
      install_cmd: null,
      build_cmd: null,
      start_cmd: null,
      port_override: null,
      replicas: 1,
      services: [],
    },
    status,
    url: `http://${name}.localhost:8788`,
    service_urls: {},
    created_at: '2025-01-01T00:00:00.000Z',
    updated_at: '2025-01-01T00:00:00.000Z',
    last_deploy_at: null,
    last_deploy_error: null,
    ...extra,
  };
}

const items = (entries: TrayMenuEntry[]): TrayMenuItem[] =>
  entries.filter((e): e is TrayMenuItem => e.type === 'item');
const submenus = (entries: TrayMenuEntry[]): TrayMenuSubmenu[] =>
  entries.filter((e): e is TrayMenuSubmenu => e.type === 'submenu');
/** An item anywhere in the menu, submenus included. */
const byId = (entries: TrayMenuEntry[], id: string): TrayMenuItem | undefined =>
  items(entries).find((e) => e.id === id) ??
  submenus(entries)
    .map((submenu) => byId(submenu.items, id))
    .find((found) => found !== undefined);

describe('buildTrayMenu', () => {
  it('starts with the online state and where the platform is, then Open Wharf', () => {
    const menu = buildTrayMenu({ status: online, projects: [], source: 'live' });
    expect(menu[0]).toEqual({ type: 'header', label: '● Online: local platform' });
    expect(menu[1]).toEqual({
      type: 'item',
      id: 'show-window',
      label: 'Open Wharf',
      enabled: true,
      action: { kind: 'show-window' },
    });
  });

  it('says offline, names the remote host and gives the reason', () => {
    const menu = buildTrayMenu({ status: offline, projects: null, source: null });
    expect(menu[0]).toEqual({ type: 'header', label: '○ Offline: wharf.example.com' });
    expect(menu[1]).toEqual({ type: 'header', label: offline.problem });
    expect(byId(menu, 'projects-none')).toMatchObject({
      label: 'Projects unavailable offline',
      enabled: false,
      action: null,
    });
  });

  it('shortens a long offline reason to 80 characters', () => {
    const menu = buildTrayMenu({
      status: { ...offline, problem: 'x'.repeat(200) },
      projects: null,
      source: null,
    });
    const reason = menu[1] as { type: 'header'; label: string };
    expect(reason.label).toHaveLength(80);
    expect(reason.label.endsWith('…')).toBe(true);
  });

  it('shows "Loading projects…" while online and the list has not arrived', () => {
    const menu = buildTrayMenu({ status: online, projects: null, source: null });
    expect(byId(menu, 'projects-none')?.label).toBe('Loading projects…');
  });

  it('shows "No projects yet" for an empty list', () => {
    const menu = buildTrayMenu({ status: online, projects: [], source: 'live' });
    expect(byId(menu, 'projects-none')).toMatchObject({ label: 'No projects yet', enabled: false });
  });

  it('marks projects that come from the cache', () => {
    const menu = buildTrayMenu({ status: offline, projects: [project('api', 'running')], source: 'cache' });
    expect(menu).toContainEqual({ type: 'header', label: 'Projects (cached, offline)' });
  });

  it('lists each project with its status glyph and status in words', () => {
    const menu = buildTrayMenu({
      status: online,
      projects: [project('web', 'running'), project('worker', 'failed'), project('docs', 'building')],
      source: 'live',
    });
    expect(submenus(menu).map((s) => s.label)).toEqual([
      `${STATUS_GLYPHS.failed} worker (failed)`,
      `${STATUS_GLYPHS.building} docs (building)`,
      `${STATUS_GLYPHS.running} web (running)`,
    ]);
  });

  it('gives every status its own glyph', () => {
    expect(new Set(Object.values(STATUS_GLYPHS)).size).toBe(Object.keys(STATUS_GLYPHS).length);
  });

  it('opens a project in the window and its URLs in the browser from its submenu', () => {
    const web = project('web', 'running', {
      service_urls: { api: 'http://web-api.localhost:8788', web: 'http://web.localhost:8788' },
    });
    const [entry] = submenus(buildTrayMenu({ status: online, projects: [web], source: 'live' }));
    expect(entry?.id).toBe(`project:${web.id}`);
    expect(entry?.items).toEqual([
      {
        type: 'item',
        id: `project:${web.id}:open`,
        label: 'Show in Wharf',
        enabled: true,
        action: { kind: 'open-project', projectId: web.id },
      },
      {
        type: 'item',
        id: `project:${web.id}:deploy`,
        label: 'Deploy',
        enabled: true,
        action: { kind: 'deploy-project', projectId: web.id },
      },
      { type: 'separator' },
      {
        type: 'item',
        id: `project:${web.id}:url:`,
        label: 'Open http://web.localhost:8788',
        enabled: true,
        action: { kind: 'open-url', url: 'http://web.localhost:8788' },
      },
      {
        type: 'item',
        id: `project:${web.id}:url:api`,
        label: 'Open api: http://web-api.localhost:8788',
        enabled: true,
        action: { kind: 'open-url', url: 'http://web-api.localhost:8788' },
      },
    ]);
  });

  it('disables the URLs of a project that is not running', () => {
    const [entry] = submenus(
      buildTrayMenu({ status: online, projects: [project('web', 'stopped')], source: 'live' }),
    );
    const urlItems = items(entry?.items ?? []).filter((i) => i.action?.kind === 'open-url');
    expect(urlItems).toHaveLength(1);
    expect(urlItems[0]?.enabled).toBe(false);
  });

  it('never offers a URL that is not http(s)', () => {
    const odd = project('odd', 'running', {
      url: 'javascript:alert(1)',
      service_urls: { files: 'file:///etc/passwd', ok: 'https://ok.example.com' },
    });
    const [entry] = submenus(buildTrayMenu({ status: online, projects: [odd], source: 'live' }));
    const urls = items(entry?.items ?? []).flatMap((i) =>
      i.action?.kind === 'open-url' ? [i.action.url] : [],
    );
    expect(urls).toEqual(['https://ok.example.com']);
  });

  it(`lists at most ${TRAY_MAX_PROJECTS} projects, then "N more projects…" that opens the window`, () => {
    const many = Array.from({ length: TRAY_MAX_PROJECTS + 3 }, (_, i) =>
      project(`app-${String(i).padStart(2, '0')}`, 'running'),
    );
    const menu = buildTrayMenu({ status: online, projects: many, source: 'live' });
    expect(submenus(menu)).toHaveLength(TRAY_MAX_PROJECTS);
    expect(byId(menu, 'projects-more')).toMatchObject({
      label: '3 more projects…',
      enabled: true,
      action: { kind: 'show-window' },
    });
  });

  it('says "1 more project…" in the singular and honours a custom cap', () => {
    const menu = buildTrayMenu({
      status: online,
      projects: [project('a', 'running'), project('b', 'running'), project('c', 'running')],
      source: 'live',
      maxProjects: 2,
    });
    expect(submenus(menu)).toHaveLength(2);
    expect(byId(menu, 'projects-more')?.label).toBe('1 more project…');
  });

  it('has no "more" item when every project fits', () => {
    const menu = buildTrayMenu({ status: online, projects: [project('a', 'running')], source: 'live' });
    expect(byId(menu, 'projects-more')).toBeUndefined();
  });

  it('ends with a separator and Quit Wharf', () => {
    const menu = buildTrayMenu({ status: online, projects: [], source: 'live' });
    expect(menu.slice(-2)).toEqual([
      { type: 'separator' },
      { type: 'item', id: 'quit', label: 'Quit Wharf', enabled: true, action: { kind: 'quit' } },
    ]);
  });

  it('offers Deploy for a project never deployed, and Redeploy once it has been', () => {
    const fresh = project('fresh', 'created');
    const deployed = project('deployed', 'running', { last_deploy_at: '2025-01-02T00:00:00.000Z' });
    const failed = project('broken', 'failed', { last_deploy_at: '2025-01-02T00:00:00.000Z' });
    const menu = buildTrayMenu({ status: online, projects: [fresh, deployed, failed], source: 'live' });
    expect(byId(menu, `project:${fresh.id}:deploy`)).toEqual({
      type: 'item',
      id: `project:${fresh.id}:deploy`,
      label: 'Deploy',
      enabled: true,
      action: { kind: 'deploy-project', projectId: fresh.id },
    });
    expect(byId(menu, `project:${deployed.id}:deploy`)).toMatchObject({
      label: 'Redeploy',
      enabled: true,
      action: { kind: 'deploy-project', projectId: deployed.id },
    });
    expect(byId(menu, `project:${failed.id}:deploy`)?.label).toBe('Redeploy');
  });

  it('shows "Deploying…", disabled, while a project builds', () => {
    const building = project('busy', 'building', { last_deploy_at: '2025-01-02T00:00:00.000Z' });
    const menu = buildTrayMenu({ status: online, projects: [building], source: 'live' });
    expect(byId(menu, `project:${building.id}:deploy`)).toMatchObject({
      label: 'Deploying…',
      enabled: false,
    });
  });

  it('disables deploying while offline or showing cached projects', () => {
    const web = project('web', 'running');
    const offlineMenu = buildTrayMenu({ status: offline, projects: [web], source: 'cache' });
    expect(byId(offlineMenu, `project:${web.id}:deploy`)?.enabled).toBe(false);
    const cachedMenu = buildTrayMenu({ status: online, projects: [web], source: 'cache' });
    expect(byId(cachedMenu, `project:${web.id}:deploy`)?.enabled).toBe(false);
  });

  it('puts the deploy item right after "Show in Wharf" in each project', () => {
    const menu = buildTrayMenu({
      status: online,
      projects: [project('a', 'running'), project('b', 'stopped')],
      source: 'live',
    });
    for (const entry of submenus(menu)) {
      const kinds = items(entry.items).map((i) => i.action?.kind);
      expect(kinds.slice(0, 2)).toEqual(['open-project', 'deploy-project']);
    }
  });

  it('is plain data that survives JSON and structured cloning', () => {
    const menu = buildTrayMenu({ status: online, projects: [project('web', 'running')], source: 'live' });
    expect(JSON.parse(JSON.stringify(menu))).toEqual(menu);
    expect(structuredClone(menu)).toEqual(menu);
  });

  it('does not reorder the caller’s array', () => {
    const list = [project('b', 'running'), project('a', 'failed')];
    const before = list.map((p) => p.id);
    buildTrayMenu({ status: online, projects: list, source: 'live' });
    expect(list.map((p) => p.id)).toEqual(before);
  });
});

describe('trayTooltip', () => {
  it('says online with the platform host, or offline', () => {
    expect(trayTooltip(online)).toBe('Wharf: online (127.0.0.1:8787)');
    expect(trayTooltip(offline)).toBe('Wharf: offline');
  });
});

function tunnel(port: number, extra: Partial<LocalTunnel> = {}): LocalTunnel {
  return {
    id: `tun_${String(port).padStart(8, '0')}`,
    localPort: port,
    hostHeader: 'preserve',
    subdomain: `app${port}`,
    url: `http://app${port}.tunnel.localhost:8788`,
    state: 'online',
    detail: null,
    listening: true,
    startedAt: '2025-01-01T00:00:00.000Z',
    ...extra,
  };
}

/** The entries after the "Tunnels" header, up to the next separator. */
function tunnelSection(entries: TrayMenuEntry[]): TrayMenuEntry[] {
  const start = entries.findIndex((e) => e.type === 'header' && e.label === 'Tunnels');
  const rest = entries.slice(start + 1);
  const end = rest.findIndex((e) => e.type === 'separator');
  return end === -1 ? rest : rest.slice(0, end);
}

describe('the tray’s tunnels', () => {
  it('has a Tunnels section before Quit, pointing to the window to share a first port', () => {
    const menu = buildTrayMenu({ status: online, projects: [], source: 'live' });
    expect(tunnelSection(menu)).toEqual([
      {
        type: 'item',
        id: 'tunnel-share-other',
        label: 'Share a local port…',
        enabled: true,
        action: { kind: 'show-window' },
      },
    ]);
    expect(menu.slice(-2).map((e) => e.type)).toEqual(['separator', 'item']);
  });

  it('offers "Share port N" for the recent ports, most recent first, and another port in the window', () => {
    const menu = buildTrayMenu({
      status: online,
      projects: [],
      source: 'live',
      tunnels: [],
      recentPorts: [3000, 8080],
    });
    expect(tunnelSection(menu)).toEqual([
      {
        type: 'item',
        id: 'tunnel-share:3000',
        label: 'Share port 3000',
        enabled: true,
        action: { kind: 'start-tunnel', port: 3000 },
      },
      {
        type: 'item',
        id: 'tunnel-share:8080',
        label: 'Share port 8080',
        enabled: true,
        action: { kind: 'start-tunnel', port: 8080 },
      },
      {
        type: 'item',
        id: 'tunnel-share-other',
        label: 'Share another port…',
        enabled: true,
        action: { kind: 'show-window' },
      },
    ]);
  });

  it(`offers at most ${TRAY_RECENT_PORTS} recent ports, leaving out those already shared`, () => {
    const menu = buildTrayMenu({
      status: online,
      projects: [],
      source: 'live',
      tunnels: [tunnel(3000)],
      recentPorts: [3000, 4000, 5000, 6000, 7000],
    });
    const shares = items(tunnelSection(menu)).filter((i) => i.action?.kind === 'start-tunnel');
    expect(shares.map((i) => i.label)).toEqual(['Share port 4000', 'Share port 5000', 'Share port 6000']);
  });

  it('disables sharing while the platform is offline', () => {
    const menu = buildTrayMenu({ status: offline, projects: null, source: null, recentPorts: [3000] });
    expect(byId(menu, 'tunnel-share:3000')?.enabled).toBe(false);
  });

  it('lists each running tunnel with Copy URL, Open in Browser and Stop', () => {
    const running = tunnel(3000);
    const [entry] = submenus(
      tunnelSection(buildTrayMenu({ status: online, projects: [], source: 'live', tunnels: [running] })),
    );
    expect(entry).toEqual({
      type: 'submenu',
      id: `tunnel:${running.id}`,
      label: `${TUNNEL_GLYPHS.online} Port 3000 → app3000.tunnel.localhost:8788`,
      items: [
        {
          type: 'item',
          id: `tunnel:${running.id}:copy`,
          label: 'Copy URL',
          enabled: true,
          action: { kind: 'copy-text', text: running.url },
        },
        {
          type: 'item',
          id: `tunnel:${running.id}:open`,
          label: 'Open in Browser',
          enabled: true,
          action: { kind: 'open-url', url: running.url },
        },
        { type: 'separator' },
        {
          type: 'item',
          id: `tunnel:${running.id}:stop`,
          label: 'Stop',
          enabled: true,
          action: { kind: 'stop-tunnel', tunnelId: running.id },
        },
      ],
    });
  });

  it('shows why a tunnel reconnects, keeps its URL to copy, and does not open it meanwhile', () => {
    const flaky = tunnel(3000, { state: 'reconnecting', detail: 'the platform closed the connection' });
    const [entry] = submenus(
      tunnelSection(buildTrayMenu({ status: online, projects: [], source: 'live', tunnels: [flaky] })),
    );
    expect(entry?.label.startsWith(TUNNEL_GLYPHS.reconnecting)).toBe(true);
    expect(entry?.items[0]).toEqual({ type: 'header', label: 'the platform closed the connection' });
    expect(byId(entry!.items, `tunnel:${flaky.id}:copy`)?.enabled).toBe(true);
    expect(byId(entry!.items, `tunnel:${flaky.id}:open`)?.enabled).toBe(false);
  });

  it('cannot copy the URL of a tunnel that has none yet, nor a URL that is not http(s)', () => {
    const connecting = tunnel(3000, { id: 'local_1', state: 'connecting', url: null, subdomain: null });
    const odd = tunnel(4000, { url: 'javascript:alert(1)' });
    const menu = buildTrayMenu({ status: online, projects: [], source: 'live', tunnels: [connecting, odd] });
    expect(submenus(tunnelSection(menu))[0]?.label).toBe(
      `${TUNNEL_GLYPHS.connecting} Port 3000 → connecting…`,
    );
    expect(byId(menu, 'tunnel:local_1:copy')).toMatchObject({ enabled: false, action: null });
    expect(byId(menu, `tunnel:${odd.id}:copy`)).toMatchObject({ enabled: false, action: null });
  });

  it('leaves stopped tunnels out', () => {
    const menu = buildTrayMenu({
      status: online,
      projects: [],
      source: 'live',
      tunnels: [tunnel(3000, { state: 'stopped' })],
      recentPorts: [3000],
    });
    expect(submenus(tunnelSection(menu))).toEqual([]);
    expect(byId(menu, 'tunnel-share:3000')?.enabled).toBe(true);
  });

  it('is plain data with tunnels too', () => {
    const menu = buildTrayMenu({
      status: online,
      projects: [],
      source: 'live',
      tunnels: [tunnel(3000)],
      recentPorts: [1],
    });
    expect(structuredClone(menu)).toEqual(menu);
  });
});

describe('rememberPort', () => {
  it('puts the port first without repeating it, and keeps a few', () => {
    expect(rememberPort([], 3000)).toEqual([3000]);
    expect(rememberPort([8080, 3000, 5173], 3000)).toEqual([3000, 8080, 5173]);
    expect(rememberPort([1, 2, 3], 4, 3)).toEqual([4, 1, 2]);
  });
});

describe('tunnel notices', () => {
  it('says where a shared port is, and whether its URL was copied', () => {
    expect(tunnelStartedNotice(tunnel(3000), true)).toEqual({
      title: 'Port 3000 is shared',
      body: 'http://app3000.tunnel.localhost:8788 (copied to the clipboard)',
    });
    expect(tunnelStartedNotice(tunnel(3000), false).body).toBe('http://app3000.tunnel.localhost:8788');
  });

  it('says why a port could not be shared or stopped', () => {
    const error = { code: 'offline' as const, status: 0, detail: 'cannot reach http://127.0.0.1:8787' };
    expect(tunnelFailedNotice('start', 3000, error)).toEqual({
      title: 'Could not share port 3000',
      body: 'Cannot reach http://127.0.0.1:8787',
    });
    expect(tunnelFailedNotice('stop', null, error).title).toBe('Could not stop the tunnel');
  });
});
