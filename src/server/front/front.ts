// `--front haproxy`: HAProxy takes the public edge port (and the HTTPS port) and the Node edge moves
// behind it, on a Unix socket. Wharf writes HAProxy's configuration from its routing table: hosts of
// apps and services that run on a port, and verified custom domains linked to them, go straight to
// 127.0.0.1:<port> (the Node edge as the backup server, for Wharf's pages when the app stops
// answering); everything else goes to the Node edge. Certificates issued by the certificate manager are
// written for HAProxy (chain and key, 0600, in a 0700 folder). A change (a deploy switching ports, a
// project stopped, a domain verified, a certificate issued) rewrites the files and reloads HAProxy
// through its master CLI, a few at once after a short pause; a version being replaced is stopped only
// once HAProxy sends it nothing more (runtime routes `released`).
//
// HAProxy cannot order a certificate while a handshake waits, as the Node edge does for a host that
// has none yet: behind the front a host gets its certificate when it is created (or verified), and a
// handshake for a name with none yet fails (strict SNI) until it is issued and loaded, seconds later.
import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { deriveKeyEncryptionKey, openAiKey, type SealedKey } from '../ai/keys.js';
import type { PlatformConfig } from '../config.js';
import type { Edge } from '../edge/edge.js';
import { type EdgePage, notRunningPage, renderPage } from '../edge/pages.js';
import type { Runtime } from '../runtime/runtime.js';
import { formatBytes } from '../limits.js';
import type { Store } from '../store/open.js';
import {
  EDGE_SOCKET,
  ERROR_PAGES,
  MASTER_SOCKET,
  TOO_LARGE_PAGE,
  type FrontRoute,
  certificateFile,
  renderFrontConfig,
} from './haproxy-config.js';
import {
  Haproxy,
  type HaproxyInstall,
  MIN_HAPROXY,
  findHaproxy,
  sessionsByAddress,
  unsupportedHaproxy,
} from './haproxy.js';
import { type ProxiedEdge, listenProxied } from './proxy-protocol.js';

export type FrontEvent = (level: 'info' | 'warn', message: string) => void;

export interface FrontDeps {
  config: PlatformConfig;
  db: Store;
  runtime: Runtime;
  edge: Edge;
  secret: Uint8Array | string;
  install: HaproxyInstall;
  event: FrontEvent;
}

export interface FrontListenOptions {
  host: string;
  port: number;
  /** The public HTTPS port, when the platform speaks HTTPS. */
  httpsPort: number | null;
}

/** Changes within this long make one reload. */
const DEBOUNCE_MS = 100;
/** The routing table is compared with what HAProxy runs this often anyway (expired certificates…). */
const RESYNC_MS = 30_000;
/** How long a replaced version waits for HAProxy's requests to it to end (the supervisor drains 30 s). */
const RELEASE_TIMEOUT_MS = 25_000;
/** Old workers keep their long connections (WebSockets, tunnel clients) this long after a reload. */
const HARD_STOP_AFTER_S = 15 * 60;
/** Unix socket paths are limited to 108 bytes. */
const MAX_SOCKET_PATH = 100;

/** The HAProxy the front runs, or an error that says how to get one. */
export function requireHaproxy(env: NodeJS.ProcessEnv = process.env): HaproxyInstall {
  const install = findHaproxy(env);
  if (!install) {
    throw new Error(
      `--front haproxy needs HAProxy ${MIN_HAPROXY.join('.')} or newer, and none was found${env.WHARF_HAPROXY ? ` at WHARF_HAPROXY=${env.WHARF_HAPROXY}` : ' (PATH, /usr/sbin)'}: install it (apt-get install haproxy), or leave --front at none`,
    );
  }
  const unsupported = unsupportedHaproxy(install);
  if (unsupported) throw new Error(`${unsupported}; or leave --front at none`);
  return install;
}

