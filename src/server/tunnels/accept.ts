// Accepting a tunnel client on `GET /api/v1/tunnels/connect`: the caller authenticated, its subdomain
// checked and reserved, the account's tunnel and stream slots taken (or taken over from its older
// connection, told to go with a GOAWAY), and HTTP/2 run over the raw `wharf-tunnel` stream or a WebSocket.
import type { IncomingMessage } from 'node:http';
import http2 from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type WebSocketServer, createWebSocketStream } from 'ws';
import {
  CAPTURES_FEATURE,
  MUX_FEATURE,
  PIPE_FEATURE,
  RELAY_FEATURE,
  SESSION_SETTINGS,
  SESSION_WINDOW,
  heartbeat,
  sessionTransport,
} from '../../core/tunnel/protocol.js';
import { Mux } from '../../core/tunnel/mux.js';
import { TUNNEL_HEADERS, TUNNEL_UPGRADE_PROTOCOL } from '../../shared/api/tunnels.js';
import { RESERVED_SUBDOMAINS, isDnsLabel, isHostWithPort } from '../../shared/dns-label.js';
import type { Authenticator, Caller } from '../auth/authenticate.js';
import { assertScope } from '../auth/authenticate.js';
import { type PlatformConfig, edgeUrl } from '../config.js';
import { ApiError, problem, validationError } from '../errors.js';
import { newId } from '../ids.js';
import type { AccountLimits, Lease } from '../limits.js';
import type { TunnelHolders } from '../cluster/tunnels.js';
import type { TunnelRegistry } from './registry.js';
import { CaptureSender } from './capture-sender.js';
import { Tunnel } from './tunnel.js';

/** What taking an upgrade (a tunnel connection, a traffic feed) needs; the hub holds one. */
export interface UpgradeContext {
  readonly config: PlatformConfig;
  readonly tunnels: TunnelRegistry;
  readonly limits: AccountLimits;
  readonly auth: Authenticator;
  /** Shared by tunnel connections and traffic feeds: close() of the hub closes it. */
  readonly wss: WebSocketServer;
  /** Which node holds each tunnel, when several share the database. */
  readonly holders: TunnelHolders;
  /** How often the edge PINGs each tunnel client (0: never), read as each connects. */
  readonly settings: { readonly heartbeatMs: number };
}

