// The Traffic screen: the tunnels as a compact bar, then every exchange through them (from the Mirror, so also offline),
// live, filtered and searchable, with the selected one in a pane beside the list. The route carries the
// selection (`#/traffic/<requestId>`). Keys: j/k move the selection, / searches, r replays, e opens
// edit-and-replay, Escape closes the editor, then the comparison, then the pane.
import { useCallback, useEffect, useId, useRef, useState } from 'react';
import { Dialog } from '../../components/Dialog';
import { Icon } from '../../components/Icon';
import { downloadText } from '../../lib/download';
import { plural } from '../../lib/format';
import { harFileName } from '../../lib/traffic-format';
import { moveIndex } from '../../lib/virtual-window';
import { useNavigate } from '../../stores/navigation/selectors';
import { showErrorToast } from '../../stores/toasts/store';
import {
  useReplay,
  useTrafficActions,
  useTrafficFilter,
  useTrafficList,
} from '../../stores/traffic/selectors';
import { HAR_MAX_ENTRIES, useTrafficStore } from '../../stores/traffic/store';
import { RequestPane } from './RequestPane';
import { TrafficFilters } from './TrafficFilters';
import { TrafficList } from './TrafficList';
import { NewTunnelButton, TunnelsPanel, useTunnelFormOpen } from './TunnelsPanel';

