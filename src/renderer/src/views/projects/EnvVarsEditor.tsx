// A project's environment variables: a table with add/remove rows, or a bulk editor taking `.env`
// text, and an export of the same text. Saving replaces the whole set. Problems are shown next to the
// row (or line) they belong to, and nothing typed is thrown away.
import { useEffect, useRef, useState } from 'react';
import type { EnvVars, Project } from '../../../../shared/api/projects.js';
import { Icon } from '../../components/Icon';
import { FormErrors, SuccessNote } from '../../components/Notice';
import { formatDotenv, parseDotenv, type DotenvProblem } from '../../lib/dotenv';
import type { FieldError } from '../../../../shared/errors.js';
import { ENV_NAME_PATTERN, MAX_ENV_VARS } from '../../lib/limits';
import { useProjectActions } from '../../stores/projects/selectors';
import { asSentence } from '../../lib/field-errors';
import { Card, CardHeader } from '../../components/Card';

interface Row {
  key: number;
  name: string;
  value: string;
}

let nextRowKey = 1;
const toRows = (vars: Readonly<Record<string, string>>): Row[] =>
  Object.entries(vars).map(([name, value]) => ({ key: nextRowKey++, name, value }));
const emptyRow = (): Row => ({ key: nextRowKey++, name: '', value: '' });

/** Rows with a name or a value; blank rows are ignored. */
const filled = (rows: Row[]) => rows.filter((row) => row.name.trim() !== '' || row.value !== '');

/** Problems found before sending: per row key, plus messages for the whole set. */
function checkRows(rows: Row[]): { byRow: Record<number, string>; general: string[] } {
  const byRow: Record<number, string> = {};
  const seen = new Map<string, number>();
  for (const row of filled(rows)) {
    const name = row.name.trim();
    if (name === '') byRow[row.key] = 'needs a name';
    else if (!ENV_NAME_PATTERN.test(name))
      byRow[row.key] = 'names use letters, digits and _, and do not start with a digit';
    else if (seen.has(name)) byRow[row.key] = `${name} is already set above`;
    seen.set(name, row.key);
  }
  const count = filled(rows).length;
  const general =
    count > MAX_ENV_VARS ? [`at most ${MAX_ENV_VARS} variables are allowed (${count} given)`] : [];
  return { byRow, general };
}

