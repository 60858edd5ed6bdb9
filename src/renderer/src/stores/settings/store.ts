// Settings: which platform the Engine talks to and whether a key is saved (never the key itself),
// the connection test, and the account (with its balance) of the saved settings.
import { create } from 'zustand';
import type { Account } from '../../../../shared/api/account.js';
import type {
  BridgeErrorShape,
  BridgeResult,
  ConnectionTest,
  SettingsUpdate,
  SettingsView,
} from '../../../../shared/bridge.js';
import { bridge } from '../../bridge';
import { attempt, toErrorShape } from '../../lib/outcome';

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
  load(): Promise<void>;
  save(update: SettingsUpdate): Promise<BridgeResult<SettingsView>>;
  testConnection(platform: string, apiKey?: string): Promise<void>;
  loadAccount(): Promise<void>;
}

export const useSettingsStore = create<SettingsState>()((set, get) => ({
  view: null,
  loadError: null,
  account: null,
  accountError: null,
  accountLoading: false,
  test: { running: false, target: null, result: null },

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
  },

  async loadAccount() {
    set({ accountLoading: true });
    try {
      set({ account: await bridge.invoke('account.get', undefined), accountError: null });
    } catch (error) {
      set({ accountError: toErrorShape(error) });
    } finally {
      set({ accountLoading: false });
    }
  },
}));
