// What the CA checks before it signs: HTTP-01 tokens the edge answers on its plain port, and DNS-01 TXT
// records `_acme-challenge.<domain>` published either by the operator's hook command (any DNS provider)
// or by the built-in responder, a small authoritative DNS server for `_acme-challenge` names the
// operator delegates to the platform (acme-dns style: one NS record per domain, set once). In a cluster
// the CA's check may reach any node: the pending challenges are kept in the store too, and every node
// answers them.
import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import type DNS from 'dns2';
import type { Store } from '../store/open.js';
import type { ChallengeSolver } from './acme.js';

export const CHALLENGE_PATH = '/.well-known/acme-challenge/';
/** Tokens are base64url (RFC 8555 §8.1): anything else is not one of ours. */
const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;
/** At most this many challenges at once: each is a few hundred bytes, and orders are one name each. */
const MAX_PENDING = 1_000;
/** DNS RCODE 5: this server does not answer for that name. */
const REFUSED = 5;

/**
 * How long a node answers from one read of the pending challenges. The CA's checks and anyone else's
 * requests (these paths are public: HTTP on the plain port, DNS over UDP) cost the store one read per
 * second per kind at most, whatever the keys asked.
 */
const SNAPSHOT_MS = 1_000;
/** The most challenges one read takes: every node's pending ones, each a few hundred bytes. */
const MAX_SHARED = 5_000;

interface Pending {
  domain: string;
  value: string;
}

/** The challenges pending on every node of a cluster (acme_challenges). */
export class SharedChallenges {
  private readonly snapshots = new Map<string, { takenAt: number; byKey: Map<string, Pending[]> }>();
  private readonly reading = new Map<string, Promise<Map<string, Pending[]>>>();

  constructor(
    private readonly db: Store,
    private readonly snapshotMs = SNAPSHOT_MS,
  ) {}

  /**
   * Records a challenge for every node. It resolves once every node answers it: after the snapshot
   * time, since a node may have read the challenges just before this one was written.
   */
  async add(kind: string, key: string, domain: string, value: string): Promise<void> {
    // One an order of a node that died left behind goes after a day: the CA gave up on it long before.
    const stale = new Date(Date.now() - 24 * 3_600_000).toISOString();
    await this.db.deleteFrom('acme_challenges').where('created_at', '<', stale).execute();
    await this.db
      .insertInto('acme_challenges')
      .values({ kind, key, value, domain: domain.toLowerCase(), created_at: new Date().toISOString() })
      .onConflict((oc) => oc.columns(['kind', 'key', 'value']).doNothing())
      .execute();
    this.snapshots.delete(kind);
    await new Promise((resolve) => setTimeout(resolve, this.snapshotMs));
  }

  /** Forgets a challenge; other nodes may still answer it for up to the snapshot time. */
  async remove(kind: string, key: string, value: string): Promise<void> {
    await this.db
      .deleteFrom('acme_challenges')
      .where('kind', '=', kind)
      .where('key', '=', key)
      .where('value', '=', value)
      .execute();
    this.snapshots.delete(kind);
  }

  async find(kind: string, key: string): Promise<Pending[]> {
    return (await this.pending(kind)).get(key) ?? [];
  }

  /** Every pending challenge of `kind` by key, read at most once per snapshot time (one read at a time). */
  private pending(kind: string): Promise<Map<string, Pending[]>> {
    const kept = this.snapshots.get(kind);
    if (kept && Date.now() - kept.takenAt < this.snapshotMs) return Promise.resolve(kept.byKey);
    let reading = this.reading.get(kind);
    if (!reading) {
      const takenAt = Date.now();
      reading = this.db
        .selectFrom('acme_challenges')
        .select(['key', 'domain', 'value'])
        .where('kind', '=', kind)
        .orderBy('created_at', 'desc')
        .limit(MAX_SHARED)
        .execute()
        .then((rows) => {
          const byKey = new Map<string, Pending[]>();
          for (const { key, domain, value } of rows) {
            const list = byKey.get(key);
            if (list) list.push({ domain, value });
            else byKey.set(key, [{ domain, value }]);
          }
          this.snapshots.set(kind, { takenAt, byKey });
          return byKey;
        })
        .finally(() => this.reading.delete(kind));
      this.reading.set(kind, reading);
    }
    return reading;
  }
}

