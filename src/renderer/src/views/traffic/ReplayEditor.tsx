// Edit and replay: the captured request as a form (method, path, headers as rows, the body as text)
// sent again through the Engine with the changes; what was not changed is the original's. Escape or
// Cancel closes it without sending.
import { useMemo, useState, type FormEvent } from 'react';
import type { CapturedRequestDetail } from '../../../../shared/api/tunnels.js';
import type { ReplayInput } from '../../../../shared/bridge.js';
import { TextAreaField, TextField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { COMMON_METHODS } from '../../lib/traffic-filter';
import {
  draftFrom,
  draftProblems,
  replayInputFrom,
  type DraftProblems,
  type ReplayDraft,
} from '../../lib/replay';

export function ReplayEditor({
  original,
  onCancel,
  onSend,
}: {
  original: CapturedRequestDetail;
  onCancel: () => void;
  onSend: (input: ReplayInput) => void;
}) {
  const initial = useMemo(() => draftFrom(original), [original]);
  const [draft, setDraft] = useState<ReplayDraft>(initial);
  const [problems, setProblems] = useState<DraftProblems>({});

  const update = (patch: Partial<ReplayDraft>) => setDraft((current) => ({ ...current, ...patch }));
  const setHeader = (index: number, patch: Partial<{ name: string; value: string }>) =>
    update({ headers: draft.headers.map((h, i) => (i === index ? { ...h, ...patch } : h)) });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const found = draftProblems(draft);
    setProblems(found);
    if (Object.keys(found).length > 0) return;
    onSend(replayInputFrom(original, draft));
  };

  return (
    <form
      className="replay-editor"
      onSubmit={submit}
      onKeyDown={(event) => {
        if (event.key === 'Escape') {
          event.preventDefault();
          onCancel();
        }
      }}
      noValidate
      aria-label="Edit and replay"
      data-testid="replay-editor"
    >
      <div className="replay-editor-head">
        <h3 className="section-title">Edit and replay</h3>
        <p className="muted">
          Sent straight to the tunnel&apos;s local port; the new exchange is captured too.
        </p>
      </div>
      <div className="replay-line">
        <TextField
          label="Method"
          fieldClassName="replay-method"
          className="mono"
          value={draft.method}
          onChange={(event) => update({ method: event.target.value })}
          error={problems.method}
          list="replay-methods"
          data-testid="replay-method"
        />
        <datalist id="replay-methods">
          {COMMON_METHODS.map((method) => (
            <option key={method} value={method} />
          ))}
        </datalist>
        <TextField
          label="Path"
          fieldClassName="replay-path"
          className="mono"
          value={draft.path}
          onChange={(event) => update({ path: event.target.value })}
          error={problems.path}
          autoFocus
          data-testid="replay-path"
        />
      </div>

      <fieldset className="fieldset">
        <legend className="field-label">Headers</legend>
        <div className="replay-headers" data-testid="replay-headers">
          {draft.headers.map((header, index) => (
            <div className="replay-header-row" key={index}>
              {(['name', 'value'] as const).map((part) => (
                <input
                  key={part}
                  className="input mono"
                  value={header[part]}
                  placeholder={part === 'name' ? 'Name' : 'Value'}
                  aria-label={`Header ${index + 1} ${part}`}
                  onChange={(event) => setHeader(index, { [part]: event.target.value })}
                  spellCheck={false}
                />
              ))}
              <button
                type="button"
                className="icon-button"
                aria-label={`Remove header ${header.name || index + 1}`}
                onClick={() => update({ headers: draft.headers.filter((_, i) => i !== index) })}
              >
                <Icon name="trash" />
              </button>
            </div>
          ))}
        </div>
        {problems.headers ? <p className="field-error">{problems.headers}</p> : null}
        <button
          type="button"
          className="btn btn-sm btn-ghost replay-add-header"
          onClick={() => update({ headers: [...draft.headers, { name: '', value: '' }] })}
          data-testid="replay-add-header"
        >
          <Icon name="plus" />
          Add header
        </button>
      </fieldset>

      {draft.bodyEditable ? (
        <TextAreaField
          label="Body"
          className="mono replay-body"
          rows={8}
          value={draft.body}
          onChange={(event) => update({ body: event.target.value })}
          hint={draft.bodyNote ?? 'Content-Length follows the new body.'}
          data-testid="replay-body"
        />
      ) : (
        <p className="muted" data-testid="replay-body-note">
          {draft.bodyNote}
        </p>
      )}

      <div className="button-row">
        <button type="submit" className="btn btn-primary" data-testid="replay-send">
          <Icon name="replay" />
          Send
        </button>
        <button type="button" className="btn" onClick={onCancel}>
          Cancel
        </button>
        <button
          type="button"
          className="btn btn-ghost"
          onClick={() => setDraft(initial)}
          disabled={draft === initial}
        >
          Reset
        </button>
      </div>
    </form>
  );
}
