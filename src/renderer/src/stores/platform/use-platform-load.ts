// Data that belongs to one platform (its runtime, its API keys…), loaded by a card while it is shown:
// asked for when the card opens, asked afresh (forgetting the old answer) when another platform is
// saved, here or in another window, and asked again when the platform answers after being unreachable.
import { useEffect, useRef } from 'react';
import type { BridgeErrorShape } from '../../../../shared/bridge.js';
import { useConnection } from './selectors';

export function usePlatformLoad(
  load: (options?: { reset?: boolean }) => Promise<void>,
  error: BridgeErrorShape | null,
): void {
  const { mode, platformUrl, online } = useConnection();
  // The status arriving for the first time is no change: the load on opening asked that platform.
  const shownFor = useRef<string | null | undefined>(undefined);
  const platformKey = mode === null ? null : `${mode} ${platformUrl ?? ''}`;
  useEffect(() => {
    const before = shownFor.current;
    if (before === undefined) {
      shownFor.current = platformKey;
      void load();
      return;
    }
    if (platformKey === null || platformKey === before) return;
    shownFor.current = platformKey;
    if (before !== null) void load({ reset: true });
  }, [platformKey, load]);

  const unreachable = error?.code === 'offline';
  useEffect(() => {
    if (online === true && unreachable) void load();
  }, [online, unreachable, load]);
}
