// A card's small Refresh button: its icon spins (or turns into the spinner) while it loads again, and it
// is disabled meanwhile.
import { Icon } from './Icon';

export function RefreshButton({
  onClick,
  busy,
  testId,
  spinner = false,
}: {
  onClick: () => void;
  busy: boolean;
  testId?: string;
  /** Show the spinner icon instead of the turning arrows while busy. */
  spinner?: boolean;
}) {
  return (
    <button type="button" className="btn btn-sm" onClick={onClick} disabled={busy} data-testid={testId}>
      <Icon name={busy && spinner ? 'spinner' : 'refresh'} className={busy ? 'spin' : undefined} />
      Refresh
    </button>
  );
}
