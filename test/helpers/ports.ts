// Ports a test must name before whoever listens on them starts (Pebble's, or the edge port Pebble
// validates HTTP-01 against). A port freePort() found free is one of the kernel's ephemeral ports
// (32768–60999 here): until it is listened on, any outgoing connection on the machine may take it, and
// a full run makes thousands. Ports above that range are taken only by listeners.
import { createServer } from 'node:net';

const FIRST = 61_000;
const LAST = 65_535;

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port above the ephemeral range, free now. */
export async function quietPort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = FIRST + Math.floor(Math.random() * (LAST - FIRST + 1));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port between ${FIRST} and ${LAST}`);
}
