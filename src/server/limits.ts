// Per-account limits (config.limits, docs/SECURITY.md): what one account may hold at once, so that no
// tenant can take the platform's memory, sockets or build capacity from the others. Counted things are
// taken as leases, released when what holds them closes; a count at its limit is refused with 429
// `limit_reached`, whose `limit` member names the limit and its value. One AccountLimits per platform,
// found from its config: the routes, the tunnel hub and the runtime all hold that same object.
import type { LimitsConfig, PlatformConfig } from './config.js';
import { ApiError } from './errors.js';
import type { Store } from './store/open.js';
import { KeyedTurns } from './turns.js';

/** The limits that refuse a request (capture memory is shared out, and the body limit is a 413). */
/** A byte count as people read it: `100 MiB`, `512 KiB`, `100 bytes`. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

export type CountedLimit = 'tunnels' | 'projects' | 'builds' | 'streams';

/** What an account at each limit holds, and what the caller can do about it. */
const WHAT: Record<CountedLimit, { holds: (value: number) => string; remedy: string }> = {
  tunnels: {
    holds: (n) => `this account has ${n} tunnel${n === 1 ? '' : 's'} connected, the most it may have at once`,
    remedy:
      'stop a tunnel client (or reconnect one of the same subdomains, which takes its place) and connect again',
  },
  projects: {
    holds: (n) => `this account has ${n} project${n === 1 ? '' : 's'}, the most it may have`,
    remedy: 'delete a project it no longer needs, then create this one',
  },
  builds: {
    holds: (n) =>
      `${n} of this account's projects ${n === 1 ? 'is' : 'are'} being deployed, the most at once`,
    remedy: 'wait until one of those deploys ends (or stop it), then deploy again',
  },
  streams: {
    holds: (n) =>
      `this account has ${n} event stream${n === 1 ? '' : 's'} and WebSocket${n === 1 ? '' : 's'} open, the most at once`,
    remedy: 'close one (a log follow, an agent stream, a traffic feed or a tunnel client), then try again',
  },
};

const FLAGS: Record<CountedLimit, string> = {
  tunnels: '--limit-tunnels',
  projects: '--limit-projects',
  builds: '--limit-builds',
  streams: '--limit-streams',
};

/** 429 limit_reached: which limit, its value, and what the caller can do. */
export function limitReached(name: CountedLimit, value: number): ApiError {
  const what = WHAT[name];
  return new ApiError(
    'limit_reached',
    `${what.holds(value)} (limit "${name}" is ${value}): ${what.remedy}; the platform's operator sets this limit with ${FLAGS[name]}`,
    undefined,
    undefined,
    { limit: { name, value } },
  );
}

/** A counted thing held: release() gives it back (once; calling it again does nothing). */
export interface Lease {
  release(): void;
}

/**
 * Where a count is kept across the nodes of a cluster (cluster/streams.ts): `take` records one more
 * for this node once `admit`, given how many the other live nodes hold, did not throw; `give` records
 * one fewer.
 */
export interface SharedCount {
  take(accountId: string, admit: (elsewhere: number) => void): Promise<void>;
  give(accountId: string): void;
}

/** One count per account, refused past `config.limits[name]` (read on each acquire). */
export class AccountCounter {
  private readonly held = new Map<string, number>();
  /** In a cluster: the count of every node (see take). */
  private shared: SharedCount | null = null;

  constructor(
    private readonly limits: LimitsConfig,
    readonly name: 'tunnels' | 'streams',
  ) {}

  /**
   * Throws 429 limit_reached when the account holds the limit already, here and (`elsewhere`) on the
   * other nodes of a cluster.
   */
  check(accountId: string, elsewhere = 0): void {
    const max = this.limits[this.name];
    if (this.count(accountId) + elsewhere >= max) throw limitReached(this.name, max);
  }

  /**
   * Throws 429 limit_reached when the account, with the one it took already counted here, holds more
   * than the limit once those it holds on the other nodes (`elsewhere`) are added.
   */
  checkHeld(accountId: string, elsewhere: number): void {
    const max = this.limits[this.name];
    if (this.count(accountId) + elsewhere > max) throw limitReached(this.name, max);
  }

