// The BridgeError an Engine operation or one of its parts refused with: a test fails when the call
// succeeds or fails with anything else.
import { expect } from 'vitest';
import { BridgeError } from '../../src/shared/bridge.js';

/** The BridgeError `promise` rejects with. */
export async function rejection(promise: Promise<unknown>): Promise<BridgeError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BridgeError);
  return error as BridgeError;
}

/** The BridgeError `run` throws. */
export function thrown(run: () => unknown): BridgeError {
  let error: unknown = null;
  try {
    run();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(BridgeError);
  return error as BridgeError;
}
