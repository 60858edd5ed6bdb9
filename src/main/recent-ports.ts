// The local ports the tray offers as "Share port N": kept in a small JSON file in the app's data folder
// so they survive a restart. A missing or unreadable file is an empty list, never an error.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export function readRecentPorts(file: string): number[] {
  try {
    const data: unknown = JSON.parse(readFileSync(file, 'utf8'));
    const ports = (data as { ports?: unknown } | null)?.ports;
    if (!Array.isArray(ports)) return [];
    return ports.filter((p): p is number => Number.isInteger(p) && p >= 1 && p <= 65_535);
  } catch {
    return [];
  }
}

export function writeRecentPorts(file: string, ports: readonly number[]): void {
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify({ ports })}\n`, { mode: 0o600 });
  } catch (error) {
    console.warn(`Wharf: could not remember the shared ports in ${file}:`, error);
  }
}
