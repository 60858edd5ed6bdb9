// A labelled form control with its hint and its error, wired for assistive technology
// (aria-invalid, aria-describedby). Every input of the app goes through one of these.
import {
  useId,
  type InputHTMLAttributes,
  type ReactNode,
  type SelectHTMLAttributes,
  type TextareaHTMLAttributes,
} from 'react';
import { asSentence } from '../lib/field-errors';

interface FieldIds {
  id: string;
  describedBy: string | undefined;
  invalid: boolean;
}

interface FieldFrameProps {
  label: ReactNode;
  hint?: ReactNode;
  error?: string | undefined;
  className?: string;
  children: (ids: FieldIds) => ReactNode;
}

export function FieldFrame({ label, hint, error, className, children }: FieldFrameProps) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  const errorId = error ? `${id}-error` : undefined;
  const describedBy = [errorId, hintId].filter(Boolean).join(' ') || undefined;
  return (
    <div className={`field${error ? ' has-error' : ''}${className ? ` ${className}` : ''}`}>
      <label className="field-label" htmlFor={id}>
        {label}
      </label>
      {children({ id, describedBy, invalid: Boolean(error) })}
      {error ? (
        <p className="field-error" id={errorId}>
          {asSentence(error)}
        </p>
      ) : null}
      {hint ? (
        <p className="field-hint" id={hintId}>
          {hint}
        </p>
      ) : null}
    </div>
  );
}

type TextFieldProps = Omit<InputHTMLAttributes<HTMLInputElement>, 'id'> & {
  label: ReactNode;
  hint?: ReactNode;
  error?: string | undefined;
  fieldClassName?: string;
};

export function TextField({ label, hint, error, fieldClassName, className, ...input }: TextFieldProps) {
  return (
    <FieldFrame label={label} hint={hint} error={error} className={fieldClassName}>
      {(ids) => <input {...controlProps(ids, className)} spellCheck={false} autoComplete="off" {...input} />}
    </FieldFrame>
  );
}

type TextAreaFieldProps = Omit<TextareaHTMLAttributes<HTMLTextAreaElement>, 'id'> & {
  label: ReactNode;
  hint?: ReactNode;
  error?: string | undefined;
};

export function TextAreaField({ label, hint, error, className, ...textarea }: TextAreaFieldProps) {
  return (
    <FieldFrame label={label} hint={hint} error={error}>
      {(ids) => <textarea {...controlProps(ids, className)} spellCheck={false} {...textarea} />}
    </FieldFrame>
  );
}

type SelectFieldProps = Omit<SelectHTMLAttributes<HTMLSelectElement>, 'id'> & {
  label: ReactNode;
  hint?: ReactNode;
  error?: string | undefined;
};

/** A labelled select; its options are the children. */
export function SelectField({ label, hint, error, className, children, ...select }: SelectFieldProps) {
  return (
    <FieldFrame label={label} hint={hint} error={error}>
      {(ids) => (
        <select {...controlProps(ids, className)} {...select}>
          {children}
        </select>
      )}
    </FieldFrame>
  );
}

/** What a FieldFrame's control carries: its id, the `input` class and its invalid and described-by state. */
function controlProps({ id, describedBy, invalid }: FieldIds, className: string | undefined) {
  return {
    id,
    className: `input${className ? ` ${className}` : ''}`,
    'aria-invalid': invalid || undefined,
    'aria-describedby': describedBy,
  };
}