export class FrontProxy {
  readonly kind = 'haproxy';
  /** The front's folder: haproxy.cfg, its map and list files, certs/, and the sockets. */
  readonly dir: string;
  private readonly kek: Buffer;
  private haproxy: Haproxy | null = null;
  private proxied: ProxiedEdge | null = null;
  private listen: FrontListenOptions | null = null;
  /** Run as root: HAProxy's workers run as the `haproxy` account the package makes, when there is one. */
  private readonly runAs = process.getuid?.() === 0 ? haproxyAccount() : null;
  /** The fingerprint of the files HAProxy runs now. */
  private applied: string | null = null;
  private applying: Promise<void> | null = null;
  private again: Promise<void> | null = null;
  private soon: NodeJS.Timeout | null = null;
  private resync: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  /** Certificate files as written, by name: what they were made from, and their text. */
  private readonly written = new Map<string, { from: string; text: string }>();
  private readonly warned = new Set<string>();
  private closed = false;
  private restarting: NodeJS.Timeout | null = null;
  private startedAt = 0;
  private backoffMs = 500;

  /** The folder is a temporary one (the data folder's path is too long for a socket's): removed on close. */
  private readonly temporary: boolean;

  constructor(private readonly deps: FrontDeps) {
    this.kek = deriveKeyEncryptionKey(deps.secret);
    const dir = join(deps.config.dataDir, 'front');
    this.temporary = join(dir, MASTER_SOCKET).length > MAX_SOCKET_PATH;
    this.dir = this.temporary ? mkdtempSync(join(tmpdir(), 'wharf-front-')) : dir;
  }

  get version(): string {
    return this.deps.install.version;
  }

  /** HAProxy's master process, while it runs. */
  get pid(): number | null {
    return this.haproxy?.pid ?? null;
  }

  /**
   * Starts the Node edge's socket and HAProxy on the public ports with the current routing table;
   * from then on, route changes reload it.
   */
  async start(listen: FrontListenOptions): Promise<void> {
    this.listen = listen;
    mkdirSync(join(this.dir, 'certs'), { recursive: true, mode: 0o700 });
    chmodSync(this.dir, 0o700);
    chmodSync(join(this.dir, 'certs'), 0o700);
    mkdirSync(join(this.dir, 'errors'), { recursive: true, mode: 0o700 });
    for (const code of ERROR_PAGES)
      writeAtomic(join(this.dir, 'errors', `${code}.http`), errorResponse(code));
    const limit = formatBytes(this.deps.config.limits.bodyBytes);
    writeAtomic(
      join(this.dir, TOO_LARGE_PAGE),
      // The Node edge's own 413 page (edge.ts bodyTooLarge).
      renderPage({
        status: 413,
        title: 'Request body too large',
        message: `This address takes request bodies of up to ${limit}.`,
        hint: 'Send a smaller body, or split it over several requests.',
      }),
    );
    this.proxied = await listenProxied(join(this.dir, EDGE_SOCKET), this.deps.edge.server, (socket, give) =>
      this.deps.edge.sniff(socket, give),
    );
    if (this.runAs) {
      // The workers (as `haproxy`) reach the Node edge's socket through its group, and nothing else
      // here: the configuration, certificates and HAProxy's own sockets stay the platform's (the master,
      // root, reads them).
      chownSync(this.dir, 0, this.runAs.gid);
      chmodSync(this.dir, 0o750);
      chownSync(join(this.dir, EDGE_SOCKET), 0, this.runAs.gid);
      chmodSync(join(this.dir, EDGE_SOCKET), 0o660);
    }
    const haproxy = new Haproxy({
      install: this.deps.install,
      dir: this.dir,
      onLine: (line) => {
        // Its warnings are mostly what a reload does (proxies stopped, former workers leaving).
        if (/\[ALERT\]/.test(line)) this.deps.event('warn', `haproxy: ${line}`);
      },
      onExit: () => this.restartSoon(),
    });
    try {
      const { fingerprint } = await this.write('haproxy.cfg');
      const invalid = await haproxy.check('haproxy.cfg');
      if (invalid) throw new Error(`the generated HAProxy configuration does not load: ${invalid}`);
      await haproxy.start();
      this.haproxy = haproxy;
      this.applied = fingerprint;
    } catch (error) {
      await this.proxied.close();
      this.proxied = null;
      throw error;
    }
    this.unsubscribe = this.deps.runtime.routes.subscribe({
      changed: () => this.schedule(),
      released: (ports) => this.released(ports),
    });
    this.resync = setInterval(() => void this.applyNow(), RESYNC_MS);
    this.resync.unref();
    this.startedAt = Date.now();
    // What changed while it started (a project restored meanwhile) is applied now.
    this.schedule();
  }

