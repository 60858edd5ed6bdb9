// The platform's certificates: which names need one, asking the CA for them, keeping them (the key
// sealed with the server secret), renewing them before they expire, and handing the TLS server the
// right one for each SNI name. Names are the hosts the platform routes (apps, their services, verified
// custom domains), proved over HTTP-01, and, when DNS-01 is set up, one wildcard per edge domain
// (`*.<base_domain>`, `*.<tunnel_domain>`) so that new apps and random tunnel names need no order of
// their own. A routed host with no certificate yet gets one on demand, while its first visitor's TLS
// handshake waits. Failures back off (doubling, up to a day) and keep serving the old certificate.
import { type SecureContext, createSecureContext } from 'node:tls';
import { deriveKeyEncryptionKey, openAiKey, sealAiKey, type SealedKey } from '../ai/keys.js';
import { lockAccount } from '../store/dialect.js';
import type { Store } from '../store/open.js';
import type { TlsCertificatesTable } from '../store/schema.js';
import { type AcmeIssuer, type ChallengeSolver, describeAcmeError } from './acme.js';

export type CertificateState = 'pending' | 'issued' | 'failed';

export interface CertificateStatus {
  /** The name the certificate is for: the host, or `*.<domain>`. */
  name: string;
  status: CertificateState;
  /** Until when the certificate served now is valid (also while a renewal is pending or failed). */
  not_after: string | null;
  /** Why the last attempt failed, in the CA's words. */
  error: string | null;
}

export interface CertificatesOptions {
  db: Store;
  secret: Uint8Array | string;
  issuer: AcmeIssuer;
  /** HTTP-01: answered by the edge on its plain port. */
  http: ChallengeSolver;
  /** DNS-01 (the operator's hook or the built-in responder), or null: no wildcards. */
  dns: ChallengeSolver | null;
  /** The domains that get a wildcard when DNS-01 is set up (the base and tunnel domains). */
  wildcardDomains: string[];
  /** Whether the platform routes `host` right now (an app, a service, a verified domain, a tunnel). */
  routed(host: string): Promise<boolean>;
  /**
   * Who an on-demand order for `host` is counted against (a tunnel's account: random tunnel names must
   * not let one account spend the CA's per-domain rate limits that every tenant shares), or null for
   * hosts that are not counted (apps, services and domains, each created through the API).
   */
  orderedFor?(host: string): string | null;
  /** On-demand orders one account may cause in a day (default 20). */
  onDemandPerDay?: number;
  /** The hosts that should have a certificate before anyone asks: apps, services, verified domains. */
  knownHosts(): Promise<string[]>;
  /** How long before expiry a certificate is renewed (30 days). */
  renewBeforeMs: number;
  /** The first retry after a failure; each next waits twice as long, up to retryMaxMs. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** How often names are looked over (due renewals, retries, new hosts). */
  checkIntervalMs: number;
  /** How long a TLS handshake waits for a certificate asked for on demand. */
  onDemandTimeoutMs: number;
  /** Events for the platform's log (issued, renewed, failed with why). */
  event(level: 'info' | 'warn', message: string): void;
  /**
   * In a cluster: every node orders and renews, but one order per name runs at a time across the nodes
   * (claimed in the store), and `announce` tells the others a certificate was issued so they load it.
   */
  cluster?: { announce(name: string): void };
  now?: () => Date;
}

/** In a cluster, how long an order claimed by a node that never finished it blocks the others. */
const CLAIM_STALE_MS = 5 * 60_000;
/** How often a handshake waiting on another node's order looks whether it was issued. */
const ELSEWHERE_POLL_MS = 200;

interface Loaded {
  context: SecureContext;
  notAfter: number;
}

/** Names no public CA signs: a certificate is never asked for them. */
function unsignable(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost') || /^[\d.]+$/.test(host) || host.includes(':');
}

