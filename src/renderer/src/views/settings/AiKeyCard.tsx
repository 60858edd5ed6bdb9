// Your own AI key: a provider and its key, saved encrypted on the platform and only ever shown back
// masked (first 3 and last 4 characters). Runs on your key are not billed here. Deleting asks first.
// With no key saved it says what runs use now (the platform's included engine, or none at all). The
// route `#/settings/ai-key` ("Add your AI key" elsewhere) lands here: the key's input scrolled into
// view and focused.
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { AI_PROVIDERS, type AiProvider } from '../../../../shared/api/account.js';
import type { BridgeErrorShape } from '../../../../shared/bridge.js';
import { ConfirmDanger } from '../../components/Dialog';
import { SelectField, TextField } from '../../components/Field';
import { Icon } from '../../components/Icon';
import { ErrorNotice, SuccessNote } from '../../components/Notice';
import { fieldErrorsOf } from '../../lib/field-errors';
import { engineOffer } from '../../stores/agent/engines';
import { useAiKeyActions } from '../../stores/agent/selectors';
import { useRoute } from '../../stores/navigation/selectors';
import { useAccount, useRuntime } from '../../stores/settings/selectors';
import { Card, CardHeader } from '../../components/Card';

export const PROVIDER_LABELS: Record<AiProvider, string> = {
  openai: 'OpenAI',
  anthropic: 'Anthropic',
  google: 'Google (Gemini)',
  mistral: 'Mistral',
  groq: 'Groq',
  deepseek: 'DeepSeek',
  xai: 'xAI (Grok)',
  openrouter: 'OpenRouter',
};

export function AiKeyCard() {
  const { account } = useAccount();
  const { info } = useRuntime();
  const { saveAiKey, deleteAiKey } = useAiKeyActions();
  const saved = account?.ai_key ?? null;
  const { included } = engineOffer(info, account);
  const route = useRoute();
  const card = useLandOnKeyField(route.screen === 'settings' && route.field === 'ai-key');
  const [provider, setProvider] = useState<AiProvider | null>(null);
  const [key, setKey] = useState('');
  const [saving, setSaving] = useState(false);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [message, setMessage] = useState<BridgeErrorShape | null>(null);
  const [done, setDone] = useState<'saved' | 'deleted' | null>(null);
  const [confirming, setConfirming] = useState(false);
  const shownProvider = provider ?? saved?.provider ?? 'openai';

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (saving) return;
    setDone(null);
    setMessage(null);
    if (key.trim() === '') {
      setErrors({ key: `paste your ${PROVIDER_LABELS[shownProvider]} API key` });
      return;
    }
    setSaving(true);
    const outcome = await saveAiKey(shownProvider, key.trim());
    setSaving(false);
    if (outcome.ok) {
      setKey('');
      setErrors({});
      setProvider(null);
      setDone('saved');
      return;
    }
    const fields = fieldErrorsOf(outcome.error);
    setErrors(fields);
    if (!fields.key && !fields.provider) setMessage(outcome.error);
  };

  return (
    <Card titleId="ai-key-title" testId="ai-key-card" ref={card}>
      <CardHeader title="Your AI key">
        Build apps and run the agent on your own provider account: not billed here. Stored encrypted on the
        platform, never shown back in full.
      </CardHeader>
      <form className="card-body stack" onSubmit={(event) => void submit(event)} noValidate>
        {message ? <ErrorNotice error={message} title="The key was not saved" testId="ai-key-error" /> : null}
        {saved ? (
          <div className="key-saved ai-key-saved" data-testid="ai-key-saved">
            <Icon name="key" />
            <span>
              <strong>{PROVIDER_LABELS[saved.provider]}</strong> key{' '}
              <span className="mono" data-testid="ai-key-masked">
                {saved.masked}
              </span>
            </span>
            <button
              type="button"
              className="btn btn-sm btn-ghost btn-danger-text"
              onClick={() => setConfirming(true)}
              data-testid="ai-key-delete"
            >
              <Icon name="trash" />
              Delete
            </button>
          </div>
        ) : (
          <p className="muted" data-testid="ai-key-none">
            {included
              ? `No key saved: the agent and the builder run on this platform’s included engine (${PROVIDER_LABELS[included.provider]} ${included.model}), billed to your balance.`
              : included === null
                ? 'No key saved, and this platform has no included AI engine: the agent cannot run, and the builder makes apps from its offline templates.'
                : 'No key saved: the agent and the builder use the platform’s included engine if it has one, else the builder makes apps from its offline templates.'}
          </p>
        )}
        <div className="grid-2 ai-key-fields">
          <SelectField
            label="Provider"
            error={errors.provider}
            value={shownProvider}
            onChange={(event) => {
              setProvider(event.target.value as AiProvider);
              setErrors(({ provider: _gone, ...rest }) => rest);
              setDone(null);
            }}
            data-testid="ai-key-provider"
          >
            {AI_PROVIDERS.map((option) => (
              <option key={option} value={option}>
                {PROVIDER_LABELS[option]}
              </option>
            ))}
          </SelectField>
          <TextField
            label="API key"
            type="password"
            value={key}
            onChange={(event) => {
              setKey(event.target.value);
              setErrors(({ key: _gone, ...rest }) => rest);
              setDone(null);
            }}
            error={errors.key}
            placeholder={saved ? 'A new key replaces it' : 'sk-…'}
            autoComplete="new-password"
            className="mono"
            data-testid="ai-key-input"
          />
        </div>
        <div className="button-row button-row-end">
          {done === 'saved' ? (
            <SuccessNote testId="ai-key-done">Key saved</SuccessNote>
          ) : done === 'deleted' ? (
            <SuccessNote testId="ai-key-done">Key deleted</SuccessNote>
          ) : (
            <span />
          )}
          <button type="submit" className="btn btn-primary" disabled={saving} data-testid="ai-key-save">
            {saving ? 'Saving…' : saved ? 'Replace key' : 'Save key'}
          </button>
        </div>
      </form>
      {confirming && saved ? (
        <ConfirmDeleteKey
          label={`${PROVIDER_LABELS[saved.provider]} key ${saved.masked}`}
          after={
            included
              ? 'Runs then use the included engine, which is billed to your balance.'
              : included === null
                ? 'This platform has no included AI engine: the agent then cannot run, and the builder uses its offline templates.'
                : 'Runs then use the platform’s included engine, if it has one.'
          }
          onClose={() => setConfirming(false)}
          onDelete={async () => {
            const outcome = await deleteAiKey();
            if (outcome.ok) {
              setConfirming(false);
              setDone('deleted');
            }
            return outcome.ok ? null : outcome.error;
          }}
        />
      ) : null}
    </Card>
  );
}

