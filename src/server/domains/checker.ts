// The background re-check of unverified custom domains: one timer, set for the soonest `next_check_at`
// in the store (so the schedule survives restarts), checking what is due a batch at a time. The
// backoff itself is DomainService's (nextCheckAt), and so is the rule: a background check verifies a
// domain exactly when a manual one would (the account's TXT proof and the CNAME or apex A/AAAA; never one
// another account has verified). The platform starts it and stops it on close; stop()
// clears the timer and waits for checks under way, so nothing outlives the store.
import type { DomainService } from './domains.js';

export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const nodeTimers: Timers = {
  setTimeout: (callback, ms) => {
    const handle = setTimeout(callback, ms);
    // A platform that is never closed (a crashed test) must not keep the process alive for this.
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Checks per wake-up; more that are due get the next wake-up, at once. */
const BATCH = 20;
/** The longest the timer waits, so a changed clock or a missed wake() costs at most this. */
const MAX_SLEEP_MS = 3_600_000;

export interface DomainCheckerOptions {
  now?: () => Date;
  timers?: Timers;
  onError?: (error: unknown) => void;
}

export class DomainChecker {
  private readonly now: () => Date;
  private readonly timers: Timers;
  private readonly onError: (error: unknown) => void;
  private timer: unknown = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  /** wake() came during a tick: look at the store again right after it. */
  private rewake = false;

  constructor(
    private readonly domains: DomainService,
    options: DomainCheckerOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
    this.timers = options.timers ?? nodeTimers;
    this.onError = options.onError ?? (() => {});
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.sleep(0);
  }

  /** A domain was added (or its schedule changed): make sure the timer is not set too late. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) this.rewake = true;
    else this.sleep(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.clear();
    if (this.running) {
      this.domains.cancel();
      await this.running;
    }
  }

  /** Resolves once the checks under way (if any) are done: for tests. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private clear(): void {
    if (this.timer !== null) this.timers.clearTimeout(this.timer);
    this.timer = null;
  }

  private sleep(ms: number): void {
    this.clear();
    if (this.stopped) return;
    this.timer = this.timers.setTimeout(
      () => {
        this.timer = null;
        this.running = this.tick().finally(() => {
          this.running = null;
        });
      },
      Math.max(0, Math.min(ms, MAX_SLEEP_MS)),
    );
  }

  private async tick(): Promise<void> {
    let retryIn = this.domains.schedule.firstMs;
    this.rewake = false;
    try {
      const due = await this.domains.due(BATCH);
      await Promise.all(
        due.map((row) =>
          this.domains.recheck(row).catch((error: unknown) => {
            if (!this.stopped) this.onError(error);
          }),
        ),
      );
      if (this.stopped) return;
      const next = await this.domains.nextDueAt();
      retryIn = next ? next.getTime() - this.now().getTime() : MAX_SLEEP_MS;
    } catch (error) {
      if (this.stopped) return;
      this.onError(error);
    }
    this.sleep(this.rewake ? 0 : retryIn);
  }
}
