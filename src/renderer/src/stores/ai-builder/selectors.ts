// Selectors of the AI builder store.
import { useShallow } from 'zustand/react/shallow';
import { useAiBuilderStore, type EditState } from './store';

type State = ReturnType<typeof useAiBuilderStore.getState>;

const NO_EDIT: EditState = { pending: false, instruction: null, changedFiles: null, error: null };

export const selectAiBuilder = (state: State) => ({
  phase: state.phase,
  request: state.request,
  projectId: state.projectId,
  needs: state.needs,
  error: state.error,
});

export const selectAiBuilderActions = (state: State) => ({
  build: state.build,
  deploy: state.deploy,
  reset: state.reset,
  edit: state.edit,
});

export const selectEdit =
  (projectId: string) =>
  (state: State): EditState =>
    state.edits[projectId] ?? NO_EDIT;

export const useAiBuilder = () => useAiBuilderStore(useShallow(selectAiBuilder));
export const useAiBuilderActions = () => useAiBuilderStore(useShallow(selectAiBuilderActions));
export const useEdit = (projectId: string) => useAiBuilderStore(selectEdit(projectId));