/** HTTP-01: token → key authorization, answered by the edge at `/.well-known/acme-challenge/<token>`. */
export class HttpChallenges implements ChallengeSolver {
  readonly type = 'http-01';
  private readonly tokens = new Map<string, { domain: string; value: string }>();

  /** `shared`: in a cluster, where every node finds the challenges of the others. */
  constructor(private readonly shared: SharedChallenges | null = null) {}

  async add(domain: string, token: string, value: string): Promise<void> {
    if (!TOKEN.test(token)) throw new Error('the CA sent a token that is not base64url');
    if (this.tokens.size >= MAX_PENDING) throw new Error('too many ACME challenges at once');
    this.tokens.set(token, { domain: domain.toLowerCase(), value });
    await this.shared?.add(this.type, token, domain, value);
  }

  async remove(_domain: string, token: string, value: string): Promise<void> {
    this.tokens.delete(token);
    await this.shared?.remove(this.type, token, value);
  }

  /** The body for a request of `path` to `host`, or null when it is not a pending challenge of that host. */
  async answer(host: string, path: string): Promise<string | null> {
    if (!path.startsWith(CHALLENGE_PATH)) return null;
    const token = path.slice(CHALLENGE_PATH.length);
    const entry = this.tokens.get(token);
    const name = host.toLowerCase();
    if (entry) return entry.domain === name ? entry.value : null;
    if (!this.shared || !TOKEN.test(token)) return null;
    const found = await this.shared.find(this.type, token);
    return found.find((row) => row.domain === name)?.value ?? null;
  }
}

/** The TXT record name the CA looks up for `domain`. */
export function challengeRecord(domain: string): string {
  return `_acme-challenge.${domain.toLowerCase()}`;
}

/**
 * DNS-01 through the operator's command: `<command> add <name> <value>` before the CA looks, `<command>
 * remove <name> <value>` after. It returns once the record is published (exit 0) or fails the order.
 */
export class DnsHookSolver implements ChallengeSolver {
  readonly type = 'dns-01';

  constructor(
    private readonly command: string,
    private readonly timeoutMs = 120_000,
  ) {}

  add(domain: string, _token: string, value: string): Promise<void> {
    return this.run('add', challengeRecord(domain), value);
  }

  remove(domain: string, _token: string, value: string): Promise<void> {
    return this.run('remove', challengeRecord(domain), value);
  }

  private run(action: 'add' | 'remove', name: string, value: string): Promise<void> {
    return new Promise((resolve, reject) => {
      // The operator's command line, with the three arguments after it (sh's "$@").
      execFile(
        '/bin/sh',
        ['-c', `${this.command} "$@"`, 'wharf-acme-dns-hook', action, name, value],
        { timeout: this.timeoutMs, maxBuffer: 64 * 1024 },
        (error, _stdout, stderr) => {
          if (!error) return resolve();
          const said = stderr.trim().split('\n').slice(-3).join(' ').slice(0, 300);
          reject(
            new Error(
              `the DNS hook (${action} ${name}) failed${error.killed ? ' (timed out)' : ` with exit code ${String(error.code)}`}${said ? `: ${said}` : ''}`,
            ),
          );
        },
      );
    });
  }
}

/**
 * DNS-01 through the built-in responder: an authoritative DNS server (UDP and TCP) that answers TXT
 * queries for `_acme-challenge.<domain>` with the values pending for it, and nothing else.
 */
export class DnsResponder implements ChallengeSolver {
  readonly type = 'dns-01';
  private readonly records = new Map<string, string[]>();
  /** `host:port` it answers on, once listening. */
  address: string | null = null;
  private udp: DNS.UDPServer | null = null;
  private tcp: DNS.TCPServer | null = null;
  /** dns2, loaded when the responder starts (a platform without DNS-01 never needs it). */
  private dns: typeof DNS | null = null;

