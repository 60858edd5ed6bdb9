// Selectors of the build store.
import { useShallow } from 'zustand/react/shallow';
import { useBuildStore, type EditState } from './store';

type State = ReturnType<typeof useBuildStore.getState>;

const NO_EDIT: EditState = { pending: false, instruction: null, changedFiles: null, error: null };

export const selectBuild = (state: State) => ({
  phase: state.phase,
  request: state.request,
  projectId: state.projectId,
  needs: state.needs,
  error: state.error,
});

export const selectBuildActions = (state: State) => ({
  build: state.build,
  deploy: state.deploy,
  reset: state.reset,
  edit: state.edit,
});

export const selectEdit =
  (projectId: string) =>
  (state: State): EditState =>
    state.edits[projectId] ?? NO_EDIT;

export const useBuild = () => useBuildStore(useShallow(selectBuild));
export const useBuildActions = () => useBuildStore(useShallow(selectBuildActions));
export const useEdit = (projectId: string) => useBuildStore(selectEdit(projectId));
