// Settings: which platform the Engine talks to and whether a key is saved (never the key itself),
// the connection test, the account (with its balance) of the saved settings, and how that platform
// runs apps (its runtime).
import { create } from 'zustand';
import type { Account } from '../../../../shared/api/account.js';
import type { PlatformInfo } from '../../../../shared/api/common.js';
import type {
  BridgeErrorShape,
  BridgeResult,
  ConnectionTest,
  SettingsUpdate,
  SettingsView,
} from '../../../../shared/bridge.js';
import { bridge } from '../../bridge';
import { attempt, loadInto, toErrorShape } from '../../lib/outcome';

export interface ConnectionTestState {
  running: boolean;
  /** What was tested, so the result is shown next to the right choice. */
  target: string | null;
  result: ConnectionTest | null;
}

interface SettingsState {
  view: SettingsView | null;
  loadError: BridgeErrorShape | null;
  account: Account | null;
  accountError: BridgeErrorShape | null;
  accountLoading: boolean;
  test: ConnectionTestState;
  /** How the platform of the saved settings runs apps; null until it answered (or when it changed). */
  runtime: PlatformInfo | null;
  runtimeError: BridgeErrorShape | null;
  runtimeLoading: boolean;
  load(): Promise<void>;
  save(update: SettingsUpdate): Promise<BridgeResult<SettingsView>>;
  /** Tests a platform (and key) without saving; the answer is also kept in `test`. */
  testConnection(platform: string, apiKey?: string): Promise<ConnectionTest>;
  loadAccount(): Promise<void>;
  /**
   * Asks the platform how it runs apps. `reset` forgets what is shown first (the platform changed, so it
   * belongs to another one). Only the latest call's answer is kept.
   */
  loadRuntime(options?: { reset?: boolean }): Promise<void>;
}

/** Numbers runtime loads, so an answer that arrives after a newer call's is dropped. */
let runtimeLoads = 0;

export const useSettingsStore = create<SettingsState>()((set, get) => ({
  view: null,
  loadError: null,
  account: null,
  accountError: null,
  accountLoading: false,
  test: { running: false, target: null, result: null },
  runtime: null,
  runtimeError: null,
  runtimeLoading: false,

  async load() {
    try {
      set({ view: await bridge.invoke('settings.get', undefined), loadError: null });
    } catch (error) {
      set({ loadError: toErrorShape(error) });
    }
  },

  async save(update) {
    const outcome = await attempt(() => bridge.invoke('settings.update', update));
    if (outcome.ok) {
      set({ view: outcome.value, loadError: null, account: null, accountError: null });
      void get().loadAccount();
      void get().loadRuntime({ reset: true });
    }
    return outcome;
  },

  async testConnection(platform, apiKey) {
    set({ test: { running: true, target: platform, result: null } });
    const input = apiKey ? { platform, apiKey } : { platform };
    const outcome = await attempt(() => bridge.invoke('settings.testConnection', input));
    const result: ConnectionTest = outcome.ok
      ? outcome.value
      : { ok: false, latencyMs: null, account: null, error: outcome.error };
    set({ test: { running: false, target: platform, result } });
    return result;
  },

  async loadAccount() {
    await loadInto(set, ['account', 'accountError', 'accountLoading'], () =>
      bridge.invoke('account.get', undefined),
    );
  },

  async loadRuntime(options = {}) {
    const load = ++runtimeLoads;
    set(
      options.reset ? { runtime: null, runtimeError: null, runtimeLoading: true } : { runtimeLoading: true },
    );
    const outcome = await attempt(() => bridge.invoke('platform.info', undefined));
    if (load !== runtimeLoads) return;
    set(
      outcome.ok
        ? { runtime: outcome.value, runtimeError: null, runtimeLoading: false }
        : { runtime: null, runtimeError: outcome.error, runtimeLoading: false },
    );
  },
}));