  /** `shared`: in a cluster, where every node's responder finds the records of the others. */
  constructor(private readonly shared: SharedChallenges | null = null) {}

  /**
   * Starts answering on `host:port`, UDP and TCP (port 0: one free for both); resolves with the port.
   * With port 0 the kernel picks a free UDP port, and the same number may be taken for TCP (by any
   * outgoing connection): then another is tried.
   */
  async listen(host: string, port: number): Promise<number> {
    this.dns = (await import('dns2')).default;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.listenOnce(host, port);
      } catch (error) {
        const taken = (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
        if (port !== 0 || !taken || attempt >= 10) throw error;
      }
    }
  }

  private async listenOnce(host: string, port: number): Promise<number> {
    const { createTCPServer, createUDPServer } = this.dns!;
    const handle: DNS.DnsHandler = (request, send) => {
      void this.respond(request)
        .then((response) => send(response))
        .catch(() => undefined);
    };
    const udp = createUDPServer({ type: host.includes(':') ? 'udp6' : 'udp4' });
    // A malformed packet from anyone on the network ends that packet only.
    udp
      .on('request', handle)
      .on('requestError', () => undefined)
      .on('error', () => undefined);
    await udp.listen(port, host);
    const bound = (udp.address() as AddressInfo).port;
    const tcp = createTCPServer();
    tcp.on('request', handle).on('requestError', () => undefined);
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(bound, host, () => {
          tcp.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      await new Promise<void>((resolve) => udp.close(() => resolve()));
      throw error;
    }
    tcp.on('error', () => undefined);
    this.udp = udp;
    this.tcp = tcp;
    this.address = `${host.includes(':') ? `[${host}]` : host}:${bound}`;
    return bound;
  }

  async close(): Promise<void> {
    const udp = this.udp;
    const tcp = this.tcp;
    this.udp = this.tcp = null;
    await Promise.all([
      udp ? new Promise<void>((resolve) => udp.close(() => resolve())) : undefined,
      tcp ? new Promise<void>((resolve) => tcp.close(() => resolve())) : undefined,
    ]);
  }

  async add(domain: string, _token: string, value: string): Promise<void> {
    const name = challengeRecord(domain);
    const values = this.records.get(name) ?? [];
    if (!values.includes(value)) values.push(value);
    if (this.records.size >= MAX_PENDING && !this.records.has(name)) {
      throw new Error('too many ACME challenges at once');
    }
    this.records.set(name, values);
    await this.shared?.add(this.type, name, domain, value);
  }

  async remove(domain: string, _token: string, value: string): Promise<void> {
    const name = challengeRecord(domain);
    const values = (this.records.get(name) ?? []).filter((v) => v !== value);
    if (values.length > 0) this.records.set(name, values);
    else this.records.delete(name);
    await this.shared?.remove(this.type, name, value);
  }

  private async respond(request: DNS.Packet): Promise<DNS.Packet> {
    const { Packet } = this.dns!;
    const response = Packet.createResponseFromRequest(request);
    response.header.aa = 1;
    const [question] = request.questions;
    if (!question) return response;
    const name = question.name.toLowerCase().replace(/\.$/, '');
    if (!name.startsWith('_acme-challenge.')) {
      response.header.rcode = REFUSED;
      return response;
    }
    let values = this.records.get(name);
    if (this.shared && question.type === Packet.TYPE.TXT) {
      const elsewhere = (await this.shared.find(this.type, name)).map((row) => row.value);
      values = [...new Set([...(values ?? []), ...elsewhere])];
    }
    if (question.type === Packet.TYPE.TXT) {
      for (const value of values ?? []) {
        response.answers.push({
          name: question.name,
          type: Packet.TYPE.TXT,
          class: Packet.CLASS.IN,
          // Short: a renewal's new value must be seen at once, not a cached old one.
          ttl: 1,
          data: [value],
        } as DNS.Packet.Resource);
      }
    }
    return response;
  }
}
