// Reading a tenant's output line by line without trusting it: builds, apps, git and containers may
// write one endless line, binary noise or a flood. readline would hold a whole line in memory (one
// of 600 MB without a newline ends the platform with "Invalid string length"); this reader holds at
// most `maxLineBytes` of a line, hands longer ones on in pieces marked as cut and continued, and
// turns a stream error into one last line instead of an exception.
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';

/** Longest line kept whole: longer ones are split into pieces of this size. */
export const MAX_LINE_BYTES = 16 * 1024;
/** Ends a piece of a line that was cut. */
export const CUT_MARK = ' … (line cut)';
/** Starts the piece that continues it. */
export const CONTINUED_MARK = '… ';

export interface LineReaderOptions {
  maxLineBytes?: number;
}

/** Calls `onLine` for each line of `input` (without its `\n` or `\r\n`); never throws. */
export function readLines(
  input: Readable,
  onLine: (line: string) => void,
  options: LineReaderOptions = {},
): void {
  const splitter = new LineSplitter(onLine, options.maxLineBytes ?? MAX_LINE_BYTES);
  input.on('data', (chunk: Buffer | string) => splitter.push(chunk));
  input.once('end', () => splitter.end());
  input.once('error', (error: Error) => {
    splitter.end();
    onLine(`(output could not be read: ${error.message})`);
  });
}

/** The state machine behind readLines, usable on its own for chunks that come by another way. */
export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private parts: Buffer[] = [];
  private size = 0;
  private continued = false;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxLineBytes: number = MAX_LINE_BYTES,
  ) {}

  push(chunk: Buffer | string): void {
    let data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    while (data.length > 0) {
      const newline = data.indexOf(0x0a);
      const end = newline === -1 ? data.length : newline;
      const room = this.maxLineBytes - this.size;
      if (end > room) {
        // The line is longer than we keep: hand on what fits, marked, and go on with the rest.
        this.take(data.subarray(0, room));
        this.emit(true);
        data = data.subarray(room);
        continue;
      }
      this.take(data.subarray(0, end));
      if (newline === -1) return;
      this.emit(false);
      data = data.subarray(newline + 1);
    }
  }

  /** The last line, when the output did not end with a newline. */
  end(): void {
    if (this.size > 0 || this.continued) this.emit(false);
  }

  private take(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.parts.push(bytes);
    this.size += bytes.length;
  }

  private emit(cut: boolean): void {
    const bytes = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    // A cut may fall inside a UTF-8 sequence: the decoder keeps its first bytes for the next piece.
    let text = this.decoder.write(bytes);
    if (!cut) text += this.decoder.end();
    if (!cut && text.endsWith('\r')) text = text.slice(0, -1);
    const line = `${this.continued ? CONTINUED_MARK : ''}${text}${cut ? CUT_MARK : ''}`;
    this.continued = cut;
    this.onLine(line);
  }
}
