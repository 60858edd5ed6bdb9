// The banners above every screen: the platform is offline (and what is shown comes from the cache),
// the platform refuses us, or the page lost its connection to the Wharf app itself.
import { formatAgo, formatWhen } from '../lib/format';
import { useRoute } from '../stores/navigation/selectors';
import type { Route } from '../stores/navigation/store';
import { useConnection, useTransport } from '../stores/platform/selectors';
import { useProjectList } from '../stores/projects/selectors';
import { Icon } from './Icon';
import { capitalize } from './Notice';

export function StatusBanners() {
  const transport = useTransport();
  const { online, problem } = useConnection();
  const { list } = useProjectList();
  const route = useRoute();

  if (transport === 'reconnecting') {
    return (
      <div className="banner banner-warning" role="status" data-testid="transport-banner">
        <Icon name="refresh" className="banner-icon spin" />
        <p>
          <strong>Lost the connection to the Wharf app</strong> — reconnecting… Is <code>wharf app</code>{' '}
          still running?
        </p>
      </div>
    );
  }

  const cached = list?.source === 'cache';
  if (online === false && (cached || problem)) {
    return (
      <div className="banner banner-warning" role="status" data-testid="offline-banner">
        <Icon name="alert" className="banner-icon" />
        <p>
          <strong>{offlineTitle(route.screen, cached, list?.fetchedAt)}</strong>
          {problem ? <span className="banner-detail">{capitalize(problem)}</span> : null}
        </p>
      </div>
    );
  }

  if (online === true && problem) {
    return (
      <div className="banner banner-danger" role="status" data-testid="problem-banner">
        <Icon name="alert" className="banner-icon" />
        <p>
          <strong>The platform answers, but not as expected</strong>
          <span className="banner-detail">{capitalize(problem)}</span>
        </p>
      </div>
    );
  }
  return null;
}

/** What the offline banner says: what the screen shows now, and what does not work. */
function offlineTitle(
  screen: Route['screen'],
  cached: boolean,
  fetchedAt: string | null | undefined,
): string {
  switch (screen) {
    case 'traffic':
      return 'Offline — tunnels cannot start; the traffic history below is kept on this computer';
    case 'projects':
    case 'project':
      if (!cached) return 'Offline — the platform cannot be reached';
      return fetchedAt
        ? `Offline — showing projects cached ${formatAgo(fetchedAt)} (at ${formatWhen(fetchedAt)})`
        : 'Offline — this platform has not answered yet, so nothing of it is cached here';
    default:
      return 'Offline — the platform cannot be reached; this screen works again once it is back';
  }
}
