// The HAProxy front's configuration, as a pure function of a routing snapshot: which hosts go straight
// to an app's servers (its port on this machine, or its Swarm tasks' ports on their machines; with the
// Node edge as the backup server, so that an app that stops answering gets Wharf's own pages), which
// custom domains send HSTS, and which certificates it serves. Everything else
// (tunnel hosts, `api.<base_domain>`, static sites, apps that are down or deploying, unknown hosts,
// ACME challenges, bodies of unknown length) goes to the Node edge, over a Unix socket with the PROXY
// protocol (v2, with the TLS flag), so that the Node edge sees the client's address and whether it came
// over TLS exactly as if it had accepted the connection itself.
//
// Hostnames come from tenants (subdomains, custom domains): each one is checked against a strict
// pattern here, and ends up only in map and list files (one name a line), never in the configuration's
// own text. Paths in the configuration are fixed relative names: HAProxy runs in the front's folder.
import { createHash } from 'node:crypto';
import { isIPv4 } from 'node:net';
import { isHostname } from '../../shared/dns-label.js';

/** Where an app answers: an IPv4 address and a port. */
export interface FrontServer {
  host: string;
  port: number;
}

/** A host HAProxy sends straight to an app's servers (in turn, when there are several). */
export interface FrontRoute {
  host: string;
  servers: FrontServer[];
  /** A custom domain whose owner turned HSTS on. */
  hsts: boolean;
}

export interface FrontSnapshot {
  routes: FrontRoute[];
  /** Certificate files (relative to the front's folder, e.g. `certs/app.example.com.pem`), in order. */
  certificates: string[];
}

export interface FrontListen {
  /** An IP address (v4 or v6) or a hostname HAProxy resolves when it starts. */
  host: string;
  port: number;
}

export interface FrontConfigOptions {
  /** The public plain HTTP port. */
  http: FrontListen;
  /** The public HTTPS port, when the platform speaks HTTPS. */
  https: FrontListen | null;
  /** `api.<base_domain>`: the Node edge's (which hands it to the API, with its own body limits). */
  apiHost: string;
  /** A request body through the front, in bytes (config.limits.bodyBytes). */
  bodyBytes: number;
  /** How long a worker replaced by a reload may keep its connections (WebSockets, tunnels), in seconds. */
  hardStopAfterS: number;
  /**
   * The account HAProxy's workers run as, when it is started as root (the master stays root to bind
   * the ports again at each reload); null: the platform's own user.
   */
  runAs: { user: string; group: string } | null;
}

/** The files the front's folder holds, by relative name. */
export interface FrontFiles {
  'haproxy.cfg': string;
  /** `<host> <backend>` for every host routed straight to an app's servers. */
  'hosts.map': string;
  /** Custom domains that send Strict-Transport-Security over HTTPS. */
  'hsts.lst': string;
  /** The certificates HAProxy serves (it picks one by SNI from the names each holds). */
  'crt-list.txt': string;
}

/** The Node edge's socket, the page of a body over the limit, HAProxy's sockets: relative names. */
export const EDGE_SOCKET = 'edge.sock';
export const TOO_LARGE_PAGE = '413.html';
/** HAProxy's own errors answered with the Node edge's pages (whole HTTP responses, `errors/<code>.http`). */
export const ERROR_PAGES = [502, 503, 504] as const;
export const ADMIN_SOCKET = 'admin.sock';
export const MASTER_SOCKET = 'master.sock';
/** A year, as the Node edge sends it (edge.ts). */
const HSTS = 'max-age=31536000';

/**
 * Whether `host` is a DNS name HAProxy may be given (see isHostname): nothing else (no spaces, quotes,
 * `%`, `#`, `\`, control characters, ports or trailing dots) ever gets into its configuration.
 */
export function isFrontHostname(host: string, options: { wildcard?: boolean } = {}): boolean {
  return isHostname(host, options);
}

function isPort(port: number): boolean {
  return Number.isInteger(port) && port >= 1 && port <= 65_535;
}

/** Why HAProxy cannot be given `server`, or null. */
function badServer(server: FrontServer): string | null {
  if (!isIPv4(server.host)) return `${JSON.stringify(server.host)} is not an IPv4 address`;
  return isPort(server.port) ? null : `port ${server.port} is not a port`;
}

