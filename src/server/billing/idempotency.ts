// Metered requests and their Idempotency-Key (API.md §1, README "Email verification").
//
// begin() runs in one ledger transaction, before any work: it looks the key up (scoped to the account
// and the endpoint), checks that the balance covers the price (402), counts the request toward the
// daily cap (429) and reserves the key (`in_flight`). complete() runs in one ledger transaction too: the
// charge and the stored answer commit together, so an answer is never stored uncharged nor charged
// without being stored. The ledger transaction starts with a write (ledger.ts), so two requests with the
// same key cannot both find it free: the second sees the reservation and is answered 409.
//
// The same key again: with the same canonical body, the stored answer (same status and JSON) while it
// lasts (24 h); with another body, 422 idempotency_key_reused; while the first is still running, 409.
//
// A failed first attempt stores nothing. Whatever it failed with (402 when the balance ran out between
// the check and the charge, a 5xx, a dropped DNS server), release() deletes its reservation and gives
// back its daily-cap count, and nothing was charged: a retry with the same key then runs anew, which is
// what a client retrying after an error wants. Only a success is stored and replayed.
import { createHash } from 'node:crypto';
import { ApiError } from '../errors.js';
import { randomBase62 } from '../ids.js';
import type { DailyCap } from './daily-cap.js';
import { type Ledger, assertCovers, chargeWithin } from './ledger.js';

/** Which platform nodes are alive, this one always included (cluster/cluster.ts): alone, this one. */
export interface NodeLiveness {
  readonly nodeId: string;
  liveNodes(): Promise<Map<string, string>>;
}

/** How long a stored answer is replayed; after that the key is free again (and charged anew). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60_000;
/**
 * How long a reservation holds when its request never finishes (the platform stopped mid-request; those
 * are also released at start): past it the key is free again.
 */
const IN_FLIGHT_LEASE_MS = 60 * 60_000;
/** Expired rows deleted per begin(), so the clean-up never holds the write lock long. */
const SWEEP_ROWS = 100;

const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;

/** The `Idempotency-Key` header: null when absent; 400 unless 1–255 printable ASCII characters. */
export function parseIdempotencyKey(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  const given = Array.isArray(header) ? header.join(', ') : header;
  if (!KEY_PATTERN.test(given) || given.trim() === '') {
    throw new ApiError(
      'bad_request',
      'the Idempotency-Key header must be 1 to 255 printable ASCII characters (a UUID does well)',
    );
  }
  return given;
}

/** SHA-256 of a JSON value with its object keys sorted: equal for equal requests, however ordered. */
export function canonicalHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export interface MeteredRequest {
  accountId: string;
  /** The endpoint the key is scoped to, e.g. `email/verify`. */
  endpoint: string;
  /** The client's Idempotency-Key, or null when it sent none. */
  key: string | null;
  /** canonicalHash of what the request asks for. */
  bodyHash: string;
  /** The most the request may be charged: checked against the balance before any work. */
  priceMicros: number;
  /** How much the request counts toward the daily cap. */
  capCount: number;
}

export interface Reservation {
  readonly request: MeteredRequest;
  /** Names the request's ledger entry: unique per reservation, so a key reused after expiry pays again. */
  readonly id: string;
  /** The UTC day the daily cap counted it on. */
  readonly day: string;
}

export type Begun =
  { kind: 'run'; reservation: Reservation } | { kind: 'replay'; status: number; body: unknown };

export interface Outcome {
  status: number;
  body: unknown;
  /** What to charge (nothing when null or 0). */
  charge: { micros: number; kind: string; description: string } | null;
}

export class MeteredRequests {
  constructor(
    private readonly ledger: Ledger,
    private readonly dailyCap: DailyCap,
    private readonly nodes: NodeLiveness,
  ) {}

