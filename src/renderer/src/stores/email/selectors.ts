// Selectors of the email store.
import { useShallow } from 'zustand/react/shallow';
import { useEmailStore } from './store';

type State = ReturnType<typeof useEmailStore.getState>;

export const selectSingleCheck = (state: State) => state.single;
export const selectBatch = (state: State) => state.batch;
export const selectUsage = (state: State) => state.usage;

export const selectEmailActions = (state: State) => ({
  verify: state.verify,
  verifyBatch: state.verifyBatch,
  cancelBatch: state.cancelBatch,
  clearBatch: state.clearBatch,
  loadUsage: state.loadUsage,
});

export const useSingleCheck = () => useEmailStore(selectSingleCheck);
export const useBatch = () => useEmailStore(selectBatch);
export const useUsage = () => useEmailStore(selectUsage);
export const useEmailActions = () => useEmailStore(useShallow(selectEmailActions));
