// The signed hop between platform nodes (cluster/hop.ts): a node believes the public client a request
// names only under a valid, recent signature made with the cluster's secret for that host, never sends
// a hopped request on again, and strips the header before the request goes further.
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { HOP_HEADER, HopSigner, clientOf, isHopped } from '../../../src/server/cluster/hop.js';

const secret = new TextEncoder().encode('a-cluster-secret-of-at-least-32-characters');

function request(headers: Record<string, string>): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  req.headers = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  req.rawHeaders = Object.entries(headers).flat();
  return req;
}

describe('the hop between nodes', () => {
  const a = new HopSigner(secret, 'node_a');
  const b = new HopSigner(secret, 'node_b');
  const client = { address: '203.0.113.9', proto: 'https' as const };

  it('carries the public client to a node of the same secret, and leaves no header behind', () => {
    const req = request({
      Host: 'demo.tunnel.example.com',
      [HOP_HEADER]: a.sign(client, 'demo.tunnel.example.com'),
    });
    expect(b.verify(req, 'demo.tunnel.example.com')).toEqual({ hopped: true, forged: false });
    expect(isHopped(req)).toBe(true);
    expect(clientOf(req, 'http')).toEqual(client);
    expect(req.headers[HOP_HEADER]).toBeUndefined();
    expect(req.rawHeaders).toEqual(['Host', 'demo.tunnel.example.com']);
  });

  it('refuses a hop signed with another secret, for another host, altered, or too old', () => {
    const other = new HopSigner(
      new TextEncoder().encode('another-secret-of-at-least-32-characters!'),
      'node_x',
    );
    const host = 'demo.tunnel.example.com';
    const cases = [
      other.sign(client, host),
      a.sign(client, 'other.tunnel.example.com'),
      a.sign(client, host).replace('203.0.113.9', '198.51.100.1'),
      a.sign(client, host).replace(' https ', ' http '),
      'node_x 0 203.0.113.9 https bad',
      'garbage',
    ];
    for (const value of cases) {
      const req = request({ Host: host, [HOP_HEADER]: value });
      expect(b.verify(req, host), value).toEqual({ hopped: false, forged: true });
      expect(isHopped(req)).toBe(false);
      expect(req.headers[HOP_HEADER]).toBeUndefined();
      expect(clientOf(req, 'http').proto).toBe('http');
    }
    vi.useFakeTimers({ now: Date.now() - 2 * 60_000 });
    const old = a.sign(client, host);
    vi.useRealTimers();
    expect(b.verify(request({ Host: host, [HOP_HEADER]: old }), host).forged).toBe(true);
  });

  it('takes a request without the header as a public one', () => {
    const req = request({ Host: 'demo.tunnel.example.com' });
    expect(b.verify(req, 'demo.tunnel.example.com')).toEqual({ hopped: false, forged: false });
    expect(isHopped(req)).toBe(false);
  });
});
