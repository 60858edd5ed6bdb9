// Email verification (API.md §6): one address at a time, and lists sent in chunks of 100 with their
// progress (batch.ts), plus the account's ledger (`account.usage`) that the checks add to. After each
// check the account is loaded again (the settings store holds it), so the balance and today's count
// against the daily cap stay current wherever they are shown.
import { create } from 'zustand';
import type { UsageEntry } from '../../../../shared/api/account.js';
import type { EmailVerification } from '../../../../shared/api/email.js';
import type { BridgeErrorShape, BridgeResult } from '../../../../shared/bridge.js';
import { bridge } from '../../bridge';
import { attempt, toErrorShape } from '../../lib/outcome';
import { useSettingsStore } from '../settings/store';
import { runBatch } from './batch';

export interface SingleCheckState {
  pending: boolean;
  /** The address of the result (or of the refusal). */
  email: string | null;
  smtpProbe: boolean;
  result: EmailVerification | null;
  error: BridgeErrorShape | null;
}

export type BatchPhase = 'idle' | 'running' | 'done' | 'stopped' | 'cancelled';

export interface BatchState {
  phase: BatchPhase;
  total: number;
  done: number;
  smtpProbe: boolean;
  /** In input order. */
  results: EmailVerification[];
  /** Why the run stopped early. */
  error: BridgeErrorShape | null;
  /** Addresses not checked after a stop or a cancel, for "Continue". */
  remaining: string[];
}

export interface UsageState {
  entries: UsageEntry[] | null;
  loading: boolean;
  error: BridgeErrorShape | null;
}

interface EmailState {
  single: SingleCheckState;
  batch: BatchState;
  usage: UsageState;
  verify(email: string, smtpProbe: boolean): Promise<BridgeResult<EmailVerification>>;
  /** Checks the addresses in chunks; `append` keeps the results so far (continuing a stopped run). */
  verifyBatch(emails: string[], smtpProbe: boolean, options?: { append?: boolean }): Promise<void>;
  cancelBatch(): void;
  clearBatch(): void;
  loadUsage(): Promise<void>;
}

const IDLE_BATCH: BatchState = {
  phase: 'idle',
  total: 0,
  done: 0,
  smtpProbe: false,
  results: [],
  error: null,
  remaining: [],
};

export const useEmailStore = create<EmailState>()((set, get) => {
  let cancelled = false;

  /** The balance and today's count changed (or may have, after a refusal). */
  const refreshAccount = () => {
    void useSettingsStore.getState().loadAccount();
    if (get().usage.entries !== null) void get().loadUsage();
  };

  return {
    single: { pending: false, email: null, smtpProbe: false, result: null, error: null },
    batch: IDLE_BATCH,
    usage: { entries: null, loading: false, error: null },

    async verify(email, smtpProbe) {
      set({ single: { ...get().single, pending: true, email, smtpProbe, error: null } });
      const outcome = await attempt(() =>
        bridge.invoke('email.verify', { email, ...(smtpProbe ? { smtp_probe: true } : {}) }),
      );
      set({
        single: {
          pending: false,
          email,
          smtpProbe,
          result: outcome.ok ? outcome.value : null,
          error: outcome.ok ? null : outcome.error,
        },
      });
      refreshAccount();
      return outcome;
    },

    async verifyBatch(emails, smtpProbe, options = {}) {
      if (get().batch.phase === 'running' || emails.length === 0) return;
      cancelled = false;
      const before = options.append ? get().batch.results : [];
      set({
        batch: {
          phase: 'running',
          total: before.length + emails.length,
          done: before.length,
          smtpProbe,
          results: before,
          error: null,
          remaining: [],
        },
      });
      const outcome = await runBatch(emails, {
        send: async (part) =>
          (
            await bridge.invoke('email.verifyBatch', {
              emails: part,
              ...(smtpProbe ? { smtp_probe: true } : {}),
            })
          ).results,
        onProgress: ({ done, results }) =>
          set((state) => ({
            batch: { ...state.batch, done: before.length + done, results: [...before, ...results] },
          })),
        isCancelled: () => cancelled,
        toError: toErrorShape,
      });
      set({
        batch: {
          phase: outcome.error ? 'stopped' : outcome.cancelled ? 'cancelled' : 'done',
          total: before.length + outcome.total,
          done: before.length + outcome.done,
          smtpProbe,
          results: [...before, ...outcome.results],
          error: outcome.error,
          remaining: outcome.remaining,
        },
      });
      refreshAccount();
    },

    cancelBatch() {
      cancelled = true;
    },

    clearBatch() {
      if (get().batch.phase !== 'running') set({ batch: IDLE_BATCH });
    },

    async loadUsage() {
      set((state) => ({ usage: { ...state.usage, loading: true } }));
      try {
        const entries = await bridge.invoke('account.usage', undefined);
        set({ usage: { entries, loading: false, error: null } });
      } catch (error) {
        set((state) => ({ usage: { ...state.usage, loading: false, error: toErrorShape(error) } }));
      }
    },
  };
});
