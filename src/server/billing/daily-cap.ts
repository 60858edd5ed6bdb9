// The daily cap on email verifications: a count per account per UTC day, checked and raised in one
// transaction (started by a write, so it holds SQLite's write lock: see ledger.ts), so concurrent
// batches can never pass the cap together.
import { type Kysely, sql } from 'kysely';
import type { PlatformConfig } from '../config.js';
import { ApiError } from '../errors.js';
import { locksRows } from '../store/dialect.js';
import type { Store } from '../store/open.js';
import type { Database } from '../store/schema.js';
import { dayOf, nextUtcMidnight } from './money.js';

export class DailyCap {
  constructor(
    private readonly db: Store,
    private readonly config: PlatformConfig,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Verifications counted today (UTC) for the account. */
  async used(accountId: string): Promise<number> {
    const row = await this.db
      .selectFrom('email_daily_counts')
      .select('count')
      .where('account_id', '=', accountId)
      .where('day', '=', dayOf(this.now()))
      .executeTakeFirst();
    return row?.count ?? 0;
  }

  async take(accountId: string, n: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => this.takeWithin(trx, accountId, n));
  }

  /**
   * take() inside a transaction the caller holds (one that started with a write, see the header);
   * answers the UTC day the verifications were counted on, for giveBackWithin.
   */
  async takeWithin(trx: Kysely<Database>, accountId: string, n: number): Promise<string> {
    if (!Number.isSafeInteger(n) || n < 0) {
      throw new RangeError(`the number of verifications must be a whole number, not ${n}`);
    }
    const now = this.now();
    const day = dayOf(now);
    const inserted = await trx
      .insertInto('email_daily_counts')
      .values({ account_id: accountId, day, count: 0 })
      .onConflict((oc) => oc.columns(['account_id', 'day']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0) {
      // A new day for this account: its earlier days are of no more use.
      await trx
        .deleteFrom('email_daily_counts')
        .where('account_id', '=', accountId)
        .where('day', '<', day)
        .execute();
    }
    const { count } = await trx
      .selectFrom('email_daily_counts')
      .select('count')
      .where('account_id', '=', accountId)
      .where('day', '=', day)
      .$if(locksRows(trx), (query) => query.forUpdate())
      .executeTakeFirstOrThrow();
    const cap = this.config.emailDailyCap;
    if (count + n > cap) {
      const retryAfter = Math.max(1, Math.ceil((nextUtcMidnight(now).getTime() - now.getTime()) / 1000));
      const asked = n === 1 ? '' : ` and this asks for ${n} more`;
      throw new ApiError(
        'daily_cap_reached',
        `the daily cap of ${cap} email verifications is reached (${count} used today${asked}); it resets at midnight UTC`,
        undefined,
        { 'retry-after': String(retryAfter) },
        { daily_cap: cap, used_today: count },
      );
    }
    if (n > 0) {
      await trx
        .updateTable('email_daily_counts')
        .set({ count: count + n })
        .where('account_id', '=', accountId)
        .where('day', '=', day)
        .execute();
    }
    return day;
  }

  /** Gives back `n` verifications counted on `day` (a request that failed), if that day is still kept. */
  async giveBackWithin(trx: Kysely<Database>, accountId: string, n: number, day: string): Promise<void> {
    if (n <= 0) return;
    await trx
      .updateTable('email_daily_counts')
      // max(0, …) in SQLite is greatest(0, …) in PostgreSQL: a CASE is the same in both.
      .set((eb) => ({
        count: sql<number>`case when ${eb.ref('count')} > ${n} then ${eb.ref('count')} - ${n} else 0 end`,
      }))
      .where('account_id', '=', accountId)
      .where('day', '=', day)
      .execute();
  }
}
