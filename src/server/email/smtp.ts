// The SMTP probe: asks a domain's MX hosts whether they would take mail for an address, without sending
// any. A small client of our own over node:net: banner, EHLO (HELO when EHLO is refused), MAIL FROM,
// RCPT TO the target and, only when the target is accepted, RCPT TO a random address of the same domain
// to tell a catch-all domain; then QUIT. Replies are read by code class first (API.md §6).
import { randomBytes } from 'node:crypto';
import { Socket } from 'node:net';
import { isPrivateAddress } from './private-address.js';

export { isPrivateAddress } from './private-address.js';

/** One SMTP reply: the code, the RFC 3463 enhanced code of its first line, the text of all its lines. */
export interface SmtpReply {
  code: number;
  enhancedCode: string | null;
  message: string;
}

/** What a reply to RCPT TO says about the mailbox. */
export type RcptVerdict = 'accepted' | 'rejected' | 'inconclusive';

const ENHANCED = /^([245])\.(\d{1,3})\.(\d{1,3})(?=\s|$)/;

/** A complete reply from its lines (`250-first`, …, `250 last`); null when they are not one reply. */
export function parseReply(lines: string[]): SmtpReply | null {
  if (lines.length === 0) return null;
  let code: number | null = null;
  let enhancedCode: string | null = null;
  const texts: string[] = [];
  for (const [index, line] of lines.entries()) {
    const match = /^(\d{3})([ -]|$)(.*)$/.exec(line);
    if (match === null) return null;
    const lineCode = Number(match[1]);
    if (code !== null && lineCode !== code) return null;
    code = lineCode;
    let text = match[3]!.trim();
    const enhanced = ENHANCED.exec(text);
    if (enhanced !== null) {
      if (index === 0) enhancedCode = enhanced[0];
      text = text.slice(enhanced[0].length).trim();
    }
    if (text !== '') texts.push(text);
  }
  return { code: code!, enhancedCode, message: texts.join(' ') };
}

/**
 * Reads a reply to RCPT TO by code class first: any 4xx (greylisting, rate limits), any 5.7.x (policy,
 * blocklists) and a full mailbox (552, 5.2.2) say nothing about whether the mailbox exists; 5.1.x or 550
 * say it does not; 250/251 say it does. Any other reply is inconclusive too.
 */
export function classifyRcpt(reply: Pick<SmtpReply, 'code' | 'enhancedCode'>): RcptVerdict {
  const { code, enhancedCode } = reply;
  if (code === 250 || code === 251) return 'accepted';
  if (code >= 400 && code < 500) return 'inconclusive';
  if (enhancedCode?.startsWith('5.7.')) return 'inconclusive';
  if (code === 552 || enhancedCode === '5.2.2') return 'inconclusive';
  if (enhancedCode?.startsWith('5.1.') || code === 550) return 'rejected';
  return 'inconclusive';
}

/** Bounds of what is read from a mail server: RFC 5321 lines are 512 bytes, replies a few lines. */
const MAX_REPLY_LINE = 4096;
const MAX_REPLY_LINES = 64;
/** A server answers one command at a time: more replies waiting than this were never asked for. */
const MAX_QUEUED_REPLIES = 8;

class SmtpError extends Error {}

