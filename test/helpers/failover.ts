// The operator's load balancer in front of several platform nodes, as small as it gets, for the cluster
// tests: each connection goes to the first backend that accepts it (node A while it is up, else B).
import { type AddressInfo, type Server, type Socket, connect, createServer } from 'node:net';

export interface Failover {
  port: number;
  close(): Promise<void>;
}

/** A port free on 127.0.0.1 a moment ago (to give a node before it starts). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Sends each connection to the first of `backends()` (ports on 127.0.0.1) that accepts it. */
export async function failover(backends: () => number[]): Promise<Failover> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.pause();
    const tryNext = (left: number[]) => {
      const [port, ...rest] = left;
      if (port === undefined) {
        socket.destroy();
        return;
      }
      const upstream = connect(port, '127.0.0.1');
      upstream.once('error', () => tryNext(rest));
      upstream.once('connect', () => {
        upstream.removeAllListeners('error');
        sockets.add(upstream);
        upstream.once('close', () => sockets.delete(upstream));
        upstream.on('error', () => socket.destroy());
        socket.on('error', () => upstream.destroy());
        socket.pipe(upstream).pipe(socket);
        socket.resume();
      });
    };
    tryNext(backends());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
