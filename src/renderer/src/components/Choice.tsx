// One option of a choice list drawn as a card: a radio or a checkbox (invisible, over the whole card)
// with a title and a description; the card is highlighted while checked.
import type { InputHTMLAttributes, ReactNode } from 'react';

type ChoiceProps = Omit<InputHTMLAttributes<HTMLInputElement>, 'title' | 'className'> & {
  title: ReactNode;
  description: ReactNode;
  /** More classes for the card. */
  className?: string;
};

export function Choice({ title, description, className, ...input }: ChoiceProps) {
  return (
    <label className={`choice${className ? ` ${className}` : ''}${input.checked ? ' is-selected' : ''}`}>
      <input {...input} />
      <span className="choice-text">
        <span className="choice-title">{title}</span>
        <span className="choice-description">{description}</span>
      </span>
    </label>
  );
}
