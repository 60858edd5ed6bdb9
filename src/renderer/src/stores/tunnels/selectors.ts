// Selectors of the tunnels store.
import { useShallow } from 'zustand/react/shallow';
import { useTunnelsStore } from './store';

type State = ReturnType<typeof useTunnelsStore.getState>;

export const selectTunnelList = (state: State) => ({
  tunnels: state.tunnels,
  loadError: state.loadError,
  starting: state.starting,
});

export const selectTunnelActions = (state: State) => ({
  load: state.load,
  start: state.start,
  stop: state.stop,
});

/** How many tunnels are serving or trying to (for the sidebar). */
export const selectLiveTunnelCount = (state: State): number =>
  state.tunnels?.filter((t) => t.state !== 'stopped').length ?? 0;

export const useTunnelList = () => useTunnelsStore(useShallow(selectTunnelList));
export const useTunnelActions = () => useTunnelsStore(useShallow(selectTunnelActions));
export const useTunnelStopping = (id: string) => useTunnelsStore((state) => state.stopping[id] === true);
export const useTunnelStopError = (id: string) => useTunnelsStore((state) => state.stopErrors[id] ?? null);
export const useLiveTunnelCount = () => useTunnelsStore(selectLiveTunnelCount);
