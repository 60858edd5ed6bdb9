// Projects: the list (live or from the Engine's cache, replaced by the `projects` event), the detail of
// each opened project, the writes (create, env vars, build config, delete), archive uploads with their
// progress, deploy / stop with the error of the last attempt, and each opened project's releases with
// the rollback to one of them. Writes answer with a BridgeResult so the form or dialog that made them
// can show what went wrong.
import { create } from 'zustand';
import type {
  BuildConfigInput,
  CreateProjectRequest,
  EnvVars,
  Project,
  Release,
  Upload,
} from '../../../../shared/api/projects.js';
import type { BridgeErrorShape, BridgeResult, ProjectList, ProjectView } from '../../../../shared/bridge.js';
import { bridge } from '../../bridge';
import { ARCHIVE_NAME_PATTERN, MAX_UPLOAD_BYTES } from '../../lib/limits';
import { formatBytes } from '../../lib/format';
import { attempt, failure, loadInto } from '../../lib/outcome';
import { patchEntry } from '../entries';

export interface DetailState {
  view: ProjectView | null;
  loading: boolean;
  error: BridgeErrorShape | null;
}

/** A deploy, stop or rollback request in flight, and why the last deploy or stop was refused. */
export interface ActionState {
  pending: 'deploy' | 'stop' | 'rollback' | null;
  error: BridgeErrorShape | null;
  /** Which request `error` answered. */
  failed: 'deploy' | 'stop' | null;
}

/** A project's releases, loaded while its page is open. */
export interface ReleasesState {
  releases: Release[] | null;
  loading: boolean;
  error: BridgeErrorShape | null;
}

export type UploadPhase = 'reading' | 'sending' | 'processing' | 'done' | 'failed';

export interface UploadState {
  fileName: string;
  sizeBytes: number;
  phase: UploadPhase;
  /** Bytes sent so far, when the transport reports progress. */
  sentBytes: number | null;
  result: Upload | null;
  error: BridgeErrorShape | null;
}

interface ProjectsState {
  list: ProjectList | null;
  listLoading: boolean;
  listError: BridgeErrorShape | null;
  details: Readonly<Record<string, DetailState>>;
  uploads: Readonly<Record<string, UploadState>>;
  actions: Readonly<Record<string, ActionState>>;
  releases: Readonly<Record<string, ReleasesState>>;
  /** The release each project is being rolled back to, until its deploy-finished event. */
  rollbacks: Readonly<Record<string, string>>;
  loadList(): Promise<void>;
  loadDetail(id: string): Promise<void>;
  /** Creates the project; with a file (upload projects), then uploads it in the background. */
  create(request: CreateProjectRequest, file?: File | null): Promise<BridgeResult<Project>>;
  setEnvVars(id: string, envVars: EnvVars): Promise<BridgeResult<Project>>;
  setBuildConfig(id: string, buildConfig: BuildConfigInput): Promise<BridgeResult<Project>>;
  upload(id: string, file: File): Promise<BridgeResult<Upload>>;
  clearUpload(id: string): void;
  remove(id: string): Promise<BridgeResult<{ id: string }>>;
  deploy(id: string): Promise<BridgeResult<Project>>;
  stop(id: string): Promise<BridgeResult<Project>>;
  clearActionError(id: string): void;
  loadReleases(id: string): Promise<void>;
  /** Starts `releaseId` again; the project turns `building` and its releases load again. */
  rollback(id: string, releaseId: string): Promise<BridgeResult<Project>>;
  /** Forgets everything shown (the Engine now talks to another platform: it all belongs to the old one). */
  forget(): void;
  /** Follows the `projects` and `deploy-finished` events; returns the unsubscribe. */
  subscribe(): () => void;
}

/** Why a file cannot be uploaded, before sending it; null when it looks right. */
export function archiveProblem(file: File): string | null {
  if (!ARCHIVE_NAME_PATTERN.test(file.name)) return `"${file.name}" is not a .tar.gz archive`;
  if (file.size === 0) return `"${file.name}" is empty`;
  if (file.size > MAX_UPLOAD_BYTES) {
    return `"${file.name}" is ${formatBytes(file.size)}; archives may be at most ${formatBytes(MAX_UPLOAD_BYTES)}`;
  }
  return null;
}

