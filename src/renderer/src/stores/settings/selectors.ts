// Selectors of the settings store.
import { useShallow } from 'zustand/react/shallow';
import { useSettingsStore } from './store';

type State = ReturnType<typeof useSettingsStore.getState>;

export const selectSettings = (state: State) => ({ view: state.view, loadError: state.loadError });

export const selectAccount = (state: State) => ({
  account: state.account,
  error: state.accountError,
  loading: state.accountLoading,
});

export const selectRuntime = (state: State) => ({
  info: state.runtime,
  error: state.runtimeError,
  loading: state.runtimeLoading,
});

export const selectConnectionTest = (state: State) => state.test;

export const selectSettingsActions = (state: State) => ({
  load: state.load,
  save: state.save,
  testConnection: state.testConnection,
  loadAccount: state.loadAccount,
  loadRuntime: state.loadRuntime,
});

export const useSettings = () => useSettingsStore(useShallow(selectSettings));
export const useAccount = () => useSettingsStore(useShallow(selectAccount));
export const useRuntime = () => useSettingsStore(useShallow(selectRuntime));
export const useConnectionTest = () => useSettingsStore(selectConnectionTest);
export const useSettingsActions = () => useSettingsStore(useShallow(selectSettingsActions));