/** Takes a tunnel client's upgrade to the tunnel connection; throws the ApiError that refuses it. */
export async function acceptTunnel(
  context: UpgradeContext,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  url: URL,
): Promise<void> {
  const { config, tunnels, limits, auth, wss, holders } = context;
  const caller = await callerOf(auth, req);
  const protocol = String(req.headers.upgrade ?? '').toLowerCase();
  if (protocol !== TUNNEL_UPGRADE_PROTOCOL && protocol !== 'websocket') {
    throw new ApiError(
      'bad_request',
      `upgrade to "${TUNNEL_UPGRADE_PROTOCOL}" (or "websocket"), not "${protocol || 'nothing'}"`,
    );
  }
  const appHost = appHostOf(req);
  const asked = url.searchParams.get('subdomain');
  const subdomain = asked === null || asked === '' ? await tunnels.randomSubdomain() : asked;
  if (!isDnsLabel(subdomain)) {
    throw validationError([{ path: 'subdomain', message: 'must be a lowercase DNS label' }]);
  }
  if (RESERVED_SUBDOMAINS.has(subdomain)) {
    throw validationError([{ path: 'subdomain', message: `"${subdomain}" is reserved for the platform` }]);
  }
  // Refused before the subdomain is claimed, when this could only be refused after.
  const held = tunnels.get(subdomain);
  if (held?.accountId !== caller.accountId || held.slot === null) {
    limits.tunnels.check(caller.accountId, await holders.heldElsewhere(caller.accountId, subdomain));
    limits.streams.check(caller.accountId);
  }
  await tunnels.reserve(caller.accountId, subdomain);

  const existing = tunnels.get(subdomain);
  const known = existing?.accountId === caller.accountId ? existing : undefined;
  // A reconnect of the subdomain takes its older connection's tunnel slot and stream slot over; any
  // other connect takes new ones, or is refused at the account's limits.
  const slot = known?.slot ?? limits.tunnels.acquire(caller.accountId);
  known?.stream?.release();
  let stream: Lease;
  try {
    stream = await limits.streams.take(caller.accountId);
  } catch (error) {
    if (slot !== known?.slot) slot.release();
    throw error;
  }
  // A client that held the subdomain on another node keeps its tunnel's id here.
  const previousId = known ? null : await holders.previousId(subdomain, caller.accountId);
  const tunnel =
    known ??
    new Tunnel(
      previousId ?? newId('tun'),
      caller.accountId,
      subdomain,
      edgeUrl(config, `${subdomain}.${config.tunnelDomain}`),
      tunnels.grantCapture(caller.accountId),
    );
  tunnels.add(tunnel);
  tunnel.slot = slot;
  tunnel.stream = stream;
  tunnel.offlineSince = 0;
  const features = new Set(
    String(req.headers[TUNNEL_HEADERS.features] ?? '')
      .split(',')
      .map((feature) => feature.trim()),
  );
  tunnel.pipes = features.has(PIPE_FEATURE);
  tunnel.relays = tunnel.pipes && features.has(RELAY_FEATURE);
  tunnel.appHost = tunnel.relays ? appHost : null;
  const previousCaptures = tunnel.captures;
  tunnel.captures = null;
  const generation = ++tunnel.generation;
  socket.once('close', () => stream.release());
  /** This connection is gone: the tunnel slot goes back, unless a newer connection holds it now. */
  const leave = () => {
    if (tunnel.generation !== generation) return;
    tunnel.slot?.release();
    tunnel.slot = null;
    tunnel.offlineSince = Date.now();
    // Another node may hold it by now (the row is then its): only this node's row goes.
    holders.release(subdomain, tunnel.id).catch(() => undefined);
  };
  // The other nodes forward its traffic here from now on, and count it against the account's limit:
  // recorded before the client hears it is connected (a tunnel it opens next, anywhere, sees this
  // one). Should the store not answer, the tunnel still serves what reaches this node.
  const fresh = slot !== known?.slot;
  try {
    await holders.hold(
      subdomain,
      caller.accountId,
      tunnel.id,
      fresh ? (elsewhere) => limits.tunnels.checkHeld(caller.accountId, elsewhere) : undefined,
    );
  } catch (error) {
    // Refused (two connects at once on two nodes, one slot left); else the store did not answer, and
    // the tunnel still serves what reaches this node.
    if (error instanceof ApiError) {
      leave();
      tunnels.forgetLater(tunnel);
      throw error;
    }
  }
  if (socket.destroyed) {
    // Gone before its close could be heard: both slots go back here.
    stream.release();
    leave();
    return;
  }
  // The same account connecting again takes the subdomain over from its older connection, and tells
  // that one why, so that it stops instead of reconnecting and taking it back in turn.
  const previous = tunnel.session;
  if (previous && !previous.closed && !previous.destroyed) tunnel.replaced(previous, previousCaptures);
  const responseHeaders = [
    `${TUNNEL_HEADERS.id}: ${tunnel.id}`,
    `${TUNNEL_HEADERS.subdomain}: ${subdomain}`,
    `${TUNNEL_HEADERS.url}: ${tunnel.url}`,
  ];
  const muxed = tunnel.pipes && features.has(MUX_FEATURE);
  if (muxed) responseHeaders.push(`${TUNNEL_HEADERS.mux}: 1`);
  /** The connection's bytes as they come, before the multiplexer (if any) and HTTP/2. */
  let connection: Duplex;
  if (protocol === 'websocket') {
    connection = await new Promise<Duplex>((resolve, reject) => {
      const addHeaders = (headers: string[], request: IncomingMessage) => {
        if (request !== req) return;
        headers.push(...responseHeaders);
        wss.off('headers', addHeaders);
      };
      // A client gone before the handshake ends: the slots it took go back.
      const gone = () => {
        wss.off('headers', addHeaders);
        leave();
        reject(new Error('the tunnel client went away during the upgrade'));
      };
      socket.once('close', gone);
      wss.on('headers', addHeaders);
      wss.handleUpgrade(req, socket, head, (ws) => {
        socket.off('close', gone);
        resolve(createWebSocketStream(ws));
      });
    });
  } else {
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${TUNNEL_UPGRADE_PROTOCOL}\r\n${responseHeaders.join('\r\n')}\r\n\r\n`,
    );
    if (head.length > 0) socket.unshift(head);
    // Small frames (a request's HEADERS) must not wait for Nagle.
    (socket as Partial<Socket>).setNoDelay?.(true);
    connection = socket;
  }
  const mux = muxed ? new Mux(connection, 'edge') : null;
  const transport = sessionTransport(mux ? mux.channel : connection);
  const session = http2.connect(`http://${subdomain}`, {
    createConnection: () => transport,
    settings: SESSION_SETTINGS,
  });
  mux?.runs(session);
  session.on('connect', () => session.setLocalWindowSize(SESSION_WINDOW));
  // A client gone without a word (no FIN, no reset) is let go of, and its public requests answered.
  heartbeat(session, transport, context.settings.heartbeatMs);
  session.on('error', () => undefined);
  session.once('close', () => {
    if (tunnel.session === session) tunnel.session = null;
    if (mux && tunnel.mux === mux) tunnel.mux = null;
    transport.destroy();
    leave();
    tunnels.forgetLater(tunnel);
  });
  transport.once('close', () => session.destroy());
  // The client closed its end (one that stops gives its streams a second, then closes): the tunnel has
  // no use for half a connection, and HTTP/2 over it would wait on the streams still open (public
  // connections kept alive) until the heartbeat gave up on it.
  transport.once('end', () => session.destroy());
  tunnel.session = session;
  tunnel.mux = mux;
  tunnel.captures = tunnel.relays && features.has(CAPTURES_FEATURE) ? new CaptureSender(session, mux) : null;
  tunnel.connectedAt = new Date().toISOString();
}