  async begin(request: MeteredRequest): Promise<Begun> {
    // Read before the ledger transaction, which holds the account's balance row meanwhile.
    const live = request.key === null ? null : await this.nodes.liveNodes();
    return this.ledger.withBalance(request.accountId, async (trx, state, now) => {
      const at = now.toISOString();
      await trx
        .deleteFrom('idempotency_keys')
        .where(
          'id',
          'in',
          trx.selectFrom('idempotency_keys').select('id').where('expires_at', '<=', at).limit(SWEEP_ROWS),
        )
        .execute();
      if (request.key !== null) {
        let stored = await trx
          .selectFrom('idempotency_keys')
          .select(['id', 'body_hash', 'state', 'status', 'response', 'node_id'])
          .where('account_id', '=', request.accountId)
          .where('endpoint', '=', request.endpoint)
          .where('key', '=', request.key)
          .executeTakeFirst();
        // Reserved by a node that died running it: nothing was charged or stored (complete() does both
        // at once), so the request runs again here.
        if (stored?.state === 'in_flight' && !live?.has(stored.node_id)) {
          await trx.deleteFrom('idempotency_keys').where('id', '=', stored.id).execute();
          stored = undefined;
        }
        if (stored) {
          if (stored.body_hash !== request.bodyHash) {
            throw new ApiError(
              'idempotency_key_reused',
              `this Idempotency-Key was already used with a different request to ${request.endpoint}: use a new key for a new request`,
            );
          }
          if (stored.state !== 'done' || stored.status === null || stored.response === null) {
            throw new ApiError(
              'conflict',
              'a request with this Idempotency-Key is still in progress: retry once it has finished to get its answer',
              undefined,
              { 'retry-after': '1' },
            );
          }
          return { kind: 'replay', status: stored.status, body: JSON.parse(stored.response) as unknown };
        }
      }
      assertCovers(state, request.priceMicros, now);
      const day = await this.dailyCap.takeWithin(trx, request.accountId, request.capCount);
      const id = randomBase62(24);
      if (request.key !== null) {
        await trx
          .insertInto('idempotency_keys')
          .values({
            account_id: request.accountId,
            endpoint: request.endpoint,
            key: request.key,
            id,
            body_hash: request.bodyHash,
            state: 'in_flight',
            node_id: this.nodes.nodeId,
            status: null,
            response: null,
            created_at: at,
            expires_at: new Date(now.getTime() + IN_FLIGHT_LEASE_MS).toISOString(),
          })
          .execute();
      }
      return { kind: 'run', reservation: { request, id, day } };
    });
  }

  /** Charges the outcome and stores it for replay, in one transaction (402 rolls both back). */
  async complete(reservation: Reservation, outcome: Outcome): Promise<void> {
    const { request, id } = reservation;
    await this.ledger.withBalance(request.accountId, async (trx, state, now) => {
      if (outcome.charge !== null && outcome.charge.micros > 0) {
        await chargeWithin(trx, state, now, {
          accountId: request.accountId,
          ...outcome.charge,
          idempotencyKey: `${request.endpoint}:${id}`,
        });
      }
      if (request.key === null) return;
      await trx
        .updateTable('idempotency_keys')
        .set({
          state: 'done',
          status: outcome.status,
          response: JSON.stringify(outcome.body),
          expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS).toISOString(),
        })
        .where('id', '=', id)
        .execute();
    });
  }

  /** A request that failed: its key is free again and its daily-cap count given back (see the header). */
  async release(reservation: Reservation): Promise<void> {
    const { request, id, day } = reservation;
    await this.ledger.withBalance(request.accountId, async (trx) => {
      await this.dailyCap.giveBackWithin(trx, request.accountId, request.capCount, day);
      await trx
        .deleteFrom('idempotency_keys')
        .where('id', '=', id)
        .where('state', '=', 'in_flight')
        .execute();
    });
  }

  /**
   * Frees the reservations of requests that nodes no longer alive left unfinished (alone: every one a
   * stopped platform left); run before serving. Those of the other live nodes of a cluster stay.
   */
  async releaseAbandoned(): Promise<void> {
    const live = [...(await this.nodes.liveNodes()).keys()];
    await this.ledger.db
      .deleteFrom('idempotency_keys')
      .where('state', '=', 'in_flight')
      .where('node_id', 'not in', live)
      .execute();
  }
}
