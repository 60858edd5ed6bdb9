// What a generated app needs before it can run (`needs_setup`): one input per environment variable,
// with what it is for (secrets in password inputs), and the database the platform can create for it.
import { useRef, useState, type FormEvent } from 'react';
import { TextField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { FormErrors } from '../../components/Notice';
import { focusFirstInvalid } from '../../lib/focus';
import { fieldErrorsOf, unplacedErrors } from '../../lib/field-errors';
import { looksSecret } from '../../stores/ai-builder/generators';
import { useAiBuilder, useAiBuilderActions } from '../../stores/ai-builder/selectors';
import type { Needs } from '../../stores/ai-builder/store';
import { AiErrorNotice } from './AiErrorNotice';

export function SetupForm({ needs, subdomain }: { needs: Needs; subdomain: string }) {
  const { phase, error } = useAiBuilder();
  const { deploy } = useAiBuilderActions();
  const [values, setValues] = useState<Record<string, string>>({});
  const [database, setDatabase] = useState(needs.database === 'postgres');
  const [missing, setMissing] = useState<Record<string, string>>({});
  const formRef = useRef<HTMLFormElement>(null);
  const deploying = phase === 'deploying';

  const serverErrors = fieldErrorsOf(error, 'env');
  const errorOf = (name: string) => missing[name] ?? serverErrors[name];
  // The platform cannot make databases (no server configured, or it refused), or the app was sent
  // without the database it needs.
  const databaseError =
    error && error.code === 'unavailable' && /postgres|database/i.test(error.detail)
      ? error.detail
      : serverErrors.database !== undefined
        ? 'The app needs a PostgreSQL database: keep this on, or set your own DATABASE_URL on the project first.'
        : null;
  const unplaced = unplacedErrors(
    serverErrors,
    (path) => path === 'database' || needs.env.some((env) => env.name === path),
  );

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (deploying) return;
    const empty: Record<string, string> = {};
    for (const env of needs.env)
      if ((values[env.name] ?? '').trim() === '')
        empty[env.name] = 'fill this in: the app cannot start without it';
    setMissing(empty);
    if (Object.keys(empty).length > 0) {
      focusFirstInvalid(formRef.current);
      return;
    }
    const env = Object.fromEntries(needs.env.map(({ name }) => [name, (values[name] ?? '').trim()]));
    const outcome = await deploy(env, database);
    if (!outcome.ok) focusFirstInvalid(formRef.current);
  };

  return (
    <form
      ref={formRef}
      className="card"
      onSubmit={(event) => void submit(event)}
      noValidate
      data-testid="setup-form"
    >
      <header className="card-header">
        <div>
          <h2 className="card-title">
            Finish setting up <span className="mono">{subdomain}</span>
          </h2>
          <p className="card-description">
            {needs.env.length > 0
              ? 'The app is generated. It needs these values before it can run; secrets are stored with the project and never shown back in full.'
              : 'The app is generated. It needs a database before it can run.'}
          </p>
        </div>
      </header>
      <div className="card-body stack">
        {error && !databaseError && Object.keys(serverErrors).length === 0 ? (
          <AiErrorNotice error={error} title="The app could not be deployed" testId="setup-error" />
        ) : null}
        <FormErrors
          message={null}
          errors={unplaced.map(({ path, message }) => ({ path: `env.${path}`, message }))}
        />
        {needs.env.map((env) => (
          <TextField
            key={env.name}
            label={<span className="mono">{env.name}</span>}
            hint={env.description}
            type={looksSecret(env.name) ? 'password' : 'text'}
            autoComplete={looksSecret(env.name) ? 'new-password' : 'off'}
            value={values[env.name] ?? ''}
            onChange={(event) => {
              const value = event.target.value;
              setValues((current) => ({ ...current, [env.name]: value }));
              if (missing[env.name]) setMissing(({ [env.name]: _gone, ...rest }) => rest);
            }}
            error={errorOf(env.name)}
            className="mono"
            disabled={deploying}
            data-testid={`setup-env-${env.name}`}
          />
        ))}
        {needs.database === 'postgres' ? (
          <div className={`field${databaseError ? ' has-error' : ''}`}>
            <label className="switch">
              <input
                type="checkbox"
                checked={database}
                onChange={(event) => setDatabase(event.target.checked)}
                disabled={deploying}
                aria-invalid={databaseError ? true : undefined}
                aria-describedby={databaseError ? 'setup-database-error' : undefined}
                data-testid="setup-database"
              />
              <span className="switch-track" aria-hidden="true" />
              <span>
                Create a PostgreSQL database
                <span className="switch-hint">
                  A database and its own role on the platform’s server; the app gets{' '}
                  <span className="mono">DATABASE_URL</span>.
                </span>
              </span>
            </label>
            {databaseError ? (
              <p className="field-error" id="setup-database-error" data-testid="setup-database-error">
                {databaseError}
              </p>
            ) : null}
          </div>
        ) : null}
      </div>
      <footer className="card-footer">
        <span className="muted">The build starts as soon as the values are saved.</span>
        <button type="submit" className="btn btn-primary" disabled={deploying} data-testid="setup-deploy">
          {deploying ? (
            <>
              <Icon name="spinner" className="spin" />
              Deploying…
            </>
          ) : (
            'Deploy'
          )}
        </button>
      </footer>
    </form>
  );
}
