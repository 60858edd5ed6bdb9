// A refusal of the AI builder, titled by what it means and said in the app's words (see
// stores/agent/errors.ts); when an AI key would fix it, "Add your AI key" leads to that field.
import type { BridgeErrorShape } from '../../../../shared/bridge.js';
import { Icon } from '../../components/Icon';
import { explainAiError } from '../../stores/agent/errors';
import { AddAiKeyLink } from '../agent/NoEngineNotice';

export function AiErrorNotice({
  error,
  title,
  testId,
}: {
  error: BridgeErrorShape;
  /** Overrides the title for codes with no meaning of their own here. */
  title?: string;
  testId?: string;
}) {
  const explained = explainAiError(error.code, error.status, error.detail);
  const generic =
    explained.title === 'Something went wrong' || explained.title === 'The request was not accepted';
  return (
    <div className="notice notice-error" role="alert" data-testid={testId} data-code={error.code}>
      <Icon name="alert" className="notice-icon" />
      <div className="notice-body">
        <p className="notice-title">{generic && title ? title : explained.title}</p>
        <p>{explained.detail}</p>
        {explained.hint ? <p className="muted">{explained.hint}</p> : null}
      </div>
      {explained.addKey ? (
        <div className="notice-action">
          <AddAiKeyLink testId={testId ? `${testId}-add-key` : undefined} />
        </div>
      ) : null}
    </div>
  );
}