  /**
   * HAProxy went away without being asked (killed, crashed): it is started again with the routing
   * table as it is then, after 1 s, doubling up to 30 s while it keeps going away within a minute.
   */
  private restartSoon(): void {
    if (this.closed || this.restarting) return;
    this.backoffMs = Date.now() - this.startedAt > 60_000 ? 1_000 : Math.min(this.backoffMs * 2, 30_000);
    this.deps.event(
      'warn',
      `front: HAProxy exited (${this.haproxy?.output(3) ?? ''}); starting it again in ${this.backoffMs / 1000} s`,
    );
    this.restarting = setTimeout(() => {
      void (async () => {
        const haproxy = this.haproxy;
        if (this.closed || !haproxy) return;
        try {
          await this.applying?.catch(() => undefined);
          const { fingerprint } = await this.write('haproxy.cfg');
          await haproxy.start();
          this.applied = fingerprint;
          this.startedAt = Date.now();
          this.deps.event('info', 'front: HAProxy is running again');
        } catch (error) {
          this.restarting = null;
          this.deps.event('warn', `front: ${(error as Error).message}`);
          this.restartSoon();
          return;
        }
        this.restarting = null;
        // What changed while it was starting.
        this.schedule();
      })();
    }, this.backoffMs);
    this.restarting.unref();
  }

  /** Something routing depends on changed (a domain, a certificate, a project's hosts): reload soon. */
  schedule(): void {
    if (this.closed || !this.haproxy || this.soon) return;
    this.soon = setTimeout(() => {
      this.soon = null;
      void this.applyNow();
    }, DEBOUNCE_MS);
    this.soon.unref();
  }

  /**
   * Brings HAProxy to the routing table now, one pass at a time (asked during a pass, another follows
   * it); resolves when HAProxy runs it (or it was refused, which is reported as an event).
   */
  applyNow(): Promise<void> {
    if (this.closed || !this.haproxy) return Promise.resolve();
    if (this.applying) {
      this.again ??= this.applying.then(() => {
        this.again = null;
        return this.applyNow();
      });
      return this.again;
    }
    this.applying = this.apply()
      .catch((error: unknown) => this.warnOnce((error as Error).message))
      .finally(() => {
        this.applying = null;
      });
    return this.applying;
  }

  /** Applies what is pending now, without the pause: resolves once HAProxy runs the routing table. */
  sync(): Promise<void> {
    if (this.soon) {
      clearTimeout(this.soon);
      this.soon = null;
    }
    return this.applyNow();
  }

  /**
   * A version of an app on `ports` is about to stop: resolves once HAProxy routes nothing new to those
   * ports and no worker (a replaced one finishing its requests included) has a request on them.
   */
  async released(ports: number[]): Promise<void> {
    const haproxy = this.haproxy;
    if (!haproxy || ports.length === 0) return;
    await this.sync();
    const addresses = ports.map((port) => `127.0.0.1:${port}`);
    const deadline = Date.now() + RELEASE_TIMEOUT_MS;
    while (!this.closed && Date.now() < deadline) {
      const procs = await haproxy.processes().catch(() => null);
      if (!procs) return;
      let busy = 0;
      for (const pid of [...procs.workers, ...procs.old]) {
        const sessions = sessionsByAddress(await haproxy.command(`@!${pid} show stat`).catch(() => ''));
        for (const address of addresses) busy += sessions.get(address) ?? 0;
      }
      if (busy === 0) return;
      await sleep(50);
    }
  }

