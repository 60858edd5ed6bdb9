// The embedded local platform for the app hosts (`wharf app`, the Electron main process): reuse a
// platform already serving `<home>/platform` (where its running.json says, or at the default address),
// else start one in this process (on the default ports, or any free ones when something else holds
// them).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LocalAccountFile } from './accounts/accounts.js';
import { runningLocalPlatform } from '../core/platform-target.js';
import {
  DEFAULT_API_PORT,
  DEFAULT_EDGE_PORT,
  LOCAL_ACCOUNT_FILE,
  type PlatformConfigInput,
} from './config.js';

export interface LocalPlatform {
  /** The platform's origin, e.g. `http://127.0.0.1:8787`. */
  url: string;
  /** The app edge's origin, where apps and tunnels answer (e.g. `http://127.0.0.1:8788`). */
  edgeUrl: string;
  /** The ports asked for were taken, and the platform took free ones instead. */
  movedPorts: boolean;
  apiKey: string;
  /** True when an already running platform was reused (and close() leaves it running). */
  reused: boolean;
  close(): Promise<void>;
}

function readLocalAccount(dataDir: string): LocalAccountFile | null {
  try {
    return JSON.parse(readFileSync(join(dataDir, LOCAL_ACCOUNT_FILE), 'utf8')) as LocalAccountFile;
  } catch {
    return null;
  }
}

/** Whether the platform at `origin` accepts this key (so it serves this data dir's account). */
async function acceptsKey(origin: string, apiKey: string): Promise<boolean> {
  try {
    const response = await fetch(`${origin}/api/v1/account`, {
      headers: { 'x-api-key': apiKey },
      signal: AbortSignal.timeout(2_000),
    });
    return response.ok;
  } catch {
    return false;
  }
}

export async function ensureLocalPlatform(
  home: string,
  options: { port?: number; config?: PlatformConfigInput } = {},
): Promise<LocalPlatform> {
  const dataDir = join(home, 'platform');
  const port = options.port ?? DEFAULT_API_PORT;
  const existing = readLocalAccount(dataDir);
  const running = runningLocalPlatform(home);
  const candidates = [
    ...(running ? [{ url: running.origin, edgeUrl: running.edge_origin }] : []),
    {
      url: `http://127.0.0.1:${port}`,
      edgeUrl: `http://127.0.0.1:${options.config?.edgePort ?? DEFAULT_EDGE_PORT}`,
    },
  ];
  if (existing) {
    for (const candidate of candidates) {
      if (await acceptsKey(candidate.url, existing.api_key)) {
        const reused = { ...candidate, movedPorts: false, reused: true };
        return { ...reused, apiKey: existing.api_key, close: async () => undefined };
      }
    }
  }
  // Loaded only when a platform must be started: reusing one needs none of the server's modules.
  const { PortInUseError, servePlatform } = await import('./serve.js');
  const config = { ...options.config, dataDir };
  let started;
  let movedPorts = false;
  try {
    started = await servePlatform(config, { host: '127.0.0.1', port });
  } catch (error) {
    if (!(error instanceof PortInUseError)) throw error;
    // The API's port or the edge's is taken (another user's platform, another program): any free ones.
    started = await servePlatform(config, { host: '127.0.0.1', port: 0 }, { port: 0 });
    movedPorts = true;
  }
  const account = readLocalAccount(dataDir);
  if (!account) {
    await started.close();
    throw new Error(`the local platform did not write ${join(dataDir, LOCAL_ACCOUNT_FILE)}`);
  }
  return {
    url: started.origin,
    edgeUrl: started.edgeOrigin,
    movedPorts,
    apiKey: account.api_key,
    reused: false,
    close: () => started.close(),
  };
}
