// The Node edge behind the HAProxy front: an HTTP server on a Unix socket in the front's folder (mode
// 0600 in a 0700 folder: the platform's user, and so HAProxy, alone can connect), each connection
// opening with a PROXY protocol v2 header (haproxy.org/download/2.6/doc/proxy-protocol.txt) that says
// who the client is and whether it came over TLS. The socket then carries that address as its
// remoteAddress and, for TLS, `encrypted`, so that the edge (its plain-port redirect, HSTS, forwarded
// headers, the tunnel relay, the API's request.ip) sees the client as if it had accepted it itself. Its
// requests and upgrades are handed to the edge's own server.
import { chmodSync, rmSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type GiveToServer, takeConnections } from '../edge/handoff.js';

/** `\r\n\r\n\0\r\nQUIT\n`: the first 12 bytes of every v2 header. */
const SIGNATURE = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');
/** HAProxy sends a few dozen bytes of TLVs; anything much longer is not from it. */
const MAX_HEADER = 16 + 1024;
const HEADER_TIMEOUT_MS = 10_000;
const PP2_TYPE_SSL = 0x20;
const PP2_CLIENT_SSL = 0x01;

export interface ProxyHeader {
  /** LOCAL (HAProxy's own health checks) carries no client. */
  command: 'local' | 'proxy';
  /** The client's address as Node writes it (`1.2.3.4`, `2001:db8::1`), or null (unix, unspecified). */
  address: string | null;
  port: number | null;
  family: 'IPv4' | 'IPv6' | null;
  /** The client connected over TLS (the front terminated it). */
  tls: boolean;
}

/**
 * Parses a v2 header at the start of `data`: the header and how many bytes it took, null when more
 * bytes are needed; throws when `data` is not a PROXY v2 header.
 */
export function parseProxyHeader(data: Buffer): { header: ProxyHeader; length: number } | null {
  const head = data.subarray(0, Math.min(data.length, SIGNATURE.length));
  if (!head.equals(SIGNATURE.subarray(0, head.length))) throw new Error('not a PROXY v2 header');
  if (data.length < 16) return null;
  const versionCommand = data[12]!;
  if (versionCommand >> 4 !== 2) throw new Error('not PROXY protocol version 2');
  const command = versionCommand & 0x0f;
  if (command > 1) throw new Error('an unknown PROXY command');
  const family = data[13]!;
  const length = 16 + data.readUInt16BE(14);
  if (length > MAX_HEADER) throw new Error('a PROXY header too long');
  if (data.length < length) return null;
  const body = data.subarray(16, length);
  const header: ProxyHeader = {
    command: command === 0 ? 'local' : 'proxy',
    address: null,
    port: null,
    family: null,
    tls: false,
  };
  let offset: number;
  switch (family >> 4) {
    case 0x1: // AF_INET: source, destination, source port, destination port
      if (body.length < 12) throw new Error('a PROXY header too short for IPv4');
      if (command === 1) {
        header.address = [...body.subarray(0, 4)].join('.');
        header.port = body.readUInt16BE(8);
        header.family = 'IPv4';
      }
      offset = 12;
      break;
    case 0x2: // AF_INET6
      if (body.length < 36) throw new Error('a PROXY header too short for IPv6');
      if (command === 1) {
        header.address = formatIpv6(body.subarray(0, 16));
        header.port = body.readUInt16BE(32);
        header.family = 'IPv6';
      }
      offset = 36;
      break;
    case 0x3: // AF_UNIX: two 108-byte paths
      offset = 216;
      break;
    default:
      offset = 0;
  }
  // TLVs: type, length (16 bits), value.
  while (offset + 3 <= body.length) {
    const type = body[offset]!;
    const size = body.readUInt16BE(offset + 1);
    const value = body.subarray(offset + 3, offset + 3 + size);
    if (type === PP2_TYPE_SSL && value.length >= 1) header.tls = (value[0]! & PP2_CLIENT_SSL) !== 0;
    offset += 3 + size;
  }
  return { header, length };
}

/**
 * An IPv6 address as Node (libuv's inet_ntop) prints one: the longest run of two or more zero groups
 * as `::`, and an IPv4-mapped or -compatible address with its last 32 bits dotted (`::ffff:1.2.3.4`).
 */
export function formatIpv6(bytes: Buffer): string {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i));
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i += 1;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j += 1;
    if (j - i > bestLength) {
      best = i;
      bestLength = j - i;
    }
    i = j;
  }
  if (best === 0 && (bestLength === 6 || (bestLength === 5 && groups[5] === 0xffff))) {
    return `::${bestLength === 5 ? 'ffff:' : ''}${[...bytes.subarray(12, 16)].join('.')}`;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best === -1) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLength).join(':')}`;
}

/** Makes the socket say what the PROXY header said, for whoever reads it afterwards. */
function adopt(socket: Socket, header: ProxyHeader): void {
  const define = (name: string, value: unknown) =>
    Object.defineProperty(socket, name, { value, configurable: true, enumerable: false });
  define('remoteAddress', header.address ?? undefined);
  define('remotePort', header.port ?? undefined);
  define('remoteFamily', header.family ?? undefined);
  // What edge.ts (isEncrypted) and http-proxy (x-forwarded-proto) look at for a TLS socket.
  if (header.tls) define('encrypted', true);
}

export interface ProxiedEdge {
  server: Server;
  close(): Promise<void>;
}

/**
 * Listens on `path` for HAProxy's connections and hands their requests and upgrades to `edge` (the
 * Node edge's own server), each socket first taking on the client the PROXY header names.
 */
export async function listenProxied(
  path: string,
  edge: Server,
  /** Sees each connection once its PROXY header is read (the edge's tunnel byte path), else `give`. */
  next: (socket: Socket, give: GiveToServer) => void = (socket, give) => give(socket),
): Promise<ProxiedEdge> {
  const server = createServer();
  server.keepAliveTimeout = edge.keepAliveTimeout;
  server.on('request', (req: IncomingMessage, res: ServerResponse) => edge.emit('request', req, res));
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
    edge.emit('upgrade', req, socket, head),
  );
  // The HTTP server's own handling of a connection runs once the PROXY header is read.
  const endAll = takeConnections(server, (socket, give) => {
    let buffered: Buffer = Buffer.alloc(0);
    const fail = () => socket.destroy();
    const timer = setTimeout(fail, HEADER_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      let parsed: ReturnType<typeof parseProxyHeader>;
      try {
        parsed = parseProxyHeader(buffered);
      } catch {
        clearTimeout(timer);
        fail();
        return;
      }
      if (!parsed) return;
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('error', fail);
      socket.pause();
      const rest = buffered.subarray(parsed.length);
      if (rest.length > 0) socket.unshift(rest);
      adopt(socket, parsed.header);
      next(socket, give);
    };
    socket.on('data', onData);
    socket.on('error', fail);
  });
  rmSync(path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
  chmodSync(path, 0o600);
  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        endAll();
        rmSync(path, { force: true });
      }),
  };
}
