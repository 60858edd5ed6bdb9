// The parts of the HAProxy front that need no HAProxy: the PROXY v2 header the Node edge reads behind
// it (and the socket that serves requests after it, bytes split anyhow), the master CLI's answers, and
// the runtime's route events (src/server/runtime/routes.ts).
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { type IncomingMessage, createServer } from 'node:http';
import { SocketAddress, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { parseShowProc, sessionsByAddress } from '../../../src/server/front/haproxy.js';
import { formatIpv6, listenProxied, parseProxyHeader } from '../../../src/server/front/proxy-protocol.js';
import { RouteEvents } from '../../../src/server/runtime/routes.js';

const SIGNATURE = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');

/** A v2 header as HAProxy's `send-proxy-v2-ssl` writes it. */
function header(options: {
  command?: 'local' | 'proxy';
  v6?: boolean;
  source: Buffer;
  port: number;
  tls?: boolean;
}): Buffer {
  const addresses = options.v6 ? Buffer.alloc(36) : Buffer.alloc(12);
  options.source.copy(addresses, 0);
  const size = options.v6 ? 16 : 4;
  addresses.writeUInt16BE(options.port, size * 2);
  addresses.writeUInt16BE(443, size * 2 + 2);
  // PP2_TYPE_SSL: client flags, verify, then a version sub-TLV HAProxy adds.
  const ssl = Buffer.from([
    0x20,
    0x00,
    0x0d,
    options.tls ? 0x07 : 0x00,
    0,
    0,
    0,
    0,
    0x21,
    0x00,
    0x03,
    0x31,
    0x2e,
    0x33,
  ]);
  const body = Buffer.concat([addresses, ssl]);
  const head = Buffer.alloc(4);
  head[0] = options.command === 'local' ? 0x20 : 0x21;
  head[1] = options.v6 ? 0x21 : 0x11;
  head.writeUInt16BE(body.length, 2);
  return Buffer.concat([SIGNATURE, head, body]);
}

const root = mkdtempSync(join(tmpdir(), 'wharf-front-parts-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('parseProxyHeader', () => {
  it('reads the client of an IPv4 connection and whether it came over TLS', () => {
    const bytes = header({ source: Buffer.from([203, 0, 113, 7]), port: 51234, tls: true });
    const parsed = parseProxyHeader(Buffer.concat([bytes, Buffer.from('GET / HTTP/1.1\r\n')]));
    expect(parsed).toEqual({
      header: { command: 'proxy', address: '203.0.113.7', port: 51234, family: 'IPv4', tls: true },
      length: bytes.length,
    });
    expect(parseProxyHeader(header({ source: Buffer.from([10, 0, 0, 1]), port: 1 }))!.header.tls).toBe(false);
  });

  it('reads IPv6 clients as Node prints their addresses, and LOCAL connections as no client', () => {
    const source = Buffer.from('20010db8000000000000000000000001', 'hex');
    expect(parseProxyHeader(header({ v6: true, source, port: 2 }))!.header).toMatchObject({
      address: '2001:db8::1',
      family: 'IPv6',
    });
    expect(parseProxyHeader(header({ command: 'local', source, port: 2 }))!.header).toMatchObject({
      command: 'local',
      address: null,
    });
  });

  it('waits for the whole header, and refuses what is not one', () => {
    const bytes = header({ source: Buffer.from([1, 2, 3, 4]), port: 5 });
    for (let cut = 0; cut < bytes.length; cut++) expect(parseProxyHeader(bytes.subarray(0, cut))).toBeNull();
    expect(() => parseProxyHeader(Buffer.from('GET / HTTP/1.1\r\n'))).toThrow('not a PROXY v2 header');
    expect(() => parseProxyHeader(Buffer.from('PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n'))).toThrow();
    const long = Buffer.from(bytes);
    long.writeUInt16BE(60_000, 14);
    expect(() => parseProxyHeader(long)).toThrow('too long');
  });

  it('formats any IPv6 address exactly as Node does (property)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        fc.integer({ min: 0, max: 15 }),
        fc.integer({ min: 0, max: 16 }),
        (raw, from, zeros) => {
          const bytes = Buffer.from(raw);
          bytes.fill(0, from, Math.min(16, from + zeros));
          const full = [...Array(8).keys()].map((i) => bytes.readUInt16BE(i * 2).toString(16)).join(':');
          expect(formatIpv6(bytes)).toBe(new SocketAddress({ address: full, family: 'ipv6' }).address);
        },
      ),
      { numRuns: 1000 },
    );
    expect(formatIpv6(Buffer.from('00000000000000000000ffff01020304', 'hex'))).toBe('::ffff:1.2.3.4');
  });
});

