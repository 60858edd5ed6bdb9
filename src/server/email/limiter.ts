// Keyed concurrency limits for SMTP probes: at most `limit` tasks at once per key (a mail domain, an MX
// provider), optionally with a minimum interval between the starts of two tasks of one key.
// Waiters start in arrival order.

export interface KeyedLimiterOptions {
  /** Tasks at once per key (at least 1). */
  limit: number;
  /** Minimum time between two starts under one key; 0 for none. */
  minIntervalMs?: number;
  /** The clock the interval is measured on (ms). */
  now?: () => number;
}

interface Slot {
  active: number;
  lastStart: number;
  waiters: Array<() => void>;
  timer: NodeJS.Timeout | null;
}

export class KeyedLimiter {
  readonly #limit: number;
  readonly #interval: number;
  readonly #now: () => number;
  readonly #slots = new Map<string, Slot>();

  constructor(options: KeyedLimiterOptions) {
    this.#limit = Math.max(1, Math.floor(options.limit));
    this.#interval = Math.max(0, options.minIntervalMs ?? 0);
    this.#now = options.now ?? Date.now;
  }

  /** Runs `task` when `key` has a free slot; the slot is held until the task settles. */
  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    await this.#acquire(key);
    try {
      return await task();
    } finally {
      this.#release(key);
    }
  }

  /** Tasks running under `key` now. */
  active(key: string): number {
    return this.#slots.get(key)?.active ?? 0;
  }

  #slot(key: string): Slot {
    let slot = this.#slots.get(key);
    if (slot === undefined) {
      slot = { active: 0, lastStart: -Infinity, waiters: [], timer: null };
      this.#slots.set(key, slot);
    }
    return slot;
  }

  #acquire(key: string): Promise<void> {
    const slot = this.#slot(key);
    return new Promise((resolve) => {
      slot.waiters.push(resolve);
      this.#pump(key, slot);
    });
  }

  #release(key: string): void {
    const slot = this.#slot(key);
    slot.active -= 1;
    this.#pump(key, slot);
  }

  #pump(key: string, slot: Slot): void {
    while (slot.waiters.length > 0 && slot.active < this.#limit && slot.timer === null) {
      const wait = slot.lastStart + this.#interval - this.#now();
      if (this.#interval > 0 && wait > 0) {
        slot.timer = setTimeout(() => {
          slot.timer = null;
          this.#pump(key, slot);
        }, wait);
        return;
      }
      slot.active += 1;
      slot.lastStart = this.#now();
      slot.waiters.shift()!();
    }
    if (slot.active === 0 && slot.waiters.length === 0 && slot.timer === null) this.#slots.delete(key);
  }
}
