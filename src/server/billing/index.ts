// Billing: the ledger of allowance, top-ups and usage, and the daily cap on email verifications.
export { LEDGER_KINDS, Ledger } from './ledger.js';
export { DailyCap } from './daily-cap.js';
export { IDEMPOTENCY_TTL_MS, MeteredRequests, canonicalHash, parseIdempotencyKey } from './idempotency.js';
export {
  MICROS_PER_USD,
  formatUsd,
  microsToUsd,
  nextMonthStart,
  nextUtcMidnight,
  usdToMicros,
} from './money.js';