  /** What the front serves now: the hosts it sends straight to apps (for `wharf platform` and tests). */
  async routes(): Promise<FrontRoute[]> {
    return (await this.snapshotRoutes()).sort((a, b) => a.host.localeCompare(b.host));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe?.();
    if (this.soon) clearTimeout(this.soon);
    if (this.resync) clearInterval(this.resync);
    if (this.restarting) clearTimeout(this.restarting);
    await this.applying?.catch(() => undefined);
    await this.haproxy?.stop();
    this.haproxy = null;
    await this.proxied?.close();
    this.proxied = null;
    if (this.temporary) rmSync(this.dir, { recursive: true, force: true });
  }

  private async apply(): Promise<void> {
    const haproxy = this.haproxy;
    // Being started again: that writes the routing table as it is then.
    if (!haproxy || this.restarting) return;
    const { fingerprint } = await this.write('haproxy.new.cfg', this.applied);
    if (fingerprint === this.applied) return;
    const invalid = await haproxy.check('haproxy.new.cfg');
    if (invalid) {
      this.warnOnce(
        `the new HAProxy configuration does not load, the previous one keeps serving: ${invalid}`,
      );
      return;
    }
    renameSync(join(this.dir, 'haproxy.new.cfg'), join(this.dir, 'haproxy.cfg'));
    if (this.closed) return;
    await haproxy.reload();
    this.applied = fingerprint;
  }

  /**
   * Writes the routing table's files (the configuration as `configName`) unless their fingerprint is
   * `unless`; returns the fingerprint.
   */
  private async write(configName: string, unless: string | null = null): Promise<{ fingerprint: string }> {
    const listen = this.listen!;
    const [routes, certificates] = await Promise.all([this.snapshotRoutes(), this.writeCertificates()]);
    const { files, skipped } = renderFrontConfig(
      { routes, certificates: certificates.files },
      {
        http: { host: listen.host, port: listen.port },
        https: listen.httpsPort === null ? null : { host: listen.host, port: listen.httpsPort },
        apiHost: this.deps.edge.apiHost,
        bodyBytes: this.deps.config.limits.bodyBytes,
        hardStopAfterS: HARD_STOP_AFTER_S,
        runAs: this.runAs ? { user: this.runAs.user, group: this.runAs.group } : null,
      },
    );
    for (const reason of skipped)
      this.warnOnce(`not routed by the front (the Node edge serves it): ${reason}`);
    const hash = createHash('sha256');
    for (const [name, text] of Object.entries(files)) hash.update(`${name}\0${text}\0`);
    hash.update(certificates.digest);
    const fingerprint = hash.digest('hex');
    if (fingerprint === unless) return { fingerprint };
    for (const name of ['hosts.map', 'hsts.lst', 'crt-list.txt'] as const) {
      writeAtomic(join(this.dir, name), files[name]);
    }
    writeAtomic(join(this.dir, configName), files['haproxy.cfg']);
    return { fingerprint };
  }

  /** The hosts to send straight to an app's port: each app and service host, each verified domain. */
  private async snapshotRoutes(): Promise<FrontRoute[]> {
    const { db, config } = this.deps;
    const [hosts, domains] = await Promise.all([
      db
        .selectFrom('project_hosts')
        .innerJoin('projects', 'projects.id', 'project_hosts.project_id')
        .select(['project_hosts.label', 'projects.id', 'projects.subdomain'])
        .execute(),
      db
        .selectFrom('domains')
        .select(['domain', 'project_id', 'hsts'])
        .where('verified', '=', 1)
        .where('project_id', 'is not', null)
        .execute(),
    ]);
    const routes: FrontRoute[] = [];
    for (const row of hosts) {
      const service = row.label === row.subdomain ? null : row.label.slice(row.subdomain.length + 1);
      const port = this.portOf(row.id, service);
      if (port !== null) routes.push({ host: `${row.label}.${config.baseDomain}`, port, hsts: false });
    }
    for (const row of domains) {
      const port = this.portOf(row.project_id!, null);
      if (port !== null) routes.push({ host: row.domain, port, hsts: row.hsts === 1 });
    }
    return routes;
  }

  /** The port a host of the project goes to now, or null (static, down, deploying: the Node edge). */
  private portOf(projectId: string, service: string | null): number | null {
    const target = this.deps.runtime.target(projectId, service);
    if (target?.kind !== 'proxy') return null;
    // Asked where it is, not sent a request: nothing to drain.
    target.done();
    return target.port;
  }

