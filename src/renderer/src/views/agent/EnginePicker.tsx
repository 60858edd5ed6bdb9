// Which AI engine a run uses: the platform's choice, the included engine (the service's key, billed to
// the balance) or the account's own key (not billed). The own key is offered only once one is saved,
// and the hint says why when it is not.
import type { Account } from '../../../../shared/api/account.js';
import { FieldFrame } from '../../components/Field';
import { routeHref } from '../../stores/navigation/store';
import type { EngineChoice } from '../../stores/agent/store';

export function EnginePicker({
  value,
  onChange,
  account,
  disabled,
  autoDescription,
  testId,
  compact = false,
}: {
  value: EngineChoice;
  onChange: (engine: EngineChoice) => void;
  account: Account | null;
  disabled?: boolean;
  /** What `auto` means where the picker is (the builder also works with no engine at all). */
  autoDescription: string;
  testId?: string;
  /** On one line (label, select, hint), for a toolbar. */
  compact?: boolean;
}) {
  const key = account?.ai_key ?? null;
  const hint =
    value === 'own_key' && key
      ? `Your ${key.provider} key (${key.masked}): not billed here.`
      : value === 'included'
        ? 'The service’s own engine, paid from your balance.'
        : autoDescription;
  const addKey =
    !key && account ? (
      <>
        {' '}
        <a href={routeHref({ screen: 'settings' })} data-testid="engine-add-key">
          Save your own key
        </a>{' '}
        to use it instead.
      </>
    ) : null;
  const select = (id: string, describedBy: string | undefined) => (
    <select
      id={id}
      className="input"
      value={value}
      aria-describedby={describedBy}
      disabled={disabled}
      onChange={(event) => onChange(event.target.value as EngineChoice)}
      data-testid={testId}
    >
      <option value="auto">Automatic</option>
      <option value="included">Included engine</option>
      <option value="own_key" disabled={!key}>
        {key ? `Own key · ${key.provider}` : 'Own key (none saved)'}
      </option>
    </select>
  );
  if (compact) {
    return (
      <div className="engine-picker is-compact">
        <label className="field-label" htmlFor={`${testId ?? 'engine'}-select`}>
          Engine
        </label>
        {select(`${testId ?? 'engine'}-select`, `${testId ?? 'engine'}-hint`)}
        <span className="field-hint" id={`${testId ?? 'engine'}-hint`}>
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
        <>
          {hint}
          {addKey}
        </>
      }
    >
      {({ id, describedBy }) => select(id, describedBy)}
    </FieldFrame>
  );
}
