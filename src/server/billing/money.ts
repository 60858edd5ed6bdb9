// Money and billing periods. Inside the platform every amount is an integer number of micro-dollars,
// so sums never drift; US dollars (numbers) exist only at the API edge.

export const MICROS_PER_USD = 1_000_000;

/** US dollars to micro-dollars, rounded to the nearest micro-dollar. */
export function usdToMicros(usd: number): number {
  if (!Number.isFinite(usd)) throw new RangeError(`not an amount of dollars: ${usd}`);
  return Math.round(usd * MICROS_PER_USD);
}

/** Micro-dollars to US dollars (exact for every amount the ledger can hold). */
export function microsToUsd(micros: number): number {
  return micros / MICROS_PER_USD;
}

/** `$12.34`, or more decimals when a fraction of a cent matters (`$0.001`). */
export function formatUsd(micros: number): string {
  const usd = microsToUsd(micros);
  const cents = usd.toFixed(2);
  return `$${Number(cents) === usd ? cents : String(usd)}`;
}

/** The monthly allowance period an instant falls in: `YYYY-MM`, UTC. */
export function periodOf(now: Date): string {
  return now.toISOString().slice(0, 7);
}

/** The first instant of the next calendar month, UTC: when monthly allowances renew. */
export function nextMonthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

/** The UTC day an instant falls in: `YYYY-MM-DD`. */
export function dayOf(now: Date): string {
  return now.toISOString().slice(0, 10);
}

/** The next midnight UTC: when daily caps reset. */
export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}

export function assertMicros(micros: number, what: string): void {
  if (!Number.isSafeInteger(micros) || micros <= 0) {
    throw new RangeError(`${what} must be a positive whole number of micro-dollars, not ${micros}`);
  }
}
