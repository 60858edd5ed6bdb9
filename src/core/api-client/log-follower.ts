// Live project logs for the Engine: one `GET /projects/:id/logs?follow=1` stream per followed project,
// however many subscribers follow it (counted; the stream closes when the last one leaves). Lines are
// handed on in batches every `flushMs`, numbered so that a subscriber can tell new lines from those it
// already has (see ProjectLogsEvent). When the stream drops, it is opened again with backoff, asking
// for the lines since the last one seen; lines of that same millisecond that were already delivered are
// recognised and skipped, since `since` can only say "strictly after".
import { LogLine } from '../../shared/api/projects.js';
import { BridgeError, toBridgeError, type LogFollow, type LogUnfollow } from '../../shared/bridge.js';
import type { PlatformClient } from './platform-client.js';
import { readSse } from './sse.js';

export interface LogFollowersOptions {
  /** The client of the current platform connection (settings may change it between reconnects). */
  client: () => Promise<PlatformClient>;
  /** Receives each batch of new lines. */
  emit: (batch: { projectId: string; lines: LogLine[]; from: number }) => void;
  /** How long lines gather before a batch goes out. */
  flushMs?: number;
  /** How many recent lines are kept per project for subscribers that join later. */
  keepLines?: number;
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** A stream that sends nothing for this long (the platform sends a keep-alive every 15 s) is dead. */
  idleMs?: number;
}

/** Lines asked for when a stream reopens after a drop (the platform keeps 5,000 per project). */
const CATCH_UP_LINES = 5_000;

export class LogFollowers {
  private readonly follows = new Map<string, Follow>();

  constructor(private readonly options: LogFollowersOptions) {}

  /** Follows the project (joining the open stream if there is one); answers the lines held so far. */
  async follow(projectId: string): Promise<LogFollow> {
    let follow = this.follows.get(projectId);
    if (follow) {
      follow.subscribers++;
    } else {
      follow = new Follow(projectId, this.options);
      this.follows.set(projectId, follow);
      follow.start();
    }
    try {
      await follow.ready;
    } catch (error) {
      if (this.follows.get(projectId) === follow) {
        this.follows.delete(projectId);
        follow.close();
      }
      throw error;
    }
    return follow.snapshot();
  }

  unfollow(projectId: string): LogUnfollow {
    const follow = this.follows.get(projectId);
    if (!follow) return { projectId, followers: 0 };
    follow.subscribers--;
    if (follow.subscribers <= 0) {
      this.follows.delete(projectId);
      follow.close();
      return { projectId, followers: 0 };
    }
    return { projectId, followers: follow.subscribers };
  }

  /** The projects followed now, with their subscriber counts. */
  followed(): Map<string, number> {
    return new Map([...this.follows].map(([id, follow]) => [id, follow.subscribers]));
  }

  closeAll(): void {
    for (const follow of this.follows.values()) follow.close();
    this.follows.clear();
  }
}

class Follow {
  subscribers = 1;
  ready: Promise<void> = Promise.resolve();
  private readonly kept: LogLine[] = [];
  /** The number the next delivered line gets. */
  private next = 0;
  private pending: LogLine[] = [];
  private pendingFrom = 0;
  private flushTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private connection: AbortController | null = null;
  private wake: (() => void) | null = null;
  /** The newest line's time, and how many lines with exactly that time were seen (by content). */
  private lastTs: string | null = null;
  private atLastTs = new Map<string, number>();
  /**
   * After a (re)connect that asked for the lines since `lastTs`, until a newer line arrives: older lines
   * are dropped, and lines at `lastTs` that were already delivered are skipped, once each.
   */
  private catchingUp = false;
  private skip = new Map<string, number>();

  constructor(
    readonly projectId: string,
    private readonly options: LogFollowersOptions,
  ) {}

  start(): void {
    this.ready = this.loadBacklog();
    // The stream runs whether or not the backlog could be read; a refusal ends it (see run()).
    void this.ready.then(
      () => this.run(),
      () => undefined,
    );
  }

  snapshot(): LogFollow {
    return { projectId: this.projectId, lines: [...this.kept], next: this.next };
  }

  close(): void {
    this.closed = true;
    this.connection?.abort();
    this.wake?.();
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.pending = [];
  }

