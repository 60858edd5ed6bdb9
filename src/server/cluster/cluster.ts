// Several platform nodes on one PostgreSQL database (`--node-url`, with `--database-url` and the shared
// secret in WHARF_SECRET): every node answers any API call and any public request. What a node must
// know of the others travels through the database:
//
// - the nodes alive: each writes its row in cluster_nodes every HEARTBEAT_MS; a node not seen for
//   NODE_LOST_MS is taken for dead (the tunnels it held are then offline until their clients reconnect,
//   to whichever node);
// - events (a route changed, a tunnel taken over, a release serving): NOTIFY on one channel, LISTENed
//   to on a connection of each node's own; a node that loses that connection takes every cache for
//   stale once it is back (`resync`), since it may have missed some;
// - singleton jobs (domain re-checks, certificate renewals, restoring apps): each runs on one node,
//   the one holding its advisory lock on that same connection; a node that dies releases its locks with
//   its connection, and another takes the jobs over within LEADER_POLL_MS.
//
// Alone (SQLite, or no --node-url), the platform is one node: events are delivered in-process and
// every job runs here.
import { EventEmitter } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import type pg from 'pg';
import { sql } from 'kysely';
import type { PlatformConfig } from '../config.js';
import { randomBase62 } from '../ids.js';
import type { Store } from '../store/open.js';
import { withoutPasswords } from '../store/location.js';

export const HEARTBEAT_MS = 2_000;
export const NODE_LOST_MS = 10_000;
const LEADER_POLL_MS = 3_000;
/** How long a tunnel no node holds keeps its row (its id, for a client that comes back). */
const TUNNEL_KEPT_MS = 60 * 60_000;
const CHANNEL = 'wharf_cluster';
/** NOTIFY payloads must stay under 8000 bytes: events carry ids and names only. */
const MAX_PAYLOAD = 7_000;

/** What nodes tell each other. */
export type ClusterEvent =
  /** A host or custom domain routes elsewhere now (null: any may; drop every cached route). */
  | { kind: 'route'; host: string | null }
  /** A tunnel's client connected to `node`: any other node holding it lets it go. */
  | { kind: 'tunnel-taken'; subdomain: string; node: string }
  /** A tunnel's client left `node`. */
  | { kind: 'tunnel-left'; subdomain: string; node: string }
  /** A project serves another release now, or none (stopped, failed, deleted). */
  | { kind: 'serving'; projectId: string; releaseId: string | null }
  /** A deploy of the project started on `node`: a deploy of it elsewhere is cancelled. */
  | { kind: 'deploy-started'; projectId: string; node: string }
  /** The project was deleted through `node`: the others drop what they kept of it. */
  | { kind: 'project-deleted'; projectId: string; node: string }
  /** A domain was added, or its checks rescheduled: the node running the checks looks again. */
  | { kind: 'domains' }
  /** `node` was issued (or renewed) the certificate of `name`: the others load it from the store. */
  | { kind: 'certificate'; name: string; node: string }
  /** An API key was revoked through `node`: the others forget they found it valid. */
  | { kind: 'key-revoked'; keyId: string; node: string };

/** A job only one node may run at a time; started when this node becomes its leader, stopped when not. */
export interface SingletonJob {
  start(): void;
  stop(): Promise<void>;
}

export interface ClusterNode {
  id: string;
  url: string;
}

export class Cluster {
  readonly nodeId: string;
  /** Whether other nodes share this database (`--node-url` given). */
  readonly clustered: boolean;
  private readonly events = new EventEmitter<{ event: [ClusterEvent]; resync: []; revived: [] }>();
  private listener: pg.Client | null = null;
  private closed = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly jobs = new Map<string, { job: SingletonJob; running: boolean; key: number }>();
  private leading: NodeJS.Timeout | null = null;
  private nodes: { at: number; list: Map<string, string> } | null = null;
  private connecting: Promise<void> | null = null;
  private started = false;

  constructor(
    private readonly db: Store,
    private readonly config: PlatformConfig,
    /** Where what fails in the background goes: the platform's log. */
    readonly onError: (error: Error, what: string) => void,
  ) {
    this.nodeId = `node_${randomBase62(12)}`;
    this.clustered = config.nodeUrl !== null;
    this.events.setMaxListeners(0);
  }

