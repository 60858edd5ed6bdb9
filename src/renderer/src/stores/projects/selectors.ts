// Selectors of the projects store.
import { useShallow } from 'zustand/react/shallow';
import type { ActionState, DetailState, ReleasesState, UploadState } from './store';
import { useProjectsStore } from './store';

type State = ReturnType<typeof useProjectsStore.getState>;

const EMPTY_DETAIL: DetailState = { view: null, loading: false, error: null };
const IDLE_ACTION: ActionState = { pending: null, error: null, failed: null };
const NO_RELEASES: ReleasesState = { releases: null, loading: false, error: null };

export const selectProjectList = (state: State) => ({
  list: state.list,
  loading: state.listLoading,
  error: state.listError,
});

export const selectDetail =
  (id: string) =>
  (state: State): DetailState =>
    state.details[id] ?? EMPTY_DETAIL;

/** The freshest copy of a project: the list's (kept live by events), else the detail's. */
export const selectProject = (id: string) => (state: State) =>
  state.list?.projects.find((p) => p.id === id) ?? state.details[id]?.view?.project ?? null;

export const selectUpload =
  (id: string) =>
  (state: State): UploadState | null =>
    state.uploads[id] ?? null;

export const selectAction =
  (id: string) =>
  (state: State): ActionState =>
    state.actions[id] ?? IDLE_ACTION;

export const selectReleases =
  (id: string) =>
  (state: State): ReleasesState =>
    state.releases[id] ?? NO_RELEASES;

/** The release the project is being rolled back to, or null. */
export const selectRollback = (id: string) => (state: State) => state.rollbacks[id] ?? null;

export const selectProjectActions = (state: State) => ({
  loadList: state.loadList,
  loadDetail: state.loadDetail,
  create: state.create,
  setEnvVars: state.setEnvVars,
  setBuildConfig: state.setBuildConfig,
  upload: state.upload,
  clearUpload: state.clearUpload,
  remove: state.remove,
  deploy: state.deploy,
  stop: state.stop,
  clearActionError: state.clearActionError,
  loadReleases: state.loadReleases,
  rollback: state.rollback,
});

export const useProjectList = () => useProjectsStore(useShallow(selectProjectList));
export const useProjectDetail = (id: string) => useProjectsStore(selectDetail(id));
export const useProject = (id: string) => useProjectsStore(selectProject(id));
export const useUpload = (id: string) => useProjectsStore(selectUpload(id));
export const useProjectAction = (id: string) => useProjectsStore(selectAction(id));
export const useProjectActions = () => useProjectsStore(useShallow(selectProjectActions));
export const useReleases = (id: string) => useProjectsStore(selectReleases(id));
export const useRollback = (id: string) => useProjectsStore(selectRollback(id));
