// A refusal of the AI builder, titled by what it means (see stores/agent/errors.ts).
import type { BridgeErrorShape } from '../../../../shared/bridge.js';
import { Icon } from '../../components/Icon';
import { capitalize } from '../../components/Notice';
import { explainAiError } from '../../stores/agent/errors';

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
  const explained = explainAiError(error.code, error.status);
  const generic =
    explained.title === 'Something went wrong' || explained.title === 'The request was not accepted';
  return (
    <div className="notice notice-error" role="alert" data-testid={testId} data-code={error.code}>
      <Icon name="alert" className="notice-icon" />
      <div className="notice-body">
        <p className="notice-title">{generic && title ? title : explained.title}</p>
        <p>{capitalize(error.detail)}</p>
        {explained.hint ? <p className="muted">{explained.hint}</p> : null}
      </div>
    </div>
  );
}
