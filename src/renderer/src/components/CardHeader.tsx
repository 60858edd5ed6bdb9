// A card's header: its title (the id the card's aria-labelledby points at), the description under it
// (the children) and, on the right, the card's actions.
import type { ReactNode } from 'react';

export function CardHeader({
  titleId,
  title,
  actions,
  children,
}: {
  titleId?: string;
  title: ReactNode;
  actions?: ReactNode;
  children: ReactNode;
}) {
  return (
    <header className="card-header">
      <div>
        <h2 className="card-title" id={titleId}>
          {title}
        </h2>
        <p className="card-description">{children}</p>
      </div>
      {actions}
    </header>
  );
}