/** The servers in one order, each once, as `host:port`. */
function serverKeys(servers: readonly FrontServer[]): string[] {
  return [...new Set(servers.map((s) => `${s.host}:${s.port}`))].sort();
}

/** An app's backend in the configuration: its name, its servers, and where it is listed. */
interface AppBackend {
  name: string;
  /** `host:port` each, in order. */
  servers: string[];
  /** The port of an app on one port of this machine (listed first, by port); null for the others. */
  localPort: number | null;
}

const LOCAL = '127.0.0.1:';

/**
 * A backend per set of servers, shared by the hosts of one app: `app_<port>` for an app on one port of
 * this machine, `app_<digest>` for one on several servers or another machine.
 */
function backendOf(servers: readonly FrontServer[]): AppBackend {
  const keys = serverKeys(servers);
  if (keys.length === 1 && keys[0]!.startsWith(LOCAL)) {
    const port = Number(keys[0]!.slice(LOCAL.length));
    return { name: `app_${port}`, servers: keys, localPort: port };
  }
  const digest = createHash('sha256').update(keys.join(',')).digest('hex').slice(0, 16);
  return { name: `app_${digest}`, servers: keys, localPort: null };
}

/** A certificate's file name in the front's `certs/` folder: `*.<domain>` becomes `_.<domain>.pem`. */
export function certificateFile(name: string): string | null {
  if (!isFrontHostname(name, { wildcard: true })) return null;
  return `certs/${name.startsWith('*.') ? `_${name.slice(1)}` : name}.pem`;
}

const CERT_FILE = /^certs\/(?:_\.)?[a-z0-9.-]+\.pem$/;

/** `ipv4@1.2.3.4:80`, `ipv6@:::443 v4v6`, or a hostname HAProxy resolves; anything else is refused. */
export function bindAddress(listen: FrontListen): string {
  const { host, port } = listen;
  if (!isPort(port)) throw new Error(`the front cannot listen on port ${port}`);
  if (/^\d{1,3}(?:\.\d{1,3}){3}$/.test(host)) return `ipv4@${host}:${port}`;
  if (/^[0-9a-f:]+$/i.test(host) && host.includes(':')) {
    // `::` takes IPv4 too, as Node's listen('::') does.
    return `ipv6@${host}:${port}${host === '::' ? ' v4v6' : ''}`;
  }
  if (isFrontHostname(host.toLowerCase())) return `${host.toLowerCase()}:${port}`;
  throw new Error(`the front cannot listen on "${host}": give an IP address or a hostname`);
}

export interface RenderedFront {
  files: FrontFiles;
  /** Routes left out, with why (the Node edge still serves those hosts). */
  skipped: string[];
}