export function TrafficView({ requestId }: { requestId: string | null }) {
  const navigate = useNavigate();
  const { ensureLoaded, replay, closeReplay, harOfList, clear } = useTrafficActions();
  // Only what changes with the selection: the list's own changes (every frame of live traffic) are
  // followed by the components that show them, so this screen, the tunnels and the pane stay put.
  const hasRows = useTrafficStore((state) => state.rows.length + state.held.length > 0);
  const ready = useTrafficStore((state) => state.status === 'ready');
  const replayState = useReplay(requestId);
  const searchRef = useRef<HTMLInputElement>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [exporting, setExporting] = useState(false);
  const [confirmClear, setConfirmClear] = useState(false);
  const [clearing, setClearing] = useState(false);
  /** The tunnel form: null follows whether a tunnel runs (open while none does). */
  const [tunnelForm, setTunnelForm] = useState<boolean | null>(null);
  const tunnelFormOpen = useTunnelFormOpen(tunnelForm);
  const tunnelFormId = useId();

  useEffect(() => ensureLoaded(), [ensureLoaded]);

  const select = useCallback(
    (id: string) => navigate({ screen: 'traffic', requestId: id }, { replace: true }),
    [navigate],
  );
  const closePane = useCallback(() => {
    navigate({ screen: 'traffic', requestId: null }, { replace: true });
    document.querySelector<HTMLElement>('[data-testid="traffic-list"]')?.focus({ preventScroll: true });
  }, [navigate]);

  // The keys work anywhere on the screen except while typing in a field (or a dialog is open).
  const latest = useRef({ requestId, editing, replayState });
  latest.current = { requestId, editing, replayState };
  useEffect(() => {
    const onKeyDown = (event: KeyboardEvent) => {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
      if (document.querySelector('dialog[open]')) return;
      const target = event.target instanceof HTMLElement ? event.target : null;
      if (target?.closest('input, textarea, select, [contenteditable="true"]')) return;
      const { requestId: selected, editing: edited, replayState: compared } = latest.current;
      const list = useTrafficStore.getState().rows;
      const move = (step: number) => {
        const index = selected ? list.findIndex((row) => row.id === selected) : -1;
        const next = list[moveIndex(index, step, list.length)];
        if (next) select(next.id);
      };
      switch (event.key) {
        case 'j':
          move(1);
          break;
        case 'k':
          move(-1);
          break;
        case '/':
          searchRef.current?.focus();
          searchRef.current?.select();
          break;
        case 'r':
          if (!selected) return;
          setEditing(null);
          void replay({ id: selected }, false);
          break;
        case 'e':
          if (!selected) return;
          setEditing(selected);
          break;
        case 'Escape':
          if (edited && edited === selected) setEditing(null);
          else if (compared && selected) closeReplay(selected);
          else if (selected) closePane();
          else return;
          break;
        default:
          return;
      }
      event.preventDefault();
    };
    document.addEventListener('keydown', onKeyDown);
    return () => document.removeEventListener('keydown', onKeyDown);
  }, [select, replay, closeReplay, closePane]);

  const exportList = async () => {
    setExporting(true);
    const outcome = await harOfList();
    setExporting(false);
    if (outcome.ok) downloadText(harFileName(new Date()), outcome.value.har);
    else showErrorToast(`HAR export failed: ${outcome.error.detail}`);
  };

  const clearHistory = async () => {
    setClearing(true);
    const outcome = await clear();
    setClearing(false);
    if (outcome.ok) {
      setConfirmClear(false);
      closePane();
    } else showErrorToast(`Clearing failed: ${outcome.error.detail}`);
  };

  const editingThis = editing !== null && editing === requestId;
  const wide = requestId !== null && (editingThis || replayState !== null);

  return (
    <div className="page traffic-page" data-testid="traffic-view">
      <header className="page-header">
        <div className="title-block">
          <h1 className="page-title">Traffic</h1>
          <p className="page-subtitle">Requests through your tunnels, live and kept on this computer.</p>
        </div>
        <div className="button-row">
          <NewTunnelButton
            open={tunnelFormOpen}
            formId={tunnelFormId}
            onToggle={() => setTunnelForm(!tunnelFormOpen)}
          />
          <button
            type="button"
            className="btn btn-sm"
            onClick={() => void exportList()}
            disabled={exporting || !hasRows}
            title={`A HAR 1.2 file of the requests listed (the newest ${HAR_MAX_ENTRIES.toLocaleString()} at most)`}
            data-testid="export-har"
          >
            <Icon name={exporting ? 'spinner' : 'download'} className={exporting ? 'spin' : undefined} />
            Export HAR
          </button>
          <button
            type="button"
            className="btn btn-sm"
            onClick={() => setConfirmClear(true)}
            disabled={!ready || !hasRows}
            data-testid="clear-history"
          >
            <Icon name="trash" />
            Clear history
          </button>
        </div>
      </header>

      <TunnelsPanel formOpen={tunnelForm} formId={tunnelFormId} onFormOpen={setTunnelForm} />

      <section className="card traffic-workspace" aria-label="Requests">
        <TrafficFilters searchRef={searchRef} count={<TrafficCount />} />
        <div className={`traffic-split${requestId ? ' has-pane' : ''}${wide ? ' is-wide' : ''}`}>
          <TrafficList
            selectedId={requestId}
            onSelect={select}
            emptyHint="No requests yet. Start a tunnel and send a request to its URL: it shows here as it happens."
          />
          {requestId ? (
            <RequestPane
              key={requestId}
              requestId={requestId}
              editing={editingThis}
              onEdit={(open) => setEditing(open ? requestId : null)}
              onClose={closePane}
            />
          ) : null}
        </div>
        <p className="traffic-keys muted" aria-hidden="true">
          <kbd className="kbd">j</kbd>
          <kbd className="kbd">k</kbd> move · <kbd className="kbd">/</kbd> search ·{' '}
          <kbd className="kbd">r</kbd> replay · <kbd className="kbd">e</kbd> edit and replay ·{' '}
          <kbd className="kbd">Esc</kbd> close
        </p>
      </section>

      {confirmClear ? (
        <Dialog
          title="Clear the traffic history?"
          description={<ClearDescription />}
          onClose={() => setConfirmClear(false)}
          onSubmit={() => void clearHistory()}
          testId="clear-dialog"
          footer={
            <>
              <button type="button" className="btn" onClick={() => setConfirmClear(false)}>
                Cancel
              </button>
              <button
                type="submit"
                className="btn btn-danger"
                disabled={clearing}
                data-testid="clear-confirm"
              >
                {clearing ? 'Clearing…' : 'Clear history'}
              </button>
            </>
          }
        />
      ) : null}
    </div>
  );
}

/** How many requests the list holds (loaded or not), and whether older ones are loading. */
function TrafficCount() {
  const { total, held, status, loadingMore, rows } = useTrafficList();
  if (status === 'loading' && rows.length === 0) return <>Loading…</>;
  const shown = Math.max(total, rows.length) + held;
  return (
    <>
      {plural(shown, 'request')}
      {loadingMore ? ' · loading older…' : ''}
    </>
  );
}

function ClearDescription() {
  const { total, held, rows } = useTrafficList();
  const { query } = useTrafficFilter();
  const shown = Math.max(total, rows.length) + held;
  return Object.keys(query).length > 0 ? (
    <>
      Every captured request is deleted from this computer, not only the {plural(shown, 'one')} the filters
      show.
    </>
  ) : (
    <>
      {plural(shown, 'captured request')} {shown === 1 ? 'is' : 'are'} deleted from this computer.
    </>
  );
}

/** For the document title: the store's row of the selected request, if loaded. */
export function useSelectedTitle(requestId: string | null): string {
  return useTrafficStore((state) => {
    if (!requestId) return 'Traffic';
    const row = state.rows.find((r) => r.id === requestId) ?? state.details[requestId]?.detail;
    return row ? `${row.method} ${row.path}` : 'Traffic';
  });
}
