// "Edit with AI" on a project the builder made: an instruction goes to `ai.edit`, which changes the
// files, commits them and redeploys through the same repair loop; the answer lists the changed files.
import { useState, type FormEvent } from 'react';
import type { Project } from '../../../../shared/api/projects.js';
import { TextAreaField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { plural } from '../../lib/format';
import { fieldErrorsOf } from '../../lib/field-errors';
import { useAiBuilderActions, useEdit } from '../../stores/ai-builder/selectors';
import { AiErrorNotice } from './AiErrorNotice';

export function EditWithAi({ project }: { project: Project }) {
  const { edit } = useAiBuilderActions();
  const state = useEdit(project.id);
  const [instruction, setInstruction] = useState('');
  const fieldError = fieldErrorsOf(state.error).instruction;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (state.pending || instruction.trim() === '') return;
    const outcome = await edit(project.id, instruction.trim());
    if (outcome.ok) setInstruction('');
  };

  return (
    <section className="card" aria-labelledby={`edit-ai-${project.id}`} data-testid="edit-with-ai">
      <header className="card-header">
        <div>
          <h2 className="card-title" id={`edit-ai-${project.id}`}>
            Edit with AI
          </h2>
          <p className="card-description">
            Say what should change. The files are rewritten, committed to the project’s own history and
            deployed again.
          </p>
        </div>
      </header>
      <form className="card-body stack" onSubmit={(event) => void submit(event)} noValidate>
        {state.error && !fieldError ? (
          <AiErrorNotice error={state.error} title="The edit was refused" testId="edit-error" />
        ) : null}
        <TextAreaField
          label="Instruction"
          value={instruction}
          onChange={(event) => setInstruction(event.target.value)}
          error={fieldError}
          rows={3}
          maxLength={4000}
          placeholder="Add a contact form under the opening hours, and make the header dark green."
          disabled={state.pending}
          data-testid="edit-instruction"
        />
        <div className="button-row button-row-end">
          {state.changedFiles ? (
            <div className="edit-result" role="status" data-testid="edit-result">
              <Icon name="check" />
              <span>
                {state.changedFiles.length === 0
                  ? 'Nothing needed to change.'
                  : `${plural(state.changedFiles.length, 'file')} changed, redeploying:`}
              </span>
              {state.changedFiles.length > 0 ? (
                <ul className="changed-files" data-testid="edit-changed-files">
                  {state.changedFiles.map((file) => (
                    <li key={file} className="mono">
                      {file}
                    </li>
                  ))}
                </ul>
              ) : null}
            </div>
          ) : (
            <span />
          )}
          <button
            type="submit"
            className="btn btn-primary"
            disabled={state.pending || instruction.trim() === ''}
            data-testid="edit-submit"
          >
            {state.pending ? (
              <>
                <Icon name="spinner" className="spin" />
                Editing…
              </>
            ) : (
              <>
                <Icon name="sparkles" />
                Edit with AI
              </>
            )}
          </button>
        </div>
      </form>
    </section>
  );
}