export class CertificateManager {
  private readonly kek: Buffer;
  private readonly loaded = new Map<string, Loaded>();
  private readonly inFlight = new Map<string, Promise<void>>();
  /** In a cluster: the names whose order another node runs, that handshakes here wait for. */
  private readonly elsewhere = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private soon: NodeJS.Timeout | null = null;
  private reconciling: Promise<void> | null = null;
  private again: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly options: CertificatesOptions) {
    this.kek = deriveKeyEncryptionKey(options.secret);
  }

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  /** Loads the kept certificates, then looks over every name now and every checkIntervalMs. */
  async start(): Promise<void> {
    const rows = await this.options.db
      .selectFrom('tls_certificates')
      .selectAll()
      .where('cert_pem', 'is not', null)
      .execute();
    for (const row of rows) this.load(row);
    this.reconcileNow();
    this.timer = setInterval(() => this.reconcileNow(), this.options.checkIntervalMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.soon) clearTimeout(this.soon);
    await this.reconciling?.catch(() => undefined);
    await Promise.allSettled([...this.inFlight.values(), ...this.elsewhere.values()]);
  }

  /** A host was created or verified: look over the names shortly (several changes make one pass). */
  nudge(): void {
    if (this.closed || this.soon) return;
    this.soon = setTimeout(() => {
      this.soon = null;
      this.reconcileNow();
    }, 200);
    this.soon.unref();
  }

  /**
   * Looks over every name, one pass at a time; asked during a pass, another follows it (the pass in
   * progress may have listed the names before the change). Resolves when the pass asked for is done.
   */
  reconcileNow(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.reconciling) {
      this.again ??= this.reconciling.then(() => {
        this.again = null;
        return this.reconcileNow();
      });
      return this.again;
    }
    this.reconciling = this.reconcile()
      .catch((error: unknown) => this.options.event('warn', `certificates: ${describeAcmeError(error)}`))
      .finally(() => {
        this.reconciling = null;
      });
    return this.reconciling;
  }

  /** The certificate for an SNI name: its own, else the wildcard of its parent; null when none. */
  contextFor(host: string): SecureContext | null {
    const name = host.toLowerCase();
    const now = Date.now();
    const own = this.loaded.get(name);
    if (own && own.notAfter > now) return own.context;
    const dot = name.indexOf('.');
    const wildcard = dot > 0 ? this.loaded.get(`*${name.slice(dot)}`) : undefined;
    return wildcard && wildcard.notAfter > now ? wildcard.context : null;
  }

  /**
   * For the TLS server's SNI callback: the certificate for `host`, asked for on demand when the
   * platform routes it and has none (the handshake waits up to onDemandTimeoutMs); null otherwise.
   */
  async forHandshake(host: string | undefined): Promise<SecureContext | null> {
    if (!host) return null;
    const name = host.toLowerCase().replace(/\.$/, '');
    const found = this.contextFor(name);
    if (found || this.closed || unsignable(name)) return found;
    if (!(await this.options.routed(name).catch(() => false))) return null;
    const row = await this.row(name);
    // A name that failed waits for its retry time: a visitor cannot make the platform hammer the CA.
    if (row?.next_attempt_at && Date.parse(row.next_attempt_at) > this.now().getTime()) return null;
    if (row?.status === 'issued' && this.options.cluster) {
      // Issued through another node, whose word has not reached this one yet.
      this.load(row);
      const loaded = this.contextFor(name);
      if (loaded) return loaded;
    }
    if (!this.inflight(name) && !(await this.spend(name))) return null;
    const deadline = Date.now() + this.options.onDemandTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.issue(name),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.options.onDemandTimeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
    const issued = this.contextFor(name);
    if (issued || !this.options.cluster) return issued;
    // Another node may be ordering it: its certificate is in the store once issued.
    const left = deadline - Date.now();
    if (left > 0) {
      await Promise.race([
        this.issuedElsewhere(name),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, left);
        }),
      ]).finally(() => clearTimeout(timer));
    }
    return this.contextFor(name);
  }

  /**
   * Resolves once another node's order of `name` has ended (its certificate loaded when issued), or
   * after onDemandTimeoutMs: one look at the store per poll and name, however many handshakes wait.
   */
  private issuedElsewhere(name: string): Promise<void> {
    let waiting = this.elsewhere.get(name);
    if (!waiting) {
      waiting = this.pollElsewhere(name).finally(() => this.elsewhere.delete(name));
      this.elsewhere.set(name, waiting);
    }
    return waiting;
  }

  private async pollElsewhere(name: string): Promise<void> {
    const deadline = Date.now() + this.options.onDemandTimeoutMs;
    while (!this.closed && Date.now() < deadline) {
      const row = await this.row(name);
      if (row?.status === 'issued') {
        this.load(row);
        return;
      }
      if (row?.status !== 'pending') return;
      await new Promise((resolve) => setTimeout(resolve, ELSEWHERE_POLL_MS));
    }
  }

  /** Loads `name`'s certificate from the store (issued or renewed through another node of the cluster). */
  async reload(name: string): Promise<void> {
    const row = await this.row(name);
    if (row?.status === 'issued') this.load(row);
  }

  private inflight(name: string): boolean {
    return this.inFlight.has(name);
  }

  /**
   * Counts an on-demand order against its account; false when the account has no budget left today.
   * The orders are kept in the store, so that the budget is the account's across the nodes of a
   * cluster and through restarts: counted and recorded as one step (the transaction starts with a
   * write, which holds SQLite's write lock; on PostgreSQL, under the account's advisory lock).
   */
  private async spend(host: string): Promise<boolean> {
    const account = this.options.orderedFor?.(host) ?? null;
    if (account === null) return true;
    const limit = this.options.onDemandPerDay ?? 20;
    const now = this.now();
    const dayAgo = new Date(now.getTime() - 24 * 3_600_000).toISOString();
    const refusedAt = await this.options.db.transaction().execute(async (trx) => {
      await lockAccount(trx, 'certificate orders', account);
      // Orders of more than a day ago count no more: every account's go, so that an account that
      // orders no more leaves none behind.
      await trx.deleteFrom('certificate_orders').where('ordered_at', '<=', dayAgo).execute();
      const { n } = await trx
        .selectFrom('certificate_orders')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('account_id', '=', account)
        .executeTakeFirstOrThrow();
      if (Number(n) >= limit) return Number(n);
      await trx
        .insertInto('certificate_orders')
        .values({ account_id: account, host, ordered_at: now.toISOString() })
        .execute();
      return null;
    });
    if (refusedAt === null) return true;
    this.options.event(
      'warn',
      `no certificate ordered for ${host}: its account caused ${refusedAt} on-demand orders in a day, the most it may (wildcards over DNS-01 need none)`,
    );
    return false;
  }

  /** What the store says of `name` (a host or `*.<domain>`), or null when none was ever asked for. */
  async status(name: string): Promise<CertificateStatus | null> {
    const row = await this.row(name.toLowerCase());
    return row ? toStatus(row) : null;
  }

  /**
   * The certificate a host is served with, as the Domains screen shows it: its own, else the
   * wildcard of its parent, else (none issued) the state of its own order.
   */
  async statusOfHost(host: string): Promise<CertificateStatus | null> {
    const name = host.toLowerCase();
    const own = await this.status(name);
    if (own?.status === 'issued' || this.loaded.has(name)) return own;
    const dot = name.indexOf('.');
    if (dot > 0 && this.loaded.has(`*${name.slice(dot)}`)) return this.status(`*${name.slice(dot)}`);
    return own;
  }

  async list(): Promise<CertificateStatus[]> {
    const rows = await this.options.db.selectFrom('tls_certificates').selectAll().orderBy('name').execute();
    return rows.map(toStatus);
  }

  private async reconcile(): Promise<void> {
    const wanted = new Set<string>();
    if (this.options.dns) {
      for (const domain of this.options.wildcardDomains) wanted.add(`*.${domain.toLowerCase()}`);
    }
    for (const host of await this.options.knownHosts()) {
      const name = host.toLowerCase();
      if (!unsignable(name)) wanted.add(name);
    }
    const now = this.now().getTime();
    // Wildcards first: the hosts they cover then need no order of their own (unless the wildcard failed).
    for (const name of wanted) {
      if (this.closed) return;
      if (name.startsWith('*.') ? unsignable(name.slice(2)) : this.coveredByWildcard(name)) continue;
      const row = await this.row(name);
      if (!this.due(row, now)) continue;
      await this.issue(name);
    }
    // Names no longer wanted (a deleted app, a tunnel gone) are not renewed; once expired they go.
    await this.prune(wanted);
    if (this.options.cluster) await this.loadNewer();
  }

  /** Loads the certificates other nodes issued or renewed that this node does not serve yet. */
  private async loadNewer(): Promise<void> {
    // Names and dates first: the certificates themselves only of those newer than what is served.
    const dates = await this.options.db
      .selectFrom('tls_certificates')
      .select(['name', 'not_after'])
      .where('status', '=', 'issued')
      .execute();
    for (const { name, not_after } of dates) {
      const kept = this.loaded.get(name);
      if (not_after && (!kept || kept.notAfter < Date.parse(not_after))) await this.reload(name);
    }
  }

  /** Forgets the certificates of names no longer wanted once they have expired (or never issued). */
  private async prune(wanted: Set<string>): Promise<void> {
    const now = this.now().toISOString();
    const rows = await this.options.db
      .selectFrom('tls_certificates')
      .select(['name', 'not_after', 'status'])
      .execute();
    for (const row of rows) {
      if (wanted.has(row.name)) continue;
      const expired = row.not_after === null ? row.status !== 'pending' : row.not_after < now;
      if (!expired || this.inFlight.has(row.name)) continue;
      await this.options.db.deleteFrom('tls_certificates').where('name', '=', row.name).execute();
      this.loaded.delete(row.name);
    }
  }

  private coveredByWildcard(host: string): boolean {
    const dot = host.indexOf('.');
    if (dot <= 0 || this.loaded.has(host)) return false;
    const wildcard = this.loaded.get(`*${host.slice(dot)}`);
    return wildcard !== undefined && wildcard.notAfter - this.options.renewBeforeMs > Date.now();
  }

  private due(row: TlsCertificatesTable | undefined, now: number): boolean {
    if (!row) return true;
    if (row.next_attempt_at && Date.parse(row.next_attempt_at) > now) return false;
    if (row.status === 'issued') {
      return row.not_after !== null && Date.parse(row.not_after) - this.options.renewBeforeMs <= now;
    }
    return true;
  }

  /** Orders a certificate for `name` (one order per name at a time). */
  private issue(name: string): Promise<void> {
    let running = this.inFlight.get(name);
    if (!running) {
      running = this.order(name).finally(() => this.inFlight.delete(name));
      this.inFlight.set(name, running);
    }
    return running;
  }

  private async order(name: string): Promise<void> {
    const wildcard = name.startsWith('*.');
    const solver = wildcard ? this.options.dns : this.options.http;
    if (!solver) return;
    const { db } = this.options;
    const started = this.now().toISOString();
    const previous = await this.row(name);
    // In a cluster, another node ordering it now: its certificate comes with its word (or the next pass).
    if (!(await this.claim(name, previous, solver.type, started))) return;
    const renewal = previous?.cert_pem != null;
    try {
      const issued = await this.options.issuer.issue(name, solver);
      const sealed = sealAiKey(this.kek, `tls:${name}`, issued.keyPem);
      const row = {
        status: 'issued',
        challenge: solver.type,
        cert_pem: issued.certPem,
        key_secret: JSON.stringify(sealed),
        not_before: issued.notBefore.toISOString(),
        not_after: issued.notAfter.toISOString(),
        error: null,
        failures: 0,
        next_attempt_at: null,
        updated_at: this.now().toISOString(),
      };
      await db.updateTable('tls_certificates').set(row).where('name', '=', name).execute();
      this.loaded.set(name, {
        context: createSecureContext({ cert: issued.certPem, key: issued.keyPem }),
        notAfter: issued.notAfter.getTime(),
      });
      this.options.cluster?.announce(name);
      this.options.event(
        'info',
        `certificate for ${name} ${renewal ? 'renewed' : 'issued'} (${solver.type}), valid until ${row.not_after}`,
      );
    } catch (error) {
      const failures = (previous?.failures ?? 0) + 1;
      const wait = Math.min(this.options.retryBaseMs * 2 ** (failures - 1), this.options.retryMaxMs);
      const next = new Date(this.now().getTime() + wait).toISOString();
      const reason = describeAcmeError(error);
      await db
        .updateTable('tls_certificates')
        .set({
          status: 'failed',
          error: reason,
          failures,
          next_attempt_at: next,
          updated_at: this.now().toISOString(),
        })
        .where('name', '=', name)
        .execute()
        .catch(() => undefined);
      this.options.event(
        'warn',
        `certificate for ${name} ${renewal ? 'not renewed' : 'not issued'} (${solver.type}, attempt ${failures}; next at ${next}${renewal ? '; the current one keeps serving' : ''}): ${reason}`,
      );
    }
  }

  /**
   * Marks `name` pending for this node's order. In a cluster, false when another node's order is under
   * way (pending, and not left for CLAIM_STALE_MS by a node that stopped): that one goes on alone.
   */
  private async claim(
    name: string,
    previous: TlsCertificatesTable | undefined,
    challenge: string,
    started: string,
  ): Promise<boolean> {
    const { db } = this.options;
    if (!previous) {
      const inserted = await db
        .insertInto('tls_certificates')
        .values({
          name,
          challenge,
          status: 'pending',
          cert_pem: null,
          key_secret: null,
          not_before: null,
          not_after: null,
          error: null,
          failures: 0,
          next_attempt_at: null,
          created_at: started,
          updated_at: started,
        })
        .onConflict((oc) => oc.column('name').doNothing())
        .executeTakeFirst();
      return !this.options.cluster || Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0;
    }
    let update = db
      .updateTable('tls_certificates')
      .set({ status: 'pending', challenge, updated_at: started })
      .where('name', '=', name);
    if (this.options.cluster) {
      const stale = new Date(this.now().getTime() - CLAIM_STALE_MS).toISOString();
      update = update
        .where((eb) => eb.or([eb('status', '!=', 'pending'), eb('updated_at', '<', stale)]))
        // As this node read it: an order another node ended meanwhile is not made again.
        .where('updated_at', '=', previous.updated_at);
    }
    const claimed = await update.executeTakeFirst();
    return !this.options.cluster || Number(claimed.numUpdatedRows) > 0;
  }

  private load(row: TlsCertificatesTable): void {
    if (!row.cert_pem || !row.key_secret || !row.not_after) return;
    try {
      const key = openAiKey(this.kek, `tls:${row.name}`, JSON.parse(row.key_secret) as SealedKey);
      this.loaded.set(row.name, {
        context: createSecureContext({ cert: row.cert_pem, key }),
        notAfter: Date.parse(row.not_after),
      });
    } catch (error) {
      // Sealed with another secret, or damaged: ordered again at the next pass.
      this.options.event(
        'warn',
        `the kept certificate for ${row.name} cannot be used: ${(error as Error).message}`,
      );
    }
  }

  private row(name: string): Promise<TlsCertificatesTable | undefined> {
    return this.options.db
      .selectFrom('tls_certificates')
      .selectAll()
      .where('name', '=', name)
      .executeTakeFirst();
  }
}

function toStatus(row: TlsCertificatesTable): CertificateStatus {
  return {
    name: row.name,
    status: row.status as CertificateState,
    not_after: row.not_after,
    error: row.error,
  };
}
