// Checking a list: addresses pasted one per line (or as CSV), or a CSV file whose address column is
// found by itself. Sent in chunks of 100 with a progress bar; the results, in input order, can be
// filtered by score and reason and exported as CSV.
import { useId, useMemo, useState, type FormEvent, type ReactNode, type SelectHTMLAttributes } from 'react';
import { TextAreaField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { downloadText } from '../../lib/download';
import { formatBytes, formatUsd, plural } from '../../lib/format';
import { extractAddresses, type ExtractedAddresses } from '../../stores/email/addresses';
import { BATCH_LIMIT, progressFraction } from '../../stores/email/batch';
import {
  NO_FILTER,
  countByScore,
  csvFileName,
  filterResults,
  reasonsPresent,
  toCsv,
  totalCost,
  type EmailReason,
  type EmailScore,
  type ResultFilter,
} from '../../stores/email/results';
import { useBatch, useEmailActions } from '../../stores/email/selectors';
import { useAccount } from '../../stores/settings/selectors';
import { EMAIL_SCORES, suggestedAddress } from '../../../../shared/api/email.js';
import { CheckError } from './CheckError';
import { EmailScoreBadge } from './EmailResult';
import { REASON_LABELS, REASON_MEANINGS, SCORE_LABELS } from './explain';
import { Card, CardHeader } from '../../components/Card';

/** Larger files are not lists of addresses one would check from here. */
const MAX_FILE_BYTES = 5 * 1024 * 1024;
/** Rows drawn in the table; the export has them all. */
const SHOWN_ROWS = 500;

interface LoadedFile {
  name: string;
  extracted: ExtractedAddresses;
}

export function BatchCheck() {
  const batch = useBatch();
  const { verifyBatch, cancelBatch, clearBatch } = useEmailActions();
  const { account } = useAccount();
  const [text, setText] = useState('');
  const [file, setFile] = useState<LoadedFile | null>(null);
  const [fileError, setFileError] = useState<string | undefined>(undefined);
  const [inputError, setInputError] = useState<string | undefined>(undefined);
  const [smtpProbe, setSmtpProbe] = useState(false);
  const fileId = useId();

  const pasted = useMemo(() => extractAddresses(text), [text]);
  const source = file?.extracted ?? pasted;
  const count = source.emails.length;
  const running = batch.phase === 'running';
  const leftToday = account ? Math.max(0, account.email_daily_cap - account.email_verifications_today) : null;

  const loadFile = async (chosen: File | null) => {
    setFileError(undefined);
    setInputError(undefined);
    if (!chosen) return;
    if (chosen.size > MAX_FILE_BYTES) {
      setFileError(
        `"${chosen.name}" is ${formatBytes(chosen.size)}; files may be at most ${formatBytes(MAX_FILE_BYTES)}`,
      );
      return;
    }
    try {
      const extracted = extractAddresses(await chosen.text());
      if (extracted.emails.length === 0) {
        setFileError(`"${chosen.name}" holds no addresses`);
        return;
      }
      setFile({ name: chosen.name, extracted });
    } catch (error) {
      setFileError(`"${chosen.name}" could not be read: ${(error as Error).message}`);
    }
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (running) return;
    if (count === 0) {
      setInputError('paste at least one address, or choose a CSV file');
      return;
    }
    setInputError(undefined);
    void verifyBatch(source.emails, smtpProbe);
  };

  return (
    <Card titleId="batch-title" testId="batch-check">
      <CardHeader title="Check a list">
        Paste addresses one per line, or load a CSV file: the column that holds addresses is found for you.
        Repeated addresses are checked once.
      </CardHeader>
      <form className="card-body stack" onSubmit={submit} noValidate>
        {file ? (
          <div className="batch-file" data-testid="batch-file">
            <Icon name="file" />
            <div className="batch-file-text">
              <span className="batch-file-name">{file.name}</span>
              <span className="muted">
                {plural(file.extracted.emails.length, 'address', 'addresses')} from{' '}
                {file.extracted.column.header
                  ? `the column “${file.extracted.column.header}”`
                  : `column ${file.extracted.column.index + 1}`}
                {file.extracted.columnCount > 1 ? ` of ${file.extracted.columnCount}` : ''}
                {file.extracted.duplicates > 0
                  ? `; ${plural(file.extracted.duplicates, 'repeated address', 'repeated addresses')} left out`
                  : ''}
              </span>
            </div>
            <button
              type="button"
              className="btn btn-sm"
              onClick={() => setFile(null)}
              disabled={running}
              data-testid="batch-file-clear"
            >
              Use pasted addresses
            </button>
          </div>
        ) : (
          <TextAreaField
            label="Addresses"
            value={text}
            onChange={(event) => {
              setText(event.target.value);
              setInputError(undefined);
            }}
            error={inputError}
            hint={
              count > 0
                ? `${plural(count, 'address', 'addresses')} to check${
                    pasted.duplicates > 0
                      ? ` (${plural(pasted.duplicates, 'repeat', 'repeats')} left out)`
                      : ''
                  }, sent ${BATCH_LIMIT} at a time.`
                : 'One per line. CSV text works too.'
            }
            rows={6}
            placeholder={'ada@example.com\ngrace@example.org'}
            className="mono batch-input"
            disabled={running}
            data-testid="batch-input"
          />
        )}
        <div className="batch-controls">
          <div className={`field batch-file-field${fileError ? ' has-error' : ''}`}>
            <label className="btn btn-sm file-button" htmlFor={fileId}>
              <Icon name="upload" />
              Load a CSV file
            </label>
            <input
              id={fileId}
              type="file"
              className="sr-only"
              accept=".csv,.txt,text/csv,text/plain"
              disabled={running}
              aria-invalid={fileError ? true : undefined}
              aria-describedby={fileError ? `${fileId}-error` : undefined}
              onChange={(event) => {
                void loadFile(event.target.files?.[0] ?? null);
                event.target.value = '';
              }}
              data-testid="batch-file-input"
            />
            {fileError ? (
              <p className="field-error" id={`${fileId}-error`} role="alert">
                {fileError[0]!.toUpperCase() + fileError.slice(1)}
              </p>
            ) : null}
          </div>
          <label className="switch">
            <input
              type="checkbox"
              checked={smtpProbe}
              onChange={(event) => setSmtpProbe(event.target.checked)}
              disabled={running}
              data-testid="batch-smtp-probe"
            />
            <span className="switch-track" aria-hidden="true" />
            <span>SMTP probe</span>
          </label>
          <button type="submit" className="btn btn-primary" disabled={running} data-testid="batch-start">
            <Icon name="play" />
            {count > 0 ? `Check ${plural(count, 'address', 'addresses')}` : 'Check addresses'}
          </button>
        </div>
        {leftToday !== null && count > leftToday && !running ? (
          <p className="inline-warning" data-testid="batch-cap-warning">
            <Icon name="alert" />
            {leftToday === 0
              ? 'The daily cap is reached: checks will be refused until it resets.'
              : `Only ${plural(leftToday, 'check', 'checks')} left today: the run will stop there.`}
          </p>
        ) : null}
      </form>

      {batch.phase !== 'idle' ? (
        <div className="card-body stack batch-run">
          <BatchProgress />
          {batch.error ? (
            <CheckError
              error={batch.error}
              title={`Stopped after ${plural(batch.done, 'address', 'addresses')}`}
            />
          ) : null}
          {batch.remaining.length > 0 && !running ? (
            <div className="button-row">
              <button
                type="button"
                className="btn"
                onClick={() => void verifyBatch(batch.remaining, batch.smtpProbe, { append: true })}
                data-testid="batch-continue"
              >
                <Icon name="play" />
                Continue with the remaining {plural(batch.remaining.length, 'address', 'addresses')}
              </button>
            </div>
          ) : null}
          {running ? (
            <div className="button-row">
              <button type="button" className="btn btn-sm" onClick={cancelBatch} data-testid="batch-cancel">
                <Icon name="stop" />
                Stop after this chunk
              </button>
            </div>
          ) : null}
          {batch.results.length > 0 ? <BatchResults /> : null}
          {!running ? (
            <div className="button-row">
              <button type="button" className="btn btn-ghost btn-sm" onClick={clearBatch}>
                <Icon name="close" />
                Clear results
              </button>
            </div>
          ) : null}
        </div>
      ) : null}
    </Card>
  );
}

function BatchProgress() {
  const batch = useBatch();
  const fraction = progressFraction(batch);
  const label =
    batch.phase === 'running'
      ? `Checked ${batch.done.toLocaleString()} of ${batch.total.toLocaleString()}…`
      : batch.phase === 'done'
        ? `Checked all ${plural(batch.total, 'address', 'addresses')}.`
        : batch.phase === 'cancelled'
          ? `Stopped: checked ${batch.done.toLocaleString()} of ${batch.total.toLocaleString()}.`
          : `Checked ${batch.done.toLocaleString()} of ${batch.total.toLocaleString()}.`;
  return (
    <div className="progress-block" data-testid="batch-progress" data-phase={batch.phase}>
      <p className="progress-label" id="batch-progress-label" aria-live="polite">
        {label}
      </p>
      <div
        className="progress"
        role="progressbar"
        aria-labelledby="batch-progress-label"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={Math.round(fraction * 100)}
      >
        <div className="progress-bar" style={{ width: `${fraction * 100}%` }} />
      </div>
    </div>
  );
}

function BatchResults() {
  const { results } = useBatch();
  const [filter, setFilter] = useState<ResultFilter>(NO_FILTER);
  const counts = useMemo(() => countByScore(results), [results]);
  const reasons = useMemo(() => reasonsPresent(results, filter.score), [results, filter.score]);
  const shown = useMemo(() => filterResults(results, filter), [results, filter]);
  // Keep each row's place in the input: "#" is the position in the whole list.
  const positions = useMemo(() => new Map(results.map((result, i) => [result, i + 1])), [results]);

  return (
    <div className="stack batch-results" data-testid="batch-results">
      <div className="batch-results-bar">
        <ul className="status-counts" aria-label="Result counts">
          {EMAIL_SCORES.map((score) => (
            <li key={score} data-status={score} data-testid={`count-${score}`}>
              <span className="status-count-number">{counts[score].toLocaleString()}</span>{' '}
              {SCORE_LABELS[score]}
            </li>
          ))}
          <li className="muted">{formatUsd(totalCost(results))} spent</li>
        </ul>
        <div className="batch-filters">
          <FilterSelect
            label="Score"
            value={filter.score}
            onChange={(event) => {
              const score = event.target.value as ResultFilter['score'];
              // A reason that no result of the new score has would show nothing.
              const keep = filter.reason === 'all' || reasonsPresent(results, score).includes(filter.reason);
              setFilter({ score, reason: keep ? filter.reason : 'all' });
            }}
            data-testid="filter-score"
          >
            <option value="all">All scores</option>
            {EMAIL_SCORES.map((score: EmailScore) => (
              <option key={score} value={score}>
                {SCORE_LABELS[score]} ({counts[score]})
              </option>
            ))}
          </FilterSelect>
          <FilterSelect
            label="Reason"
            value={filter.reason}
            onChange={(event) =>
              setFilter({ ...filter, reason: event.target.value as ResultFilter['reason'] })
            }
            data-testid="filter-reason"
          >
            <option value="all">All reasons</option>
            {reasons.map((reason: EmailReason) => (
              <option key={reason} value={reason}>
                {REASON_LABELS[reason]}
              </option>
            ))}
          </FilterSelect>
          <button
            type="button"
            className="btn"
            onClick={() => downloadText(csvFileName(filter), toCsv(shown), 'text/csv;charset=utf-8')}
            disabled={shown.length === 0}
            data-testid="export-csv"
          >
            <Icon name="download" />
            Export {plural(shown.length, 'row')} as CSV
          </button>
        </div>
      </div>
      {shown.length === 0 ? (
        <p className="muted" data-testid="batch-no-match">
          No result matches these filters.
        </p>
      ) : (
        <div className="table-scroll">
          <table className="results-table" data-testid="results-table">
            <caption className="sr-only">Results, in the order of the list</caption>
            <thead>
              <tr>
                <th scope="col" className="cell-index">
                  #
                </th>
                <th scope="col">Address</th>
                <th scope="col">Score</th>
                <th scope="col" className="cell-score">
                  Confidence
                </th>
                <th scope="col">Reason</th>
                <th scope="col">Notes</th>
                <th scope="col" className="cell-cost">
                  Cost
                </th>
              </tr>
            </thead>
            <tbody>
              {shown.slice(0, SHOWN_ROWS).map((result) => (
                <tr key={positions.get(result)} data-testid="result-row" data-status={result.score}>
                  <td className="cell-index muted">{positions.get(result)}</td>
                  <td className="mono cell-address">{breakable(result.email)}</td>
                  <td>
                    <EmailScoreBadge score={result.score} />
                  </td>
                  <td className="cell-score">{result.confidence}</td>
                  <td title={REASON_MEANINGS[result.reason]}>{REASON_LABELS[result.reason]}</td>
                  <td className="cell-notes">{notesOf(result).join(' · ') || '—'}</td>
                  <td className="cell-cost">{result.cost_usd > 0 ? formatUsd(result.cost_usd) : 'Free'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {shown.length > SHOWN_ROWS ? (
        <p className="muted">
          Showing the first {SHOWN_ROWS.toLocaleString()} of {shown.length.toLocaleString()} rows: export them
          to see all.
        </p>
      ) : null}
    </div>
  );
}

/** The address with a line-break chance after its @ and before each dot, for a narrow column. */
function breakable(email: string): ReactNode[] {
  return email
    .split(/(?<=@)|(?=\.)/)
    .flatMap((part, index) => (index === 0 ? [part] : [<wbr key={index} />, part]));
}

function notesOf(result: ReturnType<typeof filterResults>[number]): string[] {
  const notes: string[] = [];
  const suggested = suggestedAddress(result);
  if (suggested) notes.push(`did you mean ${suggested}?`);
  if (result.disposable) notes.push('disposable');
  if (result.role_based) notes.push('role address');
  if (result.free_provider) notes.push('free provider');
  if (result.catch_all) notes.push('catch-all');
  if (result.smtp?.code) notes.push(`SMTP ${result.smtp.code}`);
  return notes;
}

/** One of the results' filters: a small label over its select. */
function FilterSelect({
  label,
  children,
  ...select
}: Omit<SelectHTMLAttributes<HTMLSelectElement>, 'id' | 'className'> & { label: string }) {
  const id = useId();
  return (
    <div className="filter-field">
      <label className="field-label" htmlFor={id}>
        {label}
      </label>
      <select id={id} className="input" {...select}>
        {children}
      </select>
    </div>
  );
}
