// A project's build configuration: root directory, install/build/start commands, port, and up to five
// services (name, kind, start command, port, root directory, install and build commands). A 422 from
// the platform is shown on the inputs its paths name (`services[2].name`); the rest above the form.
import { useEffect, useRef, useState } from 'react';
import type { BuildConfig, BuildConfigInput, Project } from '../../../../shared/api/projects.js';
import type { FieldError } from '../../../../shared/errors.js';
import { SelectField, TextField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { FormErrors, SuccessNote } from '../../components/Notice';
import {
  asSentence,
  fieldErrorsOf,
  NO_FIELD_ERRORS,
  unplacedErrors,
  type FieldErrors,
} from '../../lib/field-errors';
import { focusFirstInvalid } from '../../lib/focus';
import { MAX_SERVICES } from '../../lib/limits';
import { useProjectActions } from '../../stores/projects/selectors';
import { Card, CardHeader } from '../../components/Card';

interface ServiceDraft {
  key: number;
  name: string;
  kind: 'web' | 'worker';
  start_cmd: string;
  port: string;
  root_dir: string;
  install_cmd: string;
  build_cmd: string;
  /** Not edited here: kept as they are. */
  env_overrides: Record<string, string>;
}

interface Draft {
  root_dir: string;
  install_cmd: string;
  build_cmd: string;
  start_cmd: string;
  port_override: string;
  replicas: string;
  services: ServiceDraft[];
}

let nextServiceKey = 1;

function toDraft(config: BuildConfig): Draft {
  return {
    root_dir: config.root_dir,
    install_cmd: config.install_cmd ?? '',
    build_cmd: config.build_cmd ?? '',
    start_cmd: config.start_cmd ?? '',
    port_override: config.port_override == null ? '' : String(config.port_override),
    // Configs saved before replicas existed lack it: one.
    replicas: String(config.replicas ?? 1),
    services: config.services.map((service) => ({
      key: nextServiceKey++,
      name: service.name,
      kind: service.kind,
      start_cmd: service.start_cmd,
      port: service.port === null ? '' : String(service.port),
      root_dir: service.root_dir ?? '',
      install_cmd: service.install_cmd ?? '',
      build_cmd: service.build_cmd ?? '',
      env_overrides: service.env_overrides,
    })),
  };
}

const orNull = (value: string) => (value.trim() === '' ? null : value);

/** The input to send, or the problems that keep it from being sent (only what the API cannot say). */
function toInput(draft: Draft): { input: BuildConfigInput; problems: Record<string, string> } {
  const problems: Record<string, string> = {};
  /** Only what is not a number at all is caught here; the platform checks the range, with the rest. */
  const portOf = (text: string, path: string): number | null => {
    if (text.trim() === '') return null;
    if (!/^\d+$/.test(text.trim())) {
      problems[path] = 'must be a whole number between 1 and 65535';
      return null;
    }
    return Number(text.trim());
  };
  const replicasOf = (text: string): number => {
    if (text.trim() === '') return 1;
    if (!/^\d+$/.test(text.trim())) {
      problems.replicas = 'must be a whole number';
      return 1;
    }
    return Number(text.trim());
  };
  const services = draft.services.map((service, i) => {
    const port = service.kind === 'web' ? portOf(service.port, `services[${i}].port`) : null;
    return {
      name: service.name.trim(),
      kind: service.kind,
      start_cmd: service.start_cmd,
      port,
      root_dir: orNull(service.root_dir.trim()),
      install_cmd: orNull(service.install_cmd),
      build_cmd: orNull(service.build_cmd),
      env_overrides: service.env_overrides,
    };
  });
  return {
    input: {
      root_dir: draft.root_dir.trim() || '.',
      install_cmd: orNull(draft.install_cmd),
      build_cmd: orNull(draft.build_cmd),
      start_cmd: orNull(draft.start_cmd),
      port_override: portOf(draft.port_override, 'port_override'),
      replicas: replicasOf(draft.replicas),
      services,
    },
    problems,
  };
}

type TopField = 'root_dir' | 'install_cmd' | 'build_cmd' | 'start_cmd' | 'port_override' | 'replicas';

/** The build's own fields, in the form's order; each one's test id is `build-` and its name, hyphenated. */
const TOP_FIELDS: {
  field: TopField;
  label: string;
  placeholder: string;
  hint?: string;
  numeric?: boolean;
}[] = [
  {
    field: 'root_dir',
    label: 'Root directory',
    placeholder: '.',
    hint: 'Relative to the repository or archive.',
  },
  { field: 'install_cmd', label: 'Install command', placeholder: 'npm ci' },
  { field: 'build_cmd', label: 'Build command', placeholder: 'npm run build' },
  { field: 'start_cmd', label: 'Start command', placeholder: 'npm start' },
  {
    field: 'port_override',
    label: 'Port',
    placeholder: 'from PORT',
    hint: 'The port the app listens on; empty: the platform picks one and sets PORT.',
    numeric: true,
  },
  {
    field: 'replicas',
    label: 'Replicas',
    placeholder: '1',
    hint: 'Instances of the app, answering in turn: Swarm tasks on a swarm platform; other runtimes run one.',
    numeric: true,
  },
];
const SERVICE_FIELDS = ['name', 'kind', 'start_cmd', 'port', 'root_dir', 'install_cmd', 'build_cmd'] as const;

export function BuildConfigForm({ project }: { project: Project }) {
  const { setBuildConfig } = useProjectActions();
  const [draft, setDraft] = useState<Draft>(() => toDraft(project.build_config));
  const [errors, setErrors] = useState<FieldErrors>(NO_FIELD_ERRORS);
  const [message, setMessage] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(false);
  const [dirty, setDirty] = useState(false);

  const serverConfig = JSON.stringify(project.build_config);
  useEffect(() => {
    if (!dirty) setDraft(toDraft(JSON.parse(serverConfig) as BuildConfig));
  }, [serverConfig]); // only when the saved configuration changes, not on each edit

  const clear = (path: string) => {
    setDirty(true);
    setSaved(false);
    if (errors[path]) setErrors(({ [path]: _gone, ...rest }) => rest);
  };
  const setTop = (field: TopField, value: string) => {
    setDraft((current) => ({ ...current, [field]: value }));
    clear(field);
  };
  const setService = (index: number, patch: Partial<ServiceDraft>) => {
    setDraft((current) => ({
      ...current,
      services: current.services.map((service, i) => (i === index ? { ...service, ...patch } : service)),
    }));
    for (const field of Object.keys(patch)) clear(`services[${index}].${field}`);
  };
  const addService = () => {
    setDraft((current) => ({
      ...current,
      services: [
        ...current.services,
        {
          key: nextServiceKey++,
          name: '',
          kind: 'web',
          start_cmd: '',
          port: '',
          root_dir: '',
          install_cmd: '',
          build_cmd: '',
          env_overrides: {},
        },
      ],
    }));
    setDirty(true);
    setSaved(false);
  };
  const removeService = (index: number) => {
    setDraft((current) => ({ ...current, services: current.services.filter((_, i) => i !== index) }));
    // Errors of later services move up one place with them.
    setErrors((current) => {
      const next: Record<string, string> = {};
      for (const [path, text] of Object.entries(current)) {
        const match = /^services\[(\d+)\](.*)$/.exec(path);
        if (!match) next[path] = text;
        else if (Number(match[1]) > index) next[`services[${Number(match[1]) - 1}]${match[2]}`] = text;
        else if (Number(match[1]) < index) next[path] = text;
      }
      return next;
    });
    setDirty(true);
    setSaved(false);
  };

  const formRef = useRef<HTMLFormElement>(null);

  const save = async () => {
    setMessage(null);
    const { input, problems } = toInput(draft);
    if (Object.keys(problems).length > 0) {
      setErrors(problems);
      setMessage('Fix the fields marked below: nothing was saved.');
      focusFirstInvalid(formRef.current);
      return;
    }
    setSaving(true);
    const outcome = await setBuildConfig(project.id, input);
    setSaving(false);
    if (outcome.ok) {
      setErrors(NO_FIELD_ERRORS);
      setDirty(false);
      setSaved(true);
      setDraft(toDraft(outcome.value.build_config));
      return;
    }
    setErrors(fieldErrorsOf(outcome.error, 'build_config'));
    focusFirstInvalid(formRef.current);
    setMessage(
      outcome.error.errors?.length
        ? 'The build configuration was not saved: fix the fields marked below.'
        : outcome.error.detail,
    );
  };

  const serviceCount = draft.services.length;
  const isShown = (path: string) =>
    path === 'services' ||
    TOP_FIELDS.some(({ field }) => field === path) ||
    draft.services.some((_, i) => SERVICE_FIELDS.some((field) => path === `services[${i}].${field}`));
  const unplaced: FieldError[] = unplacedErrors(errors, isShown);

  return (
    <Card titleId="build-title" testId="build-config">
      <CardHeader title="Build configuration">
        Empty commands are detected from the project (package.json, requirements.txt, index.html).
      </CardHeader>
      <form
        ref={formRef}
        onSubmit={(event) => {
          event.preventDefault();
          void save();
        }}
        noValidate
      >
        <div className="card-body stack">
          <FormErrors message={message} errors={unplaced} testId="build-config-errors" />
          <div className="grid-2">
            {TOP_FIELDS.map(({ field, label, placeholder, hint, numeric }) => (
              <TextField
                key={field}
                label={label}
                value={draft[field]}
                onChange={(event) => setTop(field, event.target.value)}
                error={errors[field]}
                placeholder={placeholder}
                hint={hint}
                inputMode={numeric ? 'numeric' : undefined}
                className="mono"
                data-testid={`build-${field.replace(/_/g, '-')}`}
              />
            ))}
          </div>

          <div className="services">
            <div className="services-header">
              <div>
                <h3 className="section-title">Services</h3>
                <p className="card-description">
                  Extra processes, each at <span className="mono">{project.subdomain}-&lt;name&gt;</span>. Up
                  to {MAX_SERVICES}.
                </p>
              </div>
              <button
                type="button"
                className="btn btn-sm"
                onClick={addService}
                disabled={serviceCount >= MAX_SERVICES}
                data-testid="add-service"
              >
                <Icon name="plus" />
                Add service
              </button>
            </div>
            {errors.services ? <p className="field-error">{asSentence(errors.services)}</p> : null}
            {draft.services.map((service, i) => {
              const error = (field: string) => errors[`services[${i}].${field}`];
              const testId = (field: string) => `service-${i}-${field}`;
              return (
                <fieldset key={service.key} className="service" data-testid={`service-${i}`}>
                  <legend className="service-legend">
                    Service {i + 1}
                    {service.name ? <span className="muted mono"> · {service.name}</span> : null}
                  </legend>
                  <button
                    type="button"
                    className="icon-button service-remove"
                    aria-label={`Remove service ${i + 1}${service.name ? ` (${service.name})` : ''}`}
                    title="Remove service"
                    onClick={() => removeService(i)}
                    data-testid={testId('remove')}
                  >
                    <Icon name="trash" />
                  </button>
                  <div className="grid-3">
                    <TextField
                      label="Name"
                      value={service.name}
                      onChange={(event) => setService(i, { name: event.target.value })}
                      error={error('name')}
                      placeholder="api"
                      className="mono"
                      data-testid={testId('name')}
                    />
                    <SelectField
                      label="Kind"
                      error={error('kind')}
                      value={service.kind}
                      onChange={(event) => setService(i, { kind: event.target.value as 'web' | 'worker' })}
                      data-testid={testId('kind')}
                    >
                      <option value="web">web — serves HTTP</option>
                      <option value="worker">worker — no port</option>
                    </SelectField>
                    <TextField
                      label="Port"
                      value={service.kind === 'worker' ? '' : service.port}
                      onChange={(event) => setService(i, { port: event.target.value })}
                      error={error('port')}
                      placeholder={service.kind === 'worker' ? 'none' : 'auto (PORT)'}
                      inputMode="numeric"
                      disabled={service.kind === 'worker'}
                      className="mono"
                      data-testid={testId('port')}
                    />
                  </div>
                  <TextField
                    label="Start command"
                    value={service.start_cmd}
                    onChange={(event) => setService(i, { start_cmd: event.target.value })}
                    error={error('start_cmd')}
                    placeholder="node worker.js"
                    className="mono"
                    data-testid={testId('start-cmd')}
                  />
                  <div className="grid-3">
                    <TextField
                      label="Root directory"
                      value={service.root_dir}
                      onChange={(event) => setService(i, { root_dir: event.target.value })}
                      error={error('root_dir')}
                      placeholder="same as project"
                      className="mono"
                      data-testid={testId('root-dir')}
                    />
                    <TextField
                      label="Install command"
                      value={service.install_cmd}
                      onChange={(event) => setService(i, { install_cmd: event.target.value })}
                      error={error('install_cmd')}
                      placeholder="optional"
                      className="mono"
                      data-testid={testId('install-cmd')}
                    />
                    <TextField
                      label="Build command"
                      value={service.build_cmd}
                      onChange={(event) => setService(i, { build_cmd: event.target.value })}
                      error={error('build_cmd')}
                      placeholder="optional"
                      className="mono"
                      data-testid={testId('build-cmd')}
                    />
                  </div>
                </fieldset>
              );
            })}
            {serviceCount === 0 ? (
              <p className="muted">No services: the project runs as one process.</p>
            ) : null}
            {serviceCount >= MAX_SERVICES ? (
              <p className="field-hint">A project can have at most {MAX_SERVICES} services.</p>
            ) : null}
          </div>
        </div>
        <footer className="card-footer">
          {saved ? <SuccessNote testId="build-config-saved">Saved</SuccessNote> : <span />}
          <button type="submit" className="btn btn-primary" disabled={saving} data-testid="save-build-config">
            {saving ? 'Saving…' : 'Save build configuration'}
          </button>
        </footer>
      </form>
    </Card>
  );
}
