// A button that copies text and says so for a moment ("Copied", or "Copy failed"). The text may come
// from a function (computed on click) or a promise-returning one (fetched from the Engine first).
import { useEffect, useState } from 'react';
import { copyText } from '../lib/clipboard';
import { Icon } from './Icon';

const SHOWN_MS = 2_000;

export function CopyButton({
  text,
  label = 'Copy',
  ariaLabel,
  className = 'btn btn-sm',
  iconOnly = false,
  testId,
  disabled,
}: {
  text: string | (() => string | Promise<string | null>);
  label?: string;
  /** What is copied, for assistive technology when the label alone does not say ("Copy URL"). */
  ariaLabel?: string;
  className?: string;
  iconOnly?: boolean;
  testId?: string;
  disabled?: boolean;
}) {
  const [state, setState] = useState<'idle' | 'busy' | 'copied' | 'failed'>('idle');

  useEffect(() => {
    if (state !== 'copied' && state !== 'failed') return;
    const timer = setTimeout(() => setState('idle'), SHOWN_MS);
    return () => clearTimeout(timer);
  }, [state]);

  const copy = async () => {
    setState('busy');
    const value = typeof text === 'string' ? text : await text();
    setState(value !== null && (await copyText(value)) ? 'copied' : 'failed');
  };

  const shown = state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed' : label;
  return (
    <button
      type="button"
      className={className}
      onClick={() => void copy()}
      disabled={disabled || state === 'busy'}
      aria-label={
        iconOnly || ariaLabel
          ? state === 'idle' || state === 'busy'
            ? (ariaLabel ?? label)
            : shown
          : undefined
      }
      title={iconOnly ? (ariaLabel ?? label) : undefined}
      data-testid={testId}
      data-state={state}
    >
      <Icon name={state === 'copied' ? 'check' : 'copy'} />
      {iconOnly ? null : shown}
    </button>
  );
}
