// Tunnels by the names the user knows (`shop · :3000`): from the public URL's subdomain and the local
// port of the running tunnel, else of the history; never a `tun_…` or `local_…` id.
import { describe, expect, it } from 'vitest';
import {
  bareUrl,
  originOf,
  requestTunnel,
  requestTunnelLabel,
  subdomainOf,
  tunnelLabel,
  tunnelOptions,
} from '../../../src/renderer/src/lib/traffic-tunnels.js';
import type { LocalTunnel } from '../../../src/shared/bridge.js';

function running(subdomain: string | null, port: number, extra: Partial<LocalTunnel> = {}): LocalTunnel {
  return {
    id: `tun_${subdomain ?? 'none'}`,
    localPort: port,
    hostHeader: 'preserve',
    subdomain,
    url: subdomain ? `http://${subdomain}.tunnel.localhost:8788` : null,
    state: 'online',
    detail: null,
    listening: true,
    startedAt: '2025-01-01T00:00:00.000Z',
    ...extra,
  };
}

describe('tunnel names', () => {
  it('takes the subdomain from a public URL', () => {
    expect(subdomainOf('http://shop.tunnel.localhost:8788/api?x=1')).toBe('shop');
    expect(subdomainOf('https://my-app.tunnels.example.com/')).toBe('my-app');
    expect(subdomainOf('http://127.0.0.1:8788/')).toBeNull();
    expect(subdomainOf('not a url')).toBeNull();
    expect(subdomainOf(null)).toBeNull();
    expect(bareUrl('https://shop.example.com')).toBe('shop.example.com');
    expect(originOf('http://shop.tunnel.localhost:8788/a/b?c=1')).toBe('http://shop.tunnel.localhost:8788');
    expect(originOf('https://shop.example.com')).toBe('https://shop.example.com');
  });

  it('labels a tunnel by subdomain and port, with what is known', () => {
    expect(tunnelLabel('shop', 3000)).toBe('shop · :3000');
    expect(tunnelLabel('shop', null)).toBe('shop');
    expect(tunnelLabel(null, 3000)).toBe(':3000');
    expect(tunnelLabel(null, null)).toBe('a tunnel');
  });

  it('offers the running tunnels first, then those of the history, each once, the running port winning', () => {
    const options = tunnelOptions(
      [
        running('shop', 3001),
        running(null, 5000, { state: 'connecting' }),
        running('old', 1, { state: 'stopped' }),
      ],
      [
        { subdomain: 'shop', localPort: 3000, requests: 4 },
        { subdomain: 'blog', localPort: 4000, requests: 2 },
        { subdomain: 'old', localPort: 4001, requests: 1 },
      ],
    );
    expect(options).toEqual([
      { subdomain: 'shop', port: 3001, label: 'shop · :3001', running: true },
      { subdomain: 'blog', port: 4000, label: 'blog · :4000', running: false },
      { subdomain: 'old', port: 4001, label: 'old · :4001', running: false },
    ]);
    expect(tunnelOptions(null, [])).toEqual([]);
  });

  it("labels a request by its tunnel's name, never by an id", () => {
    const options = tunnelOptions([running('shop', 3000)], []);
    expect(requestTunnelLabel('http://shop.tunnel.localhost:8788/a', options)).toBe('shop · :3000');
    expect(requestTunnelLabel('http://gone.tunnel.localhost:8788/a', options)).toBe('gone');
    expect(requestTunnel('http://shop.tunnel.localhost:8788/a', options)).toEqual({
      subdomain: 'shop',
      port: 3000,
    });
  });
});
