// The bound on what the container runtime copies out of a tenant's image (a built static site).
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { DeployError } from '../../../src/server/runtime/build.js';
import { capBytes } from '../../../src/server/runtime/built-site.js';

function sink(): { stream: Writable; bytes: () => number } {
  let bytes = 0;
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      done();
    },
  });
  return { stream, bytes: () => bytes };
}

describe('capBytes', () => {
  it('passes a stream up to the bound through whole', async () => {
    const out = sink();
    await pipeline(Readable.from([Buffer.alloc(600), Buffer.alloc(424)]), capBytes(1024, 'x'), out.stream);
    expect(out.bytes()).toBe(1024);
  });

  it('fails with a DeployError saying what was too big, having passed no more than the bound', async () => {
    const out = sink();
    const endless = Readable.from(
      (function* () {
        for (;;) yield Buffer.alloc(64 * 1024);
      })(),
    );
    const copied = pipeline(endless, capBytes(1024 * 1024, 'the built site'), out.stream);
    await expect(copied).rejects.toThrow(DeployError);
    await expect(copied).rejects.toThrow('the built site is larger than 1 MiB');
    expect(out.bytes()).toBeLessThanOrEqual(1024 * 1024);
  });
});
