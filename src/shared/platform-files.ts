// Files a platform keeps in its data dir for the hosts on the same machine (`wharf app`, the desktop
// app, the `wharf` commands) to find it by.

/** The local account's id, email and API key: `<dataDir>/local-account.json` (mode 0600). */
export const LOCAL_ACCOUNT_FILE = 'local-account.json';

/**
 * Where a running platform listens: `<dataDir>/running.json` (mode 0600), written once it listens and
 * removed as it stops, so that a command finds the platform the app started on whatever ports it got.
 */
export const RUNNING_FILE = 'running.json';

export interface RunningPlatform {
  /** The API's origin, e.g. `http://127.0.0.1:8787`. */
  origin: string;
  /** The app edge's origin, where apps and tunnels answer. */
  edge_origin: string;
  pid: number;
}

/** The file's contents when they are a RunningPlatform's, else null. */
export function parseRunningPlatform(text: string): RunningPlatform | null {
  try {
    const value = JSON.parse(text) as Partial<RunningPlatform>;
    if (
      typeof value.origin === 'string' &&
      typeof value.edge_origin === 'string' &&
      typeof value.pid === 'number'
    )
      return { origin: value.origin, edge_origin: value.edge_origin, pid: value.pid };
  } catch {
    // not JSON: treated as absent
  }
  return null;
}
