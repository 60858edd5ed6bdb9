// Where the user is: a route kept in the URL fragment (`#/projects/prj_…`, `#/traffic/req_…`, `#/agent`), so
// reloads, back/forward and plain links (`<a href="#/settings">`) work in a browser and in Electron's
// file:// page alike. A route may name a field to land on (`#/settings/ai-key`: the AI key's input,
// scrolled to and focused).
import { create } from 'zustand';

export type Route =
  | { screen: 'projects' }
  | { screen: 'new-project' }
  | { screen: 'project'; id: string }
  | { screen: 'traffic'; requestId: string | null }
  | { screen: 'agent' }
  | { screen: 'build' }
  | { screen: 'domains' }
  | { screen: 'email' }
  | { screen: 'settings'; field?: SettingsField };

/** The Settings fields a link can land on. */
export type SettingsField = 'ai-key';

/** Where "Add your AI key" goes: Settings, at the AI key's input. */
export const AI_KEY_ROUTE: Route = { screen: 'settings', field: 'ai-key' };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'settings') return parts[1] === 'ai-key' ? AI_KEY_ROUTE : { screen: 'settings' };
  if (parts[0] === 'domains') return { screen: 'domains' };
  if (parts[0] === 'agent') return { screen: 'agent' };
  if (parts[0] === 'build') return { screen: 'build' };
  if (parts[0] === 'email') return { screen: 'email' };
  if (parts[0] === 'traffic') return { screen: 'traffic', requestId: parts[1] ?? null };
  if (parts[0] === 'projects' && parts[1] === 'new') return { screen: 'new-project' };
  if (parts[0] === 'projects' && parts[1]) return { screen: 'project', id: parts[1] };
  return { screen: 'projects' };
}

export function routeHref(route: Route): string {
  switch (route.screen) {
    case 'projects':
      return '#/projects';
    case 'new-project':
      return '#/projects/new';
    case 'project':
      return `#/projects/${encodeURIComponent(route.id)}`;
    case 'traffic':
      return route.requestId ? `#/traffic/${encodeURIComponent(route.requestId)}` : '#/traffic';
    case 'agent':
      return '#/agent';
    case 'build':
      return '#/build';
    case 'domains':
      return '#/domains';
    case 'email':
      return '#/email';
    case 'settings':
      return route.field ? `#/settings/${route.field}` : '#/settings';
  }
}

interface NavigationState {
  route: Route;
  navigate(route: Route, options?: { replace?: boolean }): void;
}

export const useNavigationStore = create<NavigationState>()((set) => ({
  route: parseRoute(window.location.hash),
  navigate(route, options) {
    const href = routeHref(route);
    if (options?.replace) window.history.replaceState(window.history.state, '', href);
    else if (window.location.hash !== href) window.history.pushState(window.history.state, '', href);
    set({ route });
  },
}));

window.addEventListener('hashchange', () => {
  useNavigationStore.setState({ route: parseRoute(window.location.hash) });
});
window.addEventListener('popstate', () => {
  useNavigationStore.setState({ route: parseRoute(window.location.hash) });
});
