// Selectors of the domains store.
import { useShallow } from 'zustand/react/shallow';
import type { VerificationState } from './store';
import { useDomainsStore } from './store';

type State = ReturnType<typeof useDomainsStore.getState>;

const IDLE: VerificationState = { pending: false, result: null, error: null };

export const selectDomainList = (state: State) => ({
  domains: state.domains,
  loading: state.loading,
  error: state.error,
});

export const selectCreated = (state: State) => state.created;

export const selectVerification =
  (id: string) =>
  (state: State): VerificationState =>
    state.verifications[id] ?? IDLE;

export const selectLinking = (id: string) => (state: State) => state.linking[id] ?? false;

export const selectDomainActions = (state: State) => ({
  load: state.load,
  create: state.create,
  link: state.link,
  setHsts: state.setHsts,
  verify: state.verify,
  remove: state.remove,
  dismissCreated: state.dismissCreated,
});

export const useDomainList = () => useDomainsStore(useShallow(selectDomainList));
export const useCreatedDomain = () => useDomainsStore(selectCreated);
export const useVerification = (id: string) => useDomainsStore(selectVerification(id));
export const useLinking = (id: string) => useDomainsStore(selectLinking(id));
export const useDomainActions = () => useDomainsStore(useShallow(selectDomainActions));
