// Selectors of the agent store.
import { useShallow } from 'zustand/react/shallow';
import { useAgentStore } from './store';

type State = ReturnType<typeof useAgentStore.getState>;

export const selectConversation = (state: State) => ({
  turns: state.turns,
  running: state.runId !== null,
  engine: state.engine,
});

export const selectAgentActions = (state: State) => ({
  send: state.send,
  stop: state.stop,
  reset: state.reset,
  setEngine: state.setEngine,
});

export const selectAiKeyActions = (state: State) => ({
  saveAiKey: state.saveAiKey,
  deleteAiKey: state.deleteAiKey,
});

export const useConversation = () => useAgentStore(useShallow(selectConversation));
export const useAgentActions = () => useAgentStore(useShallow(selectAgentActions));
export const useAiKeyActions = () => useAgentStore(useShallow(selectAiKeyActions));
