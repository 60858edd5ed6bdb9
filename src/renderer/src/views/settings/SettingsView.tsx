// Settings: which platform to use (the embedded local one, or a remote URL with its API key), a
// connection test, how that platform runs apps, the account with its balance, and the account's own AI
// key. The API key is write-only: the page only learns whether one is saved.
import { useEffect, useState, type FormEvent } from 'react';
import type { SettingsUpdate } from '../../../../shared/bridge.js';
import { TextField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { capitalize, ErrorNotice, FormErrors, SuccessNote } from '../../components/Notice';
import { fieldErrorsOf, NO_FIELD_ERRORS, unplacedErrors, type FieldErrors } from '../../lib/field-errors';
import { useProjectActions } from '../../stores/projects/selectors';
import { useConnectionTest, useSettings, useSettingsActions } from '../../stores/settings/selectors';
import { AccountCard } from './AccountCard';
import { AiKeyCard } from './AiKeyCard';
import { ApiKeysCard } from './ApiKeysCard';
import { RuntimeCard } from './RuntimeCard';
import { CardHeader } from '../../components/Card';
import { Choice } from '../../components/Choice';

type Mode = 'local' | 'remote';

export function SettingsView() {
  const { view, loadError } = useSettings();
  const { load, save, testConnection, loadAccount } = useSettingsActions();
  const { loadList } = useProjectActions();
  const test = useConnectionTest();

  const [mode, setMode] = useState<Mode>('local');
  const [url, setUrl] = useState('');
  const [apiKey, setApiKey] = useState('');
  const [touched, setTouched] = useState(false);
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const [errors, setErrors] = useState<FieldErrors>(NO_FIELD_ERRORS);
  const [checking, setChecking] = useState(false);
  /** A remote platform that did not answer when Save checked it: saved only by "Save anyway". */
  const [unreachable, setUnreachable] = useState<{ update: SettingsUpdate } | null>(null);

  useEffect(() => {
    void load();
    void loadAccount();
  }, [load, loadAccount]);

  // Start from the saved settings, until the user changes something.
  useEffect(() => {
    if (!view || touched) return;
    setMode(view.mode);
    setUrl(view.mode === 'remote' ? view.platformUrl : '');
  }, [view, touched]);

  const edit = (path?: string) => {
    setTouched(true);
    setSaved(false);
    setUnreachable(null);
    if (path && errors[path]) setErrors(({ [path]: _gone, ...rest }) => rest);
  };
  /** A text field's change: its value kept, and the form edited (the field's own error cleared). */
  const typed = (set: (value: string) => void, path: string) => (event: { target: { value: string } }) => {
    set(event.target.value);
    edit(path);
  };

  const target = mode === 'local' ? 'local' : url.trim();
  const savedRemote = view?.mode === 'remote' && view.platformUrl === url.trim();
  const hasSavedKey = mode === 'remote' && savedRemote && view?.hasApiKey === true;

  const submit = async (update: SettingsUpdate) => {
    setSaving(true);
    setMessage(null);
    setUnreachable(null);
    const outcome = await save(update);
    setSaving(false);
    if (outcome.ok) {
      setErrors(NO_FIELD_ERRORS);
      setApiKey('');
      setTouched(false);
      setSaved(true);
      void loadList();
      return;
    }
    setErrors(fieldErrorsOf(outcome.error));
    setMessage(outcome.error.errors?.length ? 'The settings were not saved.' : outcome.error.detail);
  };

  const onSave = (event: FormEvent) => {
    event.preventDefault();
    if (mode === 'remote' && url.trim() === '') {
      setErrors({ platform: 'enter the platform’s URL, such as https://wharf.example.com' });
      return;
    }
    const update: SettingsUpdate = { platform: target };
    if (mode === 'remote' && apiKey.trim() !== '') update.apiKey = apiKey.trim();
    if (mode === 'local') {
      void submit(update);
      return;
    }
    // A remote platform is asked first: one that cannot be reached is saved only when the user says so
    // (it may be down for now), never silently.
    void (async () => {
      setChecking(true);
      setUnreachable(null);
      const result = await testConnection(target, update.apiKey ?? undefined);
      setChecking(false);
      if (!result.ok && result.error?.code === 'offline') {
        // Why it did not answer is shown next to Test connection.
        setUnreachable({ update });
        return;
      }
      await submit(update);
    })();
  };

  const onTest = () => {
    if (mode === 'remote' && url.trim() === '') {
      setErrors({ platform: 'enter the platform’s URL to test it' });
      return;
    }
    void testConnection(target, mode === 'remote' && apiKey.trim() ? apiKey.trim() : undefined);
  };

  const unplaced = unplacedErrors(errors, (path) => path === 'platform' || path === 'apiKey');
  const testResult = test.result && test.target === target ? test.result : null;

  return (
    <div className="page page-narrow">
      <header className="page-header">
        <div className="title-block">
          <h1 className="page-title">Settings</h1>
          <p className="page-subtitle">The platform this app deploys to, and your account on it.</p>
        </div>
      </header>

      {loadError ? <ErrorNotice error={loadError} title="The settings could not be loaded" /> : null}

      <form className="card" onSubmit={onSave} noValidate data-testid="settings-form">
        <CardHeader title="Platform">Where projects are deployed and tunnels are served.</CardHeader>
        <div className="card-body stack">
          <FormErrors message={message} errors={unplaced} testId="settings-errors" />
          <fieldset className="fieldset">
            <legend className="sr-only">Platform</legend>
            <div className="choice-list">
              {(['local', 'remote'] as const).map((option) => (
                <Choice
                  key={option}
                  type="radio"
                  name="platform-mode"
                  value={option}
                  checked={mode === option}
                  onChange={() => {
                    setMode(option);
                    edit('platform');
                  }}
                  data-testid={`platform-${option}`}
                  title={option === 'local' ? 'Local platform' : 'Remote platform'}
                  description={
                    option === 'local' ? (
                      <>
                        Runs on this machine, embedded in Wharf: no account or key needed, works offline.
                        {view?.mode === 'local' ? (
                          <>
                            {' '}
                            At <span className="mono">{view.platformUrl}</span>.
                          </>
                        ) : null}
                      </>
                    ) : (
                      'A Wharf server at a URL, with your API key.'
                    )
                  }
                />
              ))}
            </div>
          </fieldset>

          {mode === 'remote' ? (
            <div className="stack remote-fields">
              <TextField
                label="Platform URL"
                type="url"
                value={url}
                onChange={typed(setUrl, 'platform')}
                error={errors.platform}
                placeholder="https://wharf.example.com"
                className="mono"
                data-testid="platform-url"
              />
              <TextField
                label="API key"
                type="password"
                value={apiKey}
                onChange={typed(setApiKey, 'apiKey')}
                error={errors.apiKey}
                placeholder={hasSavedKey ? '•••••••• (a key is saved)' : 'wk_…'}
                autoComplete="new-password"
                className="mono"
                hint={
                  hasSavedKey
                    ? 'Enter a new key to replace the saved one.'
                    : 'Keys look like wk_… and are shown once, when they are created. Wharf never shows it back.'
                }
                data-testid="api-key"
              />
              {hasSavedKey ? (
                <div className="key-saved" data-testid="key-saved">
                  <Icon name="check" />
                  <span>A key is saved{keyStorageLabel(view?.keyStorage)}.</span>
                  <button
                    type="button"
                    className="btn btn-sm btn-ghost"
                    onClick={() => void submit({ platform: target, apiKey: null })}
                    disabled={saving}
                    data-testid="forget-key"
                  >
                    Forget key
                  </button>
                </div>
              ) : null}
              {view?.keyStorageWarning ? (
                <div className="notice notice-warning" role="note" data-testid="key-storage-warning">
                  <Icon name="alert" className="notice-icon" />
                  <div className="notice-body">
                    <p>{view.keyStorageWarning}</p>
                  </div>
                </div>
              ) : null}
            </div>
          ) : null}

          <div className="connection-test">
            <button
              type="button"
              className="btn"
              onClick={onTest}
              disabled={test.running}
              data-testid="test-connection"
            >
              {test.running ? 'Testing…' : 'Test connection'}
            </button>
            <div aria-live="polite" className="connection-result-slot">
              {testResult ? (
                <div
                  className={`connection-result ${testResult.ok ? 'is-ok' : 'is-error'}`}
                  data-testid="connection-result"
                  data-ok={testResult.ok}
                >
                  <Icon name={testResult.ok ? 'check' : 'alert'} />
                  {testResult.ok ? (
                    <span>
                      Connected in <strong>{testResult.latencyMs} ms</strong>
                      {testResult.account ? (
                        <>
                          {' '}
                          as <strong>{testResult.account.email}</strong>
                        </>
                      ) : null}
                    </span>
                  ) : (
                    <span>{capitalize(testResult.error?.detail ?? 'the connection failed')}</span>
                  )}
                </div>
              ) : null}
            </div>
          </div>
        </div>
        {unreachable ? (
          <div className="notice notice-warning save-unreachable" role="alert" data-testid="save-unreachable">
            <Icon name="alert" className="notice-icon" />
            <div className="notice-body">
              <p>
                <strong>
                  Not saved: <span className="mono">{unreachable.update.platform}</span> did not answer
                </strong>
              </p>
              <p>
                Check the address, or save it anyway if the platform is only down for now: until it answers,
                the screens show only what Wharf kept from earlier visits, marked with its age.
              </p>
              <div className="button-row">
                <button
                  type="button"
                  className="btn btn-sm"
                  onClick={() => void submit(unreachable.update)}
                  disabled={saving}
                  data-testid="save-anyway"
                >
                  Save anyway
                </button>
                <button
                  type="button"
                  className="btn btn-sm btn-ghost"
                  onClick={() => setUnreachable(null)}
                  data-testid="save-unreachable-cancel"
                >
                  Keep the current platform
                </button>
              </div>
            </div>
          </div>
        ) : null}
        <footer className="card-footer">
          {saved ? <SuccessNote testId="settings-saved">Settings saved</SuccessNote> : <span />}
          <button
            type="submit"
            className="btn btn-primary"
            disabled={saving || checking}
            data-testid="save-settings"
          >
            {checking ? 'Checking…' : saving ? 'Saving…' : 'Save'}
          </button>
        </footer>
      </form>

      <RuntimeCard />
      <AccountCard />
      <AiKeyCard />
      <ApiKeysCard />
    </div>
  );
}

function keyStorageLabel(storage: string | undefined): string {
  if (storage === 'safe-storage') return ', encrypted by the system keychain';
  if (storage === 'file') return ' in a file only you can read';
  return '';
}
