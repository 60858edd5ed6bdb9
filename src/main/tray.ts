// The tray icon: turns the plain menu model of src/core/menus/tray-menu.ts into an Electron Menu, and
// rebuilds it whenever the Engine reports a new project list, platform status or tunnel list. Deploy
// items start a deploy through the Engine (its end is announced by the deploy notifications, see
// notifications.ts; a refusal at once). Tunnel items start and stop tunnels through the Engine too;
// "Share port N" copies the new URL to the clipboard and says so in a notification. The ports shared
// lately are remembered in the app's data folder (recent-ports.ts). What the other items do is up to
// the host (index.ts), through TrayHandlers.
/// <reference types="electron-vite/node" />
import { join } from 'node:path';
import { Menu, Tray, app, clipboard, nativeImage, type MenuItemConstructorOptions } from 'electron';
import trayIcon from '../../resources/tray.png?asset';
import type { Project } from '../shared/api/index.js';
import {
  toBridgeError,
  type Bridge,
  type LocalTunnel,
  type PlatformStatus,
  type ProjectList,
} from '../shared/bridge.js';
import { deployRefusedNotice } from '../core/menus/deploy-notice.js';
import {
  buildTrayMenu,
  rememberPort,
  trayTooltip,
  tunnelFailedNotice,
  tunnelStartedNotice,
  type TrayAction,
  type TrayMenuEntry,
} from '../core/menus/tray-menu.js';
import { notify } from './notifications.js';
import { readRecentPorts, writeRecentPorts } from './recent-ports.js';

const RECENT_PORTS_FILE = 'tray-recent-ports.json';

export interface TrayHandlers {
  showWindow(): void;
  openProject(projectId: string): void;
  openUrl(url: string): void;
  quit(): void;
}

export interface AppTray {
  destroy(): void;
}

/** On Windows and Linux `&` marks a menu mnemonic; a project named "R&D" must show its ampersand. */
function menuLabel(label: string): string {
  return process.platform === 'darwin' ? label : label.replace(/&/g, '&&');
}

export function toElectronMenuTemplate(
  entries: TrayMenuEntry[],
  run: (action: TrayAction) => void,
): MenuItemConstructorOptions[] {
  return entries.map((entry): MenuItemConstructorOptions => {
    switch (entry.type) {
      case 'separator':
        return { type: 'separator' };
      case 'header':
        return { label: menuLabel(entry.label), enabled: false };
      case 'submenu':
        return {
          id: entry.id,
          label: menuLabel(entry.label),
          submenu: toElectronMenuTemplate(entry.items, run),
        };
      case 'item': {
        const action = entry.action;
        return {
          id: entry.id,
          label: menuLabel(entry.label),
          enabled: entry.enabled && action !== null,
          ...(action ? { click: () => run(action) } : {}),
        };
      }
    }
  });
}

