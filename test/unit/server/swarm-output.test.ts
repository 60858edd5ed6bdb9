// The timestamps a service's output is resumed from (drivers/swarm.ts): Docker writes RFC 3339 with
// up to nine fraction digits, trailing zeros trimmed; the platform compares them as nanoseconds and
// hands them back to Docker as `seconds.nanoseconds`.
import { describe, expect, it } from 'vitest';
import { sinceOf, timestampNanos } from '../../../src/server/runtime/drivers/swarm.js';

describe('service output timestamps', () => {
  it('reads nanoseconds whatever the fraction’s length', () => {
    expect(timestampNanos('2026-11-28T14:00:00.123456789Z')).toBe(1_795_874_400_123_456_789n);
    expect(timestampNanos('2026-11-28T14:00:00.1234Z')).toBe(1_795_874_400_123_400_000n);
    expect(timestampNanos('2026-11-28T14:00:00Z')).toBe(1_795_874_400_000_000_000n);
  });

  it('orders timestamps that a string comparison would not', () => {
    // Trimmed zeros: as strings, "…00.5Z" sorts after "…00.5000001Z" (Z after 0); in time it is before.
    expect('2026-11-28T14:00:00.5Z' > '2026-11-28T14:00:00.5000001Z').toBe(true);
    expect(timestampNanos('2026-11-28T14:00:00.5Z')! < timestampNanos('2026-11-28T14:00:00.5000001Z')!).toBe(
      true,
    );
  });

  it('refuses what is not one', () => {
    for (const bad of [
      '',
      'said 1',
      '2026-11-28 14:00:00Z',
      '2026-11-28T14:00:00.1234567891Z',
      '2026-13-45T99:00:00Z',
    ])
      expect(timestampNanos(bad), bad).toBeNull();
  });

  it('gives Docker seconds and nine digits of nanoseconds', () => {
    expect(sinceOf('2026-11-28T14:00:00.000000042Z')).toBe('1795874400.000000042');
    expect(sinceOf('2026-11-28T14:00:00.5Z')).toBe('1795874400.500000000');
  });
});
