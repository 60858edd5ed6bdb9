// The account's API keys: the active ones (name, scopes, created, last used), a form to create one
// with its scopes, the new key shown once with a Copy button until dismissed, and Revoke behind a
// confirmation naming the key. The key this app signs in with is marked "This app" and cannot be
// revoked here: that would lock the app out of its platform. Loaded again whenever the platform
// changes and when it comes back after being unreachable.
import { useState, type FormEvent } from 'react';
import type { ApiKeyInfo, Scope } from '../../../../shared/api/account.js';
import type { BridgeErrorShape } from '../../../../shared/bridge.js';
import { CopyButton } from '../../components/CopyButton';
import { ConfirmDanger } from '../../components/Dialog';
import { FieldFrame, TextField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { ErrorNotice, FormErrors, SuccessNote } from '../../components/Notice';
import { fieldErrorsOf, unplacedErrors, type FieldErrors } from '../../lib/field-errors';
import { formatAgo, formatDateTime } from '../../lib/format';
import { useKeysStore } from '../../stores/keys/store';
import { usePlatformLoad } from '../../stores/platform/use-platform-load';
import { keysProblem, SCOPE_CHOICES, scopesToSend } from './api-keys';
import { Card, CardHeader } from '../../components/Card';
import { Choice } from '../../components/Choice';
import { RefreshButton } from '../../components/RefreshButton';

const NAME_MAX = 64;
const OWN_KEY_NOTE =
  'This app signs in with this key: revoking it would lock the app out of its platform, so it cannot be revoked here.';

export function ApiKeysCard() {
  const keys = useKeysStore((state) => state.keys);
  const error = useKeysStore((state) => state.error);
  const loading = useKeysStore((state) => state.loading);
  const created = useKeysStore((state) => state.created);
  const load = useKeysStore((state) => state.load);
  const dismissCreated = useKeysStore((state) => state.dismissCreated);
  const [revoking, setRevoking] = useState<ApiKeyInfo | null>(null);
  const [revoked, setRevoked] = useState<string | null>(null);

  usePlatformLoad(load, error);

  const problem = error ? keysProblem(error) : null;
  const usable = keys !== null && !problem;
  const hasOwnKey = keys?.some((key) => key.current) ?? false;
  const refresh = () => {
    setRevoked(null);
    void load();
  };

  return (
    <Card titleId="api-keys-title" testId="api-keys">
      <CardHeader
        title="API keys"
        actions={<RefreshButton onClick={refresh} busy={loading} testId="api-keys-refresh" />}
      >
        Keys for the CLI, scripts and CI to use the platform’s API as your account. Each is shown once, when
        it is created.
      </CardHeader>
      <div className="card-body stack" aria-busy={loading && keys === null && !problem}>
        {problem && error ? (
          <div
            className="notice notice-error"
            role="alert"
            data-testid="api-keys-unavailable"
            data-code={error.code}
          >
            <Icon name="alert" className="notice-icon" />
            <div className="notice-body">
              <p className="notice-title">{problem.title}</p>
              <p>{problem.detail}</p>
            </div>
            {problem.retry ? (
              <div className="notice-action">
                <button type="button" className="btn btn-sm" onClick={() => void load()} disabled={loading}>
                  Retry
                </button>
              </div>
            ) : null}
          </div>
        ) : null}
        {keys === null && !problem ? (
          <div className="skeleton-block short" data-testid="api-keys-loading" />
        ) : null}
        {/* Shown even if the list then fails to load: this is the only time the key can be seen. */}
        {created ? <NewKey name={created.name} secret={created.key} onDismiss={dismissCreated} /> : null}
        {revoked ? <SuccessNote testId="api-key-revoked">Key “{revoked}” revoked</SuccessNote> : null}
        {usable ? (
          <>
            <KeysTable keys={keys} onRevoke={setRevoking} />
            {hasOwnKey ? (
              <p className="muted api-keys-note" data-testid="api-keys-own-note">
                <Icon name="lock" />
                <span>
                  The key marked <strong>This app</strong> is the one this app signs in with: it cannot be
                  revoked here, since that would lock the app out. Revoke it from another app or the API.
                </span>
              </p>
            ) : null}
            <CreateKeyForm onCreated={() => setRevoked(null)} />
          </>
        ) : null}
      </div>
      {revoking ? (
        <ConfirmRevoke
          apiKey={revoking}
          onClose={() => setRevoking(null)}
          onRevoked={(name) => {
            setRevoking(null);
            setRevoked(name);
          }}
        />
      ) : null}
    </Card>
  );
}

function KeysTable({ keys, onRevoke }: { keys: ApiKeyInfo[]; onRevoke: (key: ApiKeyInfo) => void }) {
  if (keys.length === 0) {
    return (
      <p className="muted" data-testid="api-keys-empty">
        No active keys.
      </p>
    );
  }
  return (
    <div className="api-keys-table-wrap">
      <table className="usage-table api-keys-table" data-testid="api-keys-table">
        <caption className="sr-only">The account’s active API keys, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Scopes</th>
            <th scope="col" className="api-keys-created">
              Created
            </th>
            <th scope="col">Last used</th>
            <th scope="col" className="cell-actions">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {keys.map((key) => (
            <tr
              key={key.id}
              data-testid="api-key-row"
              data-key-id={key.id}
              data-current={key.current}
              className={key.current ? 'is-current' : undefined}
            >
              <td>
                <span className="api-key-name">
                  <span className="api-key-name-text" title={key.name} data-testid="api-key-name">
                    {key.name}
                  </span>
                  {key.current ? (
                    <span className="tag tag-current" title={OWN_KEY_NOTE} data-testid="api-key-this-app">
                      This app
                    </span>
                  ) : null}
                </span>
              </td>
              <td>
                <span className="api-key-scopes" data-testid="api-key-scopes">
                  {key.scopes.map((scope) => (
                    <span key={scope} className="tag">
                      {scope}
                    </span>
                  ))}
                </span>
              </td>
              <td className="muted api-keys-created" title={formatDateTime(key.created_at)}>
                {formatAgo(key.created_at)}
              </td>
              <td
                className="muted"
                title={key.last_used_at ? formatDateTime(key.last_used_at) : undefined}
                data-testid="api-key-last-used"
              >
                {key.last_used_at ? formatAgo(key.last_used_at) : 'Never'}
              </td>
              <td className="cell-actions">
                {key.current ? (
                  <span className="api-key-locked" title={OWN_KEY_NOTE} data-testid="api-key-in-use">
                    <Icon name="lock" />
                    In use
                  </span>
                ) : (
                  <button
                    type="button"
                    className="btn btn-sm btn-ghost btn-danger-text"
                    onClick={() => onRevoke(key)}
                    aria-label={`Revoke ${key.name}`}
                    data-testid="api-key-revoke"
                  >
                    <Icon name="trash" />
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The key just created: the one time it is shown, until the user says they have it. */
function NewKey({ name, secret, onDismiss }: { name: string; secret: string; onDismiss: () => void }) {
  return (
    <div className="api-key-new" role="status" data-testid="api-key-new">
      <p className="api-key-new-title">
        <Icon name="key" />
        <span>
          Key “<span data-testid="api-key-new-name">{name}</span>” created
        </span>
      </p>
      <p className="api-key-new-warning">
        Copy it now and keep it somewhere safe: <strong>you will not see it again</strong>. Wharf stores only
        a hash of it.
      </p>
      <div className="api-key-new-value">
        <input
          className="input mono"
          value={secret}
          readOnly
          aria-label="The new API key"
          onFocus={(event) => event.currentTarget.select()}
          data-testid="api-key-new-value"
        />
        <CopyButton text={secret} ariaLabel="Copy the new API key" testId="api-key-copy" />
      </div>
      <div className="api-key-actions">
        <button type="button" className="btn btn-sm" onClick={onDismiss} data-testid="api-key-new-dismiss">
          I have copied it
        </button>
      </div>
    </div>
  );
}

function CreateKeyForm({ onCreated }: { onCreated: () => void }) {
  const create = useKeysStore((state) => state.create);
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<ReadonlySet<Scope>>(() => new Set<Scope>(['deploy']));
  const [creating, setCreating] = useState(false);
  const [errors, setErrors] = useState<FieldErrors>({});
  const [refusal, setRefusal] = useState<BridgeErrorShape | null>(null);

  const toggle = (scope: Scope, on: boolean) => {
    setChosen((before) => {
      const next = new Set(before);
      if (on) next.add(scope);
      else next.delete(scope);
      return next;
    });
    setErrors(({ scopes: _gone, ...rest }) => rest);
    setRefusal(null);
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (creating) return;
    setRefusal(null);
    const scopes = scopesToSend(chosen);
    const found: Record<string, string> = {};
    if (name.trim() === '') found.name = 'name the key after where it is used, such as “CI” or “laptop”';
    if (scopes.length === 0) found.scopes = 'choose at least one scope';
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    setCreating(true);
    const outcome = await create({ scopes, name: name.trim() });
    setCreating(false);
    if (outcome.ok) {
      setName('');
      setChosen(new Set<Scope>(['deploy']));
      setErrors({});
      onCreated();
      return;
    }
    const fields = fieldErrorsOf(outcome.error);
    // `scopes[0]` and the like belong to the scope choice.
    const placed: Record<string, string> = {};
    for (const [path, message] of Object.entries(fields)) {
      const key = path.startsWith('scopes') ? 'scopes' : path;
      placed[key] = placed[key] ? `${placed[key]}; ${message}` : message;
    }
    setErrors(placed);
    if (Object.keys(placed).length === 0) setRefusal(outcome.error);
  };

  const unplaced = unplacedErrors(errors, (path) => path === 'name' || path === 'scopes');
  const full = chosen.has('full');
  const problem = refusal ? keysProblem(refusal) : null;

  return (
    <form
      className="stack api-key-form"
      onSubmit={(event) => void submit(event)}
      noValidate
      data-testid="api-key-form"
    >
      <h3 className="section-title">Create a key</h3>
      {refusal && problem ? (
        <ErrorNotice
          error={{
            ...refusal,
            detail: refusal.code === 'forbidden' ? problem.detail : refusal.detail,
          }}
          title="The key was not created"
          testId="api-key-create-error"
        />
      ) : null}
      <FormErrors message={null} errors={unplaced} />
      <TextField
        label="Name"
        value={name}
        maxLength={NAME_MAX}
        onChange={(event) => {
          setName(event.target.value);
          setErrors(({ name: _gone, ...rest }) => rest);
          setRefusal(null);
        }}
        error={errors.name}
        placeholder="CI, laptop, deploy script…"
        hint="Where the key is used, so you know which one to revoke later."
        data-testid="api-key-name-input"
      />
      <FieldFrame label="Scopes" error={errors.scopes}>
        {({ describedBy }) => (
          <div className="api-key-scope-list" role="group" aria-describedby={describedBy}>
            {SCOPE_CHOICES.map(({ scope, label, description }) => {
              const implied = full && scope !== 'full';
              const checked = chosen.has(scope) || implied;
              return (
                <Choice
                  key={scope}
                  className={`api-key-scope${implied ? ' is-implied' : ''}`}
                  type="checkbox"
                  checked={checked}
                  disabled={implied}
                  onChange={(event) => toggle(scope, event.target.checked)}
                  data-testid={`api-key-scope-${scope}`}
                  title={label}
                  description={implied ? 'Included in Full.' : description}
                />
              );
            })}
          </div>
        )}
      </FieldFrame>
      <div className="api-key-actions">
        <button type="submit" className="btn btn-primary" disabled={creating} data-testid="api-key-create">
          <Icon name="plus" />
          {creating ? 'Creating…' : 'Create key'}
        </button>
      </div>
    </form>
  );
}

function ConfirmRevoke({
  apiKey,
  onClose,
  onRevoked,
}: {
  apiKey: ApiKeyInfo;
  onClose: () => void;
  onRevoked: (name: string) => void;
}) {
  const revoke = useKeysStore((state) => state.revoke);
  return (
    <ConfirmDanger
      title={`Revoke “${apiKey.name}”?`}
      description={
        <p>
          Whatever uses the key “<strong>{apiKey.name}</strong>” (scopes {apiKey.scopes.join(', ')}) is
          refused from now on. This cannot be undone: a new key would have to be created and set up in its
          place.
        </p>
      }
      onClose={onClose}
      testId="api-key-revoke-dialog"
      label="Revoke key"
      busyLabel="Revoking…"
      confirmTestId="api-key-confirm-revoke"
      failedTitle="The key was not revoked"
      onConfirm={async () => {
        const outcome = await revoke(apiKey.id);
        if (!outcome.ok) return outcome.error;
        onRevoked(apiKey.name);
        return null;
      }}
    />
  );
}
