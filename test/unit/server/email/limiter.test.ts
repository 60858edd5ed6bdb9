// Keyed concurrency limits: per key, never more than the limit at once; keys independent; an optional
// minimum interval between starts.
import { describe, expect, it, vi } from 'vitest';
import { KeyedLimiter } from '../../../../src/server/email/limiter.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('KeyedLimiter', () => {
  it('runs at most `limit` tasks per key at once, in arrival order, keys independently', async () => {
    const limiter = new KeyedLimiter({ limit: 2 });
    const running = new Map<string, number>();
    const peak = new Map<string, number>();
    const order: number[] = [];
    const task = (key: string, id: number) =>
      limiter.run(key, async () => {
        order.push(id);
        running.set(key, (running.get(key) ?? 0) + 1);
        peak.set(key, Math.max(peak.get(key) ?? 0, running.get(key)!));
        await sleep(5);
        running.set(key, running.get(key)! - 1);
        return id;
      });
    const results = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => task('a', i)),
      ...Array.from({ length: 3 }, (_, i) => task('b', 100 + i)),
    ]);
    expect(results).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 100, 101, 102]);
    expect(peak.get('a')).toBe(2);
    expect(peak.get('b')).toBe(2);
    expect(order.filter((id) => id < 100)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(limiter.active('a')).toBe(0);
  });

  it('frees the slot when a task fails', async () => {
    const limiter = new KeyedLimiter({ limit: 1 });
    await expect(limiter.run('a', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(limiter.run('a', async () => 'next')).resolves.toBe('next');
  });

  it('spaces the starts of one key by the minimum interval', async () => {
    // On the limiter's own clock, faked: measured on the real one, a loaded machine's delay between a
    // start and the task's first line (7 ms once in CI) read as starts closer than the interval.
    vi.useFakeTimers();
    try {
      const limiter = new KeyedLimiter({ limit: 5, minIntervalMs: 40 });
      const starts: number[] = [];
      const all = Promise.all(
        Array.from({ length: 3 }, () => limiter.run('a', async () => starts.push(Date.now()))),
      );
      await vi.runAllTimersAsync();
      await all;
      expect(starts).toHaveLength(3);
      expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(40);
      expect(starts[2]! - starts[1]!).toBeGreaterThanOrEqual(40);
    } finally {
      vi.useRealTimers();
    }
  });
});
