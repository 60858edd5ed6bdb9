// Local fakes of the mail world for tests: SMTP servers (smtp-server, or a raw socket that never speaks)
// whose replies, delays and refusals a test chooses, and, with the DNS fake of dns.ts, a whole mail world.
// Everything listens on loopback. SMTP servers of one test can share one port across 127.0.0.1,
// 127.0.0.2, 127.0.0.3… (Linux routes all of 127/8 to loopback): start the first on port 0 and pass its
// port to the others, since the verifier probes every MX host on the same port.
import { once } from 'node:events';
import { type AddressInfo, type Server, type Socket, createServer } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll } from 'vitest';
import { type FakeDns, type Zone, startDns } from './dns.js';

export interface FakeSmtpOptions {
  /** Where to listen: 127.0.0.1 by default. */
  host?: string;
  /** 0 (the default) for a free port; pass the first server's port to share it. */
  port?: number;
  /** Text after `220 <name> ESMTP` in the greeting. */
  banner?: string;
  /** Delay before the greeting (instead of replyDelayMs). */
  bannerDelayMs?: number;
  /** Delay before every reply, the greeting included. */
  replyDelayMs?: number;
  /** The answer to RCPT TO `address`; null (or no function) for 250. */
  rcpt?: (address: string) => { code: number; message: string } | null;
  /** 'reject': EHLO is answered 502, so a client must fall back to HELO. */
  ehlo?: 'ok' | 'reject';
  /** Greet with `421` and close. */
  greeting421?: boolean;
  /** Accept TCP connections and never say anything. */
  silent?: boolean;
}

export interface FakeSmtp {
  port: number;
  host: string;
  stats: {
    /** The most sessions open at once (a session ends at QUIT or when the connection closes). */
    maxConcurrent: number;
    /** Connections accepted. */
    connections: number;
    /** Every RCPT TO address, in order. */
    rcpts: string[];
    /**
     * The most sessions open at once for one recipient domain, by domain. A session belongs to the domain
     * of its first RCPT TO and counts as open from the moment its connection was accepted.
     */
    readonly maxConcurrentByDomain: Record<string, number>;
  };
  /** Forgets the sessions counted so far (maxConcurrent, maxConcurrentByDomain); open ones stay counted. */
  resetConcurrency(): void;
  close(): Promise<void>;
}

/**
 * A fake MX host. smtp-server does the protocol (it waits 100 ms before greeting, its early-talker
 * check); this wraps each socket to delay the replies and to count concurrent sessions.
 */
export async function startSmtp(options: FakeSmtpOptions = {}): Promise<FakeSmtp> {
  const host = options.host ?? '127.0.0.1';
  const sessions = new SessionLog();
  const stats: FakeSmtp['stats'] = {
    maxConcurrent: 0,
    connections: 0,
    rcpts: [],
    get maxConcurrentByDomain() {
      return sessions.maxConcurrentByDomain();
    },
  };
  const sockets = new Set<Socket>();
  /** The session of each accepted connection, by the client's `address:port`. */
  const byPeer = new Map<string, Session>();
  let open = 0;

  /** Counts the session from accept to QUIT (or close): what the client sees as a probe in progress. */
  const track = (socket: Socket) => {
    sockets.add(socket);
    stats.connections += 1;
    open += 1;
    stats.maxConcurrent = Math.max(stats.maxConcurrent, open);
    const session = sessions.open();
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    byPeer.set(peer, session);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      open -= 1;
    };
    let seen = '';
    socket.on('data', (chunk: Buffer) => {
      seen = (seen + chunk.toString('latin1')).slice(-64);
      if (/(^|\n)QUIT\r?\n/i.test(seen)) end();
    });
    socket.once('close', () => {
      end();
      sessions.close(session);
      sockets.delete(socket);
      byPeer.delete(peer);
    });
  };

  let server: Server;
  let smtp: SMTPServer | null = null;
  if (options.silent) {
    server = createServer((socket) => {
      track(socket);
      socket.on('error', () => undefined);
    });
  } else {
    smtp = new SMTPServer({
      name: host,
      banner: options.banner ?? 'fake',
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH', ...(options.ehlo === 'reject' ? ['EHLO'] : [])],
      hideENHANCEDSTATUSCODES: true,
      disableReverseLookup: true,
      logger: false,
      onConnect(_session, callback) {
        if (!options.greeting421) return callback();
        callback(Object.assign(new Error('Service not available, try again later'), { responseCode: 421 }));
      },
      onRcptTo(address, session, callback) {
        stats.rcpts.push(address.address);
        const counted = byPeer.get(`${session.remoteAddress}:${session.remotePort}`);
        if (counted !== undefined)
          counted.domain ??= address.address.slice(address.address.lastIndexOf('@') + 1).toLowerCase();
        const answer = options.rcpt?.(address.address) ?? null;
        if (answer === null || answer.code < 400) return callback();
        callback(Object.assign(new Error(answer.message), { responseCode: answer.code }));
      },
    });
    smtp.on('error', () => undefined);
    const accept = (
      smtp as unknown as { connect(socket: Socket, socketOptions: unknown): void }
    ).connect.bind(smtp);
    (smtp as unknown as { connect(socket: Socket, socketOptions: unknown): void }).connect = (
      socket,
      socketOptions,
    ) => {
      track(socket);
      delayWrites(socket, options.bannerDelayMs ?? options.replyDelayMs ?? 0, options.replyDelayMs ?? 0);
      accept(socket, socketOptions);
    };
    server = (smtp as unknown as { server: Server }).server;
  }

  server.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    host,
    stats,
    resetConcurrency() {
      stats.maxConcurrent = open;
      sessions.forgetClosed();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      if (smtp !== null) await new Promise<void>((resolve) => smtp!.close(() => resolve()));
      else if (server.listening) {
        server.close();
        await once(server, 'close');
      }
    },
  };
}

