#!/usr/bin/env node
// The `wharf` command. The TypeScript sources are bundled into dist/ by `npm run build`, which
// `npm ci` runs through the `prepare` script.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('wharf: not built yet; run `npm run build` in the wharf checkout first\n');
  process.exit(1);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv);
