// Creating a project: a name, a subdomain, and one source chosen by a radio group (git URL, a repo of
// the git host, a container image, or an uploaded .tar.gz). Upload projects are created first, then
// their archive is sent; its progress shows on the project's page.
import { useRef, useState, type ChangeEvent, type FormEvent } from 'react';
import type { CreateProjectRequest } from '../../../../shared/api/projects.js';
import { DNS_LABEL_MAX, RESERVED_SUBDOMAINS } from '../../../../shared/dns-label.js';
import { FileDrop } from '../../components/FileDrop';
import { TextField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { FormErrors } from '../../components/Notice';
import { fieldErrorsOf, NO_FIELD_ERRORS, unplacedErrors, type FieldErrors } from '../../lib/field-errors';
import { routeHref } from '../../stores/navigation/store';
import { useNavigate } from '../../stores/navigation/selectors';
import { useProjectActions } from '../../stores/projects/selectors';
import { focusFirstInvalid } from '../../lib/focus';

type SourceKind = 'git' | 'git-host' | 'image' | 'upload';

const SOURCES: Array<{ kind: SourceKind; label: string; description: string }> = [
  { kind: 'git', label: 'Git URL', description: 'Clone any git repository' },
  { kind: 'git-host', label: 'Git host', description: 'owner/repo on the configured host' },
  { kind: 'image', label: 'Image', description: 'Run a container image' },
  { kind: 'upload', label: 'Upload', description: 'Send a .tar.gz of the files' },
];

/** The inputs each source shows, so errors on other paths are listed at the top instead. */
const SHOWN_PATHS: Record<SourceKind, string[]> = {
  git: ['name', 'subdomain', 'repo_url', 'branch'],
  'git-host': ['name', 'subdomain', 'git_host_repo', 'branch'],
  image: ['name', 'subdomain', 'image'],
  upload: ['name', 'subdomain', 'file'],
};

/** A subdomain suggested from the name: lowercase letters, digits and inner hyphens. */
export function suggestSubdomain(name: string): string {
  return name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, DNS_LABEL_MAX)
    .replace(/-+$/, '');
}

