// Custom domains (API.md §5): the list, adding one (whose answer names the two records to create: the
// CNAME and the TXT proof of ownership), relinking one to another project, verifying one (the platform
// looks both records up now) with the last result of each, and removing one. Writes answer with a
// BridgeResult so the form that made them can place 422, 404 and 409 errors.
import { create } from 'zustand';
import type {
  CreateDomainRequest,
  CreatedDomain,
  Domain,
  DomainVerification,
} from '../../../../shared/api/domains.js';
import type { BridgeErrorShape, BridgeResult } from '../../../../shared/bridge.js';
import { bridge } from '../../bridge';
import { attempt, loadInto } from '../../lib/outcome';
import { applyVerification } from './apply';
import { patchEntry } from '../entries';

/** A verification in flight, and the answer (or refusal) of the last one. */
export interface VerificationState {
  pending: boolean;
  result: DomainVerification | null;
  error: BridgeErrorShape | null;
}

interface DomainsState {
  domains: Domain[] | null;
  loading: boolean;
  error: BridgeErrorShape | null;
  /** The domain added last in this session, with its instructions, until it is verified or removed. */
  created: CreatedDomain | null;
  verifications: Readonly<Record<string, VerificationState>>;
  /** Relinks in flight, by domain id. */
  linking: Readonly<Record<string, boolean>>;
  load(): Promise<void>;
  create(request: CreateDomainRequest): Promise<BridgeResult<CreatedDomain>>;
  link(id: string, projectId: string | null): Promise<BridgeResult<Domain>>;
  /** Turns Strict-Transport-Security on or off for the domain's HTTPS answers. */
  setHsts(id: string, on: boolean): Promise<BridgeResult<Domain>>;
  verify(id: string): Promise<BridgeResult<DomainVerification>>;
  remove(id: string): Promise<BridgeResult<{ id: string; deleted: true }>>;
  dismissCreated(): void;
}

export const useDomainsStore = create<DomainsState>()((set, get) => {
  const setVerification = (id: string, patch: Partial<VerificationState>) =>
    set((state) => ({
      verifications: patchEntry(
        state.verifications,
        id,
        { pending: false, result: null, error: null },
        patch,
      ),
    }));

  /** A PATCH of the domain (its project, its HSTS), applied to the list once answered. */
  const change = async (id: string, patch: { project_id?: string | null; hsts?: boolean }) => {
    set((state) => ({ linking: { ...state.linking, [id]: true } }));
    const outcome = await attempt(() => bridge.invoke('domains.link', { id, ...patch }));
    set((state) => {
      const { [id]: _done, ...linking } = state.linking;
      if (!outcome.ok) return { linking };
      const linked = outcome.value;
      return {
        linking,
        domains: state.domains?.map((d) => (d.id === id ? linked : d)) ?? null,
        created: state.created?.domain.id === id ? { ...state.created, domain: linked } : state.created,
      };
    });
    if (!outcome.ok && outcome.error.code === 'not_found') void get().load();
    return outcome;
  };

  return {
    domains: null,
    loading: false,
    error: null,
    created: null,
    verifications: {},
    linking: {},

    async load() {
      await loadInto(set, ['domains', 'error', 'loading'], () => bridge.invoke('domains.list', undefined));
    },

    async create(request) {
      const outcome = await attempt(() => bridge.invoke('domains.create', request));
      if (outcome.ok) {
        const { domain } = outcome.value;
        set((state) => ({
          created: outcome.value,
          domains: [domain, ...(state.domains ?? []).filter((d) => d.id !== domain.id)],
        }));
      }
      return outcome;
    },

    link(id, projectId) {
      return change(id, { project_id: projectId });
    },

    setHsts(id, on) {
      return change(id, { hsts: on });
    },
    async verify(id) {
      setVerification(id, { pending: true, error: null });
      const outcome = await attempt(() => bridge.invoke('domains.verify', { id }));
      if (outcome.ok) {
        const result = outcome.value;
        setVerification(id, { pending: false, result, error: null });
        set((state) => ({
          domains: state.domains ? applyVerification(state.domains, result) : state.domains,
          created: state.created?.domain.id === id && result.verified ? null : state.created,
        }));
      } else {
        setVerification(id, { pending: false, error: outcome.error });
        // Removed elsewhere meanwhile: the list is out of date.
        if (outcome.error.code === 'not_found') void get().load();
      }
      return outcome;
    },

    async remove(id) {
      const outcome = await attempt(() => bridge.invoke('domains.delete', { id }));
      if (outcome.ok || outcome.error.code === 'not_found') {
        set((state) => {
          const { [id]: _gone, ...verifications } = state.verifications;
          return {
            domains: state.domains?.filter((d) => d.id !== id) ?? null,
            created: state.created?.domain.id === id ? null : state.created,
            verifications,
          };
        });
      }
      return outcome;
    },

    dismissCreated() {
      set({ created: null });
    },
  };
});
