// Messages inside a page: an error with its details, the field errors a form could not place next to
// an input, and a success note.
import type { ReactNode } from 'react';
import type { BridgeErrorShape } from '../../../shared/bridge.js';
import type { FieldError } from '../../../shared/errors.js';
import { describeFieldError } from '../lib/field-errors';
import { routeHref } from '../stores/navigation/store';
import { Icon } from './Icon';

export function ErrorNotice({
  error,
  title,
  action,
  testId,
}: {
  error: BridgeErrorShape;
  title?: string;
  action?: ReactNode;
  testId?: string;
}) {
  return (
    <div className="notice notice-error" role="alert" data-testid={testId}>
      <Icon name="alert" className="notice-icon" />
      <div className="notice-body">
        {title ? <p className="notice-title">{title}</p> : null}
        <p>{capitalize(error.detail)}</p>
      </div>
      {action ? <div className="notice-action">{action}</div> : null}
    </div>
  );
}

/** The errors a form could not show next to an input (or the form's own message), never dropped. */
export function FormErrors({
  message,
  errors,
  testId,
}: {
  message: string | null;
  errors: FieldError[];
  testId?: string;
}) {
  if (!message && errors.length === 0) return null;
  return (
    <div className="notice notice-error" role="alert" data-testid={testId}>
      <Icon name="alert" className="notice-icon" />
      <div className="notice-body">
        {message ? <p className="notice-title">{capitalize(message)}</p> : null}
        {errors.length > 0 ? (
          <ul className="notice-list">
            {errors.map((error) => (
              <li key={`${error.path}:${error.message}`}>{describeFieldError(error)}</li>
            ))}
          </ul>
        ) : null}
      </div>
    </div>
  );
}

export function SuccessNote({ children, testId }: { children: ReactNode; testId?: string }) {
  return (
    <p className="success-note" role="status" data-testid={testId}>
      <Icon name="check" />
      {children}
    </p>
  );
}

export function capitalize(text: string): string {
  return text ? text[0]!.toUpperCase() + text.slice(1) : text;
}

/**
 * A list that could not be loaded: why, a Retry, and Settings when the connection itself is the
 * problem (no platform configured, or the key refused).
 */
export function LoadFailed({
  error,
  title,
  testId,
  onRetry,
  retrying,
}: {
  error: BridgeErrorShape;
  title: string;
  testId: string;
  onRetry: () => void;
  retrying: boolean;
}) {
  return (
    <ErrorNotice
      error={error}
      title={title}
      testId={testId}
      action={
        <div className="button-row">
          {error.code === 'not_configured' || error.code === 'unauthorized' ? (
            <a className="btn btn-sm" href={routeHref({ screen: 'settings' })}>
              Open Settings
            </a>
          ) : null}
          <button type="button" className="btn btn-sm" onClick={onRetry} disabled={retrying}>
            Retry
          </button>
        </div>
      }
    />
  );
}
