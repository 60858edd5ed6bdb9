// Sending a new archive to an upload project: choose or drop a .tar.gz, watch it go, see what arrived
// (size and file count) or why it was refused.
import { useState } from 'react';
import type { Project } from '../../../../shared/api/projects.js';
import { FileDrop } from '../../components/FileDrop';
import { Icon } from '../../components/Icon';
import { ErrorNotice, SuccessNote } from '../../components/Notice';
import { formatBytes, formatWhen, plural } from '../../lib/format';
import { archiveProblem, type UploadState } from '../../stores/projects/store';
import { useProjectActions, useUpload } from '../../stores/projects/selectors';
import { UPLOAD_SECTION_ID } from './DeployControls';
import { Card, CardHeader } from '../../components/Card';

export function UploadPanel({ project }: { project: Project }) {
  const { upload } = useProjectActions();
  const state = useUpload(project.id);
  const [file, setFile] = useState<File | null>(null);
  const [fileError, setFileError] = useState<string | undefined>(undefined);
  const busy = state !== null && ['reading', 'sending', 'processing'].includes(state.phase);

  const start = async () => {
    if (!file) {
      setFileError('choose a .tar.gz archive first');
      return;
    }
    const problem = archiveProblem(file);
    if (problem) {
      setFileError(problem);
      return;
    }
    const outcome = await upload(project.id, file);
    if (outcome.ok) setFile(null);
  };

  return (
    <Card titleId="upload-title" testId="upload-panel" id={UPLOAD_SECTION_ID}>
      <CardHeader title="Archive">
        Upload a new .tar.gz of the project’s files to replace the last one.
      </CardHeader>
      <div className="card-body stack">
        <FileDrop
          label="New archive"
          file={file}
          onFile={(chosen) => {
            setFile(chosen);
            setFileError(chosen ? (archiveProblem(chosen) ?? undefined) : undefined);
          }}
          error={fileError}
          disabled={busy}
        />
        {state ? <UploadStatus state={state} /> : null}
      </div>
      <footer className="card-footer">
        <span />
        <button
          type="button"
          className="btn btn-primary"
          onClick={() => void start()}
          disabled={busy}
          data-testid="upload-submit"
        >
          <Icon name="upload" />
          {busy ? 'Uploading…' : 'Upload archive'}
        </button>
      </footer>
    </Card>
  );
}

function UploadStatus({ state }: { state: UploadState }) {
  if (state.phase === 'failed' && state.error) {
    return (
      <ErrorNotice error={state.error} title={`${state.fileName} was not uploaded`} testId="upload-error" />
    );
  }
  if (state.phase === 'done' && state.result) {
    return (
      <SuccessNote testId="upload-result">
        Uploaded {state.fileName}: {formatBytes(state.result.size_bytes)},{' '}
        {plural(state.result.files, 'file')} ({formatWhen(state.result.uploaded_at)})
      </SuccessNote>
    );
  }
  const fraction =
    state.phase === 'processing'
      ? 1
      : state.sentBytes !== null
        ? state.sentBytes / Math.max(1, state.sizeBytes)
        : null;
  const label =
    state.phase === 'reading'
      ? `Reading ${state.fileName}…`
      : state.phase === 'processing'
        ? `Unpacking ${state.fileName} on the platform…`
        : state.sentBytes !== null
          ? `Uploading ${state.fileName}: ${formatBytes(state.sentBytes)} of ${formatBytes(state.sizeBytes)}`
          : `Uploading ${state.fileName} (${formatBytes(state.sizeBytes)})…`;
  return (
    <div className="progress-block" data-testid="upload-progress">
      <p className="progress-label" id="upload-progress-label">
        {label}
      </p>
      <div
        className={`progress${fraction === null ? ' is-indeterminate' : ''}`}
        role="progressbar"
        aria-labelledby="upload-progress-label"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={fraction === null ? undefined : Math.round(fraction * 100)}
      >
        <div
          className="progress-bar"
          style={fraction === null ? undefined : { width: `${fraction * 100}%` }}
        />
      </div>
    </div>
  );
}