  /** Takes one, or throws 429 limit_reached when the account holds the limit already. */
  acquire(accountId: string): Lease {
    this.check(accountId);
    this.held.set(accountId, this.count(accountId) + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const left = (this.held.get(accountId) ?? 1) - 1;
        if (left > 0) this.held.set(accountId, left);
        else this.held.delete(accountId);
      },
    };
  }

  count(accountId: string): number {
    return this.held.get(accountId) ?? 0;
  }

  /** Counts across the nodes of a cluster from now on (take, takeFor). */
  share(shared: SharedCount): void {
    this.shared = shared;
  }

  /**
   * Takes one, or throws 429 limit_reached when the account holds the limit already: on this node, or
   * in a cluster (share) on all its live nodes together.
   */
  async take(accountId: string): Promise<Lease> {
    const local = this.acquire(accountId);
    const shared = this.shared;
    if (!shared) return local;
    try {
      await shared.take(accountId, (elsewhere) => this.checkHeld(accountId, elsewhere));
    } catch (error) {
      local.release();
      throw error;
    }
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        local.release();
        shared.give(accountId);
      },
    };
  }

  /**
   * take() for a connection, given back when it closes; null when it closed while it was being counted
   * (in a cluster, a round trip to the store): given back already, and nothing more is to be done for it.
   */
  async takeFor(
    accountId: string,
    connection: { once(event: 'close', listener: () => void): unknown },
  ): Promise<Lease | null> {
    let lease: Lease | null = null;
    let closed = false;
    connection.once('close', () => {
      closed = true;
      lease?.release();
    });
    lease = await this.take(accountId);
    if (!closed) return lease;
    lease.release();
    return null;
  }
}

/**
 * How long, at most, a deploy that passed the build check counts before its project shows `building` in
 * the store (the runtime ends the reservation as soon as it does): two deploys checked at the same
 * moment must not both take the last slot.
 */
const BUILD_RESERVATION_MS = 2_000;

export class AccountLimits {
  readonly tunnels: AccountCounter;
  readonly streams: AccountCounter;
  /** Per account: the project creation in progress, so that two at once cannot both pass the count. */
  private readonly creating = new KeyedTurns();
  /** Project id → the account and until when its deploy counts as building without the store saying so. */
  private readonly starting = new Map<string, { accountId: string; until: number }>();

  constructor(readonly config: LimitsConfig) {
    this.tunnels = new AccountCounter(config, 'tunnels');
    this.streams = new AccountCounter(config, 'streams');
  }

  /** Runs `create` if the account has fewer projects than its limit, one creation at a time per account. */
  createProject<T>(db: Store, accountId: string, create: () => Promise<T>): Promise<T> {
    return this.creating.run(accountId, async () => {
      const { count } = await db
        .selectFrom('projects')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('account_id', '=', accountId)
        .executeTakeFirstOrThrow();
      if (Number(count) >= this.config.projects) throw limitReached('projects', this.config.projects);
      return create();
    });
  }

  /**
   * Before a deploy of `projectId` starts: refused while the account's other projects being deployed
   * are at the limit (a redeploy of a project already building replaces its deploy, so it is not counted).
   */
  async assertBuildSlot(db: Store, accountId: string, projectId: string): Promise<void> {
    const rows = await db
      .selectFrom('projects')
      .select('id')
      .where('account_id', '=', accountId)
      .where('status', '=', 'building')
      .where('id', '!=', projectId)
      .execute();
    // From here on nothing waits: the count and the reservation are one step.
    const now = Date.now();
    const building = new Set(rows.map((row) => row.id));
    for (const [id, reservation] of this.starting) {
      if (reservation.until <= now) this.starting.delete(id);
      else if (reservation.accountId === accountId && id !== projectId) building.add(id);
    }
    if (building.size >= this.config.builds) throw limitReached('builds', this.config.builds);
    this.starting.set(projectId, { accountId, until: now + BUILD_RESERVATION_MS });
  }

  /** The deploy that passed assertBuildSlot now shows in the store (or never will): its reservation ends. */
  releaseBuildSlot(projectId: string): void {
    this.starting.delete(projectId);
  }
}

const perPlatform = new WeakMap<PlatformConfig, AccountLimits>();

/** The limits of the platform built from `config`. */
export function accountLimits(config: PlatformConfig): AccountLimits {
  let limits = perPlatform.get(config);
  if (!limits) {
    limits = new AccountLimits(config.limits);
    perPlatform.set(config, limits);
  }
  return limits;
}
