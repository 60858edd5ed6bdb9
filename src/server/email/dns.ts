// DNS for mail: where a domain's mail goes (MX, with RFC 5321's fallback to the domain's own A/AAAA)
// and the addresses of an MX host, through a node:dns Resolver on the configured servers.
import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';

/** Where a domain's mail is delivered, as DNS tells it. */
export type MailRoute =
  /** MX hosts by preference; `implicit` when there is no MX and the domain's A/AAAA receives mail. */
  | { kind: 'mx'; hosts: string[]; implicit: boolean }
  /** The domain takes no mail: NXDOMAIN, no MX and no address, or a null MX (RFC 7505). */
  | { kind: 'none'; detail: string }
  /** DNS did not answer usefully: server failure, refusal, time-out. Nothing can be concluded. */
  | { kind: 'error'; detail: string };

/** Answers that say something about the name; any other error code is a failure of DNS itself. */
const NO_NAME = new Set(['ENOTFOUND']);
const NO_DATA = new Set(['ENODATA']);

function codeOf(error: unknown): string {
  return (error as NodeJS.ErrnoException | null)?.code ?? 'EUNKNOWN';
}

type Lookup<T> = { ok: true; value: T } | { ok: false; code: string };

async function attempt<T>(query: Promise<T>): Promise<Lookup<T>> {
  try {
    return { ok: true, value: await query };
  } catch (error) {
    return { ok: false, code: codeOf(error) };
  }
}

export interface MailDnsOptions {
  /** `host` or `host:port` entries; null for the system's resolvers. */
  servers: string[] | null;
  timeoutMs: number;
}

export class MailDns {
  readonly #resolver: Resolver;

  constructor(options: MailDnsOptions) {
    this.#resolver = new Resolver({ timeout: options.timeoutMs, tries: 1 });
    if (options.servers !== null) this.#resolver.setServers(options.servers);
  }

  /** The route of `domain`'s mail. Never throws. */
  async route(domain: string): Promise<MailRoute> {
    const mx = await attempt(this.#resolver.resolveMx(domain));
    if (mx.ok) {
      const records = mx.value
        .map((record) => ({ priority: record.priority, exchange: stripDot(record.exchange.toLowerCase()) }))
        .sort((a, b) => a.priority - b.priority);
      // RFC 7505: a single MX with the root as exchange says "this domain accepts no mail".
      const hosts = [...new Set(records.map((record) => record.exchange).filter((host) => host !== ''))];
      if (hosts.length === 0) return { kind: 'none', detail: `${domain} publishes a null MX` };
      return { kind: 'mx', hosts, implicit: false };
    }
    if (NO_NAME.has(mx.code)) return { kind: 'none', detail: `${domain} does not exist (NXDOMAIN)` };
    if (!NO_DATA.has(mx.code)) return { kind: 'error', detail: `MX lookup for ${domain} failed: ${mx.code}` };

    // No MX: RFC 5321 §5.1 delivers to the domain itself when it has an address.
    const addresses = await this.addresses(domain);
    if (addresses.kind === 'error') return addresses;
    if (addresses.addresses.length === 0)
      return { kind: 'none', detail: `${domain} has no MX and no address` };
    return { kind: 'mx', hosts: [domain], implicit: true };
  }

  /** The IPv4 then IPv6 addresses of `host` (an IP literal stands for itself). Never throws. */
  async addresses(
    host: string,
  ): Promise<{ kind: 'ok'; addresses: string[] } | { kind: 'error'; detail: string }> {
    if (isIP(host) !== 0) return { kind: 'ok', addresses: [host] };
    const [v4, v6] = await Promise.all([
      attempt(this.#resolver.resolve4(host)),
      attempt(this.#resolver.resolve6(host)),
    ]);
    const addresses = [...(v4.ok ? v4.value : []), ...(v6.ok ? v6.value : [])];
    if (addresses.length > 0) return { kind: 'ok', addresses };
    const failed = [v4, v6].find(
      (lookup) => !lookup.ok && !NO_NAME.has(lookup.code) && !NO_DATA.has(lookup.code),
    );
    if (failed !== undefined && !failed.ok)
      return { kind: 'error', detail: `address lookup for ${host} failed: ${failed.code}` };
    return { kind: 'ok', addresses: [] };
  }

  /** Cancels the queries in flight (they settle as failures). */
  close(): void {
    this.#resolver.cancel();
  }
}

function stripDot(name: string): string {
  return name.endsWith('.') ? name.slice(0, -1) : name;
}