  /** Joins the cluster: the node's row, its heartbeat, the event channel; then leadership of jobs. */
  async start(): Promise<void> {
    this.started = true;
    if (!this.clustered) {
      for (const entry of this.jobs.values()) this.startJob(entry);
      return;
    }
    const now = new Date().toISOString();
    await this.db
      .insertInto('cluster_nodes')
      .values({ id: this.nodeId, url: this.config.nodeUrl!, started_at: now, seen_at: now })
      .execute();
    this.nodes = null; // read before this node's row was written
    this.heartbeat = setInterval(() => void this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
    await this.connect();
    this.leading = setInterval(() => void this.lead(), LEADER_POLL_MS);
    this.leading.unref();
    await this.lead();
  }

  /** Calls `listener` with every event, this node's own included. Returns what unsubscribes. */
  on(listener: (event: ClusterEvent) => void): () => void {
    this.events.on('event', listener);
    return () => this.events.off('event', listener);
  }

  /** Calls `listener` when events may have been missed (the channel was lost): caches are stale. */
  onResync(listener: () => void): () => void {
    this.events.on('resync', listener);
    return () => this.events.off('resync', listener);
  }

  /**
   * Calls `listener` when this node, taken for dead by the others (no heartbeat for a minute: a long
   * pause) and its rows cleaned up, is alive again: what it had recorded of itself (the tunnels it
   * holds, its stream counts) is to be written again.
   */
  onRevived(listener: () => void): () => void {
    this.events.on('revived', listener);
    return () => this.events.off('revived', listener);
  }

  /** Tells every node, this one first (in-process, at once). */
  publish(event: ClusterEvent): void {
    this.events.emit('event', event);
    if (!this.clustered || this.closed) return;
    const payload = JSON.stringify({ from: this.nodeId, event });
    if (payload.length > MAX_PAYLOAD) return;
    sql`select pg_notify(${CHANNEL}, ${payload})`
      .execute(this.db)
      .catch((error: unknown) => this.onError(error as Error, 'sending a cluster event'));
  }

  /** Runs `job` on one node of the cluster at a time (here, when alone). */
  singleton(name: string, job: SingletonJob): void {
    const entry = { job, running: false, key: lockKey(name) };
    this.jobs.set(name, entry);
    if (this.started && !this.clustered) this.startJob(entry);
  }

  /** The nodes alive (seen within NODE_LOST_MS), by id, this one included; read at most once a second. */
  async liveNodes(): Promise<Map<string, string>> {
    if (!this.clustered) return new Map([[this.nodeId, '']]);
    if (this.nodes && Date.now() - this.nodes.at < 1_000) return this.nodes.list;
    const since = new Date(Date.now() - NODE_LOST_MS).toISOString();
    const rows = await this.db
      .selectFrom('cluster_nodes')
      .select(['id', 'url'])
      .where('seen_at', '>', since)
      .execute();
    const list = new Map(rows.map((row) => [row.id, row.url]));
    // This node is alive, its first heartbeat written or not (asked before start()).
    list.set(this.nodeId, this.config.nodeUrl!);
    this.nodes = { at: Date.now(), list };
    return list;
  }

  /** How to reach `nodeId` while it is alive, else null. */
  async urlOf(nodeId: string): Promise<string | null> {
    if (nodeId === this.nodeId) return null;
    return (await this.liveNodes()).get(nodeId) ?? null;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.leading) clearInterval(this.leading);
    await Promise.all([...this.jobs.values()].map((entry) => this.stopJob(entry)));
    const listener = this.listener;
    this.listener = null;
    // Its advisory locks go with its connection: another node takes its jobs over.
    await listener?.end().catch(() => undefined);
    if (this.clustered) {
      await this.db
        .deleteFrom('account_streams')
        .where('node_id', '=', this.nodeId)
        .execute()
        .catch(() => undefined);
      await this.db
        .deleteFrom('cluster_nodes')
        .where('id', '=', this.nodeId)
        .execute()
        .catch(() => undefined);
    }
  }

