// Deploying a project: the Deploy (or Redeploy) and Stop buttons of the page header, and below it what
// the deploy is doing: building (with a spinner; a rollback names its release), refused (an upload
// project without an archive is pointed to the upload control), or failed with the platform's reason.
import type { Project } from '../../../../shared/api/projects.js';
import { CloseButton } from '../../components/CloseButton';
import { Icon } from '../../components/Icon';
import { ErrorNotice } from '../../components/Notice';
import { formatWhen } from '../../lib/format';
import { useProjectAction, useProjectActions, useRollback } from '../../stores/projects/selectors';

/** Where the Archive card's file input is (UploadPanel), for "Choose an archive". */
export const UPLOAD_SECTION_ID = 'project-archive';

export function DeployButtons({ project }: { project: Project }) {
  const action = useProjectAction(project.id);
  const rollingBackTo = useRollback(project.id);
  const { deploy, stop } = useProjectActions();
  const building = project.status === 'building';
  const canStop = project.status === 'running' || building;
  const deployLabel =
    action.pending === 'deploy'
      ? 'Starting…'
      : building
        ? rollingBackTo
          ? 'Rolling back…'
          : 'Deploying…'
        : project.last_deploy_at === null
          ? 'Deploy'
          : 'Redeploy';

  return (
    <div className="button-row">
      <button
        type="button"
        className="btn"
        onClick={() => void stop(project.id)}
        disabled={!canStop || action.pending !== null}
        data-testid="stop-project"
      >
        <Icon name="stop" />
        {action.pending === 'stop' ? 'Stopping…' : 'Stop'}
      </button>
      <button
        type="button"
        className="btn btn-primary"
        onClick={() => void deploy(project.id)}
        disabled={building || action.pending !== null}
        aria-describedby={building ? 'deploy-status' : undefined}
        data-testid="deploy-project"
      >
        <Icon
          name={building || action.pending === 'deploy' ? 'spinner' : 'play'}
          className={building || action.pending === 'deploy' ? 'spin' : undefined}
        />
        {deployLabel}
      </button>
    </div>
  );
}

export function DeployStatus({ project }: { project: Project }) {
  const action = useProjectAction(project.id);
  const rollingBackTo = useRollback(project.id);
  const { clearActionError } = useProjectActions();

  return (
    <>
      {project.status === 'building' ? (
        <div className="deploy-status" id="deploy-status" role="status" data-testid="deploy-status">
          <Icon name="spinner" className="spin deploy-status-icon" />
          <p>
            {rollingBackTo ? (
              <strong>
                Rolling {project.name} back to release <span className="mono">{rollingBackTo}</span>
              </strong>
            ) : (
              <strong>Building and starting {project.name}</strong>
            )}
            <span className="muted">
              {' '}
              · started {formatWhen(project.last_deploy_at)} · the logs below follow along
            </span>
          </p>
        </div>
      ) : null}

      {action.error ? (
        <ErrorNotice
          error={action.error}
          title={
            action.error.code === 'upload_required'
              ? 'Upload an archive first'
              : action.failed === 'stop'
                ? 'The project could not be stopped'
                : 'The deploy could not start'
          }
          testId="deploy-refused"
          action={
            <div className="button-row">
              {action.error.code === 'upload_required' ? (
                <button
                  type="button"
                  className="btn btn-sm"
                  data-testid="go-to-upload"
                  onClick={() => {
                    const section = document.getElementById(UPLOAD_SECTION_ID);
                    section?.scrollIntoView({ block: 'center', behavior: 'smooth' });
                    section
                      ?.querySelector<HTMLInputElement>('input[type="file"]')
                      ?.focus({ preventScroll: true });
                  }}
                >
                  <Icon name="upload" />
                  Choose an archive
                </button>
              ) : null}
              <CloseButton label="Dismiss" small onClick={() => clearActionError(project.id)} />
            </div>
          }
        />
      ) : null}

      {project.last_deploy_error && project.status !== 'building' ? (
        <div
          className={`notice ${project.status === 'running' ? 'notice-warning' : 'notice-error'}`}
          role="alert"
          data-testid="deploy-error"
        >
          <Icon name="alert" className="notice-icon" />
          <div className="notice-body">
            <p className="notice-title">
              {project.status === 'running'
                ? 'The last deploy failed: the previous version is still running'
                : 'The last deploy failed'}
            </p>
            <p className="mono deploy-error-text">{project.last_deploy_error}</p>
          </div>
        </div>
      ) : null}
    </>
  );
}
