// Whether a tunnel's local app listens: a TCP connect answers it, and the watch asks again every few
// milliseconds here (seconds in the app) while nothing listens, reports the change once something does,
// then stops asking; stop() ends it for good.
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PortWatch, portAnswers } from '../../../src/core/tunnel/port-watch.js';
import { quietFor } from '../../helpers/poll.js';

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((done) => server.close(done));
});

function listen(port = 0): Promise<number> {
  const server = createServer((socket) => socket.destroy());
  servers.push(server);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
  });
}

/** A port nothing listens on (one that just listened, closed again). */
async function freePort(): Promise<number> {
  const port = await listen();
  await new Promise((done) => servers.pop()!.close(done));
  return port;
}

describe('portAnswers', () => {
  it('says whether something accepts connections on the port', async () => {
    expect(await portAnswers(await listen())).toBe(true);
    expect(await portAnswers(await freePort())).toBe(false);
  });
});

describe('PortWatch', () => {
  it('reports nothing listening, keeps checking, reports the listener once it comes, then stops checking', async () => {
    const port = await freePort();
    const seen: boolean[] = [];
    const watch = new PortWatch(port, (listening) => seen.push(listening), { intervalMs: 20 });
    await watch.check();
    expect(seen).toEqual([false]);
    expect(watch.listening).toBe(false);
    expect(watch.waiting).toBe(true);
    await quietFor(80);
    // Asked again meanwhile, and still nothing: no new report.
    expect(seen).toEqual([false]);
    await listen(port);
    await expect.poll(() => seen, { timeout: 2_000, interval: 10 }).toEqual([false, true]);
    expect(watch.waiting).toBe(false);
    // A check when told to (the tunnel came back online): the same answer is not reported again.
    await watch.check();
    expect(seen).toEqual([false, true]);
    watch.stop();
  });

  it('reports a listener at once, and nothing more after stop()', async () => {
    const seen: boolean[] = [];
    const up = new PortWatch(await listen(), (listening) => seen.push(listening), { intervalMs: 20 });
    await up.check();
    expect(seen).toEqual([true]);
    expect(up.waiting).toBe(false);

    const port = await freePort();
    const down: boolean[] = [];
    const watch = new PortWatch(port, (listening) => down.push(listening), { intervalMs: 20 });
    await watch.check();
    watch.stop();
    expect(watch.waiting).toBe(false);
    await listen(port);
    await quietFor(100);
    expect(down).toEqual([false]);
    await watch.check();
    expect(down).toEqual([false]);
  });
});
