// System notifications of the desktop app: when a deploy ends (whoever started it: the window, the
// tray, the CLI), and when a deploy started from the tray is refused. The text comes from
// src/core/menus/deploy-notice.ts; a click on a notification shows the project in the window.
import { Notification } from 'electron';
import { deployFinishedNotice, type DeployNotice } from '../core/menus/deploy-notice.js';
import type { Bridge } from '../shared/bridge.js';

// Electron forgets the click handler of a notification that was garbage-collected: keep each one
// until it is clicked or closed.
const shown = new Set<Notification>();

export function notify(notice: DeployNotice, onClick?: () => void): void {
  if (!Notification.isSupported()) return;
  const notification = new Notification({ title: notice.title, body: notice.body });
  shown.add(notification);
  const forget = () => shown.delete(notification);
  notification.on('click', () => {
    forget();
    onClick?.();
  });
  notification.on('close', forget);
  notification.show();
}

/** Notifies every `deploy-finished` event; returns the unsubscribe. */
export function notifyDeploys(bridge: Bridge, openProject: (projectId: string) => void): () => void {
  return bridge.on('deploy-finished', (event) =>
    notify(deployFinishedNotice(event), () => openProject(event.project.id)),
  );
}