/** One SMTP connection: a line reader that hands out complete replies, one command at a time. */
class SmtpConnection {
  readonly #socket: Socket;
  readonly #replies: SmtpReply[] = [];
  #buffer = '';
  #lines: string[] = [];
  #failure: SmtpError | null = null;
  #wake: (() => void) | null = null;

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => this.#onData(chunk));
    socket.on('error', (error) => this.#fail(new SmtpError(error.message)));
    socket.on('close', () => this.#fail(new SmtpError('the server closed the connection')));
  }

  static open(address: string, port: number, timeoutMs: number, track: Set<Socket>): Promise<SmtpConnection> {
    return new Promise((resolve, reject) => {
      const socket = new Socket();
      track.add(socket);
      socket.once('close', () => track.delete(socket));
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new SmtpError(`connection timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        socket.destroy();
        reject(new SmtpError(error.code === 'ECONNREFUSED' ? 'connection refused' : error.message));
      });
      socket.connect({ host: address, port }, () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        resolve(new SmtpConnection(socket));
      });
    });
  }

  #onData(chunk: string): void {
    // A hostile server may send without end: once it has said more than any reply holds, the connection
    // is dropped (the probe is then inconclusive) and nothing more is read.
    if (this.#failure !== null) return;
    this.#buffer += chunk;
    let newline: number;
    while ((newline = this.#buffer.indexOf('\n')) >= 0) {
      const line = this.#buffer.slice(0, newline).replace(/\r$/, '');
      this.#buffer = this.#buffer.slice(newline + 1);
      if (line.length > MAX_REPLY_LINE)
        return this.#overflow(`a reply line longer than ${MAX_REPLY_LINE} characters`);
      this.#lines.push(line);
      if (/^\d{3}-/.test(line)) {
        if (this.#lines.length >= MAX_REPLY_LINES)
          return this.#overflow(`a reply of more than ${MAX_REPLY_LINES} lines`);
        continue;
      }
      const reply = parseReply(this.#lines);
      this.#lines = [];
      if (reply === null) return this.#fail(new SmtpError(`malformed reply: ${line.slice(0, 200)}`));
      if (this.#replies.length >= MAX_QUEUED_REPLIES)
        return this.#overflow('more replies than it was asked for');
      this.#replies.push(reply);
    }
    if (this.#buffer.length > MAX_REPLY_LINE)
      return this.#overflow(`a reply line longer than ${MAX_REPLY_LINE} characters`);
    this.#wake?.();
  }

  #overflow(what: string): void {
    this.#buffer = '';
    this.#lines = [];
    this.#socket.destroy();
    this.#fail(new SmtpError(`the server sent ${what}: not read further`));
  }

  #fail(error: SmtpError): void {
    this.#failure ??= error;
    this.#wake?.();
  }

  /** The next reply, waiting at most `timeoutMs`. Rejects on time-out or a closed connection. */
  async reply(timeoutMs: number, what: string): Promise<SmtpReply> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const reply = this.#replies.shift();
      if (reply !== undefined) return reply;
      if (this.#failure !== null) throw this.#failure;
      const left = deadline - Date.now();
      if (left <= 0) throw new SmtpError(`no ${what} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = null;
    }
  }

  async command(line: string, timeoutMs: number): Promise<SmtpReply> {
    if (this.#failure !== null) throw this.#failure;
    this.#socket.write(`${line}\r\n`);
    return this.reply(timeoutMs, `reply to ${line.split(':')[0]!.split(' ')[0]}`);
  }

  /** Says QUIT, waits briefly for the goodbye, and closes. Never throws. */
  async quit(timeoutMs: number): Promise<void> {
    if (this.#failure === null && this.#socket.writable) {
      this.#socket.write('QUIT\r\n');
      await this.reply(timeoutMs, 'reply to QUIT').catch(() => undefined);
    }
    await this.close(timeoutMs);
  }

  /**
   * Closes the connection the way TCP does at both ends: our FIN, then the server's. Resolves once the
   * server has closed its side too (or `graceMs` passed, then the socket is destroyed), so a connection
   * still open at the server never outlives the per-domain slot that opened it.
   */
  close(graceMs: number): Promise<void> {
    if (this.#socket.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.#socket.destroy(), graceMs);
      this.#socket.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      // Without half-open sockets, node closes once the server's FIN has come in after ours.
      if (!this.#socket.destroyed) this.#socket.end();
    });
  }
}

export interface ProbeSettings {
  port: number;
  heloName: string;
  mailFrom: string;
  connectTimeoutMs: number;
  replyTimeoutMs: number;
  allowPrivate: boolean;
}

/** What the probe found out. `reply` is the deciding reply (or, without one, what went wrong). */
export interface ProbeOutcome {
  verdict: 'exists' | 'not_found' | 'inconclusive';
  /** Whether the domain accepts any address; null when not found out. */
  catchAll: boolean | null;
  mxHost: string | null;
  reply: SmtpReply | null;
  /** Why the probe could not conclude, when there is no reply to say it. */
  detail: string | null;
}

export interface ProbeRequest {
  /** The full address probed (normalized). */
  address: string;
  domain: string;
  /** MX hosts in preference order. */
  mxHosts: string[];
  /** The domain's catch-all answer when already known (cached). */
  knownCatchAll: boolean | null;
  /** The addresses of an MX host (may be cached by the caller). */
  resolveHost(host: string): Promise<{ kind: 'ok'; addresses: string[] } | { kind: 'error'; detail: string }>;
}

const MAX_ADDRESSES_PER_HOST = 2;
/**
 * How long a server that stopped answering gets to close its side after ours: long enough for a live
 * one (so its connection ends inside the per-domain slot), short enough not to double a time-out.
 */
const ABANDON_GRACE_MS = 250;

/** Probes `request.address` on its MX hosts in preference order. Never throws. */
export async function probeMailbox(
  request: ProbeRequest,
  settings: ProbeSettings,
  sockets: Set<Socket>,
): Promise<ProbeOutcome> {
  const problems: string[] = [];
  let lastHost: string | null = null;
  let lastReply: SmtpReply | null = null;
  for (const host of request.mxHosts) {
    lastHost = host;
    const resolved = await request.resolveHost(host);
    if (resolved.kind === 'error') {
      problems.push(resolved.detail);
      continue;
    }
    if (resolved.addresses.length === 0) {
      problems.push(`${host} has no address`);
      continue;
    }
    const usable = settings.allowPrivate
      ? resolved.addresses
      : resolved.addresses.filter((address) => !isPrivateAddress(address));
    if (usable.length === 0) {
      problems.push(
        `${host} resolves to a private or loopback address (${resolved.addresses[0]}): not probed`,
      );
      continue;
    }
    for (const address of usable.slice(0, MAX_ADDRESSES_PER_HOST)) {
      let connection: SmtpConnection;
      try {
        connection = await SmtpConnection.open(address, settings.port, settings.connectTimeoutMs, sockets);
      } catch (error) {
        problems.push(`${host} (${address}): ${(error as Error).message}`);
        continue;
      }
      let banner: SmtpReply;
      try {
        banner = await connection.reply(settings.replyTimeoutMs, 'banner');
      } catch (error) {
        problems.push(`${host} (${address}): ${(error as Error).message}`);
        await connection.close(ABANDON_GRACE_MS);
        continue;
      }
      if (banner.code !== 220) {
        // 421 "try later" or a 554 refusal: another MX may well take us.
        lastReply = banner;
        problems.push(`${host} (${address}) greeted with ${banner.code}`);
        await connection.close(settings.replyTimeoutMs);
        continue;
      }
      try {
        return await dialogue(connection, host, request, settings);
      } catch (error) {
        await connection.close(ABANDON_GRACE_MS);
        return inconclusive(host, null, `${host}: ${(error as Error).message}`);
      }
    }
  }
  return inconclusive(lastHost, lastReply, problems.join('; ') || 'no MX host to probe');
}

function inconclusive(mxHost: string | null, reply: SmtpReply | null, detail: string | null): ProbeOutcome {
  return { verdict: 'inconclusive', catchAll: null, mxHost, reply, detail };
}

/** The probe's dialogue after a 220 banner. Throws on time-outs and dropped connections. */
async function dialogue(
  connection: SmtpConnection,
  host: string,
  request: ProbeRequest,
  settings: ProbeSettings,
): Promise<ProbeOutcome> {
  const timeout = settings.replyTimeoutMs;
  const done = async (outcome: ProbeOutcome): Promise<ProbeOutcome> => {
    await connection.quit(timeout);
    return outcome;
  };

  let hello = await connection.command(`EHLO ${settings.heloName}`, timeout);
  if (hello.code >= 500) hello = await connection.command(`HELO ${settings.heloName}`, timeout);
  if (hello.code !== 250) return done(inconclusive(host, hello, null));

  const mail = await connection.command(`MAIL FROM:<${settings.mailFrom}>`, timeout);
  if (mail.code !== 250) return done(inconclusive(host, mail, null));

  const target = await connection.command(`RCPT TO:<${request.address}>`, timeout);
  const verdict = classifyRcpt(target);
  if (verdict === 'rejected')
    return done({ verdict: 'not_found', catchAll: null, mxHost: host, reply: target, detail: null });
  if (verdict === 'inconclusive') return done(inconclusive(host, target, null));

  if (request.knownCatchAll !== null)
    return done({
      verdict: 'exists',
      catchAll: request.knownCatchAll,
      mxHost: host,
      reply: target,
      detail: null,
    });
  const random = await connection.command(`RCPT TO:<${randomLocalPart()}@${request.domain}>`, timeout);
  switch (classifyRcpt(random)) {
    case 'accepted':
      return done({ verdict: 'exists', catchAll: true, mxHost: host, reply: random, detail: null });
    case 'rejected':
      return done({ verdict: 'exists', catchAll: false, mxHost: host, reply: target, detail: null });
    default:
      // The target was taken but whether anything would be is unknown: acceptance proves nothing.
      return done(inconclusive(host, random, null));
  }
}

/** A local part nobody has: the catch-all test address. */
export function randomLocalPart(): string {
  return `wharf-probe-${randomBytes(8).toString('hex')}`;
}

/** The MX provider a host belongs to: its registrable domain, approximated (mx1.google.com → google.com). */
export function providerOf(host: string): string {
  const labels = host.split('.');
  if (labels.length <= 2) return host;
  const second = labels[labels.length - 2]!;
  const top = labels[labels.length - 1]!;
  // example.co.uk, example.com.au: a second-level public suffix under a country code.
  const suffixLike =
    top.length === 2 && ['co', 'com', 'net', 'org', 'ac', 'gov', 'edu', 'ne', 'or'].includes(second);
  return labels.slice(suffixLike ? -3 : -2).join('.');
}
