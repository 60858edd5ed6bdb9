// The AI builder (the Build screen): a prompt goes to `ai.build`; the answer is either a project
// building (its status and logs then come from the projects and logs stores, like any deploy) or
// `needs_setup` with the secrets (and the database) it needs, which `ai.deploy` supplies. Kept here, not
// in the view, so leaving the screen and coming back finds the build where it was. Also the edits of AI
// projects (`ai.edit`).
import { create } from 'zustand';
import type { AiBuildRequest, AiBuildResponse } from '../../../../shared/api/ai.js';
import type { BridgeErrorShape, BridgeResult } from '../../../../shared/bridge.js';
import { bridge } from '../../bridge';
import { attempt } from '../../lib/outcome';

export type AiBuilderPhase = 'form' | 'generating' | 'needs_setup' | 'deploying' | 'started';

export type Needs = Extract<AiBuildResponse, { status: 'needs_setup' }>['needs'];

export interface EditState {
  pending: boolean;
  instruction: string | null;
  changedFiles: string[] | null;
  error: BridgeErrorShape | null;
}

interface AiBuilderState {
  phase: AiBuilderPhase;
  request: AiBuildRequest | null;
  projectId: string | null;
  needs: Needs | null;
  /** Why the last build or deploy was refused. */
  error: BridgeErrorShape | null;
  edits: Readonly<Record<string, EditState>>;
  build(request: AiBuildRequest): Promise<BridgeResult<AiBuildResponse>>;
  deploy(env: Record<string, string>, database: boolean): Promise<BridgeResult<unknown>>;
  /** Back to an empty form, for another app. */
  reset(): void;
  edit(projectId: string, instruction: string): Promise<BridgeResult<unknown>>;
}

export const useAiBuilderStore = create<AiBuilderState>()((set, get) => ({
  phase: 'form',
  request: null,
  projectId: null,
  needs: null,
  error: null,
  edits: {},

  async build(request) {
    set({ phase: 'generating', request, error: null, projectId: null, needs: null });
    const outcome = await attempt(() => bridge.invoke('ai.build', request));
    if (!outcome.ok) {
      set({ phase: 'form', error: outcome.error });
      return outcome;
    }
    const answer = outcome.value;
    if (answer.status === 'needs_setup')
      set({ phase: 'needs_setup', projectId: answer.project.id, needs: answer.needs });
    else set({ phase: 'started', projectId: answer.project.id });
    return outcome;
  },

  async deploy(env, database) {
    const projectId = get().projectId;
    if (!projectId)
      return { ok: false, error: { code: 'bad_request', status: 400, detail: 'nothing to deploy yet' } };
    set({ phase: 'deploying', error: null });
    const outcome = await attempt(() =>
      bridge.invoke('ai.deploy', {
        project_id: projectId,
        env,
        ...(database ? { database: 'postgres' as const } : {}),
      }),
    );
    set(outcome.ok ? { phase: 'started' } : { phase: 'needs_setup', error: outcome.error });
    return outcome;
  },

  reset() {
    set({ phase: 'form', request: null, projectId: null, needs: null, error: null });
  },

  async edit(projectId, instruction) {
    const put = (state: EditState) => set((current) => ({ edits: { ...current.edits, [projectId]: state } }));
    put({ pending: true, instruction, changedFiles: null, error: null });
    const outcome = await attempt(() => bridge.invoke('ai.edit', { project_id: projectId, instruction }));
    put(
      outcome.ok
        ? { pending: false, instruction, changedFiles: outcome.value.changed_files, error: null }
        : { pending: false, instruction, changedFiles: null, error: outcome.error },
    );
    return outcome;
  },
}));
