// The app frame: sidebar, banners, and the screen of the current route. Without a usable token (HTTP
// transport only) the whole page explains how to open it instead.
import { useEffect } from 'react';
import { StatusBanners } from './components/Banners';
import { LockedOut } from './components/LockedOut';
import { Sidebar } from './components/Sidebar';
import { Toasts } from './components/Toasts';
import type { Route } from './stores/navigation/store';
import { useRoute } from './stores/navigation/selectors';
import { useTransport } from './stores/platform/selectors';
import { useProject } from './stores/projects/selectors';
import { AgentView } from './views/agent/AgentView';
import { AiBuilderView } from './views/ai-builder/AiBuilderView';
import { NewProjectView } from './views/projects/NewProjectView';
import { ProjectDetailView } from './views/projects/ProjectDetailView';
import { ProjectsView } from './views/projects/ProjectsView';
import { DomainsView } from './views/domains/DomainsView';
import { EmailView } from './views/email/EmailView';
import { SettingsView } from './views/settings/SettingsView';
import { TrafficView, useSelectedTitle } from './views/traffic/TrafficView';

export function App() {
  const transport = useTransport();
  const route = useRoute();
  const locked = transport === 'no-token' || transport === 'refused';

  useDocumentTitle(route);
  // A new screen starts at its top, and keyboard focus is not lost with the link that led there.
  useEffect(() => {
    const content = document.getElementById('content');
    content?.scrollTo({ top: 0 });
    if (document.activeElement === document.body) content?.focus({ preventScroll: true });
  }, [route]);

  if (locked) return <LockedOut reason={transport} />;

  return (
    <div className="app">
      <a
        className="skip-link"
        href="#content"
        onClick={(event) => {
          event.preventDefault();
          document.getElementById('content')?.focus();
        }}
      >
        Skip to content
      </a>
      <Sidebar />
      <div className="main">
        <StatusBanners />
        <main className="content" id="content" tabIndex={-1}>
          <Screen route={route} />
        </main>
      </div>
      <Toasts />
    </div>
  );
}

function Screen({ route }: { route: Route }) {
  switch (route.screen) {
    case 'projects':
      return <ProjectsView />;
    case 'new-project':
      return <NewProjectView />;
    case 'project':
      return <ProjectDetailView key={route.id} id={route.id} />;
    case 'traffic':
      return <TrafficView requestId={route.requestId} />;
    case 'agent':
      return <AgentView />;
    case 'build':
      return <AiBuilderView />;
    case 'domains':
      return <DomainsView />;
    case 'email':
      return <EmailView />;
    case 'settings':
      return <SettingsView />;
  }
}

function useDocumentTitle(route: Route) {
  const project = useProject(route.screen === 'project' ? route.id : '');
  const traffic = useSelectedTitle(route.screen === 'traffic' ? route.requestId : null);
  const title =
    route.screen === 'settings'
      ? 'Settings'
      : route.screen === 'agent'
        ? 'Agent'
        : route.screen === 'build'
          ? 'Build with AI'
          : route.screen === 'domains'
            ? 'Domains'
            : route.screen === 'email'
              ? 'Email verification'
              : route.screen === 'traffic'
                ? traffic
                : route.screen === 'new-project'
                  ? 'New project'
                  : route.screen === 'project'
                    ? (project?.name ?? 'Project')
                    : 'Projects';
  useEffect(() => {
    document.title = `${title} · Wharf`;
  }, [title]);
}
