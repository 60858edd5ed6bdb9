// Store actions answer with a BridgeResult instead of throwing, so a view can show an error next to
// the input it belongs to without a try/catch of its own.
import {
  BridgeError,
  isBridgeErrorShape,
  type BridgeErrorShape,
  type BridgeResult,
} from '../../../shared/bridge.js';

export function toErrorShape(error: unknown): BridgeErrorShape {
  if (error instanceof BridgeError) return error.toJSON();
  if (isBridgeErrorShape(error)) return error;
  return { code: 'internal', status: 500, detail: error instanceof Error ? error.message : String(error) };
}

export async function attempt<T>(run: () => Promise<T>): Promise<BridgeResult<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    return { ok: false, error: toErrorShape(error) };
  }
}

export function failure(
  detail: string,
  errors?: BridgeErrorShape['errors'],
): { ok: false; error: BridgeErrorShape } {
  return {
    ok: false,
    error: { code: 'validation_failed', status: 422, detail, ...(errors ? { errors } : {}) },
  };
}

/**
 * Loads a store's value through the Bridge: its `loading` field true while it runs, then the value with
 * its `error` field cleared, or the error (the last value kept). `fields` names the three: value, error,
 * loading.
 */
export async function loadInto<S, V extends keyof S, E extends keyof S, L extends keyof S>(
  set: (patch: Partial<S>) => void,
  [value, error, loading]: readonly [V, E, L],
  run: () => Promise<S[V]>,
): Promise<void> {
  set({ [loading]: true } as Partial<S>);
  try {
    set({ [value]: await run(), [error]: null } as Partial<S>);
  } catch (caught) {
    set({ [error]: toErrorShape(caught) } as Partial<S>);
  } finally {
    set({ [loading]: false } as Partial<S>);
  }
}
