// The project list: every project with its live status, newest first, and the way to create one.
import { Icon } from '../../components/Icon';
import { LoadFailed } from '../../components/Notice';
import { StatusBadge } from '../../components/StatusBadge';
import { formatAgo, formatDateTime, formatWhen } from '../../lib/format';
import { routeHref } from '../../stores/navigation/store';
import { useProjectActions, useProjectList } from '../../stores/projects/selectors';
import { describeSource, redeployFailed } from './source';

export function ProjectsView() {
  const { list, loading, error } = useProjectList();
  const { loadList } = useProjectActions();
  const projects = list?.projects ?? [];
  const cached = list?.source === 'cache';
  const neverSeen = cached && !list?.fetchedAt;

  return (
    <div className="page">
      <header className="page-header">
        <div className="title-block">
          <h1 className="page-title">Projects</h1>
          <p className="page-subtitle">
            Apps deployed from a git repository, a container image or an uploaded archive.
          </p>
        </div>
        <a className="btn btn-primary" href={routeHref({ screen: 'new-project' })} data-testid="new-project">
          <Icon name="plus" />
          New project
        </a>
      </header>

      {error && !list ? (
        <LoadFailed
          error={error}
          title="The projects could not be loaded"
          testId="projects-error"
          onRetry={() => void loadList()}
          retrying={loading}
        />
      ) : null}

      {!list && !error ? (
        <div className="project-list" aria-busy="true" aria-label="Loading projects">
          {[0, 1, 2].map((i) => (
            <div key={i} className="project-row skeleton-row" />
          ))}
        </div>
      ) : null}

      {list && projects.length === 0 && neverSeen ? (
        <div className="empty-state" data-testid="projects-never-seen">
          <span className="empty-icon" aria-hidden="true">
            <Icon name="alert" size={22} />
          </span>
          <h2>Nothing to show from this platform yet</h2>
          <p>
            Wharf keeps a copy of each platform&rsquo;s projects once it has reached it; this one has not
            answered yet. Check its address in Settings, or wait until it is back.
          </p>
          <a className="btn" href={routeHref({ screen: 'settings' })}>
            <Icon name="settings" />
            Open Settings
          </a>
        </div>
      ) : null}

      {list && projects.length === 0 && !neverSeen ? (
        <div className="empty-state" data-testid="projects-empty">
          <span className="empty-icon" aria-hidden="true">
            <Icon name="projects" size={22} />
          </span>
          <h2>No projects yet</h2>
          <p>Deploy an app from a git repository, a container image or a .tar.gz of its files.</p>
          <a className="btn btn-primary" href={routeHref({ screen: 'new-project' })}>
            <Icon name="plus" />
            New project
          </a>
        </div>
      ) : null}

      {projects.length > 0 ? (
        <ul className="project-list" data-testid="project-list" aria-label="Projects">
          {projects.map((project) => {
            const source = describeSource(project);
            return (
              <li
                key={project.id}
                className="project-row"
                data-testid={`project-row-${project.subdomain}`}
                data-status={project.status}
                data-cached={cached ? 'true' : undefined}
              >
                <div className="project-main">
                  <a
                    className="project-name stretched-link"
                    href={routeHref({ screen: 'project', id: project.id })}
                  >
                    {project.name}
                  </a>
                  <span className="project-sub mono">{project.subdomain}</span>
                </div>
                <div className="project-source">
                  <span className="tag">{source.kind}</span>
                  {source.detail ? (
                    <span className="project-source-detail mono" title={source.detail}>
                      {source.detail}
                    </span>
                  ) : null}
                </div>
                <span className="project-status">
                  <StatusBadge status={project.status} />
                  {cached ? (
                    <span
                      className="status-note is-cached"
                      data-testid="last-seen"
                      title={`The platform could not be reached: this is what it said ${formatWhen(list?.fetchedAt)}`}
                    >
                      last seen {formatAgo(list?.fetchedAt)}
                    </span>
                  ) : null}
                  {redeployFailed(project) ? (
                    <span
                      className="status-note"
                      data-testid="redeploy-failed"
                      title={project.last_deploy_error ?? undefined}
                    >
                      <Icon name="alert" size={12} /> last deploy failed
                    </span>
                  ) : null}
                </span>
                <span
                  className="project-updated muted"
                  title={`Updated ${formatDateTime(project.updated_at)}`}
                >
                  {formatAgo(project.updated_at)}
                </span>
                <a
                  className="icon-button above-stretched"
                  href={project.url}
                  target="_blank"
                  rel="noopener noreferrer"
                  aria-label={`Open ${project.name} at ${project.url}`}
                  title={project.url}
                >
                  <Icon name="external" />
                </a>
              </li>
            );
          })}
        </ul>
      ) : null}
    </div>
  );
}