function ConfirmDeleteKey({
  label,
  after,
  onClose,
  onDelete,
}: {
  label: string;
  /** What runs use once the key is gone. */
  after: string;
  onClose: () => void;
  onDelete: () => Promise<BridgeErrorShape | null>;
}) {
  return (
    <ConfirmDanger
      title="Delete your AI key?"
      description={
        <p>
          The <span className="mono">{label}</span> is removed from the platform. {after}
        </p>
      }
      onClose={onClose}
      testId="ai-key-delete-dialog"
      label="Delete key"
      busyLabel="Deleting…"
      confirmTestId="ai-key-confirm-delete"
      failedTitle="The key was not deleted"
      onConfirm={onDelete}
    />
  );
}

/**
 * When Settings was opened at the AI key (`#/settings/ai-key`): focuses the key's input and keeps it in
 * view while the cards above it load and change the page's height (the screen itself starts at the top
 * after the effects run, hence the next frame). Returns the card's ref.
 */
function useLandOnKeyField(target: boolean) {
  const card = useRef<HTMLElement>(null);
  useEffect(() => {
    if (!target) return;
    const field = card.current?.querySelector<HTMLInputElement>('[data-testid="ai-key-input"]');
    if (!field) return;
    field.focus({ preventScroll: true });
    const show = () => {
      if (document.activeElement === field) field.scrollIntoView({ block: 'center' });
    };
    const frame = requestAnimationFrame(show);
    const page = card.current?.closest('.page');
    const observer = new ResizeObserver(show);
    if (page) observer.observe(page);
    // Once the page has settled, scrolling is the user's again.
    const settle = setTimeout(() => observer.disconnect(), 2_000);
    return () => {
      cancelAnimationFrame(frame);
      clearTimeout(settle);
      observer.disconnect();
    };
  }, [target]);
  return card;
}
