// The Agent screen's conversation: questions go out as `ai.agent.start` runs, and each run's `ai-agent`
// events are folded into its assistant turn (conversation.ts). The run's id is made here, so its
// events are recognised even when they arrive before the call answers. One run at a time; Stop closes
// it. Also the account's own AI key (save, delete), which decides what the engine picker offers.
import { create } from 'zustand';
import type { AiProvider, MaskedAiKey } from '../../../../shared/api/account.js';
import type { AiEngine } from '../../../../shared/api/ai.js';
import type { BridgeResult } from '../../../../shared/bridge.js';
import { bridge } from '../../bridge';
import { attempt, toErrorShape } from '../../lib/outcome';
import { useSettingsStore } from '../settings/store';
import { refreshEngineOffer } from './engines';
import {
  applyAgentEvent,
  historyOf,
  isRunning,
  refusedTurn,
  startTurn,
  type AssistantTurn,
  type Turn,
} from './conversation';

/** `auto`: the platform's choice (your own key when one is saved, else the included engine). */
export type EngineChoice = 'auto' | AiEngine;

interface AgentState {
  turns: Turn[];
  /** The run streaming now, if any. */
  runId: string | null;
  engine: EngineChoice;
  setEngine(engine: EngineChoice): void;
  /** Asks the agent; false when a run is still going or the text is empty. */
  send(text: string): Promise<boolean>;
  stop(): Promise<void>;
  /** Starts a new conversation (stopping the current run). */
  reset(): void;
  saveAiKey(provider: AiProvider, key: string): Promise<BridgeResult<MaskedAiKey>>;
  deleteAiKey(): Promise<BridgeResult<{ deleted: true }>>;
  /** Follows the `ai-agent` event; returns the unsubscribe. */
  subscribe(): () => void;
}

function newRunId(): string {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return `run_${Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

let userCounter = 0;

export const useAgentStore = create<AgentState>()((set, get) => {
  const updateTurn = (runId: string, change: (turn: AssistantTurn) => AssistantTurn) =>
    set((state) => {
      const index = state.turns.findIndex((turn) => turn.role === 'assistant' && turn.id === runId);
      if (index === -1) return {};
      const before = state.turns[index] as AssistantTurn;
      const after = change(before);
      if (after === before) return {};
      const turns = state.turns.slice();
      turns[index] = after;
      return { turns, runId: state.runId === runId && !isRunning(after) ? null : state.runId };
    });

  return {
    turns: [],
    runId: null,
    engine: 'auto',

    setEngine(engine) {
      set({ engine });
    },

    async send(text) {
      const content = text.trim();
      if (content === '' || get().runId !== null) return false;
      const runId = newRunId();
      const user: Turn = { role: 'user', id: `msg_${++userCounter}`, content };
      const turns = [...get().turns, user];
      const messages = historyOf(turns);
      set({ turns: [...turns, startTurn(runId)], runId });
      const engine = get().engine;
      try {
        await bridge.invoke('ai.agent.start', {
          messages,
          runId,
          ...(engine === 'auto' ? {} : { engine }),
        });
      } catch (error) {
        const shape = toErrorShape(error);
        // Stopped before the platform answered: that is not a refusal.
        updateTurn(runId, (turn) => (turn.state === 'stopped' ? turn : refusedTurn(turn, shape)));
        set((state) => (state.runId === runId ? { runId: null } : {}));
        // A refusal may mean the balance changed (402) or the key is gone: the picker reads the account.
        if (shape.code === 'insufficient_balance') void useSettingsStore.getState().loadAccount();
        // No engine (503): what the platform offers may have changed since the screen asked.
        if (shape.code === 'unavailable') refreshEngineOffer();
      }
      return true;
    },

    async stop() {
      const runId = get().runId;
      if (!runId) return;
      await bridge.invoke('ai.agent.stop', { runId }).catch(() => undefined);
      // The run may not have reached the Engine yet, or its `closed` may be lost with the socket.
      updateTurn(runId, (turn) => (isRunning(turn) ? { ...turn, state: 'stopped' } : turn));
    },

    reset() {
      void get().stop();
      set({ turns: [], runId: null });
    },

    async saveAiKey(provider, key) {
      const outcome = await attempt(() => bridge.invoke('account.setAiKey', { provider, key }));
      if (outcome.ok) {
        const settings = useSettingsStore.getState();
        if (settings.account)
          useSettingsStore.setState({ account: { ...settings.account, ai_key: outcome.value } });
        void settings.loadAccount();
      }
      return outcome;
    },

    async deleteAiKey() {
      const outcome = await attempt(() => bridge.invoke('account.deleteAiKey', undefined));
      if (outcome.ok) {
        const settings = useSettingsStore.getState();
        if (settings.account) useSettingsStore.setState({ account: { ...settings.account, ai_key: null } });
        if (get().engine === 'own_key') set({ engine: 'auto' });
        void settings.loadAccount();
      }
      return outcome;
    },

    subscribe() {
      return bridge.on('ai-agent', (event) =>
        updateTurn(event.runId, (turn) => applyAgentEvent(turn, event)),
      );
    },
  };
});
