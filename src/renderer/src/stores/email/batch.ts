// Checking many addresses: the platform takes at most 100 per request (API.md §9), so a list is sent
// in chunks of 100, one after another, reporting progress after each. A refusal (no balance left, the
// daily cap reached, the platform offline) stops the run and keeps what was checked, with the
// addresses still to check, so the user can continue once the cause is fixed. Results stay in input
// order: chunk after chunk, each answered in its own input order.
import type { EmailVerification } from '../../../../shared/api/email.js';
import type { BridgeErrorShape } from '../../../../shared/bridge.js';

/** The most addresses of one `POST /email/verify/batch`. */
export const BATCH_LIMIT = 100;

export function chunk<T>(items: readonly T[], size = BATCH_LIMIT): T[][] {
  if (!Number.isInteger(size) || size < 1) throw new RangeError('the chunk size must be a positive integer');
  const out: T[][] = [];
  for (let start = 0; start < items.length; start += size) out.push(items.slice(start, start + size));
  return out;
}

export interface BatchProgress {
  /** Addresses answered so far. */
  done: number;
  total: number;
  /** Everything answered so far, in input order. */
  results: EmailVerification[];
}

export interface BatchOutcome extends BatchProgress {
  /** Why the run stopped early; null when it finished or was cancelled. */
  error: BridgeErrorShape | null;
  cancelled: boolean;
  /** The addresses not checked (after a refusal or a cancel), in input order. */
  remaining: string[];
}

export interface RunBatchOptions {
  /** Sends one chunk; rejects (or throws) with the refusal. */
  send: (emails: string[]) => Promise<EmailVerification[]>;
  onProgress?: (progress: BatchProgress) => void;
  /** Asked before each chunk: true stops the run there. */
  isCancelled?: () => boolean;
  toError: (error: unknown) => BridgeErrorShape;
  size?: number;
}

/** A fraction from 0 to 1 for a progress bar; 1 for an empty run. */
export function progressFraction({ done, total }: Pick<BatchProgress, 'done' | 'total'>): number {
  return total <= 0 ? 1 : Math.min(1, Math.max(0, done / total));
}

export async function runBatch(emails: readonly string[], options: RunBatchOptions): Promise<BatchOutcome> {
  const chunks = chunk(emails, options.size ?? BATCH_LIMIT);
  const results: EmailVerification[] = [];
  const total = emails.length;
  for (let i = 0; i < chunks.length; i++) {
    const remaining = () => chunks.slice(i).flat();
    if (options.isCancelled?.())
      return { done: results.length, total, results, error: null, cancelled: true, remaining: remaining() };
    const part = chunks[i]!;
    let answered: EmailVerification[];
    try {
      answered = await options.send(part);
    } catch (error) {
      return {
        done: results.length,
        total,
        results,
        error: options.toError(error),
        cancelled: false,
        remaining: remaining(),
      };
    }
    results.push(...answered);
    options.onProgress?.({ done: results.length, total, results: [...results] });
  }
  return { done: results.length, total, results, error: null, cancelled: false, remaining: [] };
}
