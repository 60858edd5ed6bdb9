// Ports a test must name before whoever listens on them starts (Pebble's, the edge port Pebble
// validates HTTP-01 against, a project's port_override and its services' ports). A port freePort() found free is one of the kernel's ephemeral ports
// (32768–60999 here): until it is listened on, any outgoing connection on the machine may take it, and
// a full run makes thousands. Ports above that range are taken only by listeners.
import { createServer } from 'node:net';

/**
 * 61000–61999 and 65001–65535: tenant-attacks.test.ts takes a port of its own from 62000–65000, and
 * one picked here must not be the one it is about to listen on.
 */
const BANDS: ReadonlyArray<readonly [number, number]> = [
  [61_000, 61_999],
  [65_001, 65_535],
];
const SIZE = BANDS.reduce((sum, [first, last]) => sum + last - first + 1, 0);

/** The n-th port of the bands. */
function nth(n: number): number {
  let rest = n;
  for (const [first, last] of BANDS) {
    if (rest <= last - first) return first + rest;
    rest -= last - first + 1;
  }
  throw new Error(`${n} is past the bands`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * The ports handed out in this test file: a project that declared one keeps it after its app stopped
 * (free again, but "declared by another project on this platform" to the next project given it).
 */
const handedOut = new Set<number>();

/** A port above the ephemeral range, free now, none of `except`, and not handed out before. */
export async function quietPort(except: ReadonlySet<number> = new Set()): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = nth(Math.floor(Math.random() * SIZE));
    if (except.has(port) || handedOut.has(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error('no free port in 61000–61999 or 65001–65535');
}

/** `count` different ports above the ephemeral range, free now (a project's and its services'). */
export async function quietPorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await quietPort(ports));
  return [...ports];
}
