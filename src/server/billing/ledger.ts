// The billing ledger: each account has a monthly allowance (granted per plan, per calendar month UTC)
// and a top-up that carries over; usage draws the allowance first, then the top-up, and never takes the
// balance below zero. Every change is an append-only ledger entry written in the same transaction as
// the balances row it moves, so the entries always add up to the balance.
//
// Concurrency: Kysely's SQLite driver has one connection behind a mutex and a transaction holds it to
// the end, so transactions of this process run one after another. Each transaction here starts with a
// write, which takes SQLite's write lock before anything is read: a `wharf admin credit` in another
// process waits (busy_timeout) instead of interleaving. The monthly grant is therefore decided once:
// two concurrent first uses in a new month see each other's grant, and its idempotency key
// (`wharf:allowance-grant:<YYYY-MM>`) is unique per account besides.
import { type Transaction, sql } from 'kysely';
import type { Balance, UsageEntry } from '../../shared/api/account.js';
import type { PlatformConfig } from '../config.js';
import { ApiError } from '../errors.js';
import { newId } from '../ids.js';
import { locksRows } from '../store/dialect.js';
import type { Store } from '../store/open.js';
import type { BalancesTable, Database } from '../store/schema.js';
import { assertMicros, formatUsd, microsToUsd, nextMonthStart, periodOf, usdToMicros } from './money.js';

export { DailyCap } from './daily-cap.js';
export { MICROS_PER_USD, formatUsd, microsToUsd, usdToMicros } from './money.js';

/** Kinds of entries the ledger writes itself; usage entries carry the kind their caller gives. */
export const LEDGER_KINDS = {
  allowanceGrant: 'allowance_grant',
  allowanceExpiry: 'allowance_expiry',
  topUp: 'topup',
} as const;

/** Idempotency keys the ledger uses itself start with this; callers' keys should not. */
const INTERNAL_KEY_PREFIX = 'wharf:';

const DEFAULT_USAGE_LIMIT = 100;
const MAX_USAGE_LIMIT = 1_000;

export type LedgerTransaction = Transaction<Database>;
type Trx = LedgerTransaction;

interface EntryInput {
  accountId: string;
  at: string;
  kind: string;
  allowanceMicros: number;
  topupMicros: number;
  period: string;
  description: string;
  idempotencyKey: string;
}

