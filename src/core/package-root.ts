// Finds the wharf package's own files from wherever this code runs: src/ under the tests, dist/ (the
// command) or out/main (the desktop app) once built.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface PackageInfo {
  root: string;
  version: string;
}

let found: PackageInfo | null = null;

export function wharfPackage(): PackageInfo {
  if (found) return found;
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'wharf' && pkg.version) return (found = { root: dir, version: pkg.version });
    } catch {
      // no package.json here: keep looking upwards
    }
  }
  throw new Error('cannot find the wharf package.json above ' + fileURLToPath(import.meta.url));
}
