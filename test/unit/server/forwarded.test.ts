// The forwarding headers the edges give an app (server/edge/forwarded.ts): made once per connection
// while its requests name the same Host, never carried over to a request that names another.
import { describe, expect, it } from 'vitest';
import { appendedLines } from '../../../src/core/tunnel/http1.js';
import { ConnectionForwarding, forwardingLines } from '../../../src/server/edge/forwarded.js';

describe("a connection's forwarding lines", () => {
  it('are made again whenever a request names another Host or asks for an upgrade', () => {
    const forwarding = new ConnectionForwarding('203.0.113.9', 'https');
    const first = forwarding.for('demo.example.com');
    expect(first.lines).toEqual(forwardingLines('203.0.113.9', 'demo.example.com', 'https'));
    expect(first.bytes).toEqual(appendedLines(first.lines));
    expect(forwarding.for('demo.example.com')).toBe(first);

    const withPort = forwarding.for('demo.example.com:8443');
    expect(withPort.lines).toContain('x-forwarded-host: demo.example.com:8443');
    expect(withPort.lines).toContain('x-forwarded-port: 8443');
    const upgraded = forwarding.for('demo.example.com:8443', true);
    expect(upgraded.lines).toContain('x-forwarded-proto: wss');
    const back = forwarding.for('demo.example.com');
    expect(back).not.toBe(first);
    expect(back.lines).toEqual(first.lines);
    expect(back.lines).toContain('x-forwarded-proto: https');
  });

  it('carry what a hostile Host says only as its quoted value', () => {
    const forwarding = new ConnectionForwarding('::1', 'http');
    const { lines, bytes } = forwarding.for('evil"; for=1.1.1.1');
    expect(lines).toContain('forwarded: for="[::1]";host="evil\\"; for=1.1.1.1";proto=http');
    expect(bytes.toString('latin1').endsWith('\r\n\r\n')).toBe(true);
  });
});