export const useProjectsStore = create<ProjectsState>()((set, get) => {
  const setDetail = (id: string, patch: Partial<DetailState>) =>
    set((state) => ({
      details: patchEntry(state.details, id, { view: null, loading: false, error: null }, patch),
    }));

  const setUpload = (id: string, patch: Partial<UploadState>) =>
    set((state) => {
      const current = state.uploads[id];
      if (!current) return {};
      return { uploads: { ...state.uploads, [id]: { ...current, ...patch } } };
    });

  /** A project the platform just returned replaces the copies in the list and the detail. */
  const remember = (project: Project) =>
    set((state) => {
      const projects = state.list?.projects ?? [];
      const known = projects.some((p) => p.id === project.id);
      const list: ProjectList | null = state.list
        ? {
            ...state.list,
            projects: known
              ? projects.map((p) => (p.id === project.id ? project : p))
              : [project, ...projects],
          }
        : null;
      const detail = state.details[project.id];
      const details = detail?.view
        ? { ...state.details, [project.id]: { ...detail, view: { ...detail.view, project } } }
        : state.details;
      return { list, details };
    });

  const setAction = (id: string, patch: Partial<ActionState>) =>
    set((state) => ({
      actions: patchEntry(state.actions, id, { pending: null, error: null, failed: null }, patch),
    }));

  const setReleases = (id: string, patch: Partial<ReleasesState>) =>
    set((state) => ({
      releases: patchEntry(state.releases, id, { releases: null, loading: false, error: null }, patch),
    }));

  /** Loads a project's releases again, if its page loaded them before. */
  const refreshReleases = (id: string) => {
    if (get().releases[id]) void get().loadReleases(id);
  };

  const forgetRollback = (id: string) =>
    set((state) => {
      if (!(id in state.rollbacks)) return {};
      const { [id]: _done, ...rollbacks } = state.rollbacks;
      return { rollbacks };
    });

  const act = async (id: string, kind: 'deploy' | 'stop'): Promise<BridgeResult<Project>> => {
    setAction(id, { pending: kind, error: null, failed: null });
    const outcome = await attempt(() =>
      bridge.invoke(kind === 'deploy' ? 'projects.deploy' : 'projects.stop', { id }),
    );
    if (outcome.ok) {
      remember(outcome.value);
      setAction(id, { pending: null });
      // A deploy is a new release (building); a stop retires the one that served.
      forgetRollback(id);
      refreshReleases(id);
    } else setAction(id, { pending: null, error: outcome.error, failed: kind });
    return outcome;
  };

  return {
    list: null,
    listLoading: false,
    listError: null,
    details: {},
    uploads: {},
    actions: {},
    releases: {},
    rollbacks: {},

    forget() {
      set({ list: null, listError: null, details: {}, actions: {}, releases: {}, rollbacks: {} });
    },

    async loadList() {
      await loadInto(set, ['list', 'listError', 'listLoading'], () =>
        bridge.invoke('projects.list', undefined),
      );
    },

    async loadDetail(id) {
      await loadInto(
        (patch: Partial<DetailState>) => setDetail(id, patch),
        ['view', 'error', 'loading'],
        () => bridge.invoke('projects.get', { id }),
      );
    },

    async create(request, file) {
      if (file !== undefined) {
        const problem = file ? archiveProblem(file) : 'choose a .tar.gz archive to upload';
        if (problem) return failure(problem, [{ path: 'file', message: problem }]);
      }
      const outcome = await attempt(() => bridge.invoke('projects.create', request));
      if (outcome.ok) {
        remember(outcome.value);
        if (file) void get().upload(outcome.value.id, file);
      }
      return outcome;
    },

    async setEnvVars(id, envVars) {
      const outcome = await attempt(() => bridge.invoke('projects.setEnvVars', { id, env_vars: envVars }));
      if (outcome.ok) remember(outcome.value);
      return outcome;
    },

    async setBuildConfig(id, buildConfig) {
      const outcome = await attempt(() =>
        bridge.invoke('projects.setBuildConfig', { id, build_config: buildConfig }),
      );
      if (outcome.ok) remember(outcome.value);
      return outcome;
    },

    async upload(id, file) {
      const problem = archiveProblem(file);
      const start: UploadState = {
        fileName: file.name,
        sizeBytes: file.size,
        phase: problem ? 'failed' : 'reading',
        sentBytes: null,
        result: null,
        error: problem ? failure(problem).error : null,
      };
      set((state) => ({ uploads: { ...state.uploads, [id]: start } }));
      if (problem) return failure(problem, [{ path: 'file', message: problem }]);

      const outcome = await attempt(async () => {
        const data = new Uint8Array(await file.arrayBuffer());
        setUpload(id, { phase: 'sending' });
        return bridge.invoke(
          'projects.upload',
          { id, fileName: file.name, data },
          {
            onUploadProgress: (sent, total) =>
              setUpload(id, { sentBytes: sent, phase: sent >= total ? 'processing' : 'sending' }),
          },
        );
      });
      if (outcome.ok) {
        setUpload(id, { phase: 'done', result: outcome.value, error: null });
        // "Upload an archive first" is answered now.
        if (get().actions[id]?.error?.code === 'upload_required') get().clearActionError(id);
        void get().loadDetail(id);
      } else setUpload(id, { phase: 'failed', error: outcome.error });
      return outcome;
    },

    clearUpload(id) {
      set((state) => {
        const { [id]: _gone, ...uploads } = state.uploads;
        return { uploads };
      });
    },

    async remove(id) {
      const outcome = await attempt(() => bridge.invoke('projects.delete', { id }));
      if (outcome.ok) {
        set((state) => {
          const { [id]: _detail, ...details } = state.details;
          const { [id]: _upload, ...uploads } = state.uploads;
          const { [id]: _action, ...actions } = state.actions;
          const { [id]: _releases, ...releases } = state.releases;
          const { [id]: _rollback, ...rollbacks } = state.rollbacks;
          const list = state.list
            ? { ...state.list, projects: state.list.projects.filter((p) => p.id !== id) }
            : null;
          return { list, details, uploads, actions, releases, rollbacks };
        });
      }
      return outcome;
    },

    deploy: (id) => act(id, 'deploy'),
    stop: (id) => act(id, 'stop'),

    clearActionError(id) {
      setAction(id, { error: null, failed: null });
    },

    async loadReleases(id) {
      await loadInto(
        (patch: Partial<ReleasesState>) => setReleases(id, patch),
        ['releases', 'error', 'loading'],
        () => bridge.invoke('projects.releases', { id }),
      );
    },

    async rollback(id, releaseId) {
      setAction(id, { pending: 'rollback', error: null, failed: null });
      const outcome = await attempt(() => bridge.invoke('projects.rollback', { id, release_id: releaseId }));
      setAction(id, { pending: null });
      if (outcome.ok) {
        remember(outcome.value);
        set((state) => ({ rollbacks: { ...state.rollbacks, [id]: releaseId } }));
      }
      // Refused or not, the list may have moved on since it was shown (a deploy, a pruned release).
      void get().loadReleases(id);
      return outcome;
    },

    subscribe() {
      // The event's copy of the project is the one that ended the deploy: show it at once.
      const offFinished = bridge.on('deploy-finished', ({ project }) => {
        if (get().list?.projects.some((p) => p.id === project.id) || get().details[project.id])
          remember(project);
        // The release that serves now (or the one that failed) changed.
        forgetRollback(project.id);
        refreshReleases(project.id);
      });
      const offList = bridge.on('projects', (list) => {
        set((state) => {
          // Open details follow the list, so their status badges stay live too.
          const details: Record<string, DetailState> = { ...state.details };
          for (const project of list.projects) {
            const detail = details[project.id];
            if (detail?.view) details[project.id] = { ...detail, view: { ...detail.view, project } };
          }
          return { list, listError: null, details };
        });
      });
      return () => {
        offFinished();
        offList();
      };
    },
  };
});
