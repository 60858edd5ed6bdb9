// The server's secret (it signs JWTs): from the config, else `<dataDir>/secret`, created on first start
// with mode 0600.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function loadOrCreateSecret(dataDir: string, configured?: string): Uint8Array {
  if (configured !== undefined) {
    if (configured.length < 32) throw new Error('the server secret must be at least 32 characters');
    return new TextEncoder().encode(configured);
  }
  const file = join(dataDir, 'secret');
  try {
    return new Uint8Array(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const secret = randomBytes(48);
  try {
    writeFileSync(file, secret.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  } catch (error) {
    // Another process created it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return loadOrCreateSecret(dataDir);
    throw error;
  }
  chmodSync(file, 0o600);
  return new Uint8Array(secret);
}
