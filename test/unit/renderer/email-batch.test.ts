// Batch checks: lists cut into chunks of at most 100 (the API's limit), sent one after another with
// progress after each, results kept in input order, and a refusal or a cancel stopping the run with
// the unchecked addresses kept for later.
import { describe, expect, it } from 'vitest';
import type { EmailVerification } from '../../../src/shared/api/email.js';
import type { BridgeErrorShape } from '../../../src/shared/bridge.js';
import {
  BATCH_LIMIT,
  chunk,
  progressFraction,
  runBatch,
  type BatchProgress,
} from '../../../src/renderer/src/stores/email/batch.js';

function result(email: string): EmailVerification {
  return {
    email,
    normalized: email,
    domain: 'example.com',
    score: 'valid',
    reason: 'ok',
    syntax_valid: true,
    has_mx: true,
    disposable: false,
    role_based: false,
    free_provider: false,
    suggestion: '',
    mailbox_checked: false,
    catch_all: false,
    confidence: 80,
    mx_records: ['mx.example.com'],
    smtp: null,
    cost_usd: 0.001,
    checked_at: '2025-01-31T14:03:07.123Z',
  };
}

const addresses = (n: number) => Array.from({ length: n }, (_, i) => `user${i}@example.com`);
const toError = (error: unknown): BridgeErrorShape => error as BridgeErrorShape;

describe('chunk', () => {
  it('cuts 250 addresses into chunks of 100, 100 and 50, in order', () => {
    const chunks = chunk(addresses(250));
    expect(BATCH_LIMIT).toBe(100);
    expect(chunks.map((c) => c.length)).toEqual([100, 100, 50]);
    expect(chunks.flat()).toEqual(addresses(250));
  });

  it('makes one chunk of exactly 100 and none for an empty list', () => {
    expect(chunk(addresses(100))).toHaveLength(1);
    expect(chunk([])).toEqual([]);
  });

  it('refuses a chunk size that is not a positive integer', () => {
    expect(() => chunk([1, 2], 0)).toThrow(RangeError);
    expect(() => chunk([1, 2], 1.5)).toThrow(RangeError);
  });
});

describe('progressFraction', () => {
  it('is done/total, bounded to 0..1, and 1 for an empty run', () => {
    expect(progressFraction({ done: 100, total: 250 })).toBeCloseTo(0.4);
    expect(progressFraction({ done: 300, total: 250 })).toBe(1);
    expect(progressFraction({ done: 0, total: 0 })).toBe(1);
  });
});

describe('runBatch', () => {
  it('sends each chunk once, in order, and reports progress after each', async () => {
    const sent: string[][] = [];
    const progress: Array<Pick<BatchProgress, 'done' | 'total'>> = [];
    const outcome = await runBatch(addresses(230), {
      send: async (emails) => {
        sent.push(emails);
        return emails.map(result);
      },
      onProgress: ({ done, total }) => progress.push({ done, total }),
      toError,
    });
    expect(sent.map((c) => c.length)).toEqual([100, 100, 30]);
    expect(progress).toEqual([
      { done: 100, total: 230 },
      { done: 200, total: 230 },
      { done: 230, total: 230 },
    ]);
    expect(outcome.results.map((r) => r.email)).toEqual(addresses(230));
    expect(outcome).toMatchObject({ done: 230, total: 230, error: null, cancelled: false, remaining: [] });
  });

  it('keeps input order even when a later chunk answers first', async () => {
    let call = 0;
    const outcome = await runBatch(addresses(5), {
      size: 2,
      send: async (emails) => {
        const delay = [30, 0, 10][call++]!;
        await new Promise((resolve) => setTimeout(resolve, delay));
        return emails.map(result);
      },
      toError,
    });
    expect(outcome.results.map((r) => r.email)).toEqual(addresses(5));
  });

  it('stops at a refusal (429 daily_cap_reached), keeping what was checked and what was not', async () => {
    const refusal: BridgeErrorShape = {
      code: 'daily_cap_reached',
      status: 429,
      detail: 'the daily cap of 150 verifications is reached',
    };
    let calls = 0;
    const outcome = await runBatch(addresses(250), {
      send: async (emails) => {
        if (++calls === 2) throw refusal;
        return emails.map(result);
      },
      toError,
    });
    expect(calls).toBe(2);
    expect(outcome.error).toEqual(refusal);
    expect(outcome.done).toBe(100);
    expect(outcome.results).toHaveLength(100);
    expect(outcome.remaining).toEqual(addresses(250).slice(100));
    expect(outcome.cancelled).toBe(false);
  });

  it('stops before the next chunk once cancelled, with the rest as remaining', async () => {
    let cancelled = false;
    const outcome = await runBatch(addresses(300), {
      send: async (emails) => {
        cancelled = true;
        return emails.map(result);
      },
      isCancelled: () => cancelled,
      toError,
    });
    expect(outcome.cancelled).toBe(true);
    expect(outcome.error).toBeNull();
    expect(outcome.done).toBe(100);
    expect(outcome.remaining).toEqual(addresses(300).slice(100));
  });

  it('sends nothing for an empty list', async () => {
    let calls = 0;
    const outcome = await runBatch([], {
      send: async () => {
        calls++;
        return [];
      },
      toError,
    });
    expect(calls).toBe(0);
    expect(outcome).toMatchObject({ done: 0, total: 0, results: [], error: null });
  });
});
