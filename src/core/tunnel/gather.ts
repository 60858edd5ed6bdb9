import type { Writable } from 'node:stream';

/**
 * A DATA frame as large as node:http2 sends them: nghttp2 cuts DATA frames at 16 KiB whatever the
 * peer's SETTINGS_MAX_FRAME_SIZE (Node sets no read-length callback), so a full one says that more of
 * the same read is likely to follow.
 */
const FULL_FRAME = 16 * 1024;

/**
 * Writes what an HTTP/2 stream hands over to `to`, gathered: the stream's data comes a DATA frame at a
 * time, each in its own callback, and a socket written each frame makes a syscall per 16 KiB (on
 * loopback that syscall also runs the reader's side of TCP). From a full frame on, what comes in the
 * same loop turn (the rest of the session's read) goes out as one writev, after the turn's I/O
 * callbacks. Smaller chunks, the usual request or response, are written at once as before.
 *
 * The returned write says, as Writable#write does, whether to go on; `full` runs when a gathered write
 * left `to` over its high-water mark, and its 'drain' follows as usual.
 */
export function gatheredWriter(to: Writable, full: () => void): (chunk: Buffer) => boolean {
  let gathering = false;
  const flush = () => {
    gathering = false;
    to.uncork();
    if (to.writableNeedDrain) full();
  };
  return (chunk) => {
    if (!gathering && chunk.length >= FULL_FRAME && !to.writableCorked) {
      gathering = true;
      to.cork();
      setImmediate(flush);
    }
    const ok = to.write(chunk);
    return gathering || ok;
  };
}

/** Parts that come to less than this are joined into one buffer; larger ones are written as they are. */
const JOIN_BELOW = 16 * 1024;

/**
 * Writes the parts a framer handed out (an edited head, then the body bytes that followed it in the
 * same read) with `write` as one write: small ones joined, larger ones corked into one writev, so that
 * a 64 KiB body is not copied into a new buffer to put a head before it. Returns false when `write`
 * said to stop.
 */
export function writeParts(
  to: Writable,
  write: (chunk: Buffer) => boolean,
  parts: readonly Buffer[],
): boolean {
  if (parts.length === 1) return parts[0]!.length === 0 || write(parts[0]!);
  let size = 0;
  for (const part of parts) size += part.length;
  if (size === 0) return true;
  if (size < JOIN_BELOW) return write(Buffer.concat(parts, size));
  to.cork();
  let ok = true;
  for (const part of parts) if (part.length > 0 && !write(part)) ok = false;
  to.uncork();
  return ok;
}
