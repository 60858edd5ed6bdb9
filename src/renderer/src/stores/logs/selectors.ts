// Selectors of the logs store.
import { useLogsStore, type ProjectLogs } from './store';

type State = ReturnType<typeof useLogsStore.getState>;

const NOT_FOLLOWED: ProjectLogs = { entries: [], next: null, early: [], error: null };

export const selectProjectLogs =
  (projectId: string) =>
  (state: State): ProjectLogs =>
    state.projects[projectId] ?? NOT_FOLLOWED;

export const useProjectLogs = (projectId: string) => useLogsStore(selectProjectLogs(projectId));
export const useFollowLogs = () => useLogsStore((state) => state.follow);
