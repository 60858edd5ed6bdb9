// `--front haproxy`: HAProxy takes the public edge port (and the HTTPS port) and the Node edge moves
// behind it, on a Unix socket. Wharf writes HAProxy's configuration from its routing table: hosts of
// apps and services that run on a port, and verified custom domains linked to them, go straight to
// 127.0.0.1:<port>, or to each task of a Swarm service on its machine's port, in turn (the Node edge
// as the backup server, for Wharf's pages when the app stops answering); everything else goes to the
// Node edge. Certificates issued by the certificate manager are
// written for HAProxy (chain and key, 0600, in a 0700 folder). A change (a deploy switching ports, a
// project stopped, a domain verified, a certificate issued) rewrites the files and reloads HAProxy
// through its master CLI, a few at once after a short pause; a version being replaced is stopped only
// once HAProxy sends it nothing more (runtime routes `released`).
//
// HAProxy cannot order a certificate while a handshake waits, as the Node edge does for a host that
// has none yet: behind the front a host gets its certificate when it is created (or verified), and a
// handshake for a name with none yet fails (strict SNI) until it is issued and loaded, seconds later.
//
// This file supervises HAProxy and its reloads; haproxy-config.ts renders the configuration,
// front-routes.ts reads the routing table, front-files.ts writes the pages and certificates.
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PlatformConfig } from '../config.js';
import type { Edge } from '../edge/edge.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Store } from '../store/open.js';
import { CertificateFiles, writeAtomic, writePages } from './front-files.js';
import { frontRoutes } from './front-routes.js';
import {
  EDGE_SOCKET,
  MASTER_SOCKET,
  type FrontRoute,
  type FrontServer,
  renderFrontConfig,
} from './haproxy-config.js';
import {
  Haproxy,
  type HaproxyInstall,
  MIN_HAPROXY,
  findHaproxy,
  haproxyAccount,
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
  private readonly certificates: CertificateFiles;
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
  private readonly warned = new Set<string>();
  private closed = false;
  private restarting: NodeJS.Timeout | null = null;
  private startedAt = 0;
  private backoffMs = 500;

  /** The folder is a temporary one (the data folder's path is too long for a socket's): removed on close. */
  private readonly temporary: boolean;

  constructor(private readonly deps: FrontDeps) {
    const dir = join(deps.config.dataDir, 'front');
    this.temporary = join(dir, MASTER_SOCKET).length > MAX_SOCKET_PATH;
    this.dir = this.temporary ? mkdtempSync(join(tmpdir(), 'wharf-front-')) : dir;
    this.certificates = new CertificateFiles(deps.db, deps.secret, this.dir);
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
    writePages(this.dir, this.deps.config.limits.bodyBytes);
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
      released: (servers) => this.released(servers),
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
   * A version of an app answering at `servers` is about to stop: resolves once HAProxy routes nothing
   * new to them and no worker (a replaced one finishing its requests included) has a request on them.
   */
  async released(servers: FrontServer[]): Promise<void> {
    const haproxy = this.haproxy;
    if (!haproxy || servers.length === 0) return;
    await this.sync();
    const addresses = servers.map((server) => `${server.host}:${server.port}`);
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

  /** The hosts to send straight to an app's port (front-routes.ts). */
  private snapshotRoutes(): Promise<FrontRoute[]> {
    return frontRoutes(this.deps.db, this.deps.config, this.deps.runtime);
  }

  /** The certificate files HAProxy loads (none when the platform does not speak HTTPS). */
  private async writeCertificates(): Promise<{ files: string[]; digest: string }> {
    if (this.listen?.httpsPort === null) return { files: [], digest: '' };
    return this.certificates.write();
  }

  private warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    if (this.warned.size > 1_000) this.warned.clear();
    this.warned.add(message);
    this.deps.event('warn', `front: ${message}`);
  }
}