export function NewProjectView() {
  const { create } = useProjectActions();
  const navigate = useNavigate();
  const [source, setSource] = useState<SourceKind>('git');
  const [name, setName] = useState('');
  const [subdomain, setSubdomain] = useState('');
  const [subdomainEdited, setSubdomainEdited] = useState(false);
  const [repoUrl, setRepoUrl] = useState('');
  const [hostRepo, setHostRepo] = useState('');
  const [branch, setBranch] = useState('');
  const [image, setImage] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const [submitting, setSubmitting] = useState(false);
  const formRef = useRef<HTMLFormElement>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [errors, setErrors] = useState<FieldErrors>(NO_FIELD_ERRORS);

  const shownSubdomain = subdomainEdited ? subdomain : suggestSubdomain(name);

  const buildRequest = (): CreateProjectRequest => {
    const base = { name: name.trim(), subdomain: shownSubdomain.trim() };
    const withBranch = branch.trim() ? { branch: branch.trim() } : {};
    switch (source) {
      case 'git':
        return { ...base, repo_url: repoUrl.trim(), ...withBranch };
      case 'git-host':
        return { ...base, git_host_repo: hostRepo.trim(), ...withBranch };
      case 'image':
        return { ...base, image: image.trim() };
      case 'upload':
        return { ...base, deploy_source: 'upload' };
    }
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (submitting) return;
    setSubmitting(true);
    setMessage(null);
    setErrors(NO_FIELD_ERRORS);
    const outcome = await create(buildRequest(), source === 'upload' ? file : undefined);
    setSubmitting(false);
    if (outcome.ok) {
      navigate({ screen: 'project', id: outcome.value.id }, { replace: true });
      return;
    }
    // A 409 at creation is always a host name that is taken: it belongs next to the subdomain.
    const taken = outcome.error.code === 'conflict' && !outcome.error.errors?.length;
    setErrors(taken ? { subdomain: outcome.error.detail } : fieldErrorsOf(outcome.error));
    // The detail repeats what the fields say for a 422; otherwise it is the only message.
    setMessage(
      outcome.error.errors?.length
        ? 'The project could not be created: check the fields marked below.'
        : outcome.error.detail,
    );
    focusFirstInvalid(formRef.current);
  };

  const unplaced = unplacedErrors(errors, (path) => SHOWN_PATHS[source].includes(path));
  const error = (path: string) => errors[path];
  const reserved = RESERVED_SUBDOMAINS.has(shownSubdomain.trim())
    ? `"${shownSubdomain.trim()}" is reserved for the platform: choose another subdomain`
    : undefined;
  const clearError = (path: string) => {
    if (errors[path]) setErrors(({ [path]: _gone, ...rest }) => rest);
  };
  /** A text field's value, its change (which clears the field's error) and its error. */
  const bind = (path: string, value: string, set: (value: string) => void) => ({
    value,
    onChange: (event: ChangeEvent<HTMLInputElement>) => {
      set(event.target.value);
      clearError(path);
    },
    error: error(path),
  });

  return (
    <div className="page page-narrow">
      <a className="back-link" href={routeHref({ screen: 'projects' })}>
        <Icon name="back" />
        Projects
      </a>
      <header className="page-header">
        <div className="title-block">
          <h1 className="page-title">New project</h1>
          <p className="page-subtitle">Its URL is its subdomain on the platform’s domain.</p>
        </div>
      </header>

      <form
        ref={formRef}
        className="card"
        onSubmit={(event) => void submit(event)}
        noValidate
        data-testid="create-project-form"
      >
        <div className="card-body stack">
          <FormErrors message={message} errors={unplaced} testId="create-project-errors" />
          <div className="grid-2">
            <TextField
              label="Name"
              {...bind('name', name, setName)}
              placeholder="My app"
              maxLength={64}
              autoFocus
              data-testid="project-name"
            />
            <TextField
              label="Subdomain"
              value={shownSubdomain}
              onChange={(event) => {
                setSubdomain(event.target.value);
                setSubdomainEdited(true);
                clearError('subdomain');
              }}
              error={error('subdomain') ?? reserved}
              hint="Lowercase letters, digits and hyphens."
              placeholder="my-app"
              className="mono"
              data-testid="project-subdomain"
            />
          </div>

          <fieldset className="fieldset">
            <legend className="field-label">Source</legend>
            <div className="segmented">
              {SOURCES.map((option) => (
                <label key={option.kind} className={`segment${source === option.kind ? ' is-selected' : ''}`}>
                  <input
                    type="radio"
                    name="source"
                    value={option.kind}
                    checked={source === option.kind}
                    onChange={() => setSource(option.kind)}
                    data-testid={`source-${option.kind}`}
                  />
                  <span className="segment-label">{option.label}</span>
                  <span className="segment-description">{option.description}</span>
                </label>
              ))}
            </div>
          </fieldset>

          {source === 'git' || source === 'git-host' ? (
            <div className="grid-2 grid-wide-first">
              {source === 'git' ? (
                <TextField
                  label="Repository URL"
                  {...bind('repo_url', repoUrl, setRepoUrl)}
                  placeholder="https://github.com/owner/repo.git"
                  className="mono"
                  data-testid="project-repo-url"
                />
              ) : (
                <TextField
                  label="Repository"
                  {...bind('git_host_repo', hostRepo, setHostRepo)}
                  placeholder="owner/repo"
                  hint="On the git host the platform is configured with."
                  className="mono"
                  data-testid="project-git-host-repo"
                />
              )}
              <TextField
                label="Branch"
                {...bind('branch', branch, setBranch)}
                placeholder="main"
                hint="Defaults to main."
                className="mono"
                data-testid="project-branch"
              />
            </div>
          ) : null}

          {source === 'image' ? (
            <TextField
              label="Image"
              {...bind('image', image, setImage)}
              placeholder="nginx:1.27 or ghcr.io/owner/app:tag"
              hint="Needs a container runtime on the platform."
              className="mono"
              data-testid="project-image"
            />
          ) : null}

          {source === 'upload' ? (
            <FileDrop
              label="Archive"
              file={file}
              onFile={(chosen) => {
                setFile(chosen);
                clearError('file');
              }}
              error={error('file')}
              disabled={submitting}
              hint="A gzipped tarball of the project, at most 100 MB. It is uploaded once the project exists."
            />
          ) : null}
        </div>
        <div className="card-footer">
          <a className="btn btn-ghost" href={routeHref({ screen: 'projects' })}>
            Cancel
          </a>
          <button
            type="submit"
            className="btn btn-primary"
            disabled={submitting}
            data-testid="create-project"
          >
            {submitting ? 'Creating…' : source === 'upload' ? 'Create and upload' : 'Create project'}
          </button>
        </div>
      </form>
    </div>
  );
}