export class Ledger {
  constructor(
    /** The platform's store (idempotency.ts keeps its reservations there too). */
    readonly db: Store,
    private readonly config: PlatformConfig,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async balance(accountId: string): Promise<Balance> {
    return this.locked(accountId, async (_trx, state, now) => toBalance(state, now));
  }

  async availableMicros(accountId: string): Promise<number> {
    return this.locked(accountId, async (_trx, state) => available(state));
  }

  async charge(input: {
    accountId: string;
    micros: number;
    kind: string;
    description: string;
    idempotencyKey: string;
  }): Promise<{ id: string; replayed: boolean }> {
    return this.locked(input.accountId, async (trx, state, now) => chargeWithin(trx, state, now, input));
  }

  /**
   * Runs `work` in the account's ledger transaction (see locked): what it writes besides (an
   * idempotency reservation, a stored answer) commits or rolls back with the balance it reads.
   */
  withBalance<T>(
    accountId: string,
    work: (trx: Trx, state: BalancesTable, now: Date) => Promise<T>,
  ): Promise<T> {
    return this.locked(accountId, work);
  }

  async assertAvailable(accountId: string, micros: number): Promise<void> {
    if (!Number.isSafeInteger(micros) || micros < 0) {
      throw new RangeError(`micros must be a whole number of micro-dollars, not ${micros}`);
    }
    await this.locked(accountId, async (_trx, state, now) => {
      const left = available(state);
      if (micros > left) throw insufficientBalance(micros, left, now);
    });
  }

  async topUp(input: {
    accountId: string;
    micros: number;
    description: string;
    idempotencyKey?: string;
  }): Promise<{ id: string }> {
    assertMicros(input.micros, 'a top-up');
    return this.locked(input.accountId, async (trx, state, now) => {
      if (input.idempotencyKey !== undefined) {
        const existing = await entryFor(trx, input.accountId, input.idempotencyKey);
        if (existing) return { id: existing };
      }
      const id = newId('led');
      await insertEntry(
        trx,
        {
          accountId: input.accountId,
          at: now.toISOString(),
          kind: LEDGER_KINDS.topUp,
          allowanceMicros: 0,
          topupMicros: input.micros,
          period: periodOf(now),
          description: input.description,
          idempotencyKey: input.idempotencyKey ?? `${INTERNAL_KEY_PREFIX}topup:${id}`,
        },
        id,
      );
      await trx
        .updateTable('balances')
        .set({ topup_micros: state.topup_micros + input.micros, updated_at: now.toISOString() })
        .where('account_id', '=', input.accountId)
        .execute();
      return { id };
    });
  }

  /** The account's ledger entries, newest first (a new month's grant included once it is due). */
  async usage(accountId: string, limit = DEFAULT_USAGE_LIMIT): Promise<UsageEntry[]> {
    const take = Math.max(1, Math.min(MAX_USAGE_LIMIT, Math.floor(limit)));
    return this.locked(accountId, async (trx) => {
      const rows = await trx
        .selectFrom('ledger_entries')
        .select(['id', 'at', 'kind', 'amount_micros', 'description'])
        .where('account_id', '=', accountId)
        .orderBy('at', 'desc')
        .orderBy('id', 'desc')
        .limit(take)
        .execute();
      return rows.map((row) => ({
        id: row.id,
        at: row.at,
        kind: row.kind,
        amount_usd: microsToUsd(row.amount_micros),
        description: row.description,
      }));
    });
  }

  /**
   * Runs `work` in a transaction on the account's balance, rolled over to the current month: the
   * balances row is created when missing (that write comes first, see the header), the previous
   * month's unused allowance expires and this month's is granted, once.
   */
  private locked<T>(
    accountId: string,
    work: (trx: Trx, state: BalancesTable, now: Date) => Promise<T>,
  ): Promise<T> {
    return this.db.transaction().execute(async (trx) => {
      const now = this.now();
      const at = now.toISOString();
      await sql`insert into balances (account_id, period, allowance_micros, allowance_used_micros, topup_micros, updated_at)
        select id, null, 0, 0, 0, ${at} from accounts where id = ${accountId}
        on conflict (account_id) do nothing`.execute(trx);
      const state = await trx
        .selectFrom('balances')
        .selectAll()
        .where('account_id', '=', accountId)
        .$if(locksRows(trx), (query) => query.forUpdate())
        .executeTakeFirst();
      if (!state) throw new ApiError('not_found', `account ${accountId} was not found`);
      const period = periodOf(now);
      if (state.period === null || state.period < period) {
        await this.rollOver(trx, state, period, at);
      }
      return work(trx, state, now);
    });
  }

  /** Expires the old period's unused allowance and grants this one's; updates `state` in place. */
  private async rollOver(trx: Trx, state: BalancesTable, period: string, at: string): Promise<void> {
    const unused = state.allowance_micros - state.allowance_used_micros;
    if (state.period !== null && unused > 0) {
      await insertEntry(trx, {
        accountId: state.account_id,
        at,
        kind: LEDGER_KINDS.allowanceExpiry,
        allowanceMicros: -unused,
        topupMicros: 0,
        period: state.period,
        description: `Unused allowance of ${state.period} expired`,
        idempotencyKey: `${INTERNAL_KEY_PREFIX}allowance-expiry:${state.period}`,
      });
    }
    const account = await trx
      .selectFrom('accounts')
      .select('plan')
      .where('id', '=', state.account_id)
      .executeTakeFirstOrThrow();
    const grant = usdToMicros(this.config.plans[account.plan]?.allowance_usd ?? 0);
    if (grant > 0) {
      await insertEntry(trx, {
        accountId: state.account_id,
        at,
        kind: LEDGER_KINDS.allowanceGrant,
        allowanceMicros: grant,
        topupMicros: 0,
        period,
        description: `Monthly allowance of ${period} (plan ${account.plan})`,
        idempotencyKey: `${INTERNAL_KEY_PREFIX}allowance-grant:${period}`,
      });
    }
    await trx
      .updateTable('balances')
      .set({ period, allowance_micros: grant, allowance_used_micros: 0, updated_at: at })
      .where('account_id', '=', state.account_id)
      .execute();
    state.period = period;
    state.allowance_micros = grant;
    state.allowance_used_micros = 0;
    state.updated_at = at;
  }
}

/** A usage charge inside a ledger transaction: once per idempotency key, never below zero (402). */
export async function chargeWithin(
  trx: Trx,
  state: BalancesTable,
  now: Date,
  input: { accountId: string; micros: number; kind: string; description: string; idempotencyKey: string },
): Promise<{ id: string; replayed: boolean }> {
  assertMicros(input.micros, 'a charge');
  if (input.idempotencyKey === '') throw new RangeError('a charge needs an idempotency key');
  const existing = await entryFor(trx, input.accountId, input.idempotencyKey);
  if (existing) return { id: existing, replayed: true };
  const left = available(state);
  if (input.micros > left) throw insufficientBalance(input.micros, left, now);
  const fromAllowance = Math.min(input.micros, state.allowance_micros - state.allowance_used_micros);
  const fromTopup = input.micros - fromAllowance;
  const id = await insertEntry(trx, {
    accountId: input.accountId,
    at: now.toISOString(),
    kind: input.kind,
    allowanceMicros: -fromAllowance,
    topupMicros: -fromTopup,
    period: periodOf(now),
    description: input.description,
    idempotencyKey: input.idempotencyKey,
  });
  await trx
    .updateTable('balances')
    .set({
      allowance_used_micros: state.allowance_used_micros + fromAllowance,
      topup_micros: state.topup_micros - fromTopup,
      updated_at: now.toISOString(),
    })
    .where('account_id', '=', input.accountId)
    .execute();
  state.allowance_used_micros += fromAllowance;
  state.topup_micros -= fromTopup;
  return { id, replayed: false };
}

/** Throws 402 unless the balance covers `micros`. */
export function assertCovers(state: BalancesTable, micros: number, now: Date): void {
  const left = available(state);
  if (micros > left) throw insufficientBalance(micros, left, now);
}

/** The id of the account's entry written under this idempotency key, if one was. */
async function entryFor(trx: Trx, accountId: string, idempotencyKey: string): Promise<string | undefined> {
  const entry = await trx
    .selectFrom('ledger_entries')
    .select('id')
    .where('account_id', '=', accountId)
    .where('idempotency_key', '=', idempotencyKey)
    .executeTakeFirst();
  return entry?.id;
}

async function insertEntry(trx: Trx, entry: EntryInput, id = newId('led')): Promise<string> {
  await trx
    .insertInto('ledger_entries')
    .values({
      id,
      account_id: entry.accountId,
      at: entry.at,
      kind: entry.kind,
      amount_micros: entry.allowanceMicros + entry.topupMicros,
      allowance_micros: entry.allowanceMicros,
      topup_micros: entry.topupMicros,
      period: entry.period,
      description: entry.description,
      idempotency_key: entry.idempotencyKey,
    })
    .execute();
  return id;
}

function available(state: BalancesTable): number {
  return state.allowance_micros - state.allowance_used_micros + state.topup_micros;
}

function toBalance(state: BalancesTable, now: Date): Balance {
  return {
    allowance_usd: microsToUsd(state.allowance_micros),
    allowance_used_usd: microsToUsd(state.allowance_used_micros),
    allowance_resets_at: nextMonthStart(now).toISOString(),
    topup_usd: microsToUsd(state.topup_micros),
    available_usd: microsToUsd(available(state)),
  };
}

function insufficientBalance(required: number, left: number, now: Date): ApiError {
  const renews = nextMonthStart(now).toISOString().slice(0, 10);
  return new ApiError(
    'insufficient_balance',
    `this costs ${formatUsd(required)} but only ${formatUsd(left)} is available: the monthly allowance and the top-up do not cover it (top up, or wait for the allowance to renew on ${renews})`,
    undefined,
    undefined,
    { required_usd: microsToUsd(required), available_usd: microsToUsd(left) },
  );
}
