// The built-in DNS-01 responder: answers the pending _acme-challenge values over UDP and TCP, refuses
// every other name, and finds a port free for both when asked for any.
import { createSocket } from 'node:dgram';
import { createServer, type Server } from 'node:net';
import DNS2 from 'dns2';
import { afterEach, describe, expect, it } from 'vitest';
import { DnsResponder } from '../../../../src/server/tls/challenges.js';

const opened: DnsResponder[] = [];
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((r) => r.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function responder(port = 0): Promise<{ responder: DnsResponder; port: number }> {
  const r = new DnsResponder();
  opened.push(r);
  return { responder: r, port: await r.listen('127.0.0.1', port) };
}

function ask(port: number, name: string, type: 'TXT' | 'A') {
  return new DNS2({ nameServers: ['127.0.0.1'], port, timeout: 2_000 }).resolve(name, type);
}

function udpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    socket.once('error', () => resolve(false));
    socket.bind(port, '127.0.0.1', () => socket.close(() => resolve(true)));
  });
}

describe('DnsResponder', () => {
  it('answers the pending values of _acme-challenge names over UDP and TCP, and refuses other names', async () => {
    const { responder: r, port } = await responder();
    expect(r.address).toBe(`127.0.0.1:${port}`);
    await r.add('Example.test', 'token', 'value-one');
    await r.add('example.test', 'token2', 'value-two');
    const udp = await ask(port, '_acme-challenge.example.test', 'TXT');
    expect(udp.header.aa).toBe(1);
    expect(udp.answers.map((a) => (a as unknown as { data: string[] }).data.join(''))).toEqual([
      'value-one',
      'value-two',
    ]);
    const tcp = await DNS2.TCPClient({ dns: '127.0.0.1', port })('_acme-challenge.example.test', 'TXT');
    expect(tcp.answers).toHaveLength(2);

    await r.remove('example.test', 'token', 'value-one');
    const after = await ask(port, '_acme-challenge.example.test', 'TXT');
    expect(after.answers.map((a) => (a as unknown as { data: string[] }).data.join(''))).toEqual([
      'value-two',
    ]);
    const other = await ask(port, 'example.test', 'A');
    expect(other.header.rcode).toBe(5); // REFUSED: not an open resolver, not an authority for anything else
    expect(other.answers).toEqual([]);
  });

  it('fails on a given port whose TCP side is taken, leaving its UDP side free again', async () => {
    const taken = createServer();
    servers.push(taken);
    const port = await new Promise<number>((resolve) =>
      taken.listen(0, '127.0.0.1', () => resolve((taken.address() as { port: number }).port)),
    );
    const r = new DnsResponder();
    opened.push(r);
    await expect(r.listen('127.0.0.1', port)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(r.address).toBeNull();
    expect(await udpFree(port)).toBe(true);
  });
});
