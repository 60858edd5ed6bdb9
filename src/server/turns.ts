// Work that must not overlap for one key (an account's project count, a node's row of an account's
// streams): each runs once the work asked before it for the same key has settled, whatever its outcome.

export class KeyedTurns {
  /** Per key, the last work asked, settled or not (never rejecting); forgotten once it settles last. */
  private readonly last = new Map<string, Promise<void>>();

  /** Runs `work` once the earlier work for `key` is done; resolves or rejects as `work` does. */
  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const result = (this.last.get(key) ?? Promise.resolve()).then(work);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.last.set(key, settled);
    void settled.then(() => {
      if (this.last.get(key) === settled) this.last.delete(key);
    });
    return result;
  }
}
