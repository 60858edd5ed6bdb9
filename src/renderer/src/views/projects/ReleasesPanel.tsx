// A project's releases, newest first: how each deploy ended, which one serves now, when, from what, and
// a Roll back button on the ones the platform still keeps. Rolling back asks first, saying which env
// vars change (names only: values may be secrets), then the project shows `building` and the list
// loads again once the platform has answered.
import { useEffect, useState } from 'react';
import type { Project, Release, ReleaseStatus } from '../../../../shared/api/projects.js';
import type { BridgeErrorShape } from '../../../../shared/bridge.js';
import { Dialog } from '../../components/Dialog';
import { Icon } from '../../components/Icon';
import { ErrorNotice, LoadFailed } from '../../components/Notice';
import { formatAgo, formatDateTime, plural } from '../../lib/format';
import { useProjectAction, useProjectActions, useReleases } from '../../stores/projects/selectors';
import { envChanges, sourceLabel } from './releases';
import { Card, CardHeader } from '../../components/Card';
import { RefreshButton } from '../../components/RefreshButton';

const STATUS_LABELS: Record<ReleaseStatus, string> = {
  building: 'Building',
  running: 'Running',
  failed: 'Failed',
  cancelled: 'Cancelled',
  retired: 'Retired',
};

const STATUS_TITLES: Record<ReleaseStatus, string> = {
  building: 'Its deploy is running',
  running: 'It serves the project',
  failed: 'Its deploy failed: it never served',
  cancelled: 'A newer deploy, a stop or a platform restart cancelled it before it served',
  retired: 'It served before; a newer release or a stop replaced it',
};

export function ReleaseBadge({ status }: { status: ReleaseStatus }) {
  return (
    <span className="badge" data-status={status} data-testid="release-status" title={STATUS_TITLES[status]}>
      <span className="badge-dot" aria-hidden="true" />
      {STATUS_LABELS[status] ?? status}
    </span>
  );
}

export function ReleasesPanel({ project }: { project: Project }) {
  const { releases, loading, error } = useReleases(project.id);
  const { loadReleases } = useProjectActions();
  const [confirming, setConfirming] = useState<Release | null>(null);

  useEffect(() => {
    void loadReleases(project.id);
  }, [project.id, loadReleases]);

  return (
    <Card titleId="releases-title" testId="releases">
      <CardHeader
        title="Releases"
        actions={
          <RefreshButton
            onClick={() => void loadReleases(project.id)}
            busy={loading}
            testId="refresh-releases"
            spinner
          />
        }
      >
        Every deploy, newest first. Rolling back starts an earlier release again without a build, with the
        environment variables it was deployed with.
      </CardHeader>
      <div className="card-body">
        {error && releases === null ? (
          <LoadFailed
            error={error}
            title="The releases could not be loaded"
            testId="releases-error"
            onRetry={() => void loadReleases(project.id)}
            retrying={loading}
          />
        ) : releases === null ? (
          <div className="skeleton-block short" aria-busy="true" aria-label="Loading the releases" />
        ) : (
          <>
            {error ? <ErrorNotice error={error} title="Showing the releases loaded before" /> : null}
            {releases.length === 0 ? (
              <p className="muted" data-testid="releases-empty">
                No releases yet: each deploy makes one.
              </p>
            ) : (
              <ol className="release-list" data-testid="release-list">
                {releases.map((release) => (
                  <ReleaseRow key={release.id} release={release} onRollback={() => setConfirming(release)} />
                ))}
              </ol>
            )}
          </>
        )}
      </div>
      {confirming ? (
        <ConfirmRollback project={project} release={confirming} onClose={() => setConfirming(null)} />
      ) : null}
    </Card>
  );
}

