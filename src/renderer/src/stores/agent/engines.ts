// Which AI engines this user can run on, known before anything is sent: the platform's included engine
// (`GET /platform` `ai_included`, the service's own key) and the account's own key (`GET /account`
// `ai_key`), each with the provider and model it uses. The Agent and Build screens, their engine
// pickers and the AI key card all read it from here.
import { useEffect } from 'react';
import { useShallow } from 'zustand/react/shallow';
import type { Account, AiProvider } from '../../../../shared/api/account.js';
import type { PlatformInfo } from '../../../../shared/api/common.js';
import { useSettingsStore } from '../settings/store';

export interface EngineOffer {
  /** The included engine; null when this platform has none, undefined while that is not known. */
  included: { provider: AiProvider; model: string } | null | undefined;
  /** The saved own key (masked) with the model it runs on; null when none is saved, undefined while loading. */
  ownKey: { provider: AiProvider; masked: string; model: string | null } | null | undefined;
  /** Both are known and neither exists: nothing can run a model (the builder still has its templates). */
  none: boolean;
}

export function engineOffer(info: PlatformInfo | null, account: Account | null): EngineOffer {
  // A platform older than `ai_included` does not say: nothing is claimed missing then.
  const included = info ? info.ai_included : undefined;
  const saved = account ? account.ai_key : undefined;
  const ownKey = saved
    ? { ...saved, model: info?.ai_own_key_models?.[saved.provider] ?? null }
    : (saved as null | undefined);
  return { included, ownKey, none: included === null && ownKey === null };
}

/** The engine offer, loading the platform's answer and the account when the screen opens. */
export function useEngineOffer(): EngineOffer {
  const { info, account, loadRuntime, loadAccount } = useSettingsStore(
    useShallow((state) => ({
      info: state.runtime,
      account: state.account,
      loadRuntime: state.loadRuntime,
      loadAccount: state.loadAccount,
    })),
  );
  useEffect(() => {
    void loadRuntime();
    void loadAccount();
  }, [loadRuntime, loadAccount]);
  return engineOffer(info, account);
}

/** Reads both again, e.g. after the platform refused for want of an engine. */
export function refreshEngineOffer(): void {
  const settings = useSettingsStore.getState();
  void settings.loadRuntime();
  void settings.loadAccount();
}
