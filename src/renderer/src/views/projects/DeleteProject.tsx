// Deleting a project, behind a dialog that asks for its name.
import { useState } from 'react';
import type { Project } from '../../../../shared/api/projects.js';
import { ConfirmDanger } from '../../components/Dialog';
import { TextField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { useNavigate } from '../../stores/navigation/selectors';
import { useProjectActions } from '../../stores/projects/selectors';

export function DeleteProject({ project }: { project: Project }) {
  const [open, setOpen] = useState(false);
  return (
    <section className="card card-danger" aria-labelledby="danger-title">
      <div className="card-body danger-row">
        <div>
          <h2 className="card-title" id="danger-title">
            Delete this project
          </h2>
          <p className="card-description">
            Stops it and removes it with its variables, configuration, archive and the database Wharf made for
            it, if any. This cannot be undone.
          </p>
        </div>
        <button
          type="button"
          className="btn btn-danger"
          onClick={() => setOpen(true)}
          data-testid="delete-project"
        >
          <Icon name="trash" />
          Delete project
        </button>
      </div>
      {open ? <ConfirmDelete project={project} onClose={() => setOpen(false)} /> : null}
    </section>
  );
}

function ConfirmDelete({ project, onClose }: { project: Project; onClose: () => void }) {
  const { remove } = useProjectActions();
  const navigate = useNavigate();
  const [typed, setTyped] = useState('');
  const matches = typed.trim() === project.name.trim();

  return (
    <ConfirmDanger
      title={`Delete ${project.name}?`}
      description={
        <p>
          The app at <span className="mono">{project.url}</span> stops and the project is deleted for good.
        </p>
      }
      onClose={onClose}
      testId="delete-dialog"
      label="Delete project"
      busyLabel="Deleting…"
      disabled={!matches}
      confirmTestId="confirm-delete"
      failedTitle="The project was not deleted"
      onConfirm={async () => {
        const outcome = await remove(project.id);
        if (!outcome.ok) return outcome.error;
        navigate({ screen: 'projects' }, { replace: true });
        return null;
      }}
    >
      <TextField
        label={
          <>
            Type <strong className="mono">{project.name}</strong> to confirm
          </>
        }
        value={typed}
        onChange={(event) => setTyped(event.target.value)}
        autoFocus
        data-testid="confirm-delete-input"
      />
    </ConfirmDanger>
  );
}