interface Session {
  /** Sequence numbers of the accept and of the end (QUIT or close); null while open. */
  opened: number;
  closed: number | null;
  /** The recipient domain of the first RCPT TO; null until then. */
  domain: string | null;
}

/**
 * Sessions as intervals on one sequence of events, so the overlap per domain is exact even though a
 * session only learns its domain at RCPT TO, after it was accepted.
 */
class SessionLog {
  #sequence = 0;
  #sessions: Session[] = [];

  open(): Session {
    const session: Session = { opened: (this.#sequence += 1), closed: null, domain: null };
    this.#sessions.push(session);
    return session;
  }

  close(session: Session): void {
    session.closed ??= this.#sequence += 1;
  }

  forgetClosed(): void {
    this.#sessions = this.#sessions.filter((session) => session.closed === null);
  }

  maxConcurrentByDomain(): Record<string, number> {
    const events = new Map<string, Array<[number, number]>>();
    for (const session of this.#sessions) {
      if (session.domain === null) continue;
      const list = events.get(session.domain) ?? [];
      list.push([session.opened, 1], [session.closed ?? Infinity, -1]);
      events.set(session.domain, list);
    }
    const result: Record<string, number> = {};
    for (const [domain, list] of events) {
      list.sort((a, b) => a[0] - b[0]);
      let open = 0;
      let most = 0;
      for (const [, change] of list) {
        open += change;
        most = Math.max(most, open);
      }
      result[domain] = most;
    }
    return result;
  }
}

/** Holds each write (a reply) back by a delay, in order; `end` waits for the writes before it. */
function delayWrites(socket: Socket, firstDelayMs: number, delayMs: number): void {
  if (firstDelayMs <= 0 && delayMs <= 0) return;
  const write = socket.write.bind(socket) as (chunk: unknown) => boolean;
  const end = socket.end.bind(socket) as () => Socket;
  let queue = Promise.resolve();
  let first = true;
  const later = (ms: number, action: () => void) => {
    queue = queue.then(
      () =>
        new Promise<void>((resolve) =>
          setTimeout(() => {
            if (!socket.destroyed) action();
            resolve();
          }, ms),
        ),
    );
  };
  socket.write = ((chunk: unknown) => {
    later(first ? firstDelayMs : delayMs, () => write(chunk));
    first = false;
    return true;
  }) as Socket['write'];
  socket.end = (() => {
    later(0, () => end());
    return socket;
  }) as Socket['end'];
}

/** A test file's mail world: a fake DNS server and MX host, and the platform arguments that use them. */
export interface MailWorld {
  readonly dns: FakeDns;
  readonly smtp: FakeSmtp;
  /** `wharf platform` arguments: look-ups go to the fake DNS, probes to the fake MX host's port. */
  platformArgs(): string[];
}

/**
 * Starts the mail world before the file's tests (call it before `useAppStack`, whose platform needs
 * its arguments) and closes it after them. `example.test` has its MX at `mx.example.test` (127.0.0.1),
 * which accepts the recipients `accepts` says yes to and refuses the rest with 550; `zone` adds names.
 */
export function useMailWorld(options: {
  accepts: (address: string) => boolean;
  zone?: () => Zone;
}): MailWorld {
  let dns: FakeDns | undefined;
  let smtp: FakeSmtp | undefined;
  beforeAll(async () => {
    smtp = await startSmtp({
      rcpt: (address) =>
        options.accepts(address) ? null : { code: 550, message: '5.1.1 No such user here' },
    });
    dns = await startDns({
      'example.test': { MX: [{ exchange: 'mx.example.test', priority: 10 }] },
      'mx.example.test': { A: ['127.0.0.1'] },
      ...options.zone?.(),
    });
  });
  afterAll(async () => {
    await dns?.close();
    await smtp?.close();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the mail world is not started: use it inside tests');
    return value;
  };
  return {
    get dns() {
      return started(dns);
    },
    get smtp() {
      return started(smtp);
    },
    platformArgs: () => [
      '--dns-server',
      started(dns).server,
      '--smtp-port',
      String(started(smtp).port),
      '--smtp-allow-private',
    ],
  };
}
