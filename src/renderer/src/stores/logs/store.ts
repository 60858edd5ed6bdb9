// Live logs: the projects whose Logs panel is open follow their logs through the Engine (`logs.follow`,
// then `project-logs` events). Each project's lines are numbered by the Engine, so the answer to
// logs.follow and the events merge without duplicates whichever arrives first (lib/log-view.ts).
// Follows are counted per project; the last panel to close unfollows a moment later, so a quick
// remount (React's StrictMode, or going back to the project) keeps the stream. Calls for one project
// go out one after the other, so the Engine sees them in the order they were made.
import { create } from 'zustand';
import type { BridgeErrorShape, ProjectLogsEvent } from '../../../../shared/bridge.js';
import { bridge } from '../../bridge';
import { appendBatch, entriesFromFollow, type LogEntry } from '../../lib/log-view';
import { toErrorShape } from '../../lib/outcome';

export interface ProjectLogs {
  entries: LogEntry[];
  /** The number of the next line; null until logs.follow has answered. */
  next: number | null;
  /** Events that came before logs.follow answered. */
  early: ProjectLogsEvent[];
  error: BridgeErrorShape | null;
}

interface LogsState {
  projects: Readonly<Record<string, ProjectLogs>>;
  /** Follows the project's logs; returns the stop. */
  follow(projectId: string): () => void;
  /** Follows everything followed again (the Engine forgot this page's follows with its socket). */
  refollowAll(): void;
  /** Follows the `project-logs` event; returns the unsubscribe. */
  subscribe(): () => void;
}

const EMPTY: ProjectLogs = { entries: [], next: null, early: [], error: null };

/** How long the stream is kept after the last panel of a project closed. */
const LINGER_MS = 1_000;

const counts = new Map<string, number>();
const lingering = new Map<string, ReturnType<typeof setTimeout>>();
const queues = new Map<string, Promise<unknown>>();

/** Runs the project's Bridge calls in order. */
function enqueue<T>(projectId: string, call: () => Promise<T>): Promise<T> {
  const previous = queues.get(projectId) ?? Promise.resolve();
  const result = previous.then(call, call);
  const settled = result.catch(() => undefined);
  queues.set(projectId, settled);
  void settled.then(() => {
    if (queues.get(projectId) === settled) queues.delete(projectId);
  });
  return result;
}

export const useLogsStore = create<LogsState>()((set, get) => {
  const update = (projectId: string, change: (logs: ProjectLogs) => ProjectLogs) =>
    set((state) => {
      const current = state.projects[projectId];
      if (!current) return {};
      return { projects: { ...state.projects, [projectId]: change(current) } };
    });

  const start = (projectId: string) => {
    set((state) => ({ projects: { ...state.projects, [projectId]: { ...EMPTY } } }));
    void enqueue(projectId, () => bridge.invoke('logs.follow', { id: projectId })).then(
      (answer) =>
        update(projectId, (logs) => {
          let entries = entriesFromFollow(answer.lines, answer.next);
          let next = answer.next;
          for (const event of logs.early)
            ({ entries, next } = appendBatch(entries, next, event.lines, event.from));
          return { entries, next, early: [], error: null };
        }),
      (error: unknown) => update(projectId, (logs) => ({ ...logs, error: toErrorShape(error) })),
    );
  };

  const stop = (projectId: string) => {
    set((state) => {
      const { [projectId]: _gone, ...projects } = state.projects;
      return { projects };
    });
    void enqueue(projectId, () => bridge.invoke('logs.unfollow', { id: projectId })).catch(() => undefined);
  };

  return {
    projects: {},

    follow(projectId) {
      const count = counts.get(projectId) ?? 0;
      counts.set(projectId, count + 1);
      const pending = lingering.get(projectId);
      if (pending !== undefined) {
        clearTimeout(pending);
        lingering.delete(projectId);
      } else if (count === 0) start(projectId);

      let stopped = false;
      return () => {
        if (stopped) return;
        stopped = true;
        const left = (counts.get(projectId) ?? 1) - 1;
        if (left > 0) {
          counts.set(projectId, left);
          return;
        }
        counts.delete(projectId);
        lingering.set(
          projectId,
          setTimeout(() => {
            lingering.delete(projectId);
            stop(projectId);
          }, LINGER_MS),
        );
      };
    },

    refollowAll() {
      for (const projectId of Object.keys(get().projects)) start(projectId);
    },

    subscribe() {
      return bridge.on('project-logs', (event) =>
        update(event.projectId, (logs) => {
          if (logs.next === null) return { ...logs, early: [...logs.early, event] };
          const merged = appendBatch(logs.entries, logs.next, event.lines, event.from);
          return { ...logs, ...merged };
        }),
      );
    },
  };
});
