// Tunnels by the names the user knows: the subdomain of the public URL and the local port
// (`shop · :3000`), never the platform's `tun_…` ids (a new one at each reconnect) nor the Engine's
// `local_…` keys. The subdomain is the key: a tunnel keeps it across reconnects, the Mirror files its
// requests under it, and `TrafficQuery.tunnelId` takes it. The port comes from the running tunnel of
// that subdomain, else from the history (the port of its newest request).
import type { LocalTunnel, TrafficTunnel } from '../../../shared/bridge.js';

/** The subdomain of a public URL (its first label): `http://shop.tunnel.localhost:8788/x` → `shop`. */
export function subdomainOf(url: string | null): string | null {
  if (!url) return null;
  try {
    const host = new URL(url).hostname;
    // An IP address has no subdomain.
    if (/^[\d.]+$/.test(host) || host.startsWith('[')) return null;
    return host.split('.')[0] || null;
  } catch {
    return null;
  }
}

/** `shop · :3000`; `shop` when the port is unknown; `:3000` before the platform gave a subdomain. */
export function tunnelLabel(subdomain: string | null, port: number | null): string {
  if (subdomain && port) return `${subdomain} · :${port}`;
  if (subdomain) return subdomain;
  if (port) return `:${port}`;
  return 'a tunnel';
}

/** One tunnel the filter offers, with its label. */
export interface TunnelOption {
  subdomain: string;
  port: number | null;
  label: string;
  /** Whether this Engine runs it now. */
  running: boolean;
}

/**
 * The tunnels known by name: the running ones first (as the bar lists them), then those of the
 * history, each subdomain once, with the running tunnel's port over the history's.
 */
export function tunnelOptions(
  running: readonly LocalTunnel[] | null,
  history: readonly TrafficTunnel[],
): TunnelOption[] {
  const options = new Map<string, TunnelOption>();
  for (const tunnel of running ?? []) {
    if (!tunnel.subdomain || tunnel.state === 'stopped' || options.has(tunnel.subdomain)) continue;
    options.set(tunnel.subdomain, {
      subdomain: tunnel.subdomain,
      port: tunnel.localPort,
      label: tunnelLabel(tunnel.subdomain, tunnel.localPort),
      running: true,
    });
  }
  for (const tunnel of history) {
    if (options.has(tunnel.subdomain)) continue;
    options.set(tunnel.subdomain, {
      subdomain: tunnel.subdomain,
      port: tunnel.localPort,
      label: tunnelLabel(tunnel.subdomain, tunnel.localPort),
      running: false,
    });
  }
  return [...options.values()];
}

/** The tunnel a captured request came through (by its public URL): its subdomain and local port. */
export function requestTunnel(
  url: string,
  options: readonly TunnelOption[],
): { subdomain: string | null; port: number | null } {
  const subdomain = subdomainOf(url);
  const known = subdomain ? options.find((option) => option.subdomain === subdomain) : undefined;
  return { subdomain, port: known?.port ?? null };
}

/** The label of the tunnel a captured request came through (`shop · :3000`). */
export function requestTunnelLabel(url: string, options: readonly TunnelOption[]): string {
  const { subdomain, port } = requestTunnel(url, options);
  return tunnelLabel(subdomain, port);
}

/** A public URL without its scheme, as the bar and the pane show it. */
export function bareUrl(url: string): string {
  return url.replace(/^https?:\/\//, '');
}

/** The public origin of a captured request's URL (`http://shop.tunnel.localhost:8788`). */
export function originOf(url: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\/[^/?#]+/i.exec(url)?.[0] ?? url;
}
