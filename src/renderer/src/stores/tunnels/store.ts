// Tunnels this Engine runs: the list (replaced by the `tunnels` event whenever one starts, connects,
// reconnects or stops), starting one on a local port and stopping one. Start answers with a
// BridgeResult so the form can place the platform's 422 errors next to its inputs.
import { create } from 'zustand';
import type {
  BridgeErrorShape,
  BridgeResult,
  LocalTunnel,
  StartTunnelInput,
} from '../../../../shared/bridge.js';
import { bridge } from '../../bridge';
import { attempt, toErrorShape } from '../../lib/outcome';

interface TunnelsState {
  /** Null until the Engine answered. */
  tunnels: LocalTunnel[] | null;
  loadError: BridgeErrorShape | null;
  starting: boolean;
  /** Tunnels whose stop is in flight. */
  stopping: Readonly<Record<string, true>>;
  /** Why the last stop of a tunnel failed. */
  stopErrors: Readonly<Record<string, BridgeErrorShape>>;
  load(): Promise<void>;
  start(input: StartTunnelInput): Promise<BridgeResult<LocalTunnel>>;
  stop(id: string): Promise<BridgeResult<LocalTunnel>>;
  /** Follows the `tunnels` event; returns the unsubscribe. */
  subscribe(): () => void;
}

/** The running ones first (newest first), the stopped ones after. */
export function sortTunnels(tunnels: readonly LocalTunnel[]): LocalTunnel[] {
  return [...tunnels].sort(
    (a, b) =>
      Number(a.state === 'stopped') - Number(b.state === 'stopped') || b.startedAt.localeCompare(a.startedAt),
  );
}

export const useTunnelsStore = create<TunnelsState>()((set, get) => {
  /** A tunnel the Engine just answered with replaces its copy in the list. */
  const remember = (tunnel: LocalTunnel) =>
    set((state) => {
      const list = state.tunnels ?? [];
      const known = list.some((t) => t.id === tunnel.id);
      return {
        tunnels: sortTunnels(known ? list.map((t) => (t.id === tunnel.id ? tunnel : t)) : [tunnel, ...list]),
      };
    });

  return {
    tunnels: null,
    loadError: null,
    starting: false,
    stopping: {},
    stopErrors: {},

    async load() {
      try {
        set({ tunnels: sortTunnels(await bridge.invoke('tunnels.list', undefined)), loadError: null });
      } catch (error) {
        set({ loadError: toErrorShape(error) });
      }
    },

    async start(input) {
      set({ starting: true });
      const outcome = await attempt(() => bridge.invoke('tunnels.start', input));
      set({ starting: false });
      if (outcome.ok) remember(outcome.value);
      return outcome;
    },

    async stop(id) {
      set((state) => {
        const { [id]: _gone, ...stopErrors } = state.stopErrors;
        return { stopping: { ...state.stopping, [id]: true }, stopErrors };
      });
      const outcome = await attempt(() => bridge.invoke('tunnels.stop', { id }));
      set((state) => {
        const { [id]: _done, ...stopping } = state.stopping;
        return outcome.ok
          ? { stopping }
          : { stopping, stopErrors: { ...state.stopErrors, [id]: outcome.error } };
      });
      // The Engine forgets a tunnel it stopped (its `tunnels` event says so too, maybe first).
      if (outcome.ok) {
        set((state) => ({
          tunnels: state.tunnels?.filter((t) => t.id !== id && t.id !== outcome.value.id) ?? null,
        }));
      }
      return outcome;
    },

    subscribe() {
      const off = bridge.on('tunnels', (tunnels) => set({ tunnels: sortTunnels(tunnels), loadError: null }));
      void get().load();
      return off;
    },
  };
});