/** The configuration and its files for `snapshot`. Deterministic: the same input, the same text. */
export function renderFrontConfig(snapshot: FrontSnapshot, options: FrontConfigOptions): RenderedFront {
  const skipped: string[] = [];
  const routes = new Map<string, { host: string; backend: string; hsts: boolean }>();
  const backends = new Map<string, AppBackend>();
  for (const route of snapshot.routes) {
    const host = route.host.toLowerCase();
    const bad = route.servers.map(badServer).find((why) => why !== null);
    if (!isFrontHostname(host)) skipped.push(`${JSON.stringify(route.host)}: not a hostname`);
    else if (route.servers.length === 0) skipped.push(`${host}: no server`);
    else if (bad) skipped.push(`${host}: ${bad}`);
    else if (host === options.apiHost) skipped.push(`${host}: the API's own host`);
    else if (!routes.has(host)) {
      const backend = backendOf(route.servers);
      backends.set(backend.name, backend);
      routes.set(host, { host, backend: backend.name, hsts: route.hsts });
    }
  }
  if (!isFrontHostname(options.apiHost)) throw new Error(`"${options.apiHost}" is not a hostname`);
  const account = /^[a-z_][a-z0-9_-]{0,31}$/;
  if (options.runAs && !(account.test(options.runAs.user) && account.test(options.runAs.group))) {
    throw new Error(`"${options.runAs.user}:${options.runAs.group}" is not an account HAProxy can run as`);
  }
  if (!Number.isSafeInteger(options.bodyBytes) || options.bodyBytes < 0) {
    throw new Error(`the body limit ${options.bodyBytes} is not a byte count`);
  }
  const hosts = [...routes.values()].sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
  const certificates = snapshot.certificates.filter((file) => {
    if (CERT_FILE.test(file)) return true;
    skipped.push(`${JSON.stringify(file)}: not a certificate file of the front`);
    return false;
  });
  const tls = options.https !== null;
  const httpsPort = options.https?.port ?? 443;
  const lines: string[] = [
    '# Written by Wharf from its routing table (src/server/front/haproxy-config.ts): rewritten and',
    '# reloaded on every change, so edits here do not last.',
    'global',
    `  stats socket unix@${ADMIN_SOCKET} mode 600 level admin expose-fd listeners`,
    ...(options.runAs ? [`  user ${options.runAs.user}`, `  group ${options.runAs.group}`] : []),
    // A worker replaced by a reload finishes its requests; long connections (WebSockets, tunnel
    // clients) get this long, then the worker goes (clients reconnect to the new one).
    `  hard-stop-after ${options.hardStopAfterS}s`,
    '  mworker-max-reloads 50',
    '  ssl-default-bind-options ssl-min-ver TLSv1.2',
    // Mozilla's "intermediate" suites, in its order: AES-128-GCM first, the cheapest per byte here.
    '  ssl-default-bind-ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256',
    '  ssl-default-bind-ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305',
    '',
    'defaults',
    '  mode http',
    '  timeout connect 5s',
    '  timeout client 1h',
    '  timeout http-request 60s',
    // The Node edge keeps idle connections 65 s (edge.ts).
    '  timeout http-keep-alive 65s',
    '  timeout server 1h',
    '  timeout tunnel 1h',
    '  timeout client-fin 30s',
    '  timeout queue 30s',
    // A connection an app refuses (it stopped, it is restarting) is tried again on the Node edge.
    '  retries 2',
    '  option redispatch 1',
    // On a reload, an idle connection of the old worker is closed after one more request (with
    // `connection: close`), not under a client that may be sending on it right then.
    '  option idle-close-on-response',
    // An app that breaks off an answer, or none that can take one: the Node edge's pages, not HAProxy's.
    ...ERROR_PAGES.map((code) => `  errorfile ${code} errors/${code}.http`),
    '',
    'frontend edge',
    `  bind ${bindAddress(options.http)}`,
  ];
  if (options.https) {
    lines.push(`  bind ${bindAddress(options.https)} ssl crt-list crt-list.txt strict-sni alpn h2,http/1.1`);
  }
  lines.push(
    // The host as the Node edge reads it (edge.ts hostOf): lowercase, without port or trailing dot.
    '  http-request set-var(txn.host) req.hdr(host),field(1,:),lower,regsub(\\.$,)',
    '  acl tls ssl_fc',
    '  acl acme path_beg /.well-known/acme-challenge/',
    '  acl upgrade req.hdr(upgrade) -m found',
    '  acl named var(txn.host) -m len gt 0',
  );
  if (tls) {
    const port = httpsPort === 443 ? '' : `:${httpsPort}`;
    lines.push(
      // Plain HTTP once HTTPS is on: ACME challenges (and WebSockets, answered 426) go to the Node edge,
      // everything else is sent to the same address over HTTPS (308 keeps the method and body).
      `  http-request redirect code 308 location https://%[var(txn.host)]${port}%[pathq] if !tls !acme !upgrade named`,
    );
  }
  lines.push(
    // A body declared over the limit is refused before it is read, with the Node edge's page (the API
    // keeps its own limits, as at the Node edge); a body of unknown length goes through the Node edge,
    // which counts it as it streams.
    '  acl api var(txn.host) -m str ' + options.apiHost,
    `  http-request return status 413 content-type "text/html; charset=utf-8" file ${TOO_LARGE_PAGE} hdr cache-control no-store hdr x-wharf-edge "Request body too large" if !api { req.hdr_val(content-length) gt ${options.bodyBytes} }${tls ? ' tls' : ''}`,
    '  acl chunked req.hdr(transfer-encoding) -m found',
    `  http-request set-var(txn.app) var(txn.host),map(hosts.map) if !chunked${tls ? ' tls' : ''}`,
    // HTTP/2 (ALPN h2, or h2c on the plain port) gives a body's length only in Content-Length, if at
    // all, and has no chunked marker: a request without one goes through the Node edge too, unless it is
    // a GET or HEAD that came with no body (HAProxy waits up to 1 s for its end or a first byte; a body
    // that shows neither by then is answered 408).
    '  acl h2 req.ver 2.0',
    '  acl sized req.hdr(content-length) -m found',
    '  acl bodyless_method method GET HEAD',
    '  http-request wait-for-body time 1s at-least 1 if h2 !sized bodyless_method',
    '  http-request unset-var(txn.app) if h2 !sized !bodyless_method',
    '  http-request unset-var(txn.app) if h2 !sized { req.body_size gt 0 }',
    '  acl direct var(txn.app) -m found',
    // What a client claims about the hop is replaced with what the front saw (as the Node edge does).
    '  acl src_v6 src -m sub :',
    '  acl host_port req.hdr(host) -m reg :[0-9]+$',
    '  http-request set-header x-forwarded-for %[src] if direct',
    '  http-request set-header x-real-ip %[src] if direct',
    '  http-request set-header x-forwarded-host %[req.hdr(host)] if direct',
    '  http-request set-header x-forwarded-proto http if direct !tls !upgrade',
    '  http-request set-header x-forwarded-proto https if direct tls !upgrade',
    '  http-request set-header x-forwarded-proto ws if direct !tls upgrade',
    '  http-request set-header x-forwarded-proto wss if direct tls upgrade',
    '  http-request set-header x-forwarded-port %[req.hdr(host),field(2,:)] if direct host_port',
    '  http-request set-header x-forwarded-port 443 if direct !host_port tls',
    '  http-request set-header x-forwarded-port 80 if direct !host_port !tls',
    '  http-request set-header forwarded "for=\\"[%[src]]\\";host=\\"%[req.hdr(host)]\\";proto=http" if direct src_v6 !tls',
    '  http-request set-header forwarded "for=%[src];host=\\"%[req.hdr(host)]\\";proto=http" if direct !src_v6 !tls',
    '  http-request set-header forwarded "for=\\"[%[src]]\\";host=\\"%[req.hdr(host)]\\";proto=https" if direct src_v6 tls',
    '  http-request set-header forwarded "for=%[src];host=\\"%[req.hdr(host)]\\";proto=https" if direct !src_v6 tls',
    `  http-response set-header strict-transport-security ${HSTS} if tls { var(txn.host) -m str -f hsts.lst }`,
    '  use_backend %[var(txn.app)] if direct',
    '  default_backend node_edge',
    '',
    'backend node_edge',
    `  server edge unix@${EDGE_SOCKET} send-proxy-v2-ssl`,
  );
  // Apps on this machine by port, then the others by name.
  const sorted = [...backends.values()].sort(
    (a, b) =>
      (a.localPort ?? Infinity) - (b.localPort ?? Infinity) ||
      (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
  for (const { name, servers } of sorted) {
    lines.push('', `backend ${name}`);
    // Several servers (a Swarm service's tasks) take requests in turn.
    if (servers.length > 1) lines.push('  balance roundrobin');
    for (const [index, server] of servers.entries()) {
      // A refused connection marks a server down at once: its requests then go to the others, or to
      // the Node edge (which routes to where the app is now, or answers Wharf's page) until a check
      // finds it up again.
      lines.push(
        `  server ${servers.length > 1 ? `app${index + 1}` : 'app'} ipv4@${server} check inter 2s fall 1 rise 1 observe layer4 error-limit 1 on-error mark-down`,
      );
    }
    lines.push(`  server edge unix@${EDGE_SOCKET} send-proxy-v2-ssl backup`);
  }
  // An empty list is written as one comment line, which HAProxy skips: the file must exist.
  const list = (items: string[]) => (items.length === 0 ? '# none\n' : `${items.join('\n')}\n`);
  return {
    files: {
      'haproxy.cfg': `${lines.join('\n')}\n`,
      'hosts.map': list(hosts.map((r) => `${r.host} ${r.backend}`)),
      'hsts.lst': list(hosts.filter((r) => r.hsts).map((r) => r.host)),
      'crt-list.txt': list(certificates),
    },
    skipped,
  };
}
