// An account's open streams (event streams, WebSockets, tunnel connections) counted across the nodes
// of a cluster (account_streams): each node keeps its own count per account in the store, and a new
// stream is admitted against the sum of the live nodes' counts, counted and recorded as one step under
// the account's advisory lock, so two streams opening at once on two nodes cannot both take the last slot.
import { sql } from 'kysely';
import type { SharedCount } from '../limits.js';
import type { Store } from '../store/open.js';
import type { Cluster } from './cluster.js';

export class ClusterStreams implements SharedCount {
  constructor(
    private readonly db: Store,
    private readonly cluster: Cluster,
    private readonly onError: (error: Error) => void,
  ) {}

  async take(accountId: string, admit: (elsewhere: number) => void): Promise<void> {
    const nodeId = this.cluster.nodeId;
    const others = [...(await this.cluster.liveNodes()).keys()].filter((id) => id !== nodeId);
    await this.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`wharf streams ${accountId}`}, 0))`.execute(
        trx,
      );
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
  }

  give(accountId: string): void {
    this.db
      .updateTable('account_streams')
      .set({ count: sql`count - 1` })
      .where('node_id', '=', this.cluster.nodeId)
      .where('account_id', '=', accountId)
      .execute()
      .catch((error: unknown) => this.onError(error as Error));
  }
}
