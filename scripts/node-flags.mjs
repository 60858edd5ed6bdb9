// The flags the `wharf` command runs Node with: those its shebang names (bin/wharf.js starts with
// `#!/usr/bin/env -S node <flags>`). What starts the command another way (`npm start` runs
// `node bin/wharf.js app`) or runs its code in processes of its own (the benches) passes them too, so
// that every way of running Wharf runs it the same.
import { readFileSync } from 'node:fs';

const SHEBANG = /^#!\/usr\/bin\/env -S node((?: --[a-z0-9-]+(?:=\S+)?)*)\s*$/;

/** The Node flags of bin/wharf.js's shebang; throws when its first line is not such a shebang. */
export function wharfNodeFlags() {
  const first = readFileSync(new URL('../bin/wharf.js', import.meta.url), 'utf8').split('\n', 1)[0];
  const match = SHEBANG.exec(first);
  if (!match)
    throw new Error(`bin/wharf.js does not start with \`#!/usr/bin/env -S node [flags]\`: ${first}`);
  return match[1].split(' ').filter(Boolean);
}
