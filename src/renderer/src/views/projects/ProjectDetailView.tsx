// One project: deploy and stop it, where it runs (URL and service URLs), its source, its live logs, its
// releases with rollback, and its settings: archive (upload projects), environment variables, build
// configuration, and deletion; on a project the AI builder made, an instruction box to edit it with AI.
import { useEffect, type ReactNode } from 'react';
import { Icon } from '../../components/Icon';
import { ErrorNotice } from '../../components/Notice';
import { StatusBadge } from '../../components/StatusBadge';
import { formatDateTime, formatWhen } from '../../lib/format';
import { routeHref } from '../../stores/navigation/store';
import { useProject, useProjectActions, useProjectDetail } from '../../stores/projects/selectors';
import { useConnection } from '../../stores/platform/selectors';
import { isAiProject } from '../../stores/ai-builder/generators';
import { EditWithAi } from '../ai-builder/EditWithAi';
import { BuildConfigForm } from './BuildConfigForm';
import { DeleteProject } from './DeleteProject';
import { DeployButtons, DeployStatus } from './DeployControls';
import { EnvVarsEditor } from './EnvVarsEditor';
import { LogsPanel } from './LogsPanel';
import { ReleasesPanel } from './ReleasesPanel';
import { deployPhrase, describeSource } from './source';
import { UploadPanel } from './UploadPanel';

export function ProjectDetailView({ id }: { id: string }) {
  const project = useProject(id);
  const detail = useProjectDetail(id);
  const { loadDetail } = useProjectActions();
  const { online } = useConnection();

  useEffect(() => {
    void loadDetail(id);
  }, [id, loadDetail]);

  const back = (
    <a className="back-link" href={routeHref({ screen: 'projects' })}>
      <Icon name="back" />
      Projects
    </a>
  );

  if (!project) {
    return (
      <div className="page">
        {back}
        {detail.error ? (
          <ErrorNotice
            error={detail.error}
            title={
              detail.error.code === 'not_found'
                ? 'This project does not exist'
                : 'The project could not be loaded'
            }
            testId="project-error"
            action={
              detail.error.code === 'not_found' ? null : (
                <button type="button" className="btn btn-sm" onClick={() => void loadDetail(id)}>
                  Retry
                </button>
              )
            }
          />
        ) : (
          <div className="skeleton-block" aria-busy="true" aria-label="Loading the project" />
        )}
      </div>
    );
  }

  const source = describeSource(project);
  const services = Object.entries(project.service_urls);
  const cached = detail.view?.source === 'cache';

  return (
    <div className="page" data-testid="project-detail">
      {back}
      <header className="page-header">
        <div className="title-block">
          <div className="title-row">
            <h1 className="page-title">{project.name}</h1>
            <StatusBadge status={project.status} />
          </div>
          <p className="page-subtitle">
            <span className="mono">{project.subdomain}</span> · {source.kind} ·{' '}
            <span data-testid="deploy-phrase">{deployPhrase(project, (iso) => formatWhen(iso))}</span>
          </p>
        </div>
        <DeployButtons project={project} />
      </header>

      <DeployStatus project={project} />

      {detail.error && detail.view ? (
        <ErrorNotice error={detail.error} title="Showing what was loaded before" />
      ) : null}
      {cached ? (
        <p className="muted cached-note">Offline copy from {formatWhen(detail.view?.fetchedAt)}.</p>
      ) : null}

      <section className="card" aria-labelledby="overview-title">
        <h2 className="sr-only" id="overview-title">
          Overview
        </h2>
        <dl className="overview">
          <Item label="URL">
            <ExternalLink href={project.url} testId="project-url" />
          </Item>
          {services.length > 0 ? (
            <Item label="Services">
              <ul className="link-list">
                {services.map(([name, url]) => (
                  <li key={name}>
                    <span className="service-name">{name}</span>
                    <ExternalLink href={url} testId={`service-url-${name}`} />
                  </li>
                ))}
              </ul>
            </Item>
          ) : null}
          <Item label="Source">
            <span className="tag">{source.kind}</span>{' '}
            {source.detail ? <span className="mono break">{source.detail}</span> : null}
            {project.deploy_source === 'upload' ? <span className="muted">an uploaded archive</span> : null}
          </Item>
          <Item label="Created">
            {formatDateTime(project.created_at)}
            <span className="muted"> · updated {formatDateTime(project.updated_at)}</span>
          </Item>
        </dl>
      </section>

      <LogsPanel project={project} offline={cached || online === false} />
      {cached ? null : <ReleasesPanel project={project} />}
      {isAiProject(project) ? <EditWithAi project={project} /> : null}
      {project.deploy_source === 'upload' ? <UploadPanel project={project} /> : null}
      <EnvVarsEditor key={`env-${project.id}`} project={project} />
      <BuildConfigForm key={`build-${project.id}`} project={project} />
      <DeleteProject project={project} />
    </div>
  );
}

function Item({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="overview-item">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

function ExternalLink({ href, testId }: { href: string; testId?: string }) {
  return (
    <a
      className="external-link mono"
      href={href}
      target="_blank"
      rel="noopener noreferrer"
      data-testid={testId}
    >
      {href.replace(/^https?:\/\//, '')}
      <Icon name="external" size={13} />
    </a>
  );
}
