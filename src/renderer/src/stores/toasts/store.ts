// Short-lived messages in a corner of the window. In a browser the app announces the end of each
// deploy this way; the desktop app leaves that to a system notification from the main process. A
// deploy's toast is not shown on that project's own page (its badge, banner and logs say it there,
// and a toast would sit on the logs), and opening a project's page clears the toasts about it.
import { create } from 'zustand';
import type { DeployFinishedEvent } from '../../../../shared/bridge.js';
import { bridge } from '../../bridge';
import { useNavigationStore } from '../navigation/store';

export interface Toast {
  id: number;
  tone: 'success' | 'error';
  message: string;
  /** The project it is about, for a link to it. */
  projectId: string | null;
  /** A URL to open from the toast. */
  url: string | null;
}

interface ToastsState {
  toasts: Toast[];
  show(toast: Omit<Toast, 'id'>): number;
  dismiss(id: number): void;
  /** Dismisses the toasts about a project (its page was opened). */
  dismissAbout(projectId: string): void;
  /** Shows a toast for each deploy that ends (browser only); returns the unsubscribe. */
  subscribe(): () => void;
}

/** How long a toast stays, unless the pointer or focus is on it (see Toasts.tsx). */
export const TOAST_MS = 10_000;
const MAX_TOASTS = 4;

let serial = 0;

export function deployToast({ project, outcome }: DeployFinishedEvent): Omit<Toast, 'id'> {
  if (outcome === 'running') {
    return {
      tone: 'success',
      message: `${project.name} is running at ${project.url}`,
      projectId: project.id,
      url: project.url,
    };
  }
  return {
    tone: 'error',
    message: `${project.name} failed to deploy: ${project.last_deploy_error ?? 'see its logs for why'}`,
    projectId: project.id,
    url: null,
  };
}

export const useToastsStore = create<ToastsState>()((set, get) => ({
  toasts: [],

  show(toast) {
    const id = ++serial;
    set((state) => ({ toasts: [...state.toasts, { ...toast, id }].slice(-MAX_TOASTS) }));
    return id;
  },

  dismiss(id) {
    set((state) => ({ toasts: state.toasts.filter((toast) => toast.id !== id) }));
  },

  dismissAbout(projectId) {
    if (!get().toasts.some((toast) => toast.projectId === projectId)) return;
    set((state) => ({ toasts: state.toasts.filter((toast) => toast.projectId !== projectId) }));
  },

  subscribe() {
    if (bridge.host !== 'browser') return () => undefined;
    const onPage = (projectId: string) => {
      const { route } = useNavigationStore.getState();
      return route.screen === 'project' && route.id === projectId;
    };
    const offFinished = bridge.on('deploy-finished', (event) => {
      if (!onPage(event.project.id)) get().show(deployToast(event));
    });
    const offRoute = useNavigationStore.subscribe(({ route }) => {
      if (route.screen === 'project') get().dismissAbout(route.id);
    });
    return () => {
      offFinished();
      offRoute();
    };
  },
}));

/** An error toast about no project and with no link: why an action on the page failed. */
export function showErrorToast(message: string): number {
  return useToastsStore.getState().show({ tone: 'error', message, projectId: null, url: null });
}
