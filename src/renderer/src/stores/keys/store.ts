// The account's API keys (API.md §3): the list (`current` marks the key this app signs in with),
// creating one (whose answer holds the key itself, kept here until the user dismisses it, never again)
// and revoking one. Writes answer with a BridgeResult so the form or dialog that made them can show why
// the platform refused.
import { create } from 'zustand';
import type { ApiKeyInfo, CreatedKey, CreateKeyRequest } from '../../../../shared/api/account.js';
import type { BridgeErrorShape, BridgeResult } from '../../../../shared/bridge.js';
import { bridge } from '../../bridge';
import { attempt } from '../../lib/outcome';

interface KeysState {
  keys: ApiKeyInfo[] | null;
  loading: boolean;
  /** Why the last load failed; the list shown (if any) is then the one from before. */
  error: BridgeErrorShape | null;
  /** The key created last, with its secret, until the user dismisses it. */
  created: CreatedKey | null;
  load(options?: { reset?: boolean }): Promise<void>;
  create(request: CreateKeyRequest): Promise<BridgeResult<CreatedKey>>;
  revoke(id: string): Promise<BridgeResult<{ id: string; deleted: true }>>;
  dismissCreated(): void;
}

/** Numbers loads, so an answer that arrives after a newer call's is dropped. */
let loads = 0;

export const useKeysStore = create<KeysState>()((set, get) => ({
  keys: null,
  loading: false,
  error: null,
  created: null,

  async load(options = {}) {
    const load = ++loads;
    set(options.reset ? { keys: null, error: null, created: null, loading: true } : { loading: true });
    const outcome = await attempt(() => bridge.invoke('keys.list', undefined));
    if (load !== loads) return;
    set(
      outcome.ok
        ? { keys: outcome.value, error: null, loading: false }
        : // Keys of another platform or account must not stay on show next to this one's refusal.
          {
            error: outcome.error,
            loading: false,
            ...(outcome.error.code === 'offline' ? {} : { keys: null }),
          },
    );
  },

  async create(request) {
    const outcome = await attempt(() => bridge.invoke('keys.create', request));
    if (outcome.ok) {
      set({ created: outcome.value });
      await get().load();
    }
    return outcome;
  },

  async revoke(id) {
    const outcome = await attempt(() => bridge.invoke('keys.revoke', { id }));
    if (outcome.ok || outcome.error.code === 'not_found') {
      set((state) => ({
        keys: state.keys?.filter((key) => key.id !== id) ?? null,
        created: state.created?.id === id ? null : state.created,
      }));
    }
    return outcome;
  },

  dismissCreated() {
    set({ created: null });
  },
}));