  /** The recent lines, kept but not sent as an event: subscribers get them from follow()'s answer. */
  private async loadBacklog(): Promise<void> {
    try {
      const client = await this.options.client();
      const lines = await client.logs(this.projectId, { limit: this.options.keepLines ?? 1_000 });
      for (const line of lines) this.accept(line, false);
    } catch (error) {
      const bridgeError = toBridgeError(error);
      // Offline or a passing failure: follow anyway, the stream retries until the platform answers.
      if (!retryable(bridgeError)) throw bridgeError;
    }
  }

  private async run(): Promise<void> {
    const min = this.options.reconnectMinMs ?? 500;
    const max = this.options.reconnectMaxMs ?? 15_000;
    let failures = 0;
    while (!this.closed) {
      const connection = new AbortController();
      this.connection = connection;
      let delivered = false;
      try {
        const client = await this.options.client();
        const query =
          this.lastTs === null
            ? {}
            : {
                since: new Date(Date.parse(this.lastTs) - 1).toISOString(),
                limit: CATCH_UP_LINES,
              };
        this.catchingUp = this.lastTs !== null;
        this.skip = new Map(this.atLastTs);
        const response = await client.followLogs(this.projectId, query, connection.signal);
        await readSse(
          response.body!,
          (event) => {
            if (event.event !== 'log') return;
            const line = parseLine(event.data);
            if (line) {
              delivered = true;
              this.accept(line, true);
            }
          },
          { idleMs: this.options.idleMs ?? 45_000 },
        );
      } catch (error) {
        if (this.closed) break;
        const bridgeError = error instanceof BridgeError ? error : null;
        // The project is gone (or no longer ours): nothing will ever arrive.
        if (bridgeError && !retryable(bridgeError) && bridgeError.status !== 401) break;
      } finally {
        this.connection = null;
      }
      if (this.closed) break;
      // Waits grow while attempts bring nothing (no connection, or a stream that ends without a line).
      failures = delivered ? 0 : failures + 1;
      const delay = failures === 0 ? min : Math.min(max, min * 2 ** (failures - 1));
      await this.sleep(delay * (0.8 + Math.random() * 0.4));
    }
  }

  /** Waits `ms`, or less if the follow is closed meanwhile. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      this.wake = done;
    });
  }

  private accept(line: LogLine, live: boolean): void {
    const key = `${line.stream}\u0000${line.service ?? ''}\u0000${line.line}`;
    const order = this.lastTs === null ? 1 : compareTs(line.ts, this.lastTs);
    if (this.catchingUp) {
      if (order < 0) return;
      if (order === 0) {
        const toSkip = this.skip.get(key) ?? 0;
        if (toSkip > 0) {
          this.skip.set(key, toSkip - 1);
          return;
        }
      } else this.catchingUp = false;
    }
    if (order > 0) {
      this.lastTs = line.ts;
      this.atLastTs = new Map([[key, 1]]);
    } else if (order === 0) {
      this.atLastTs.set(key, (this.atLastTs.get(key) ?? 0) + 1);
    }

    const keep = this.options.keepLines ?? 1_000;
    this.kept.push(line);
    if (this.kept.length > keep) this.kept.splice(0, this.kept.length - keep);
    const number = this.next++;
    if (!live) return;
    if (this.pending.length === 0) this.pendingFrom = number;
    this.pending.push(line);
    this.flushTimer ??= setTimeout(() => this.flush(), this.options.flushMs ?? 50);
  }

  private flush(): void {
    this.flushTimer = null;
    if (this.closed || this.pending.length === 0) return;
    const lines = this.pending;
    this.pending = [];
    this.options.emit({ projectId: this.projectId, lines, from: this.pendingFrom });
  }
}

function parseLine(data: string): LogLine | null {
  try {
    const parsed = LogLine.safeParse(JSON.parse(data));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

function compareTs(a: string, b: string): number {
  const diff = Date.parse(a) - Date.parse(b);
  return diff < 0 ? -1 : diff > 0 ? 1 : 0;
}

function retryable(error: BridgeError): boolean {
  return error.code === 'offline' || error.status >= 500 || error.status === 429;
}
