// The platform's reachability (PlatformStatus, pushed by the `platform-status` event) and the state of
// the transport to the Engine itself (the HTTP one may lack its token or lose its socket).
import { create } from 'zustand';
import type { BridgeErrorShape, PlatformStatus } from '../../../../shared/bridge.js';
import { bridge, type TransportState } from '../../bridge';
import { toErrorShape } from '../../lib/outcome';

interface PlatformState {
  status: PlatformStatus | null;
  statusError: BridgeErrorShape | null;
  transport: TransportState;
  load(): Promise<void>;
  /** Follows the `platform-status` event and the transport state; returns the unsubscribe. */
  subscribe(onReconnect: () => void): () => void;
}

export const usePlatformStore = create<PlatformState>()((set) => ({
  status: null,
  statusError: null,
  transport: 'connecting',

  async load() {
    try {
      set({ status: await bridge.invoke('platform.status', undefined), statusError: null });
    } catch (error) {
      set({ statusError: toErrorShape(error) });
    }
  },

  subscribe(onReconnect) {
    const offStatus = bridge.on('platform-status', (status) => set({ status, statusError: null }));
    // Events may have been missed while the socket was down: catch up once it is back.
    const offReconnect = usePlatformStore.subscribe((state, before) => {
      if (state.transport === 'ready' && before.transport === 'reconnecting') onReconnect();
    });
    return () => {
      offStatus();
      offReconnect();
    };
  },
}));

// The transport's state is known from the start (no token means nothing else may run).
bridge.onTransportState((transport) => usePlatformStore.setState({ transport }));