/** The Host a relay client's app is sent (TUNNEL_HEADERS.appHost), null for the public one. */
function appHostOf(req: IncomingMessage): string | null {
  const value = req.headers[TUNNEL_HEADERS.appHost];
  if (value === undefined) return null;
  if (typeof value !== 'string' || !isHostWithPort(value)) {
    throw validationError([
      {
        path: TUNNEL_HEADERS.appHost,
        message: 'must be a host name with an optional port, such as localhost:3000',
      },
    ]);
  }
  return value;
}

/**
 * The caller of an upgrade: X-API-Key or a Bearer token, or (browsers set no headers) `?token=`,
 * which takes a short-lived JWT only, never an API key.
 */
export async function callerOf(auth: Authenticator, req: IncomingMessage): Promise<Caller> {
  const { headers } = req;
  const token =
    headers['x-api-key'] === undefined && headers.authorization === undefined
      ? new URL(req.url ?? '/', 'http://platform').searchParams.get('token')
      : null;
  const caller = token ? await auth.authenticateQueryToken(token) : await auth.authenticate({ headers });
  assertScope(caller, 'deploy');
  return caller;
}

/** Answers a refused upgrade with its problem+json, then closes the socket. */
export function refuse(socket: Duplex, error: unknown): void {
  const apiError =
    error instanceof ApiError
      ? error
      : new ApiError('internal', (error as Error).message || 'internal error');
  const body = problem(apiError.code, apiError.detail, apiError.fields, apiError.extra);
  const json = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${body.status} ${body.title}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(json)}\r\nconnection: close\r\n\r\n${json}`,
  );
}
