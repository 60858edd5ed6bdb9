#!/usr/bin/env -S node --initial-old-space-size=128
// The `wharf` command. The TypeScript sources are bundled into dist/ by `npm run build`, which
// `npm ci` runs through the `prepare` script.
//
// --initial-old-space-size: V8 counts the ArrayBuffers allocated since its last full collection
// (every socket read is one) against the old generation's limit, and sets that limit a few MiB above
// what is live. A process as small as the platform or a tunnel client that moves tens of MiB a second
// then ran a full collection every 100-200 ms, though nearly all of those reads die young and a
// scavenge frees them; with the limit's floor at 128 MiB it runs one now and then (bench/profiles/
// README.md, the tenth look). scripts/node-flags.mjs reads the flags here for what starts `wharf`
// another way.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('wharf: not built yet; run `npm run build` in the wharf checkout first\n');
  process.exit(1);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv);