function download(fileName: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function EnvVarsEditor({ project }: { project: Project }) {
  const { setEnvVars } = useProjectActions();
  const [rows, setRows] = useState<Row[]>(() => toRows(project.env_vars));
  const [mode, setMode] = useState<'table' | 'bulk'>('table');
  const [bulk, setBulk] = useState('');
  const [bulkProblems, setBulkProblems] = useState<DotenvProblem[]>([]);
  const [rowErrors, setRowErrors] = useState<Record<number, string>>({});
  const [message, setMessage] = useState<string | null>(null);
  const [unplaced, setUnplaced] = useState<FieldError[]>([]);
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(false);
  const [dirty, setDirty] = useState(false);
  const lastFocusable = useRef<HTMLInputElement | null>(null);

  // Follow changes made elsewhere while the user has not started editing.
  const serverVars = JSON.stringify(project.env_vars);
  useEffect(() => {
    if (!dirty) setRows(toRows(JSON.parse(serverVars) as EnvVars));
  }, [serverVars]); // only when the saved set changes, not on each edit

  const edited = () => {
    setDirty(true);
    setSaved(false);
  };

  const updateRow = (key: number, patch: Partial<Row>) => {
    setRows((current) => current.map((row) => (row.key === key ? { ...row, ...patch } : row)));
    if (rowErrors[key]) setRowErrors(({ [key]: _gone, ...rest }) => rest);
    edited();
  };

  const toBulk = () => {
    setBulk(formatDotenv(filled(rows).map((row) => [row.name.trim(), row.value] as const)));
    setBulkProblems([]);
    setMode('bulk');
  };

  /** Parses the bulk text into rows; false (and the problems shown) when it cannot. */
  const fromBulk = (): Row[] | null => {
    const parsed = parseDotenv(bulk);
    setBulkProblems(parsed.problems);
    if (parsed.problems.length > 0) return null;
    const next = parsed.entries.map(([name, value]) => ({ key: nextRowKey++, name, value }));
    setRows(next);
    return next;
  };

  const save = async () => {
    setMessage(null);
    setUnplaced([]);
    const current = mode === 'bulk' ? fromBulk() : rows;
    if (!current) {
      setMessage('Fix the lines marked below: nothing was saved.');
      return;
    }
    const local = checkRows(current);
    setRowErrors(local.byRow);
    if (Object.keys(local.byRow).length > 0 || local.general.length > 0) {
      if (mode === 'bulk') setMode('table');
      setMessage('Fix the variables marked below: nothing was saved.');
      setUnplaced(local.general.map((text) => ({ path: 'env_vars', message: text })));
      return;
    }
    const vars: EnvVars = {};
    for (const row of filled(current)) vars[row.name.trim()] = row.value;
    setSaving(true);
    const outcome = await setEnvVars(project.id, vars);
    setSaving(false);
    if (outcome.ok) {
      setDirty(false);
      setSaved(true);
      setRows(toRows(outcome.value.env_vars));
      if (mode === 'bulk') setMode('table');
      return;
    }
    // Place each error on the row of its variable (`env_vars.NAME`), list the rest.
    const byName = new Map(filled(current).map((row) => [row.name.trim(), row.key]));
    const placed: Record<number, string> = {};
    const rest: FieldError[] = [];
    for (const error of outcome.error.errors ?? []) {
      const name = error.path.replace(/^env_vars\.?/, '');
      const key = byName.get(name);
      if (key !== undefined) placed[key] = placed[key] ? `${placed[key]}; ${error.message}` : error.message;
      else rest.push(error);
    }
    setRowErrors(placed);
    setUnplaced(rest);
    if (mode === 'bulk' && Object.keys(placed).length > 0) setMode('table');
    setMessage(
      outcome.error.errors?.length
        ? 'The variables were not saved: fix the problems marked below.'
        : outcome.error.detail,
    );
  };

  const exportEnv = () => {
    const entries =
      mode === 'bulk'
        ? parseDotenv(bulk).entries
        : filled(rows).map((row) => [row.name.trim(), row.value] as [string, string]);
    download(`${project.subdomain}.env`, formatDotenv(entries));
  };

  const count = filled(rows).length;

  return (
    <Card titleId="env-title" testId="env-vars">
      <CardHeader
        title="Environment variables"
        actions={
          <div className="button-row">
            <button type="button" className="btn btn-sm" onClick={exportEnv} data-testid="export-env">
              <Icon name="download" />
              Export .env
            </button>
            {mode === 'table' ? (
              <button type="button" className="btn btn-sm" onClick={toBulk} data-testid="env-bulk-toggle">
                Bulk edit
              </button>
            ) : (
              <button
                type="button"
                className="btn btn-sm"
                onClick={() => {
                  if (fromBulk()) setMode('table');
                }}
                data-testid="env-bulk-toggle"
              >
                Table view
              </button>
            )}
          </div>
        }
      >
        Given to every build and run. Saving replaces the whole set
        {dirty ? ' — you have unsaved changes' : ''}.
      </CardHeader>
      <div className="card-body stack">
        <FormErrors message={message} errors={unplaced} testId="env-errors" />
        {mode === 'table' ? (
          <div className="env-table" role="group" aria-label="Variables">
            {rows.length > 0 ? (
              <div className="env-row env-head" aria-hidden="true">
                <span>Name</span>
                <span>Value</span>
                <span />
              </div>
            ) : (
              <p className="muted env-empty">No variables. Add one, or paste a .env file with Bulk edit.</p>
            )}
            {rows.map((row, index) => {
              const error = rowErrors[row.key];
              const label = row.name.trim() || `variable ${index + 1}`;
              const multiline = row.value.includes('\n');
              return (
                <div
                  key={row.key}
                  className={`env-row${error ? ' has-error' : ''}`}
                  data-testid={`env-row-${index}`}
                >
                  <input
                    className="input mono"
                    aria-label={`Name of variable ${index + 1}`}
                    aria-invalid={error ? true : undefined}
                    value={row.name}
                    placeholder="NAME"
                    spellCheck={false}
                    autoComplete="off"
                    ref={index === rows.length - 1 ? lastFocusable : undefined}
                    onChange={(event) => updateRow(row.key, { name: event.target.value })}
                    data-testid={`env-name-${index}`}
                  />
                  {multiline ? (
                    <textarea
                      className="input mono"
                      aria-label={`Value of ${label}`}
                      value={row.value}
                      rows={Math.min(6, row.value.split('\n').length)}
                      spellCheck={false}
                      onChange={(event) => updateRow(row.key, { value: event.target.value })}
                      data-testid={`env-value-${index}`}
                    />
                  ) : (
                    <input
                      className="input mono"
                      aria-label={`Value of ${label}`}
                      value={row.value}
                      placeholder="value"
                      spellCheck={false}
                      autoComplete="off"
                      onChange={(event) => updateRow(row.key, { value: event.target.value })}
                      data-testid={`env-value-${index}`}
                    />
                  )}
                  <button
                    type="button"
                    className="icon-button"
                    aria-label={`Remove ${label}`}
                    title="Remove"
                    onClick={() => {
                      setRows((current) => current.filter((r) => r.key !== row.key));
                      edited();
                    }}
                    data-testid={`env-remove-${index}`}
                  >
                    <Icon name="trash" />
                  </button>
                  {error ? <p className="field-error env-row-error">{asSentence(error)}</p> : null}
                </div>
              );
            })}
            <div>
              <button
                type="button"
                className="btn btn-sm btn-ghost"
                onClick={() => {
                  setRows((current) => [...current, emptyRow()]);
                  edited();
                  requestAnimationFrame(() => lastFocusable.current?.focus());
                }}
                data-testid="env-add"
              >
                <Icon name="plus" />
                Add variable
              </button>
            </div>
          </div>
        ) : (
          <div className={`field${bulkProblems.length ? ' has-error' : ''}`}>
            <label className="field-label" htmlFor="env-bulk">
              Variables in .env format
            </label>
            <textarea
              id="env-bulk"
              className="input mono env-bulk"
              value={bulk}
              rows={Math.max(8, Math.min(24, bulk.split('\n').length + 1))}
              spellCheck={false}
              aria-invalid={bulkProblems.length ? true : undefined}
              aria-describedby="env-bulk-help"
              placeholder={'# One per line\nDATABASE_URL=postgres://…\nGREETING="hello world"'}
              onChange={(event) => {
                setBulk(event.target.value);
                setBulkProblems([]);
                edited();
              }}
              data-testid="env-bulk"
            />
            {bulkProblems.length > 0 ? (
              <ul className="field-error problem-list" data-testid="env-bulk-problems">
                {bulkProblems.map((problem) => (
                  <li key={`${problem.line}:${problem.message}`}>
                    Line {problem.line}: {problem.message}
                  </li>
                ))}
              </ul>
            ) : null}
            <p className="field-hint" id="env-bulk-help">
              <code>KEY=value</code> per line; <code>#</code> starts a comment; quote values with spaces or{' '}
              <code>#</code>. Saving replaces all variables with these.
            </p>
          </div>
        )}
      </div>
      <footer className="card-footer">
        {saved ? (
          <SuccessNote testId="env-saved">Saved</SuccessNote>
        ) : (
          <span className="muted">
            {count} of {MAX_ENV_VARS}
          </span>
        )}
        <button
          type="button"
          className="btn btn-primary"
          onClick={() => void save()}
          disabled={saving}
          data-testid="save-env"
        >
          {saving ? 'Saving…' : 'Save variables'}
        </button>
      </footer>
    </Card>
  );
}
