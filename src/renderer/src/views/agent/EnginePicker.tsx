// Which AI engine a run uses: the platform's choice, the included engine (the service's key, billed to
// the balance) or the account's own key (not billed). Only engines that exist are offered, each named
// with its provider and model; with no own key saved, the hint links straight to the AI key field.
import type { AiProvider } from '../../../../shared/api/account.js';
import { FieldFrame } from '../../components/Field';
import type { EngineOffer } from '../../stores/agent/engines';
import type { EngineChoice } from '../../stores/agent/store';
import { AI_KEY_ROUTE, routeHref } from '../../stores/navigation/store';
import { PROVIDER_LABELS } from '../settings/AiKeyCard';

function named(provider: AiProvider, model: string | null): string {
  return model ? `${PROVIDER_LABELS[provider]} ${model}` : PROVIDER_LABELS[provider];
}

/** The choice in effect: one whose engine is gone (a key deleted, another platform) is `auto` again. */
export function effectiveEngine(value: EngineChoice, offer: EngineOffer): EngineChoice {
  if (value === 'own_key' && offer.ownKey === null) return 'auto';
  if (value === 'included' && offer.included === null) return 'auto';
  return value;
}

export function EnginePicker({
  value,
  onChange,
  offer,
  disabled,
  where,
  testId,
  compact = false,
}: {
  value: EngineChoice;
  onChange: (engine: EngineChoice) => void;
  offer: EngineOffer;
  disabled?: boolean;
  /** The builder also works with no engine at all (from templates); the agent does not. */
  where: 'agent' | 'build';
  testId?: string;
  /** On one line (label, select, hint), for a toolbar. */
  compact?: boolean;
}) {
  const { included, ownKey } = offer;
  const chosen = effectiveEngine(value, offer);
  const includedText = included
    ? `Included engine (${named(included.provider, included.model)}), billed to your balance.`
    : 'The included engine, billed to your balance.';
  const ownText = ownKey
    ? `Your ${named(ownKey.provider, ownKey.model)} key ${ownKey.masked}, not billed here.`
    : '';
  const hint =
    chosen === 'own_key'
      ? ownText
      : chosen === 'included'
        ? includedText
        : ownKey
          ? ownText
          : included !== null
            ? includedText
            : where === 'build'
              ? 'No AI engine: our offline templates.'
              : 'No AI engine yet.';
  const addKey =
    ownKey === null ? (
      <>
        {' '}
        <a href={routeHref(AI_KEY_ROUTE)} data-testid="engine-add-key">
          Add your AI key
        </a>
        {included ? ' to run unbilled.' : '.'}
      </>
    ) : null;
  const select = (id: string, describedBy: string | undefined) => (
    <select
      id={id}
      className="input"
      value={chosen}
      aria-describedby={describedBy}
      disabled={disabled}
      onChange={(event) => onChange(event.target.value as EngineChoice)}
      data-testid={testId}
    >
      <option value="auto">Automatic</option>
      {included !== null ? (
        <option value="included">
          {included ? `Included · ${named(included.provider, included.model)}` : 'Included engine'}
        </option>
      ) : null}
      {ownKey ? (
        <option value="own_key">{`Your key · ${named(ownKey.provider, ownKey.model)}`}</option>
      ) : null}
    </select>
  );
  if (compact) {
    return (
      <div className="engine-picker is-compact">
        <label className="field-label" htmlFor={`${testId ?? 'engine'}-select`}>
          Engine
        </label>
        {select(`${testId ?? 'engine'}-select`, `${testId ?? 'engine'}-hint`)}
        <span
          className="field-hint"
          id={`${testId ?? 'engine'}-hint`}
          data-testid={`${testId ?? 'engine'}-hint`}
        >
          {hint}
          {addKey}
        </span>
      </div>
    );
  }
  return (
    <FieldFrame
      label="Engine"
      className="engine-picker"
      hint={
        <span data-testid={`${testId ?? 'engine'}-hint`}>
          {hint}
          {addKey}
        </span>
      }
    >
      {({ id, describedBy }) => select(id, describedBy)}
    </FieldFrame>
  );
}
