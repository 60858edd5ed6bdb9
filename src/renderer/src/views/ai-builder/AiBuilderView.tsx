// Build with AI: pick one of the seven generators, describe the app, choose its subdomain (and the
// engine) and build. The answer is a project that builds at once, followed live like any deploy (its
// status and logs) until its URL answers; or `needs_setup`, whose form supplies the secrets and the
// database first. With no engine configured at all, the platform builds from its own templates: the
// screen says so up front (what works without a key) with "Add your AI key".
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { DNS_LABEL_PATTERN, RESERVED_SUBDOMAINS } from '../../../../shared/dns-label.js';
import { TextAreaField, TextField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { ErrorNotice, FormErrors } from '../../components/Notice';
import { StatusBadge } from '../../components/StatusBadge';
import { focusFirstInvalid } from '../../lib/focus';
import { fieldErrorsOf, unplacedErrors } from '../../lib/field-errors';
import type { EngineChoice } from '../../stores/agent/store';
import { GENERATOR_CHOICES } from '../../stores/ai-builder/generators';
import { useAiBuilder, useAiBuilderActions } from '../../stores/ai-builder/selectors';
import { routeHref } from '../../stores/navigation/store';
import { useConnection } from '../../stores/platform/selectors';
import { useProject, useProjectActions, useProjectDetail } from '../../stores/projects/selectors';
import { useEngineOffer } from '../../stores/agent/engines';
import type { Generator } from '../../../../shared/api/ai.js';
import { effectiveEngine, EnginePicker } from '../agent/EnginePicker';
import { NoEngineNotice } from '../agent/NoEngineNotice';
import { LogsPanel } from '../projects/LogsPanel';
import { AiErrorNotice } from './AiErrorNotice';
import { EditWithAi } from './EditWithAi';
import { SetupForm } from './SetupForm';

const FORM_PATHS = ['generator', 'prompt', 'subdomain', 'engine'];

export function AiBuilderView() {
  const { phase, request, projectId, needs } = useAiBuilder();
  const { reset } = useAiBuilderActions();
  const project = useProject(projectId ?? '');

  return (
    <div className="page page-narrow" data-testid="build-view">
      <header className="page-header">
        <div className="title-block">
          <h1 className="page-title">Build with AI</h1>
          <p className="page-subtitle">From a sentence to a running app at its own URL.</p>
        </div>
        {phase !== 'form' && phase !== 'generating' ? (
          <button type="button" className="btn btn-sm" onClick={reset} data-testid="build-another">
            <Icon name="plus" />
            Build another
          </button>
        ) : null}
      </header>
      {phase === 'form' || phase === 'generating' ? <AiBuilderForm /> : null}
      {(phase === 'needs_setup' || phase === 'deploying') && needs ? (
        <SetupForm needs={needs} subdomain={project?.subdomain ?? request?.subdomain ?? ''} />
      ) : null}
      {phase === 'started' && projectId ? <BuildProgress projectId={projectId} /> : null}
    </div>
  );
}

function AiBuilderForm() {
  const { phase, request, error } = useAiBuilder();
  const { build } = useAiBuilderActions();
  const offer = useEngineOffer();
  const [generator, setGenerator] = useState<Generator>(request?.generator ?? 'landing');
  const [prompt, setPrompt] = useState(request?.prompt ?? '');
  const [subdomain, setSubdomain] = useState(request?.subdomain ?? '');
  const [engine, setEngine] = useState<EngineChoice>(request?.engine ?? 'auto');
  const [local, setLocal] = useState<Record<string, string>>({});
  const formRef = useRef<HTMLFormElement>(null);
  const generating = phase === 'generating';
  const chosenEngine = effectiveEngine(engine, offer);

  // The platform's refusals: a 409 is the subdomain taken, a 422 names its fields.
  const server =
    error?.code === 'conflict' && !error.errors?.length ? { subdomain: error.detail } : fieldErrorsOf(error);
  const errors: Record<string, string> = { ...server, ...local };
  const unplaced = unplacedErrors(server, (path) => FORM_PATHS.includes(path));
  const chosen = GENERATOR_CHOICES.find((choice) => choice.id === generator)!;

  const checkSubdomain = (value: string): string | null => {
    const label = value.trim();
    if (label === '') return 'choose the subdomain the app will answer at, such as bakery';
    if (!DNS_LABEL_PATTERN.test(label))
      return 'must be a lowercase DNS label: letters, digits and inner hyphens, such as my-app';
    if (RESERVED_SUBDOMAINS.has(label))
      return `"${label}" is reserved for the platform: choose another subdomain`;
    return null;
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (generating) return;
    const problems: Record<string, string> = {};
    if (prompt.trim() === '') problems.prompt = 'describe the app you want, in a sentence or two';
    const subdomainProblem = checkSubdomain(subdomain);
    if (subdomainProblem) problems.subdomain = subdomainProblem;
    setLocal(problems);
    if (Object.keys(problems).length > 0) {
      focusFirstInvalid(formRef.current);
      return;
    }
    const outcome = await build({
      generator,
      prompt: prompt.trim(),
      subdomain: subdomain.trim(),
      ...(chosenEngine === 'auto' ? {} : { engine: chosenEngine }),
    });
    if (!outcome.ok) focusFirstInvalid(formRef.current);
  };

  const clear = (path: string) => {
    if (local[path]) setLocal(({ [path]: _gone, ...rest }) => rest);
  };

  const showGeneralError = error && Object.keys(server).length === 0;

  return (
    <>
      {offer.none ? <NoEngineNotice where="build" /> : null}
      <form
        ref={formRef}
        className="card"
        onSubmit={(event) => void submit(event)}
        noValidate
        data-testid="build-form"
      >
        <div className="card-body stack">
          {showGeneralError ? (
            <AiErrorNotice error={error} title="The app could not be built" testId="build-error" />
          ) : null}
          <FormErrors message={unplaced.length > 0 ? 'The build was refused.' : null} errors={unplaced} />
          <fieldset className="fieldset" disabled={generating}>
            <legend className="field-label">What to build</legend>
            <div className="generator-grid">
              {GENERATOR_CHOICES.map((choice) => (
                <label key={choice.id} className={`segment${generator === choice.id ? ' is-selected' : ''}`}>
                  <input
                    type="radio"
                    name="generator"
                    value={choice.id}
                    checked={generator === choice.id}
                    onChange={() => setGenerator(choice.id)}
                    data-testid={`generator-${choice.id}`}
                  />
                  <span className="segment-label">{choice.label}</span>
                  <span className="segment-description">{choice.description}</span>
                </label>
              ))}
            </div>
          </fieldset>
          <TextAreaField
            label="Describe it"
            value={prompt}
            onChange={(event) => {
              setPrompt(event.target.value);
              clear('prompt');
            }}
            error={errors.prompt}
            rows={4}
            maxLength={4000}
            placeholder={chosen.example}
            disabled={generating}
            hint={
              <>
                What it is for, what it shows or does, and its name.{' '}
                <button
                  type="button"
                  className="link-button"
                  onClick={() => {
                    setPrompt(chosen.example);
                    clear('prompt');
                  }}
                  disabled={generating}
                  data-testid="build-use-example"
                >
                  Use the example
                </button>
              </>
            }
            data-testid="build-prompt"
          />
          <div className="grid-2">
            <TextField
              label="Subdomain"
              value={subdomain}
              onChange={(event) => {
                setSubdomain(event.target.value);
                clear('subdomain');
              }}
              onBlur={() => {
                const problem = subdomain.trim() ? checkSubdomain(subdomain) : null;
                if (problem) setLocal((current) => ({ ...current, subdomain: problem }));
              }}
              error={errors.subdomain}
              hint="Lowercase letters, digits and hyphens."
              placeholder="bakery"
              className="mono"
              disabled={generating}
              data-testid="build-subdomain"
            />
            <EnginePicker
              value={chosenEngine}
              onChange={setEngine}
              offer={offer}
              disabled={generating}
              where="build"
              testId="build-engine"
            />
          </div>
        </div>
        <footer className="card-footer">
          {generating ? (
            <span className="build-generating" role="status" data-testid="build-generating">
              <Icon name="spinner" className="spin" />
              Generating the {chosen.label.toLowerCase()}…
            </span>
          ) : (
            <span className="muted">One project per build; it shows in Projects like any other.</span>
          )}
          <button type="submit" className="btn btn-primary" disabled={generating} data-testid="build-submit">
            <Icon name="sparkles" />
            {generating ? 'Building…' : 'Build app'}
          </button>
        </footer>
      </form>
    </>
  );
}

function BuildProgress({ projectId }: { projectId: string }) {
  const project = useProject(projectId);
  const detail = useProjectDetail(projectId);
  const { loadDetail } = useProjectActions();
  const { online } = useConnection();

  useEffect(() => {
    void loadDetail(projectId);
  }, [projectId, loadDetail]);

  if (!project) {
    return detail.error ? (
      <ErrorNotice
        error={detail.error}
        title={
          detail.error.code === 'not_found' ? 'The built project is gone' : 'The project could not be loaded'
        }
        testId="build-project-error"
      />
    ) : (
      <div className="skeleton-block" aria-busy="true" aria-label="Loading the project" />
    );
  }

  const running = project.status === 'running';
  return (
    <>
      <section
        className="card build-progress"
        aria-labelledby="build-progress-title"
        data-testid="build-progress"
      >
        <div className="card-body build-progress-body">
          <div className="build-progress-icon" data-status={project.status} aria-hidden="true">
            <Icon
              name={running ? 'check' : project.status === 'failed' ? 'alert' : 'spinner'}
              size={20}
              className={project.status === 'building' ? 'spin' : undefined}
            />
          </div>
          <div className="build-progress-text">
            <div className="title-row">
              <h2 className="card-title" id="build-progress-title">
                {running
                  ? 'Your app is running'
                  : project.status === 'failed'
                    ? 'Your app did not start'
                    : 'Building your app'}
              </h2>
              <StatusBadge status={project.status} />
            </div>
            <p className="muted build-project-name" title={project.name}>
              {project.name}
            </p>
            {running ? (
              <p className="build-url">
                <a
                  className="external-link mono"
                  href={project.url}
                  target="_blank"
                  rel="noopener noreferrer"
                  data-testid="build-app-url"
                >
                  {project.url.replace(/^https?:\/\//, '')}
                  <Icon name="external" size={13} />
                </a>
              </p>
            ) : project.status === 'failed' ? (
              <p className="muted">
                The builder tries to repair a failed build a few times before it gives up; the logs below say
                what went wrong.
                {project.last_deploy_error ? (
                  <span className="mono deploy-error-text" data-testid="build-failure">
                    {' '}
                    {project.last_deploy_error}
                  </span>
                ) : null}
              </p>
            ) : (
              <p className="muted">Installing, building and starting it; the logs below follow along.</p>
            )}
          </div>
          <a
            className="btn btn-sm"
            href={routeHref({ screen: 'project', id: project.id })}
            data-testid="build-open-project"
          >
            Open project
          </a>
        </div>
      </section>
      <LogsPanel project={project} offline={online === false} />
      {running ? <EditWithAi project={project} /> : null}
    </>
  );
}
