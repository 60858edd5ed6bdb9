// Starts a built platform listening on its host and port, for `wharf platform` and `wharf app`.
import type { AddressInfo } from 'node:net';
import { buildPlatform, API_PREFIX, type Platform } from './app.js';
import type { PlatformConfig } from './config.js';

export interface ListenOptions {
  host: string;
  port: number;
}

export interface RunningPlatform extends Platform {
  /** `http://<host>:<port>` */
  origin: string;
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

export async function servePlatform(
  config: Partial<PlatformConfig>,
  listen: ListenOptions,
): Promise<RunningPlatform> {
  const platform = await buildPlatform(config);
  try {
    await platform.app.listen({ host: listen.host, port: listen.port });
  } catch (error) {
    await platform.app.close();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE')
      throw new PortInUseError(listen.host, listen.port);
    throw error;
  }
  const { port } = platform.app.server.address() as AddressInfo;
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  const origin = `http://${host}:${port}`;
  return { ...platform, origin, apiUrl: origin + API_PREFIX, close: () => platform.app.close() };
}
