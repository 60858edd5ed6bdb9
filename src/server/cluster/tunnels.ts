// Which node holds each connected tunnel (tunnel_holders), so that a public request, a replay or a live
// feed that reaches another node is forwarded to the holder. A client that reconnects to another node
// (its node died, or a load balancer sent it elsewhere) takes its subdomain over there: the row moves,
// and the old holder, if alive, is told to let its connection go.
import type { Kysely, Transaction } from 'kysely';
import { lockAccount } from '../store/dialect.js';
import type { Store } from '../store/open.js';
import type { Database } from '../store/schema.js';
import type { Cluster } from './cluster.js';

export interface Holder {
  node: string;
  /** How to reach the holding node. */
  url: string;
  accountId: string;
  tunnelId: string;
}

const HOLDER_TTL_MS = 1_000;

export class TunnelHolders {
  /** Subdomain → its holder elsewhere (or null: none alive), briefly; events drop entries at once. */
  private readonly cache = new Map<string, { holder: Holder | null; until: number }>();

  constructor(
    private readonly db: Store,
    private readonly cluster: Cluster,
  ) {
    cluster.on((event) => {
      if (event.kind === 'tunnel-taken' || event.kind === 'tunnel-left') this.cache.delete(event.subdomain);
    });
    cluster.onResync(() => this.cache.clear());
  }

  /**
   * The id the tunnel had on the node that held it before, when the same account held it: a client
   * that moves to this node keeps its tunnel's id.
   */
  async previousId(subdomain: string, accountId: string): Promise<string | null> {
    if (!this.cluster.clustered) return null;
    const row = await this.db
      .selectFrom('tunnel_holders')
      .select(['tunnel_id', 'account_id'])
      .where('subdomain', '=', subdomain)
      .executeTakeFirst();
    return row?.account_id === accountId ? row.tunnel_id : null;
  }

  /**
   * This node holds the tunnel now: recorded, and any other holder is told to let it go. `admit`, for a
   * new connection, is given how many of the account's tunnels other live nodes hold (this subdomain
   * aside) and throws to refuse it: counted and recorded as one step under the account's lock, so two
   * connects at once on two nodes cannot both take its last slot.
   */
  async hold(
    subdomain: string,
    accountId: string,
    tunnelId: string,
    admit?: (elsewhere: number) => void,
  ): Promise<void> {
    if (!this.cluster.clustered) return;
    const row = {
      subdomain,
      account_id: accountId,
      tunnel_id: tunnelId,
      node_id: this.cluster.nodeId,
      connected_at: new Date().toISOString(),
    };
    const others = admit ? await this.otherLiveNodes() : [];
    await this.db.transaction().execute(async (trx) => {
      if (admit) {
        await lockAccount(trx, 'tunnels', accountId);
        admit(others.length === 0 ? 0 : await countHeld(trx, accountId, subdomain, others));
      }
      await trx
        .insertInto('tunnel_holders')
        .values(row)
        .onConflict((c) =>
          c.column('subdomain').doUpdateSet({
            account_id: row.account_id,
            tunnel_id: row.tunnel_id,
            node_id: row.node_id,
            connected_at: row.connected_at,
          }),
        )
        .execute();
    });
    this.cluster.publish({ kind: 'tunnel-taken', subdomain, node: this.cluster.nodeId });
  }

  /**
   * This node's rows were lost (it was taken for dead, cluster.ts): the tunnels it still holds are
   * recorded again, unless another node took one meanwhile (its client reconnected there; this node is
   * told to let it go). `stillHeld` is asked once a row is written: a tunnel whose client left while it
   * was being written is released again, since its release may have come first.
   */
  async restore(
    tunnels: Iterable<{ subdomain: string; accountId: string; id: string; connectedAt: string }>,
    stillHeld: (subdomain: string, tunnelId: string) => boolean,
  ): Promise<void> {
    for (const tunnel of tunnels) {
      await this.db
        .insertInto('tunnel_holders')
        .values({
          subdomain: tunnel.subdomain,
          account_id: tunnel.accountId,
          tunnel_id: tunnel.id,
          node_id: this.cluster.nodeId,
          connected_at: tunnel.connectedAt,
        })
        .onConflict((c) => c.column('subdomain').doNothing())
        .execute();
      if (!stillHeld(tunnel.subdomain, tunnel.id)) await this.release(tunnel.subdomain, tunnel.id);
      this.cache.delete(tunnel.subdomain);
    }
  }

  /**
   * The tunnel's client left this node: no node holds it now (unless another does by now). The row
   * stays a while without a node, so that the client keeps its tunnel's id wherever it reconnects.
   */
  async release(subdomain: string, tunnelId: string): Promise<void> {
    if (!this.cluster.clustered) return;
    await this.db
      .updateTable('tunnel_holders')
      .set({ node_id: '' })
      .where('subdomain', '=', subdomain)
      .where('node_id', '=', this.cluster.nodeId)
      .where('tunnel_id', '=', tunnelId)
      .execute();
    this.cluster.publish({ kind: 'tunnel-left', subdomain, node: this.cluster.nodeId });
  }

  /**
   * How many of the account's tunnels other live nodes hold, `subdomain` aside: its tunnel limit is
   * the account's across the cluster.
   */
  async heldElsewhere(accountId: string, subdomain: string): Promise<number> {
    if (!this.cluster.clustered) return 0;
    const others = await this.otherLiveNodes();
    return others.length === 0 ? 0 : countHeld(this.db, accountId, subdomain, others);
  }

  private async otherLiveNodes(): Promise<string[]> {
    return [...(await this.cluster.liveNodes()).keys()].filter((id) => id !== this.cluster.nodeId);
  }

  /** The live node other than this one that holds `subdomain`, or null. */
  async elsewhere(subdomain: string): Promise<Holder | null> {
    if (!this.cluster.clustered) return null;
    const cached = this.cache.get(subdomain);
    if (cached && cached.until > Date.now()) return cached.holder;
    const row = await this.db
      .selectFrom('tunnel_holders')
      .selectAll()
      .where('subdomain', '=', subdomain)
      .executeTakeFirst();
    const url = row ? await this.cluster.urlOf(row.node_id) : null;
    const holder =
      row && url ? { node: row.node_id, url, accountId: row.account_id, tunnelId: row.tunnel_id } : null;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(subdomain, { holder, until: Date.now() + HOLDER_TTL_MS });
    return holder;
  }

  /** The live nodes other than this one holding tunnels of `accountId`, by URL. */
  async nodesHolding(accountId: string): Promise<string[]> {
    if (!this.cluster.clustered) return [];
    const rows = await this.db
      .selectFrom('tunnel_holders')
      .select('node_id')
      .distinct()
      .where('account_id', '=', accountId)
      .where('node_id', '!=', this.cluster.nodeId)
      .execute();
    const urls = await Promise.all(rows.map((row) => this.cluster.urlOf(row.node_id)));
    return urls.filter((url): url is string => url !== null);
  }
}

/** How many of the account's tunnels `nodes` hold, `subdomain` aside. */
async function countHeld(
  db: Kysely<Database> | Transaction<Database>,
  accountId: string,
  subdomain: string,
  nodes: string[],
): Promise<number> {
  const row = await db
    .selectFrom('tunnel_holders')
    .select(({ fn }) => fn.countAll<string>().as('n'))
    .where('account_id', '=', accountId)
    .where('subdomain', '!=', subdomain)
    .where('node_id', 'in', nodes)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
