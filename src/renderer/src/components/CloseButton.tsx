// The × button that closes or dismisses what it sits in (a toast, a notice, a pane, a card); its label
// says what it closes.
import type { ButtonHTMLAttributes } from 'react';
import { Icon } from './Icon';

type CloseButtonProps = Omit<ButtonHTMLAttributes<HTMLButtonElement>, 'type' | 'aria-label' | 'children'> & {
  label: string;
  /** The smaller cross of toasts and notices. */
  small?: boolean;
};

export function CloseButton({ label, small = false, className, ...button }: CloseButtonProps) {
  return (
    <button
      type="button"
      className={`icon-button${className ? ` ${className}` : ''}`}
      aria-label={label}
      {...button}
    >
      <Icon name="close" size={small ? 14 : undefined} />
    </button>
  );
}
