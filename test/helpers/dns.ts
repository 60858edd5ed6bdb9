// The tests' one DNS server: 127.0.0.1, UDP on a free port and TCP on the same port when it is free,
// answering from a table the test may edit as it goes, the way a recursive resolver would: names match
// without case or trailing dot; a name not in the table gets NXDOMAIN, a name in it without records of
// the type asked an empty answer (NODATA); a CNAME is answered for any other type, followed by the
// target's records of that type; TXT values are split into 255-byte character-strings as DNS requires.
// A name can be made to SERVFAIL, and the whole server to stop answering (queries then time out).
// Pass `dns.server` as the platform's `dnsServers` (or `--dns-server`).
import type DNS from 'dns2';
import { Packet, createServer as createDnsServer } from 'dns2';

export interface DnsEntry {
  MX?: Array<{ exchange: string; priority: number }>;
  A?: string[];
  AAAA?: string[];
  CNAME?: string;
  TXT?: string[];
  /** Answer every query for this name with SERVFAIL. */
  servfail?: boolean;
}

export type Zone = Record<string, DnsEntry>;

export interface FakeDns {
  /** `127.0.0.1:<port>` */
  server: string;
  port: number;
  records: Map<string, DnsEntry>;
  /** Sets (replaces) the records of a name. */
  set(name: string, entry: DnsEntry): void;
  /** Stop answering at all (queries then time out) until `answer(true)`. */
  answer(on: boolean): void;
  /** Questions received so far, in order, as `TYPE name`. */
  queries: string[];
  /**
   * Consulted before the table: records for a name computed when asked (e.g. TXT values a hook wrote,
   * or another DNS server's answer, as a recursive resolver follows a delegation).
   */
  dynamic: ((name: string) => DnsEntry | undefined | Promise<DnsEntry | undefined>) | null;
  close(): Promise<void>;
}

/** Response codes (RFC 1035 §4.1.1); dns2 has them at run time but not in its types. */
const RCODE = { FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3 } as const;

type Resource = DNS.Packet.Resource;

const TYPE_NAMES = Object.fromEntries(
  Object.entries(Packet.TYPE).map(([name, code]) => [code, name]),
) as Record<number, string>;

function normalizeName(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

function chunks(value: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < value.length; i += 255) out.push(value.slice(i, i + 255));
  return out.length > 0 ? out : [''];
}

export async function startDns(zone: Zone = {}): Promise<FakeDns> {
  const records = new Map(Object.entries(zone).map(([name, entry]) => [normalizeName(name), entry]));
  const queries: string[] = [];
  let answering = true;
  const self = { dynamic: null } as Pick<FakeDns, 'dynamic'>;
  const lookup = async (name: string) => (await self.dynamic?.(name)) ?? records.get(name);

  const handle = async (request: Packet, send: (response: Packet) => unknown) => {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    if (question === undefined) {
      response.header.rcode = RCODE.FORMERR;
      return void send(response);
    }
    const name = normalizeName(question.name);
    queries.push(`${TYPE_NAMES[question.type] ?? String(question.type)} ${name}`);
    if (!answering) return;
    let entry = await lookup(name);
    if (entry === undefined) {
      response.header.rcode = RCODE.NXDOMAIN;
      return void send(response);
    }
    if (entry.servfail) {
      response.header.rcode = RCODE.SERVFAIL;
      return void send(response);
    }
    let owner = question.name;
    if (entry.CNAME !== undefined && question.type !== Packet.TYPE.CNAME) {
      response.answers.push({
        name: owner,
        class: Packet.CLASS.IN,
        ttl: 60,
        type: Packet.TYPE.CNAME,
        domain: entry.CNAME,
      } as Resource);
      owner = entry.CNAME;
      entry = (await lookup(normalizeName(entry.CNAME))) ?? {};
    }
    const add = (type: number, data: Partial<Resource>) =>
      response.answers.push({ name: owner, class: Packet.CLASS.IN, ttl: 60, type, ...data } as Resource);
    switch (question.type) {
      case Packet.TYPE.MX:
        for (const mx of entry.MX ?? []) add(Packet.TYPE.MX, mx as Partial<Resource>);
        break;
      case Packet.TYPE.A:
        for (const address of entry.A ?? []) add(Packet.TYPE.A, { address });
        break;
      case Packet.TYPE.AAAA:
        for (const address of entry.AAAA ?? []) add(Packet.TYPE.AAAA, { address });
        break;
      case Packet.TYPE.TXT:
        for (const value of entry.TXT ?? [])
          add(Packet.TYPE.TXT, { data: chunks(value) } as Partial<Resource>);
        break;
      case Packet.TYPE.CNAME:
        if (entry.CNAME !== undefined) add(Packet.TYPE.CNAME, { domain: entry.CNAME });
        break;
    }
    void send(response);
  };

  const udp = createDnsServer({ udp: true, handle: (request, send) => void handle(request, send) });
  const { udp: udpAddress } = await udp.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = udpAddress!.port;
  // TCP on the same port, for answers too big for UDP; skipped when the port is taken over TCP.
  let tcp: ReturnType<typeof createDnsServer> | null = createDnsServer({
    tcp: true,
    handle: (request, send) => void handle(request, send),
  });
  try {
    await Promise.race([
      tcp.listen({ tcp: { port, address: '127.0.0.1' } }),
      new Promise((_, reject) => tcp!.once('error', reject)),
    ]);
  } catch {
    await tcp.close().catch(() => undefined);
    tcp = null;
  }

  return Object.assign<Pick<FakeDns, 'dynamic'>, Omit<FakeDns, 'dynamic'>>(self, {
    server: `127.0.0.1:${port}`,
    port,
    records,
    queries,
    set(name: string, entry: DnsEntry) {
      records.set(normalizeName(name), entry);
    },
    answer(on: boolean) {
      answering = on;
    },
    async close() {
      await Promise.all([udp.close(), tcp?.close()]);
    },
  });
}
