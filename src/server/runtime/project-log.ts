// A project's log on its way to the store: batched, in order, and bounded, so that no tenant's output
// (a build, an app, an image build or pull) can grow the platform's memory or keep it busy.
import type { LogLine } from '../../shared/api/projects.js';
import type { Transaction } from 'kysely';
import type { LogStore } from '../projects/logs.js';
import type { Database } from '../store/schema.js';

/**
 * A project's log lines waiting for the store, at most (in bytes and in lines: the store keeps the
 * last 5,000 lines anyway), and the pace at which they are stored (a burst, then lines per second):
 * a flood beyond is dropped and counted, so one tenant's output cannot keep the platform busy.
 */
const LOG_BACKLOG_BYTES = 4 * 1024 * 1024;
const LOG_BACKLOG_LINES = 2_000;
const LOG_BURST_LINES = 5_000;
const LOG_LINES_PER_SECOND = 1_000;

/**
 * A project's log lines on their way to the store: batched, in order, and bounded. Each line is at most
 * 16 KiB (lines.ts); an app writing faster than the store keeps up loses lines (the log says how many)
 * instead of growing the platform's memory.
 */
export class ProjectLog {
  private pending: Array<Omit<LogLine, 'ts'> & { ts: string }> = [];
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  /** Bytes and lines written and not yet stored (pending or in a batch being stored). */
  private backlog = 0;
  private backlogLines = 0;
  private dropped = 0;
  private allowance = LOG_BURST_LINES;
  private refilledAt = Date.now();

  /** Per key (a release), the timestamp of the last output line written: stored with the lines. */
  private marks = new Map<string, string>();

  constructor(
    private readonly logs: LogStore,
    private readonly projectId: string,
    /** Stores the marks of a batch, in the transaction that stores its lines (none: they are dropped). */
    private readonly storeMarks:
      ((trx: Transaction<Database>, marks: Map<string, string>) => Promise<void>) | null = null,
  ) {}

  /** Notes how far `key`'s output got with the lines written so far (see storeMarks). */
  mark(key: string, at: string): void {
    if (this.storeMarks) this.marks.set(key, at);
  }

  write(stream: LogLine['stream'], service: string | null, line: string): void {
    const now = Date.now();
    this.allowance = Math.min(
      LOG_BURST_LINES,
      this.allowance + ((now - this.refilledAt) / 1000) * LOG_LINES_PER_SECOND,
    );
    this.refilledAt = now;
    const full =
      this.allowance < 1 ||
      this.backlog + line.length > LOG_BACKLOG_BYTES ||
      this.backlogLines >= LOG_BACKLOG_LINES;
    if (full && stream !== 'system') {
      this.dropped += 1;
      return;
    }
    if (this.dropped > 0) {
      const note = `(${this.dropped} lines dropped: output came faster than the log keeps, ${LOG_LINES_PER_SECOND} lines a second)`;
      this.dropped = 0;
      this.push('system', service, note);
    }
    this.push(stream, service, line);
  }

  system(line: string, service: string | null = null): void {
    this.write('system', service, line);
  }

  build(line: string, service: string | null = null): void {
    this.write('build', service, line);
  }

  /** Resolves once every line written so far is stored. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = [];
    const storeMarks = this.storeMarks;
    if (batch.length > 0) {
      // The marks go with the lines they came with (a mark without lines waits for the next ones).
      const marks = this.marks;
      this.marks = new Map();
      const bytes = batch.reduce((sum, l) => sum + l.line.length, 0);
      const alongside =
        storeMarks && marks.size > 0 ? (trx: Transaction<Database>) => storeMarks(trx, marks) : undefined;
      this.chain = this.chain
        .then(() => this.logs.append(this.projectId, batch, alongside))
        // The project was deleted meanwhile: its lines have nowhere to go.
        .then(
          () => undefined,
          () => undefined,
        )
        .finally(() => {
          this.backlog -= bytes;
          this.backlogLines -= batch.length;
        });
    }
    return this.chain;
  }

  private push(stream: LogLine['stream'], service: string | null, line: string): void {
    this.allowance -= 1;
    this.backlog += line.length;
    this.backlogLines += 1;
    this.pending.push({ ts: new Date().toISOString(), stream, service, line });
    if (this.pending.length >= 500) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), 50);
  }
}
