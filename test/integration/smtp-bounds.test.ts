// A hostile mail server cannot make the SMTP probe read without end: an endless line, an endless
// multi-line reply and a flood of replies nobody asked for each end the connection at once (well before
// the reply time-out) with an inconclusive probe, and the server sees the probe hang up.
import { once } from 'node:events';
import { type Server, type Socket, createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { probeMailbox } from '../../src/server/email/smtp.js';

/** The most a hostile server here writes to one connection, so a test that failed still ends. */
const WRITE_LIMIT = 64 * 1024 * 1024;

let server: Server | null = null;
const open = new Set<Socket>();

afterEach(async () => {
  for (const socket of open) socket.destroy();
  if (server) {
    server.close();
    await once(server, 'close');
    server = null;
  }
});

/**
 * A server that greets with `greeting` (if any) and then, once `after` is read (at once without it),
 * writes `unit` without end (nothing more when it is empty).
 */
async function hostile(unit: string, options: { greeting?: string; after?: RegExp } = {}) {
  const seen = { bytesWritten: 0, closedByClient: false };
  server = createServer((socket) => {
    open.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => {
      seen.closedByClient = true;
      open.delete(socket);
    });
    const flood = () => {
      if (unit === '') return;
      const chunk = unit.repeat(Math.max(1, Math.floor(65_536 / unit.length)));
      const pump = () => {
        while (!socket.destroyed && seen.bytesWritten < WRITE_LIMIT) {
          seen.bytesWritten += chunk.length;
          if (!socket.write(chunk)) return void socket.once('drain', pump);
        }
      };
      pump();
    };
    if (options.greeting !== undefined) socket.write(options.greeting);
    if (options.after === undefined) return flood();
    let heard = '';
    socket.on('data', (data: Buffer) => {
      heard += data.toString('latin1');
      if (options.after!.test(heard)) {
        heard = '';
        flood();
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, seen };
}

async function probe(port: number) {
  const started = Date.now();
  const outcome = await probeMailbox(
    {
      address: 'someone@hostile.test',
      domain: 'hostile.test',
      mxHosts: ['mx.hostile.test'],
      knownCatchAll: null,
      resolveHost: async () => ({ kind: 'ok', addresses: ['127.0.0.1'] }),
    },
    {
      port,
      heloName: 'probe.test',
      mailFrom: 'probe@probe.test',
      connectTimeoutMs: 2_000,
      replyTimeoutMs: 10_000,
      allowPrivate: true,
    },
    new Set(),
  );
  return { outcome, ms: Date.now() - started };
}

describe('the SMTP probe against a hostile mail server', () => {
  it('drops a greeting that is one endless line, as inconclusive', async () => {
    const { port, seen } = await hostile('a', { greeting: '220 ' });
    const { outcome, ms } = await probe(port);
    expect(outcome.verdict).toBe('inconclusive');
    expect(outcome.detail).toMatch(/reply line longer than 4096 characters/);
    expect(ms).toBeLessThan(5_000);
    await expect.poll(() => seen.closedByClient).toBe(true);
    expect(seen.bytesWritten).toBeLessThan(WRITE_LIMIT);
  });

  it('drops an endless multi-line reply, as inconclusive', async () => {
    const { port, seen } = await hostile('220-still greeting\r\n');
    const { outcome, ms } = await probe(port);
    expect(outcome.verdict).toBe('inconclusive');
    expect(outcome.detail).toMatch(/more than 64 lines/);
    expect(ms).toBeLessThan(5_000);
    await expect.poll(() => seen.closedByClient).toBe(true);
  });

  it('drops a flood of replies nobody asked for after EHLO, as inconclusive', async () => {
    const { port, seen } = await hostile('250 ok\r\n', { greeting: '220 hostile ESMTP\r\n', after: /EHLO/ });
    const { outcome, ms } = await probe(port);
    expect(outcome.verdict).toBe('inconclusive');
    expect(outcome.detail).toMatch(/more replies than it was asked for/);
    expect(ms).toBeLessThan(5_000);
    await expect.poll(() => seen.closedByClient).toBe(true);
  });

  it('drops one line longer than the bound that arrives with its newline, as inconclusive', async () => {
    const { port } = await hostile('', { greeting: `220 ${'b'.repeat(20_000)}\r\n` });
    const { outcome } = await probe(port);
    expect(outcome.verdict).toBe('inconclusive');
    expect(outcome.detail).toMatch(/reply line longer than 4096/);
  });
});