  /**
   * Writes each issued, unexpired certificate as `certs/<name>.pem` (chain, then key; 0600) and removes
   * the others; returns the files and a digest of their contents.
   */
  private async writeCertificates(): Promise<{ files: string[]; digest: string }> {
    if (this.listen?.httpsPort === null) return { files: [], digest: '' };
    const rows = await this.deps.db
      .selectFrom('tls_certificates')
      .select(['name', 'cert_pem', 'key_secret', 'not_after', 'updated_at'])
      .where('cert_pem', 'is not', null)
      .orderBy('name')
      .execute();
    const now = Date.now();
    const files: string[] = [];
    const hash = createHash('sha256');
    const keep = new Set<string>();
    for (const row of rows) {
      const file = certificateFile(row.name);
      if (!file || !row.cert_pem || !row.key_secret || !row.not_after) continue;
      if (Date.parse(row.not_after) <= now) continue;
      const from = `${row.updated_at}\0${row.not_after}`;
      let entry = this.written.get(row.name);
      if (entry?.from !== from) {
        let key: string;
        try {
          // Sealed by the certificate manager (tls/certificates.ts) under the same context.
          key = openAiKey(this.kek, `tls:${row.name}`, JSON.parse(row.key_secret) as SealedKey);
        } catch {
          continue;
        }
        entry = { from, text: `${row.cert_pem.trim()}\n${key.trim()}\n` };
        writeAtomic(join(this.dir, file), entry.text);
        this.written.set(row.name, entry);
      }
      files.push(file);
      keep.add(file.slice('certs/'.length));
      hash.update(`${file}\0${entry.text}\0`);
    }
    for (const name of readdirSync(join(this.dir, 'certs'))) {
      if (!keep.has(name)) rmSync(join(this.dir, 'certs', name), { force: true });
    }
    for (const name of [...this.written.keys()]) {
      const file = certificateFile(name);
      if (!file || !keep.has(file.slice('certs/'.length))) this.written.delete(name);
    }
    return { files, digest: hash.digest('hex') };
  }

  private warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    if (this.warned.size > 1_000) this.warned.clear();
    this.warned.add(message);
    this.deps.event('warn', `front: ${message}`);
  }
}

/** Written whole or not at all (HAProxy may read it at any reload), 0600. */
function writeAtomic(path: string, text: string): void {
  const temp = `${path}.tmp`;
  rmSync(temp, { force: true });
  writeFileSync(temp, text, { mode: 0o600 });
  renameSync(temp, path);
}

/**
 * A whole HTTP response for HAProxy's `errorfile`: the page the Node edge answers when an app does
 * not (edge.ts: a proxy error is `notRunningPage(502)`), with the same headers as its pages.
 */
function errorResponse(code: (typeof ERROR_PAGES)[number]): string {
  const page: EdgePage =
    code === 504
      ? { status: 504, title: 'Not answering', message: 'This app did not answer in time.', retryAfter: 5 }
      : notRunningPage(code, code === 503 ? 5 : undefined);
  const body = renderPage(page);
  const reason = { 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout' }[code];
  return [
    `HTTP/1.1 ${code} ${reason}`,
    'content-type: text/html; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    'cache-control: no-store',
    `x-wharf-edge: ${page.title}`,
    ...(page.retryAfter ? [`retry-after: ${page.retryAfter}`] : []),
    'connection: close',
    '',
    body,
  ].join('\r\n');
}

/** The `haproxy` account (Debian's package makes it) and its primary group, from /etc/passwd and /etc/group. */
function haproxyAccount(): { user: string; group: string; gid: number } | null {
  try {
    const user = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .map((line) => line.split(':'))
      .find((fields) => fields[0] === 'haproxy');
    if (!user) return null;
    const gid = Number(user[3]);
    const group = readFileSync('/etc/group', 'utf8')
      .split('\n')
      .map((line) => line.split(':'))
      .find((fields) => Number(fields[2]) === gid)?.[0];
    if (!Number.isInteger(gid) || !group) return null;
    return { user: 'haproxy', group, gid };
  } catch {
    return null;
  }
}
