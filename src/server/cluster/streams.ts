// An account's open streams (event streams, WebSockets, tunnel connections) counted across the nodes
// of a cluster (account_streams): each node keeps its own count per account in the store, and a new
// stream is admitted against the sum of the live nodes' counts, counted and recorded as one step under
// the account's advisory lock, so two streams opening at once on two nodes cannot both take the last slot.
//
// A node taken for dead loses its rows (cluster.ts); should it come back, it writes them again from
// what it recorded. Its writes to one account's row go one at a time, so that what it recorded and the
// row move together and a restore never lands between a count and its record.
import { sql } from 'kysely';
import type { SharedCount } from '../limits.js';
import { lockAccount } from '../store/dialect.js';
import type { Store } from '../store/open.js';
import { KeyedTurns } from '../turns.js';
import type { Cluster } from './cluster.js';

export class ClusterStreams implements SharedCount {
  /** The streams this node has recorded in the store, per account (none: no entry). */
  private readonly recorded = new Map<string, number>();
  /** This node's writes to an account's row, one at a time. */
  private readonly writing = new KeyedTurns();

  constructor(
    private readonly db: Store,
    private readonly cluster: Cluster,
    private readonly onError: (error: Error) => void,
  ) {
    cluster.onRevived(() => this.restore());
  }

  take(accountId: string, admit: (elsewhere: number) => void): Promise<void> {
    return this.writing.run(accountId, async () => {
      const nodeId = this.cluster.nodeId;
      const others = [...(await this.cluster.liveNodes()).keys()].filter((id) => id !== nodeId);
      await this.db.transaction().execute(async (trx) => {
        await lockAccount(trx, 'streams', accountId);
        let elsewhere = 0;
        if (others.length > 0) {
          const row = await trx
            .selectFrom('account_streams')
            .select(({ fn }) => fn.sum<string | number | null>('count').as('n'))
            .where('account_id', '=', accountId)
            .where('node_id', 'in', others)
            .executeTakeFirst();
          elsewhere = Number(row?.n ?? 0);
        }
        admit(elsewhere);
        await trx
          .insertInto('account_streams')
          .values({ node_id: nodeId, account_id: accountId, count: 1 })
          .onConflict((c) =>
            c.columns(['node_id', 'account_id']).doUpdateSet({ count: sql`account_streams.count + 1` }),
          )
          .execute();
      });
      this.record(accountId, 1);
    });
  }

  give(accountId: string): void {
    this.writing
      .run(accountId, async () => {
        // Given back here whether or not the store takes it: a restore writes what this node holds.
        this.record(accountId, -1);
        await this.db
          .updateTable('account_streams')
          .set({ count: sql`count - 1` })
          .where('node_id', '=', this.cluster.nodeId)
          .where('account_id', '=', accountId)
          .execute();
      })
      .catch((error: unknown) => this.onError(error as Error));
  }

  /** How many streams of `accountId` this node has recorded in the store. */
  private countOf(accountId: string): number {
    return this.recorded.get(accountId) ?? 0;
  }

  /** This node's rows were lost (taken for dead): written again, each account's in its turn. */
  private restore(): void {
    for (const accountId of this.recorded.keys()) {
      this.writing
        .run(accountId, async () => {
          const count = this.countOf(accountId);
          if (count === 0) return;
          await this.db
            .insertInto('account_streams')
            .values({ node_id: this.cluster.nodeId, account_id: accountId, count })
            .onConflict((c) => c.columns(['node_id', 'account_id']).doUpdateSet({ count }))
            .execute();
        })
        .catch((error: unknown) => this.onError(error as Error));
    }
  }

  private record(accountId: string, change: number): void {
    const count = this.countOf(accountId) + change;
    if (count > 0) this.recorded.set(accountId, count);
    else this.recorded.delete(accountId);
  }
}
