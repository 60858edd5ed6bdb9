// Gathered writes (core/tunnel/gather.ts): a full HTTP/2 DATA frame's worth of bytes starts a gather
// that goes out as one write after the loop turn; smaller chunks go at once; a gather that fills the
// socket says so, and the socket's 'drain' follows. A head and the body after it (writeParts) go as one
// write, joined when small and uncopied when not. Over a real loopback TCP connection.
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { gatheredWriter, writeParts } from '../../../src/core/tunnel/gather.js';
import { socketPair } from '../../helpers/socket-pair.js';

const KiB = 1024;
const cleanup: (() => void)[] = [];

afterEach(() => {
  for (const undo of cleanup.splice(0)) undo();
});

/** A connected pair: `writer` to write to, `reader` the far end (paused: it reads when told). */
async function pair(): Promise<{ writer: Socket; reader: Socket }> {
  const { near: writer, far: reader, close } = await socketPair();
  reader.pause();
  cleanup.push(close);
  return { writer, reader };
}

async function readAll(reader: Socket, bytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let got = 0;
  reader.resume();
  for await (const chunk of reader) {
    chunks.push(chunk as Buffer);
    got += (chunk as Buffer).length;
    if (got >= bytes) break;
  }
  return Buffer.concat(chunks);
}

describe('gatheredWriter', () => {
  it('writes a small chunk at once, without corking', async () => {
    const { writer, reader } = await pair();
    const write = gatheredWriter(writer, () => undefined);
    expect(write(Buffer.from('hello'))).toBe(true);
    expect(writer.writableCorked).toBe(0);
    expect((await readAll(reader, 5)).toString()).toBe('hello');
  });

  it('gathers from a full frame on, for the loop turn, and passes the bytes in order', async () => {
    const { writer, reader } = await pair();
    const write = gatheredWriter(writer, () => undefined);
    const parts = [16 * KiB, 16 * KiB, 16 * KiB, 300].map((size, i) => Buffer.alloc(size, 97 + i));
    for (const part of parts) expect(write(part)).toBe(true);
    // Held until the turn ends: nothing has been handed to the kernel yet.
    expect(writer.writableCorked).toBe(1);
    expect(writer.writableLength).toBe(48 * KiB + 300);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writer.writableCorked).toBe(0);
    expect((await readAll(reader, 48 * KiB + 300)).equals(Buffer.concat(parts))).toBe(true);
  });

  it('leaves a stream corked by its owner as it is', async () => {
    const { writer } = await pair();
    const write = gatheredWriter(writer, () => undefined);
    writer.cork();
    write(Buffer.alloc(16 * KiB));
    await new Promise((resolve) => setImmediate(resolve));
    expect(writer.writableCorked).toBe(1);
    writer.uncork();
  });

  it('says when a gather left the socket full, and the socket drains once read', async () => {
    const { writer, reader } = await pair();
    let fullCalls = 0;
    const write = gatheredWriter(writer, () => (fullCalls += 1));
    // Far more than the kernel's buffers on loopback take while the reader reads nothing.
    const part = Buffer.alloc(16 * KiB, 'x');
    const total = 1024;
    let ok = true;
    let written = 0;
    while (ok && written < total) {
      ok = write(part);
      written += 1;
    }
    expect(ok).toBe(true); // a gather says go on: the whole turn's bytes are let through
    await new Promise((resolve) => setImmediate(resolve));
    expect(fullCalls).toBe(1);
    const drained = once(writer, 'drain');
    const read = readAll(reader, written * part.length);
    await drained;
    expect((await read).length).toBe(written * part.length);
  });
});

describe('writeParts', () => {
  /** `write` for `writer`, keeping what it was handed. */
  function recording(writer: Socket): { write: (chunk: Buffer) => boolean; handed: Buffer[] } {
    const handed: Buffer[] = [];
    return {
      handed,
      write: (chunk) => {
        handed.push(chunk);
        return writer.write(chunk);
      },
    };
  }

  it('joins small parts into one write', async () => {
    const { writer, reader } = await pair();
    const { write, handed } = recording(writer);
    const parts = [Buffer.from('HTTP/1.1 200 OK\r\n\r\n'), Buffer.from('hello')];
    expect(writeParts(writer, write, parts)).toBe(true);
    expect(handed).toHaveLength(1);
    expect((await readAll(reader, 24)).toString()).toBe('HTTP/1.1 200 OK\r\n\r\nhello');
  });

  it('writes a large body as it is, after its head, in one writev, and says when the socket is full', async () => {
    const { writer, reader } = await pair();
    const { write, handed } = recording(writer);
    const head = Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 65536\r\n\r\n');
    const body = Buffer.alloc(64 * KiB, 'b');
    let writevs = 0;
    const writev = writer._writev!.bind(writer);
    writer._writev = (chunks, done) => {
      writevs += 1;
      writev(chunks, done);
    };
    // 64 KiB is over a socket's high-water mark (16 KiB): the caller is told to wait for 'drain'.
    expect(writeParts(writer, write, [head, Buffer.alloc(0), body])).toBe(false);
    expect(handed).toHaveLength(2);
    expect(handed[1]).toBe(body); // not copied
    expect(writevs).toBe(1);
    expect(writer.writableCorked).toBe(0);
    const drained = once(writer, 'drain');
    expect((await readAll(reader, head.length + body.length)).equals(Buffer.concat([head, body]))).toBe(true);
    await drained;
  });

  it('writes nothing for parts that are all empty', async () => {
    const { writer } = await pair();
    const { write, handed } = recording(writer);
    expect(writeParts(writer, write, [Buffer.alloc(0), Buffer.alloc(0)])).toBe(true);
    expect(writeParts(writer, write, [Buffer.alloc(0)])).toBe(true);
    expect(handed).toHaveLength(0);
  });
});
