// Maps the `errors` of a 422 (paths such as `services[2].name`) onto a form's inputs. A form says which
// paths it shows next to inputs; everything else is listed at the top of the form, so no message is lost.
import type { BridgeErrorShape } from '../../../shared/bridge.js';
import type { FieldError } from '../../../shared/errors.js';

export type FieldErrors = Readonly<Record<string, string>>;

export const NO_FIELD_ERRORS: FieldErrors = {};

/** Groups messages by path (several messages for one path are joined), dropping `prefix.` from paths. */
export function fieldErrorsOf(error: BridgeErrorShape | null | undefined, prefix = ''): FieldErrors {
  const out: Record<string, string> = {};
  for (const { path, message } of error?.errors ?? []) {
    const key = prefix && path.startsWith(`${prefix}.`) ? path.slice(prefix.length + 1) : path;
    out[key] = out[key] ? `${out[key]}; ${message}` : message;
  }
  return out;
}

/** The errors whose path the form does not show next to an input. */
export function unplacedErrors(errors: FieldErrors, isShown: (path: string) => boolean): FieldError[] {
  return Object.entries(errors)
    .filter(([path]) => !isShown(path))
    .map(([path, message]) => ({ path, message }));
}

/** "services[2].name must be…" for a list; the path reads as the field it names. */
export function describeFieldError({ path, message }: FieldError): string {
  return path ? `${path} ${message}` : message;
}

/**
 * A message as a sentence: its first letter capitalized, unless it starts with a quote, since what
 * follows a quote is a name the user typed (`"api" is reserved`) and must stay exactly as typed.
 */
export function asSentence(message: string): string {
  return /^[a-z]/.test(message) ? message[0]!.toUpperCase() + message.slice(1) : message;
}
