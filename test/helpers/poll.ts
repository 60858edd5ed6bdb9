// The tests' one way to wait for something to become true: poll a condition, and fail naming what was
// awaited (to retry an assertion until it passes, use vitest's own `vi.waitFor`); and a negative check's
// named wait, `quietFor`.

/** Polls until `check` holds; fails saying `what` after `timeoutMs`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * A negative check's wait: gives what must NOT happen `ms` to happen anyway, before the test looks that
 * it did not. (To wait for something that must happen, use `until` or `vi.waitFor`.)
 */
export function quietFor(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
