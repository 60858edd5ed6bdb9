// Selectors of the traffic store.
import { useMemo } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { tunnelOptions, type TunnelOption } from '../../lib/traffic-tunnels';
import { useTunnelsStore } from '../tunnels/store';
import { useTrafficStore, type DetailState, type ReplayState } from './store';

type State = ReturnType<typeof useTrafficStore.getState>;

const EMPTY_DETAIL: DetailState = { detail: null, loading: false, error: null };

export const selectTrafficList = (state: State) => ({
  rows: state.rows,
  total: state.total,
  held: state.held.length,
  following: state.following,
  exhausted: state.exhausted,
  status: state.status,
  error: state.error,
  loadingMore: state.loadingMore,
  moreError: state.moreError,
});

export const selectTrafficFilter = (state: State) => ({ filter: state.filter, query: state.query });

export const selectTrafficActions = (state: State) => ({
  ensureLoaded: state.ensureLoaded,
  setFilter: state.setFilter,
  resetFilter: state.resetFilter,
  reload: state.reload,
  loadMore: state.loadMore,
  setFollowing: state.setFollowing,
  loadDetail: state.loadDetail,
  replay: state.replay,
  closeReplay: state.closeReplay,
  clear: state.clear,
  har: state.har,
  harOfList: state.harOfList,
  curl: state.curl,
});

export const selectDetail =
  (id: string | null) =>
  (state: State): DetailState =>
    (id ? state.details[id] : undefined) ?? EMPTY_DETAIL;

export const selectReplay =
  (id: string | null) =>
  (state: State): ReplayState | null =>
    (id ? state.replays[id] : undefined) ?? null;

/** The row of a request, if it is loaded (its summary shows while the detail loads). */
export const selectRow = (id: string | null) => (state: State) =>
  id ? (state.rows.find((r) => r.id === id) ?? state.held.find((r) => r.id === id) ?? null) : null;

export const useTrafficList = () => useTrafficStore(useShallow(selectTrafficList));
export const useTrafficFilter = () => useTrafficStore(useShallow(selectTrafficFilter));
export const useTrafficActions = () => useTrafficStore(useShallow(selectTrafficActions));
export const useRequestDetail = (id: string | null) => useTrafficStore(selectDetail(id));
export const useReplay = (id: string | null) => useTrafficStore(selectReplay(id));
export const useTrafficRow = (id: string | null) => useTrafficStore(selectRow(id));
export const useHistoryTunnels = () => useTrafficStore((state) => state.tunnels);

/** The tunnels known by name (running ones first, then the history's), for labels and the filter. */
export function useTunnelOptions(): TunnelOption[] {
  const running = useTunnelsStore((state) => state.tunnels);
  const history = useHistoryTunnels();
  return useMemo(() => tunnelOptions(running, history), [running, history]);
}
