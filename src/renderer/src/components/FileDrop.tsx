// Choosing a .tar.gz: a drop zone that is also a file picker (a real <input type=file>, so it works by
// keyboard and in automation), showing the chosen file.
import { useId, useState, type DragEvent } from 'react';
import { formatBytes } from '../lib/format';
import { Icon } from './Icon';
import { asSentence } from '../lib/field-errors';

interface FileDropProps {
  label: string;
  file: File | null;
  onFile: (file: File | null) => void;
  error?: string | undefined;
  disabled?: boolean;
  hint?: string;
}

export function FileDrop({ label, file, onFile, error, disabled, hint }: FileDropProps) {
  const id = useId();
  const [over, setOver] = useState(false);

  const accept = (event: DragEvent) => {
    if (disabled || !event.dataTransfer.types.includes('Files')) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
    setOver(true);
  };

  return (
    <div className={`field${error ? ' has-error' : ''}`}>
      <span className="field-label" id={`${id}-label`}>
        {label}
      </span>
      <label
        htmlFor={id}
        className={`drop-zone${over ? ' is-over' : ''}${file ? ' has-file' : ''}${disabled ? ' is-disabled' : ''}`}
        data-testid="upload-drop-zone"
        onDragEnter={accept}
        onDragOver={accept}
        onDragLeave={() => setOver(false)}
        onDrop={(event) => {
          event.preventDefault();
          setOver(false);
          if (disabled) return;
          const dropped = event.dataTransfer.files[0];
          if (dropped) onFile(dropped);
        }}
      >
        <input
          id={id}
          type="file"
          className="drop-input"
          accept=".tar.gz,.tgz,application/gzip,application/x-gzip"
          data-testid="upload-input"
          aria-labelledby={`${id}-label`}
          aria-describedby={error ? `${id}-error` : `${id}-hint`}
          aria-invalid={error ? true : undefined}
          disabled={disabled}
          onChange={(event) => {
            onFile(event.target.files?.[0] ?? null);
            // Choosing the same file again after fixing it should fire a change again.
            event.target.value = '';
          }}
        />
        <Icon name={file ? 'file' : 'upload'} size={20} className="drop-icon" />
        {file ? (
          <span className="drop-text">
            <strong>{file.name}</strong>
            <span className="muted"> · {formatBytes(file.size)} · choose or drop another to replace</span>
          </span>
        ) : (
          <span className="drop-text">
            <strong>Drop a .tar.gz here</strong>
            <span className="muted"> or click to choose a file</span>
          </span>
        )}
      </label>
      {error ? (
        <p className="field-error" id={`${id}-error`}>
          {asSentence(error)}
        </p>
      ) : null}
      <p className="field-hint" id={`${id}-hint`}>
        {hint ?? 'A gzipped tarball of the project, at most 100 MB.'}
      </p>
    </div>
  );
}
