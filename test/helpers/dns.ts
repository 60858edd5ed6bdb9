// A DNS server on 127.0.0.1 (UDP, a free port) answering from a table the test edits as it goes, the
// way a recursive resolver would: a name with a CNAME answers A/AAAA queries with the CNAME and the
// target's addresses; a name in the table without records of the type asked gets an empty NOERROR;
// a name not in the table gets NXDOMAIN; TXT queries get the name's own TXT records (each value one
// character-string, split at 255 bytes as DNS requires). Pass `tp.server` in `dnsServers`.
import type { AddressInfo } from 'node:net';
import type DNS from 'dns2';
import { Packet, createUDPServer } from 'dns2';

type Resource = DNS.Packet.Resource;

export interface DnsEntry {
  CNAME?: string;
  A?: string[];
  AAAA?: string[];
  TXT?: string[];
}

export interface TestDns {
  /** `127.0.0.1:<port>` */
  server: string;
  port: number;
  records: Map<string, DnsEntry>;
  /** Sets (replaces) the records of a name. */
  set(name: string, entry: DnsEntry): void;
  /** Stop answering at all (queries then time out) until `answer(true)`. */
  answer(on: boolean): void;
  /** Questions received so far, as `TYPE name`. */
  queries: string[];
  /**
   * Consulted before the table: records for a name computed when asked (e.g. TXT values a hook wrote,
   * or another DNS server's answer, as a recursive resolver follows a delegation).
   */
  dynamic: ((name: string) => DnsEntry | undefined | Promise<DnsEntry | undefined>) | null;
  close(): Promise<void>;
}

const NXDOMAIN = 3;

function typeName(type: number): string {
  const entry = Object.entries(Packet.TYPE).find(([, value]) => value === type);
  return entry ? entry[0] : String(type);
}

function chunks(value: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < value.length; i += 255) out.push(value.slice(i, i + 255));
  return out.length > 0 ? out : [''];
}

export async function startDns(initial: Record<string, DnsEntry> = {}): Promise<TestDns> {
  const records = new Map<string, DnsEntry>(
    Object.entries(initial).map(([name, entry]) => [name.toLowerCase(), entry]),
  );
  const queries: string[] = [];
  let answering = true;

  const self = { dynamic: null } as Pick<TestDns, 'dynamic'>;
  const server = createUDPServer(async (request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    if (!question) return;
    const name = question.name.toLowerCase().replace(/\.$/, '');
    queries.push(`${typeName(question.type)} ${name}`);
    if (!answering) return;
    const entry = (await self.dynamic?.(name)) ?? records.get(name);
    if (!entry) {
      response.header.rcode = NXDOMAIN;
      void send(response);
      return;
    }
    const add = (owner: string, type: number, data: Partial<Resource>) =>
      response.answers.push({
        name: owner,
        type,
        class: Packet.CLASS.IN,
        ttl: 60,
        ...data,
      } as Resource);
    const addresses = (owner: string, of: DnsEntry | undefined) => {
      if (question.type === Packet.TYPE.A)
        for (const address of of?.A ?? []) add(owner, Packet.TYPE.A, { address });
      if (question.type === Packet.TYPE.AAAA)
        for (const address of of?.AAAA ?? []) add(owner, Packet.TYPE.AAAA, { address });
    };
    if (question.type === Packet.TYPE.TXT) {
      for (const value of entry.TXT ?? [])
        add(name, Packet.TYPE.TXT, { data: chunks(value) } as Partial<Resource>);
      void send(response);
      return;
    }
    if (entry.CNAME) {
      add(name, Packet.TYPE.CNAME, { domain: entry.CNAME });
      if (question.type !== Packet.TYPE.CNAME) addresses(entry.CNAME, records.get(entry.CNAME));
    } else {
      addresses(name, entry);
    }
    void send(response);
  });
  await server.listen(0, '127.0.0.1');
  const { port } = server.address() as AddressInfo;

  return Object.assign<Pick<TestDns, 'dynamic'>, Omit<TestDns, 'dynamic'>>(self, {
    server: `127.0.0.1:${port}`,
    port,
    records,
    queries,
    set(name: string, entry: DnsEntry) {
      records.set(name.toLowerCase(), entry);
    },
    answer(on: boolean) {
      answering = on;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
