// A deploy in progress, as the rest of the runtime sees it: what it started (so that a newer deploy,
// a rollback or a stop can cancel it), and the two ways it ends early.
import type { RunningProcess } from './process.js';

/** A deploy failed for a reason its log states in one line. */
export class DeployError extends Error {}

/** A deploy was cancelled (a newer one, a stop, the platform shutting down). */
export class CancelledError extends Error {}

export class Build {
  cancelled: string | null = null;
  private readonly processes = new Set<RunningProcess>();
  private readonly abort = new AbortController();
  private settle!: () => void;
  /** Resolves once the deploy has stopped touching its release folder (done, failed or cancelled). */
  readonly finished = new Promise<void>((resolve) => (this.settle = resolve));

  /** Aborts what listens to it (an image build, a pull) when the deploy is cancelled. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  end(): void {
    this.settle();
  }

  track(process: RunningProcess): void {
    if (this.cancelled) {
      void process.stop(2_000);
      return;
    }
    this.processes.add(process);
    void process.exited.then(() => this.processes.delete(process));
  }

  cancel(reason: string): void {
    this.cancelled = reason;
    this.abort.abort(new CancelledError(reason));
    for (const process of this.processes) void process.stop(2_000);
  }

  check(): void {
    if (this.cancelled) throw new CancelledError(this.cancelled);
  }
}
