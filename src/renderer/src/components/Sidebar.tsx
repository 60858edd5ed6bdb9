// The app frame's navigation: one link per screen that exists, and the platform's state at the bottom.
import { routeHref, type Route } from '../stores/navigation/store';
import { useRoute } from '../stores/navigation/selectors';
import { useConnection, useTransport } from '../stores/platform/selectors';
import { useLiveTunnelCount } from '../stores/tunnels/selectors';
import { BrandMark, Icon, type IconName } from './Icon';

const ITEMS: Array<{ label: string; icon: IconName; route: Route; matches: Array<Route['screen']> }> = [
  {
    label: 'Projects',
    icon: 'projects',
    route: { screen: 'projects' },
    matches: ['projects', 'project', 'new-project'],
  },
  { label: 'Build', icon: 'sparkles', route: { screen: 'build' }, matches: ['build'] },
  { label: 'Agent', icon: 'chat', route: { screen: 'agent' }, matches: ['agent'] },
  {
    label: 'Traffic',
    icon: 'traffic',
    route: { screen: 'traffic', requestId: null },
    matches: ['traffic'],
  },
  { label: 'Domains', icon: 'globe', route: { screen: 'domains' }, matches: ['domains'] },
  { label: 'Email', icon: 'mail', route: { screen: 'email' }, matches: ['email'] },
  { label: 'Settings', icon: 'settings', route: { screen: 'settings' }, matches: ['settings'] },
];

const STATE_LABELS = {
  online: 'Connected',
  refused: 'Key refused',
  offline: 'Offline',
  unknown: 'Connecting…',
  reconnecting: 'Reconnecting…',
} as const;

export function Sidebar() {
  const route = useRoute();
  const { online, mode, platformUrl, problem } = useConnection();
  const transport = useTransport();
  const liveTunnels = useLiveTunnelCount();
  const state =
    transport === 'reconnecting'
      ? 'reconnecting'
      : online === null
        ? 'unknown'
        : online
          ? problem
            ? 'refused'
            : 'online'
          : 'offline';
  return (
    <nav className="sidebar" aria-label="Main">
      <div className="brand">
        <BrandMark />
        <span className="brand-name">Wharf</span>
      </div>
      <ul className="nav-list">
        {ITEMS.map((item) => {
          const active = item.matches.includes(route.screen);
          // The Traffic link counts the tunnels that run.
          const badge = item.route.screen === 'traffic' && liveTunnels > 0;
          return (
            <li key={item.label}>
              <a
                className={`nav-link${active ? ' is-active' : ''}`}
                href={routeHref(item.route)}
                aria-current={active ? 'page' : undefined}
                aria-label={
                  badge
                    ? `${item.label}, ${liveTunnels} ${liveTunnels === 1 ? 'tunnel' : 'tunnels'} running`
                    : undefined
                }
                data-testid={`nav-${item.route.screen}`}
              >
                <Icon name={item.icon} />
                {item.label}
                {badge ? (
                  <span className="nav-badge" aria-hidden="true">
                    {liveTunnels}
                  </span>
                ) : null}
              </a>
            </li>
          );
        })}
      </ul>
      <div
        className="sidebar-footer"
        data-testid="platform-indicator"
        data-state={state}
        title={state === 'refused' ? (problem ?? undefined) : undefined}
      >
        <span className={`status-dot is-${state}`} aria-hidden="true" />
        <div className="sidebar-footer-text">
          <span className="sidebar-footer-title">{STATE_LABELS[state]}</span>
          <span className="sidebar-footer-detail" title={platformUrl ?? undefined}>
            {mode === 'local' ? 'Local platform' : mode === 'remote' ? hostOf(platformUrl) : '—'}
          </span>
        </div>
      </div>
    </nav>
  );
}

function hostOf(url: string | null): string {
  if (!url) return 'Remote platform';
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
