// Starts a built platform listening on its host and port, for `wharf platform` and `wharf app`.
import { readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, type Server, createServer } from 'node:net';
import { join } from 'node:path';
import { writeFileAtomic } from '../core/private-file.js';
import { RUNNING_FILE, parseRunningPlatform } from '../shared/platform-files.js';
import { buildPlatform, API_PREFIX, type Platform } from './app.js';
import type { PlatformConfigInput } from './config.js';

export interface ListenOptions {
  host: string;
  port: number;
}

export interface RunningPlatform extends Platform {
  /** `http://<host>:<port>` */
  origin: string;
  /** The app edge: `http://<host>:<edge port>`. */
  edgeOrigin: string;
  apiUrl: string;
  close(): Promise<void>;
}

export class PortInUseError extends Error {
  constructor(
    readonly host: string,
    readonly port: number,
  ) {
    super(`${host}:${port} is already in use`);
  }
}

/**
 * Starts the API on `listen` and the app edge on `edge` (default: the same host, the config's edge
 * port). An edge port of 0 picks a free one, which the project URLs then carry.
 */
export async function servePlatform(
  config: PlatformConfigInput,
  listen: ListenOptions,
  edge: Partial<ListenOptions> = {},
  /** Called once built, before anything listens (e.g. to follow its events from the start). */
  built?: (platform: Platform) => void,
): Promise<RunningPlatform> {
  const platform = await buildPlatform(config);
  built?.(platform);
  const edgeHost = edge.host ?? listen.host;
  const edgePort = edge.port ?? platform.config.edgePort;
  let failing = { host: edgeHost, port: edgePort };
  try {
    if (platform.front) {
      // HAProxy takes the public ports; the Node edge listens behind it on the front's socket.
      const port = await probe(edgeHost, edgePort);
      const httpsPort = platform.config.tls.httpsPort;
      let secure: number | null = null;
      if (httpsPort !== null) {
        failing = { host: edgeHost, port: httpsPort };
        secure = await probe(edgeHost, httpsPort);
        failing = { host: edgeHost, port: edgePort };
      }
      await platform.front.start({ host: edgeHost, port, httpsPort: secure });
      platform.config.edgePort = port;
      if (secure !== null) platform.config.tls.httpsPort = secure;
    } else {
      await listenOn(platform.edge.server, edgeHost, edgePort);
      platform.config.edgePort = (platform.edge.server.address() as AddressInfo).port;
    }
    const secure = platform.front ? null : platform.edge.secureServer;
    if (secure && platform.config.tls.httpsPort !== null) {
      failing = { host: edgeHost, port: platform.config.tls.httpsPort };
      await listenOn(secure, edgeHost, platform.config.tls.httpsPort);
      platform.config.tls.httpsPort = (secure.address() as AddressInfo).port;
    }
    failing = listen;
    await platform.app.listen({ host: listen.host, port: listen.port });
    // Certificates are asked for once the edge answers the CA's HTTP-01 checks.
    await platform.tls?.start();
  } catch (error) {
    await platform.app.close();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE')
      throw new PortInUseError(failing.host, failing.port);
    throw error;
  }
  const { port } = platform.app.server.address() as AddressInfo;
  const origin = `http://${bracket(listen.host)}:${port}`;
  const edgeOrigin = `http://${bracket(edgeHost)}:${platform.config.edgePort}`;
  const running = join(platform.config.dataDir, RUNNING_FILE);
  writeFileAtomic(
    running,
    `${JSON.stringify({ origin: reachable(origin), edge_origin: reachable(edgeOrigin), pid: process.pid }, null, 2)}\n`,
  );
  return {
    ...platform,
    origin,
    edgeOrigin,
    apiUrl: origin + API_PREFIX,
    close: async () => {
      // Only this process's own: a second platform on the same data dir may have written its since.
      if (parseRunningPlatform(readOr(running))?.pid === process.pid) rmSync(running, { force: true });
      await platform.app.close();
    },
  };
}

/** An origin on this machine's any-address as a client reaches it (the loopback address). */
function reachable(origin: string): string {
  return origin.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
}

function readOr(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** Whether `host:port` can be listened on (port 0: a free one, returned): for the front's HAProxy. */
async function probe(host: string, port: number): Promise<number> {
  const server = createServer();
  await listenOn(server, host, port);
  const bound = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return bound;
}

function listenOn(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function bracket(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