  private async beat(): Promise<void> {
    if (this.closed) return;
    const now = new Date().toISOString();
    try {
      const updated = await this.db
        .updateTable('cluster_nodes')
        .set({ seen_at: now })
        .where('id', '=', this.nodeId)
        .executeTakeFirst();
      // Taken for dead and cleaned up by another node (a long pause): say it is alive again.
      if (Number(updated.numUpdatedRows) === 0) {
        await this.db
          .insertInto('cluster_nodes')
          .values({ id: this.nodeId, url: this.config.nodeUrl!, started_at: now, seen_at: now })
          .execute();
        this.nodes = null;
        this.events.emit('revived');
      }
      // Nodes gone for good (no heartbeat for a minute) leave the table, with the tunnels they held.
      const gone = new Date(Date.now() - 6 * NODE_LOST_MS).toISOString();
      const dead = await this.db
        .selectFrom('cluster_nodes')
        .select('id')
        .where('seen_at', '<', gone)
        .execute();
      if (dead.length > 0) {
        const ids = dead.map((row) => row.id);
        await this.db.deleteFrom('tunnel_holders').where('node_id', 'in', ids).execute();
        await this.db.deleteFrom('account_streams').where('node_id', 'in', ids).execute();
        await this.db.deleteFrom('cluster_nodes').where('id', 'in', ids).execute();
      }
      // Tunnels no node has held for an hour are forgotten (as a node forgets its offline tunnels).
      const forgotten = new Date(Date.now() - TUNNEL_KEPT_MS).toISOString();
      await this.db
        .deleteFrom('tunnel_holders')
        .where('node_id', '=', '')
        .where('connected_at', '<', forgotten)
        .execute();
    } catch (error) {
      this.onError(error as Error, 'the cluster heartbeat');
    }
  }

  /** The connection that LISTENs and holds this node's advisory locks; reconnected when lost. */
  private connect(): Promise<void> {
    this.connecting ??= (async () => {
      const { default: pg } = await import('pg');
      for (let attempt = 0; !this.closed; attempt++) {
        const client = new pg.Client({ connectionString: this.config.databaseUrl! });
        client.on('error', () => undefined);
        try {
          await client.connect();
          await client.query(`LISTEN ${CHANNEL}`);
        } catch (error) {
          await client.end().catch(() => undefined);
          if (attempt === 0)
            this.onError(
              new Error(withoutPasswords((error as Error).message)),
              'listening for cluster events',
            );
          await delay(Math.min(1_000 * 2 ** attempt, 10_000));
          continue;
        }
        client.on('notification', (message) => this.received(message.payload));
        client.once('end', () => this.lost(client));
        this.listener = client;
        if (attempt > 0 || this.everConnected) this.events.emit('resync');
        this.everConnected = true;
        return;
      }
    })().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private everConnected = false;

  private lost(client: pg.Client): void {
    if (this.listener !== client || this.closed) return;
    this.listener = null;
    // Its locks are gone with it: the jobs stop here (another node may be taking them already).
    for (const entry of this.jobs.values()) void this.stopJob(entry);
    void this.connect().then(() => this.lead());
  }

  private received(payload: string | undefined): void {
    if (!payload) return;
    try {
      const { from, event } = JSON.parse(payload) as { from: string; event: ClusterEvent };
      if (from !== this.nodeId) this.events.emit('event', event);
    } catch {
      // not ours
    }
  }

  /** Tries each job's lock this node does not hold yet; a job whose lock it gets starts here. */
  private async lead(): Promise<void> {
    const client = this.listener;
    if (!client || this.closed) return;
    for (const entry of this.jobs.values()) {
      if (entry.running) continue;
      try {
        const { rows } = await client.query<{ locked: boolean }>(
          'select pg_try_advisory_lock($1) as locked',
          [entry.key],
        );
        if (rows[0]?.locked && this.listener === client && !this.closed) this.startJob(entry);
      } catch {
        return; // the connection is going: lost() follows
      }
    }
  }

  private startJob(entry: { job: SingletonJob; running: boolean }): void {
    if (entry.running) return;
    entry.running = true;
    entry.job.start();
  }

  private async stopJob(entry: { job: SingletonJob; running: boolean }): Promise<void> {
    if (!entry.running) return;
    entry.running = false;
    await entry.job.stop().catch((error: unknown) => this.onError(error as Error, 'stopping a job'));
  }
}

/** A job's advisory lock key: a 32-bit hash of its name, in a range of Wharf's own (high bits set). */
function lockKey(name: string): number {
  let hash = 0x811c9dc5;
  for (const char of `wharf:${name}`) {
    hash ^= char.charCodeAt(0);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash | 0;
}