describe('listenProxied', () => {
  it('serves requests after the header, as from the client it names, whatever the bytes are cut into', async () => {
    const path = join(root, 'edge.sock');
    const seen: Array<{ address: string | undefined; encrypted: unknown; body: string }> = [];
    const edge = createServer((req: IncomingMessage, res) => {
      const hash = createHash('sha256');
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        hash.update(c);
      });
      req.on('end', () => {
        seen.push({
          address: req.socket.remoteAddress,
          encrypted: (req.socket as { encrypted?: unknown }).encrypted,
          body: `${size} ${hash.digest('hex')}`,
        });
        res.end('ok');
      });
    });
    const proxied = await listenProxied(path, edge);
    try {
      expect(statSync(path).mode & 0o777).toBe(0o600);
      const body = randomBytes(300_000);
      const request = Buffer.concat([
        header({ source: Buffer.from([198, 51, 100, 9]), port: 4000, tls: true }),
        Buffer.from(
          `POST /x HTTP/1.1\r\nhost: a.test\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`,
        ),
        body,
      ]);
      // Cut right inside the header, then in odd pieces, each written on its own.
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(path);
        let text = '';
        socket.on('data', (d: Buffer) => (text += d.toString()));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
        const cuts = [7, 20, 33, 1000, 65_536, 100_001, request.length];
        let at = 0;
        const next = () => {
          const cut = cuts.shift();
          if (cut === undefined) return;
          socket.write(request.subarray(at, cut));
          at = cut;
          setTimeout(next, 5);
        };
        next();
      });
      expect(answer).toMatch(/^HTTP\/1\.1 200 OK/);
      expect(seen).toEqual([
        {
          address: '198.51.100.9',
          encrypted: true,
          body: `${body.length} ${createHash('sha256').update(body).digest('hex')}`,
        },
      ]);
      // Not a PROXY header: the connection is closed, nothing is served.
      const refused = await new Promise<string>((resolve) => {
        const socket = connect(path);
        let text = '';
        socket.on('data', (d: Buffer) => (text += d.toString()));
        socket.on('close', () => resolve(text));
        socket.on('error', () => undefined);
        socket.write('GET / HTTP/1.1\r\nhost: a.test\r\n\r\n');
      });
      expect(refused).toBe('');
      expect(seen).toHaveLength(1);
    } finally {
      await proxied.close();
    }
  });
});

describe('the master CLI’s answers', () => {
  it('reads the master, its workers and the old ones from show proc', () => {
    const text = `#<PID>          <type>          <reloads>       <uptime>        <version>
2455            master          3 [failed: 1]   0d00h10m24s     2.6.12-1+deb12u4
# workers
16382           worker          0               0d00h00m02s     2.6.12-1+deb12u4
# old workers
16071           worker          1               0d00h00m09s     2.6.12-1+deb12u4
# programs
`;
    expect(parseShowProc(text)).toEqual({ master: 2455, workers: [16382], old: [16071], failed: 1 });
  });

  it('adds up the current sessions of each server address from show stat', () => {
    const csv = `# pxname,svname,qcur,qmax,scur,smax,addr
edge,FRONTEND,,,3,9,
app_4000,app,0,0,2,5,127.0.0.1:4000
app_4000,edge,0,0,1,1,unix
app_4000,BACKEND,0,0,3,5,
app_4001,app,0,0,0,1,127.0.0.1:4001
`;
    const sessions = sessionsByAddress(csv);
    expect(sessions.get('127.0.0.1:4000')).toBe(2);
    expect(sessions.get('127.0.0.1:4001')).toBe(0);
    expect(sessions.get('unix')).toBe(1);
    expect(sessionsByAddress('Unknown command')).toEqual(new Map());
  });
});

describe('RouteEvents', () => {
  it('tells each listener of a change, until it unsubscribes, whatever another one throws', () => {
    const routes = new RouteEvents();
    const heard: string[] = [];
    routes.subscribe({
      changed: () => {
        throw new Error('broken listener');
      },
    });
    const off = routes.subscribe({ changed: (id) => heard.push(id) });
    routes.changed('prj_1');
    off();
    routes.changed('prj_2');
    expect(heard).toEqual(['prj_1']);
  });

  it('waits for every listener to release servers, a failing one counting as done', async () => {
    const routes = new RouteEvents();
    const order: string[] = [];
    routes.subscribe({
      changed: () => undefined,
      released: async (servers) => {
        await new Promise((r) => setTimeout(r, 30));
        order.push(`slow ${servers.map((s) => `${s.host}:${s.port}`).join(',')}`);
      },
    });
    routes.subscribe({ changed: () => undefined, released: () => Promise.reject(new Error('gone')) });
    routes.subscribe({ changed: () => undefined });
    await routes.released([
      { host: '127.0.0.1', port: 4000 },
      { host: '10.0.0.2', port: 30_001 },
    ]);
    order.push('released');
    expect(order).toEqual(['slow 127.0.0.1:4000,10.0.0.2:30001', 'released']);
    await routes.released([]);
  });
});
