// Adding a custom domain: its name and, optionally, the project it should reach. The platform judges
// the name; its 422 field errors and a 409 (the domain is taken) are shown at the field they concern.
import { useRef, useState, type FormEvent } from 'react';
import { SelectField, TextField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { FormErrors } from '../../components/Notice';
import { fieldErrorsOf, NO_FIELD_ERRORS, unplacedErrors, type FieldErrors } from '../../lib/field-errors';
import { focusFirstInvalid } from '../../lib/focus';
import { useDomainActions } from '../../stores/domains/selectors';
import { useProjectList } from '../../stores/projects/selectors';
import { CardHeader } from '../../components/Card';

const SHOWN_PATHS = ['domain', 'project_id'];

export function AddDomainForm() {
  const { create } = useDomainActions();
  const { list } = useProjectList();
  const projects = list?.projects ?? [];
  const [domain, setDomain] = useState('');
  const [projectId, setProjectId] = useState('');
  const [submitting, setSubmitting] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const [errors, setErrors] = useState<FieldErrors>(NO_FIELD_ERRORS);
  const formRef = useRef<HTMLFormElement>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (submitting) return;
    setMessage(null);
    if (domain.trim() === '') {
      setErrors({ domain: 'enter a domain name you own, such as app.example.com' });
      focusFirstInvalid(formRef.current);
      return;
    }
    setSubmitting(true);
    setErrors(NO_FIELD_ERRORS);
    const outcome = await create({
      domain: domain.trim(),
      ...(projectId ? { project_id: projectId } : {}),
    });
    setSubmitting(false);
    if (outcome.ok) {
      setDomain('');
      setProjectId('');
      return;
    }
    const { error } = outcome;
    if (error.code === 'conflict' && !error.errors?.length) setErrors({ domain: error.detail });
    else if (error.code === 'not_found' && projectId && !error.errors?.length)
      setErrors({ project_id: error.detail });
    else setErrors(fieldErrorsOf(error));
    setMessage(
      error.errors?.length
        ? 'The domain was not added: check the fields marked below.'
        : error.code === 'conflict' || (error.code === 'not_found' && projectId)
          ? null
          : `The domain was not added: ${error.detail}`,
    );
    focusFirstInvalid(formRef.current);
  };

  const clearError = (path: string) => {
    if (errors[path]) setErrors(({ [path]: _gone, ...rest }) => rest);
  };
  const unplaced = unplacedErrors(errors, (path) => SHOWN_PATHS.includes(path));

  return (
    <form
      ref={formRef}
      className="card"
      onSubmit={(event) => void submit(event)}
      noValidate
      aria-labelledby="add-domain-title"
      data-testid="add-domain-form"
    >
      <CardHeader titleId="add-domain-title" title="Add a domain">
        A domain or subdomain you own. You will get the two DNS records to create for it.
      </CardHeader>
      <div className="card-body stack">
        <FormErrors message={message} errors={unplaced} testId="add-domain-errors" />
        <div className="grid-2 grid-wide-first domain-form-fields">
          <TextField
            label="Domain"
            value={domain}
            onChange={(event) => {
              setDomain(event.target.value);
              clearError('domain');
            }}
            error={errors.domain}
            placeholder="app.example.com"
            className="mono"
            inputMode="url"
            data-testid="domain-input"
          />
          <SelectField
            label="Project"
            error={errors.project_id}
            hint="Where its traffic goes once verified."
            value={projectId}
            onChange={(event) => {
              setProjectId(event.target.value);
              clearError('project_id');
            }}
            data-testid="domain-project"
          >
            <option value="">None for now (link one later)</option>
            {projects.map((project) => (
              <option key={project.id} value={project.id}>
                {project.name} ({project.subdomain})
              </option>
            ))}
          </SelectField>
        </div>
        <div className="button-row">
          <button type="submit" className="btn btn-primary" disabled={submitting} data-testid="add-domain">
            <Icon name={submitting ? 'spinner' : 'plus'} className={submitting ? 'spin' : undefined} />
            {submitting ? 'Adding…' : 'Add domain'}
          </button>
        </div>
      </div>
    </form>
  );
}
