// Identifiers and secrets. Ids are `<prefix>_` + 8 base62 characters of milliseconds + 12 random ones,
// so they sort by creation time (lists are newest first) and say nothing else. Base62 uses 0-9A-Za-z,
// which is also ASCII order, so fixed-width strings compare like the numbers they encode.
import { createHash, randomBytes, randomInt } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    // 248 = 62 * 4: bytes above it are dropped so every character is equally likely.
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

function base62Fixed(value: number, width: number): string {
  let out = '';
  for (let v = value; v > 0; v = Math.floor(v / 62)) out = BASE62[v % 62] + out;
  return out.padStart(width, '0');
}

let lastMillis = 0;
let sequence = 0;

export function newId(prefix: string): string {
  const now = Date.now();
  if (now === lastMillis) sequence += 1;
  else {
    lastMillis = now;
    sequence = randomInt(0, 62 ** 2);
  }
  // Within one millisecond a running counter keeps ids of this process in creation order.
  return `${prefix}_${base62Fixed(now, 8)}${base62Fixed(sequence % 62 ** 4, 4)}${randomBase62(8)}`;
}

export const API_KEY_PREFIX = 'wk_';

export function newApiKey(): string {
  return API_KEY_PREFIX + randomBase62(32);
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}
