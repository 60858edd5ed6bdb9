// Two ends of one loopback TCP connection, for tests of what runs over a socket (the multiplexer,
// gathered writes): `near` is the end that connected, `far` the one the server accepted; close()
// destroys both and the server.
import { once } from 'node:events';
import { type AddressInfo, type Socket, connect, createServer } from 'node:net';

export interface SocketPair {
  near: Socket;
  far: Socket;
  close(): void;
}

export async function socketPair(): Promise<SocketPair> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const near = connect((server.address() as AddressInfo).port, '127.0.0.1');
  await once(near, 'connect');
  const [far] = await accepted;
  return {
    near,
    far,
    close: () => {
      near.destroy();
      far.destroy();
      server.close();
    },
  };
}