function ReleaseRow({ release, onRollback }: { release: Release; onRollback: () => void }) {
  const action = useProjectAction(release.project_id);
  // A served release the platform no longer keeps: say why it has no button.
  const pruned = release.status === 'retired' && !release.rollback_available;
  const source = sourceLabel(release.source);
  return (
    <li
      className="release-row"
      data-testid={`release-${release.id}`}
      data-current={release.current}
      aria-label={`Release ${release.id}${release.current ? ', serving now' : ''}`}
    >
      <div className="release-state">
        <ReleaseBadge status={release.status} />
        {release.current ? (
          <span className="tag tag-current" data-testid="release-current" title="It serves the project now">
            Current
          </span>
        ) : null}
      </div>
      <div className="release-main">
        <span className="release-source" data-testid="release-source">
          <span className={`release-source-text${source.mono ? ' mono' : ''}`} title={release.source}>
            {source.text}
          </span>
          {release.commit ? (
            <span className="tag mono" title={`Commit ${release.commit}`} data-testid="release-commit">
              {release.commit.slice(0, 7)}
            </span>
          ) : null}
        </span>
        <span className="release-meta muted">
          <span className="mono">{release.id}</span>
          {release.image ? (
            <>
              {' · '}
              <span className="mono break" data-testid="release-image">
                {release.image}
              </span>
            </>
          ) : null}
          {pruned ? ' · its files are no longer kept' : null}
        </span>
        {release.error ? (
          <span className="release-error mono" title={release.error} data-testid="release-error">
            {release.error}
          </span>
        ) : null}
      </div>
      <time
        className="release-when muted"
        dateTime={release.created_at}
        title={`Deployed ${formatDateTime(release.created_at)}${release.finished_at ? `, finished ${formatDateTime(release.finished_at)}` : ''}`}
      >
        {formatAgo(release.created_at)}
      </time>
      <div className="release-actions">
        {release.rollback_available ? (
          <button
            type="button"
            className="btn btn-sm"
            onClick={onRollback}
            disabled={action.pending !== null}
            aria-label={`Roll back to release ${release.id}`}
            data-testid="rollback-release"
          >
            <Icon name="replay" />
            Roll back
          </button>
        ) : null}
      </div>
    </li>
  );
}

function ConfirmRollback({
  project,
  release,
  onClose,
}: {
  project: Project;
  release: Release;
  onClose: () => void;
}) {
  const { rollback } = useProjectActions();
  const [starting, setStarting] = useState(false);
  const [error, setError] = useState<BridgeErrorShape | null>(null);
  const changes = envChanges(project.env_vars, release.env_vars);
  const changed = changes.added.length + changes.removed.length + changes.changed.length;

  const confirm = async () => {
    if (starting) return;
    setStarting(true);
    setError(null);
    const outcome = await rollback(project.id, release.id);
    if (outcome.ok) {
      onClose();
      return;
    }
    setStarting(false);
    setError(outcome.error);
  };

  return (
    <Dialog
      title={`Roll ${project.name} back?`}
      description={
        <p>
          Release <span className="mono">{release.id}</span>, deployed {formatDateTime(release.created_at)},
          starts again without a build. The current version keeps serving until it is up, and if it does not
          start.
        </p>
      }
      onClose={onClose}
      onSubmit={() => void confirm()}
      testId="rollback-dialog"
      footer={
        <>
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button
            type="submit"
            className="btn btn-primary"
            disabled={starting}
            autoFocus
            data-testid="confirm-rollback"
          >
            {starting ? 'Starting…' : 'Roll back'}
          </button>
        </>
      }
    >
      {error ? (
        <ErrorNotice error={error} title="The rollback did not start" testId="rollback-error" />
      ) : null}
      {project.status === 'building' ? (
        <div className="notice notice-warning" data-testid="rollback-cancels-deploy">
          <Icon name="alert" className="notice-icon" />
          <div className="notice-body">
            <p>A deploy is running: rolling back cancels it.</p>
          </div>
        </div>
      ) : null}
      <div className="rollback-env" data-testid="rollback-env">
        {changed === 0 ? (
          <p className="muted">The environment variables stay as they are.</p>
        ) : (
          <>
            <p>Its environment variables replace the project’s ({plural(changed, 'change')}):</p>
            <ul className="rollback-env-list">
              {changes.changed.map((name) => (
                <li key={name}>
                  <span className="mono">{name}</span> <span className="muted">changes</span>
                </li>
              ))}
              {changes.added.map((name) => (
                <li key={name}>
                  <span className="mono">{name}</span> <span className="muted">is added</span>
                </li>
              ))}
              {changes.removed.map((name) => (
                <li key={name}>
                  <span className="mono">{name}</span> <span className="muted">is removed</span>
                </li>
              ))}
            </ul>
          </>
        )}
      </div>
    </Dialog>
  );
}
