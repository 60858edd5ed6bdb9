// Taking an HTTP server's connections over before its parser sees them: the PROXY header of the
// HAProxy front is read first, and the tunnel's byte path claims the connections whose first request
// is for a tunnel. Whatever is not claimed goes on to the server's own handling, the bytes read so far
// first.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** Hands a socket, with what was read of it put back, to the HTTP server's own handling. */
export type GiveToServer = (socket: Socket, read?: Buffer) => void;

/**
 * Runs `take` for each new connection of `server` instead of the server's own handling, which `take`
 * reaches through `give`. Returns what ends every connection the server accepted, wherever it went
 * (the HTTP server's closeAllConnections knows only those given to it).
 */
export function takeConnections(
  server: Server,
  take: (socket: Socket, give: GiveToServer) => void,
): () => void {
  const own = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  const give: GiveToServer = (socket, read) => {
    socket.pause();
    if (read && read.length > 0) socket.unshift(read);
    // Bytes already read from the socket are in its stream buffer: the HTTP parser must read through
    // the stream too (not straight from the handle, which would pass them by), so it is told the
    // handle was taken already.
    const handle = (socket as unknown as { _handle?: { _consumed?: boolean } })._handle;
    if (handle) handle._consumed = true;
    for (const listener of own) listener.call(server, socket);
    socket.resume();
  };
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    take(socket, give);
  });
  return () => {
    for (const socket of open) socket.destroy();
  };
}