export function createTray(bridge: Bridge, handlers: TrayHandlers): AppTray {
  const image = nativeImage.createFromPath(trayIcon);
  const tray = new Tray(image);
  let status: PlatformStatus | null = null;
  let projects: Project[] | null = null;
  let source: ProjectList['source'] | null = null;
  let tunnels: LocalTunnel[] | null = null;
  const portsFile = join(app.getPath('userData'), RECENT_PORTS_FILE);
  let recentPorts = readRecentPorts(portsFile);
  /** Tunnels already counted as a use of their port (by start time and port: their id changes). */
  const counted = new Set<string>();
  let destroyed = false;

  const run = (action: TrayAction) => {
    switch (action.kind) {
      case 'show-window':
        return handlers.showWindow();
      case 'open-project':
        return handlers.openProject(action.projectId);
      case 'deploy-project':
        return deploy(action.projectId);
      case 'open-url':
        return handlers.openUrl(action.url);
      case 'start-tunnel':
        return sharePort(action.port);
      case 'stop-tunnel':
        return stopTunnel(action.tunnelId);
      case 'copy-text':
        return clipboard.writeText(action.text);
      case 'quit':
        return handlers.quit();
    }
  };

  const deploy = (projectId: string) => {
    bridge.invoke('projects.deploy', { id: projectId }).then(
      (project) => {
        // Show `building` at once rather than at the next refresh.
        projects = projects?.map((p) => (p.id === project.id ? project : p)) ?? null;
        render();
      },
      (error: unknown) => {
        const project = projects?.find((p) => p.id === projectId) ?? null;
        notify(deployRefusedNotice(project, toBridgeError(error).toJSON()), () =>
          handlers.openProject(projectId),
        );
      },
    );
  };

  const sharePort = (port: number) => {
    bridge.invoke('tunnels.start', { port }).then(
      (tunnel) => {
        if (tunnel.url) clipboard.writeText(tunnel.url);
        notify(tunnelStartedNotice(tunnel, tunnel.url !== null), handlers.showWindow);
      },
      (error: unknown) =>
        notify(tunnelFailedNotice('start', port, toBridgeError(error).toJSON()), handlers.showWindow),
    );
  };

  const stopTunnel = (tunnelId: string) => {
    const port = tunnels?.find((t) => t.id === tunnelId)?.localPort ?? null;
    bridge
      .invoke('tunnels.stop', { id: tunnelId })
      .catch((error: unknown) =>
        notify(tunnelFailedNotice('stop', port, toBridgeError(error).toJSON()), handlers.showWindow),
      );
  };

  /** Every tunnel that starts (from anywhere: the window, the tray) makes its port a recent one. */
  const noteTunnels = (list: LocalTunnel[]) => {
    tunnels = list;
    let changed = false;
    for (const tunnel of [...list].sort((a, b) => a.startedAt.localeCompare(b.startedAt))) {
      const key = `${tunnel.startedAt}:${tunnel.localPort}`;
      if (counted.has(key)) continue;
      counted.add(key);
      const next = rememberPort(recentPorts, tunnel.localPort);
      changed ||= next.join() !== recentPorts.join();
      recentPorts = next;
    }
    if (changed) writeRecentPorts(portsFile, recentPorts);
  };

  const render = () => {
    if (destroyed || tray.isDestroyed()) return;
    const current: PlatformStatus = status ?? {
      mode: 'local',
      platformUrl: '',
      online: false,
      lastContactAt: null,
      problem: null,
    };
    tray.setToolTip(trayTooltip(current));
    const entries = buildTrayMenu({ status: current, projects, source, tunnels, recentPorts });
    tray.setContextMenu(Menu.buildFromTemplate(toElectronMenuTemplate(entries, run)));
  };

  const offProjects = bridge.on('projects', (list) => {
    projects = list.projects;
    source = list.source;
    render();
  });
  const offStatus = bridge.on('platform-status', (next) => {
    status = next;
    render();
  });
  const offTunnels = bridge.on('tunnels', (list) => {
    noteTunnels(list);
    render();
  });

  // Windows and Linux users expect a click on the icon to bring the window up; macOS opens the menu.
  if (process.platform !== 'darwin') tray.on('click', () => handlers.showWindow());

  render();
  void (async () => {
    const [list, current, running] = await Promise.allSettled([
      bridge.invoke('projects.list', undefined),
      bridge.invoke('platform.status', undefined),
      bridge.invoke('tunnels.list', undefined),
    ]);
    if (running.status === 'fulfilled' && tunnels === null) noteTunnels(running.value);
    if (list.status === 'fulfilled' && projects === null) {
      projects = list.value.projects;
      source = list.value.source;
    }
    // An event that arrived meanwhile is at least as fresh as this answer.
    if (current.status === 'fulfilled') status ??= current.value;
    render();
  })();

  return {
    destroy() {
      destroyed = true;
      offProjects();
      offStatus();
      offTunnels();
      if (!tray.isDestroyed()) tray.destroy();
    },
  };
}
