// Selectors of the platform store.
import { useShallow } from 'zustand/react/shallow';
import type { TransportState } from '../../bridge';
import { usePlatformStore } from './store';

type State = ReturnType<typeof usePlatformStore.getState>;

export const selectStatus = (state: State) => state.status;
export const selectTransport = (state: State): TransportState => state.transport;

/** Whether the page cannot talk to the Engine at all (no token, or the token was refused). */
export const selectLockedOut = (state: State): boolean =>
  state.transport === 'no-token' || state.transport === 'refused';

export const selectConnection = (state: State) => ({
  online: state.status?.online ?? null,
  mode: state.status?.mode ?? null,
  platformUrl: state.status?.platformUrl ?? null,
  problem: state.status?.problem ?? null,
  lastContactAt: state.status?.lastContactAt ?? null,
});

export const usePlatformStatus = () => usePlatformStore(selectStatus);
export const useTransport = () => usePlatformStore(selectTransport);
export const useConnection = () => usePlatformStore(useShallow(selectConnection));
