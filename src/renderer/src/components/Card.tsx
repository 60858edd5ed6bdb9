// A card: a section labelled by its header's title. Its header shows that title, the description under
// it (the children) and, on the right, the card's actions.
import { createContext, useContext, useId, type ReactNode, type Ref } from 'react';

const CardTitleId = createContext<string | undefined>(undefined);

export function Card({
  titleId,
  testId,
  id,
  ref,
  children,
}: {
  /** The title's id (the section's aria-labelledby); a generated one by default. */
  titleId?: string;
  testId?: string;
  id?: string;
  ref?: Ref<HTMLElement>;
  children: ReactNode;
}) {
  const generated = useId();
  const labelId = titleId ?? generated;
  return (
    <section className="card" id={id} aria-labelledby={labelId} data-testid={testId} ref={ref}>
      <CardTitleId.Provider value={labelId}>{children}</CardTitleId.Provider>
    </section>
  );
}

/** The header of a Card (its title gets the card's title id), or of a card-like form given `titleId`. */
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
  const cardTitleId = useContext(CardTitleId);
  return (
    <header className="card-header">
      <div>
        <h2 className="card-title" id={titleId ?? cardTitleId}>
          {title}
        </h2>
        <p className="card-description">{children}</p>
      </div>
      {actions}
    </header>
  );
}
