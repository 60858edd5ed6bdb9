// One tunnel as the edge keeps it: its public name and URL, the HTTP/2 session to its client while it
// is connected, the account's slots it holds, its capture ring (the last 1,000 exchanges, bodies within
// its share of the account's capture memory) and the live feed of what it captures.
import { EventEmitter } from 'node:events';
import http2, { type ClientHttp2Session } from 'node:http2';
import { GOAWAY_REPLACED } from '../../core/tunnel/protocol.js';
import type { CapturedExchange, Exchange } from '../../core/capture/capture.js';
import { CaptureRing } from '../../core/capture/ring.js';
import type { Mux } from '../../core/tunnel/mux.js';
import { CAPTURE_LIMITS, type Tunnel as TunnelView } from '../../shared/api/tunnels.js';
import type { Lease } from '../limits.js';
import type { CaptureSender } from './capture-sender.js';

/** Relay streams while a tunnel's bodies average under the first; read streams past the second (bytes). */
const RELAY_BODIES_FROM = 8 * 1024;
const RELAY_BODIES_UP_TO = 32 * 1024;

export class Tunnel {
  readonly ring: CaptureRing;
  readonly feed = new EventEmitter();
  session: ClientHttp2Session | null = null;
  /** The current connection's multiplexer, when its client took the `mux` feature: byte-path streams go on it. */
  mux: Mux | null = null;
  connectedAt = new Date().toISOString();
  /** The account's tunnel slot, held from a connect until the last connection is gone. */
  slot: Lease | null = null;
  /** The stream slot of the current connection. */
  stream: Lease | null = null;
  /** Counts connects: only the latest connection's end gives the tunnel slot back. */
  generation = 0;
  /** When its last connection ended (0: never connected yet, or connected now). */
  offlineSince = 0;
  /** Its client takes public connections whole (the byte path, tunnel-conduit.ts). */
  pipes = false;
  /**
   * Its client moves a connection's bytes and parses nothing (the `relay` feature): the edge sends its
   * app `appHost` as Host (null: the public one) and drops the app's hop-by-hop response headers.
   */
  relays = false;
  appHost: string | null = null;
  /** Where the current connection's captures go to its client (the `captures` feature), else null. */
  captures: CaptureSender | null = null;
  /**
   * The bytes of bodies its recent exchanges carried (a moving average), and whether new byte-path
   * streams of a relay client are relayed (see relayNow).
   */
  private bodyAverage = 0;
  private relaying = true;
  /** Exchanges of the byte path that ended in this turn of the event loop (see recordLater). */
  private ended: Array<{
    exchange: Exchange;
    error: string | null;
    head: Buffer | null;
    sender: CaptureSender | null;
    keep: boolean;
  }> = [];

  constructor(
    readonly id: string,
    readonly accountId: string,
    readonly subdomain: string,
    readonly url: string,
    /** The bytes of bodies its captures may keep: its share of the account's capture budget. */
    readonly captureBytes: number,
  ) {
    this.ring = new CaptureRing(CAPTURE_LIMITS.perTunnel, captureBytes);
    this.feed.setMaxListeners(0);
  }

  /**
   * Its client connected again (here or to another node): the older connection is told so (a GOAWAY
   * saying it was replaced, so that it stops rather than reconnecting) and closed, its captures ended.
   */
  replaced(session: ClientHttp2Session, captures: CaptureSender | null): void {
    try {
      session.goaway(http2.constants.NGHTTP2_NO_ERROR, 0, Buffer.from(GOAWAY_REPLACED));
    } catch {
      // already going away
    }
    captures?.end();
    session.close();
  }

  get online(): boolean {
    return this.session !== null && !this.session.closed && !this.session.destroyed;
  }

  view(): TunnelView {
    return {
      id: this.id,
      subdomain: this.subdomain,
      url: this.url,
      connected_at: this.connectedAt,
      requests_captured: this.ring.total,
    };
  }

  /**
   * Whether a public connection goes to the client as a relay stream now: its client offered `relay`,
   * and it takes no captures or the tunnel's bodies are small. A relay client is sent its captures,
   * bodies and all, so large bodies would cross the tunnel twice; a client that reads the stream keeps
   * them as they pass. Past 32 KiB on average, new streams are read by the client; under 8 KiB,
   * relayed again.
   */
  get relayNow(): boolean {
    return this.relays && (this.relaying || this.captures === null);
  }

  /**
   * An exchange of the byte path kept `bytes` of bodies (what its record would carry: at most 1 MiB
   * each, so one long download does not hold the tunnel off the relay for hundreds of requests).
   */
  noteBodies(bytes: number): void {
    if (!this.relays) return;
    this.bodyAverage += (bytes - this.bodyAverage) / 32;
    if (this.relaying && this.bodyAverage > RELAY_BODIES_UP_TO) this.relaying = false;
    else if (!this.relaying && this.bodyAverage < RELAY_BODIES_FROM) this.relaying = true;
  }

  /**
   * Ends an exchange of the byte path now (its duration and sizes as they are), and keeps it (`keep`)
   * and sends it to the client (`sender`) once this turn of the event loop has written its responses:
   * the capture of the exchanges that ended in it is done together, after them.
   */
  recordLater(
    exchange: Exchange,
    error: string | null,
    head: Buffer | null,
    sender: CaptureSender | null,
    keep: boolean,
  ): void {
    if (sender === null && !keep) return;
    exchange.end(error);
    this.ended.push({ exchange, error, head, sender, keep });
    if (this.ended.length === 1) setImmediate(() => this.captureEnded());
  }

  private captureEnded(): void {
    const ended = this.ended;
    this.ended = [];
    for (const { exchange, error, head, sender, keep } of ended) {
      sender?.send(exchange, error, head);
      if (!keep) continue;
      // The captured request is put together only for someone who reads it (capture.ts).
      if (this.feed.listenerCount('request') > 0) this.record(exchange, error);
      else this.ring.keep(exchange, error);
    }
  }

  /** Finishes a captured exchange (with why it failed, if it did), keeps it and feeds it live. */
  record(exchange: Exchange, error: string | null = null): CapturedExchange {
    const captured = this.ring.record(exchange, error);
    // The captured request is put together only for someone who reads it (capture.ts).
    if (this.feed.listenerCount('request') > 0) this.feed.emit('request', captured.request);
    return captured;
  }
}
