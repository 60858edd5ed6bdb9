// Whether a tunnel's local app listens: a TCP connect to its port (the address the tunnel client
// forwards to), so the Traffic screen can say "nothing listens on localhost:3000 yet" before the first
// request gets a 502. While nothing answers it asks again every few seconds (a refused connect costs
// nothing), and stops as soon as something does or the tunnel stops; once the app answers, it is not
// asked again until there is a reason to (the tunnel came back online, a request found nothing there).
import { connect } from 'node:net';

/** Whether something accepts a TCP connection on `host:port` within `timeoutMs`. */
export function portAnswers(port: number, host = '127.0.0.1', timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    const done = (answer: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    timer.unref();
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export interface PortWatchOptions {
  host?: string;
  /** How long to wait between checks while nothing listens (default 3 s). */
  intervalMs?: number;
  /** How long one connect may take (default 1 s). */
  timeoutMs?: number;
}

/**
 * One port's listener, watched: `check()` asks now and, while nothing answers, again every
 * `intervalMs`; each answer that differs from the last goes to `onChange`. `stop()` ends it for good.
 */
export class PortWatch {
  /** Null until the first answer. */
  listening: boolean | null = null;
  private timer: NodeJS.Timeout | null = null;
  private checking: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly port: number,
    private readonly onChange: (listening: boolean) => void,
    private readonly options: PortWatchOptions = {},
  ) {}

  /** Checks now (a check under way counts), then keeps checking while nothing listens. */
  check(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.checking) return this.checking;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.checking = portAnswers(this.port, this.options.host, this.options.timeoutMs).then((answer) => {
      this.checking = null;
      if (this.stopped) return;
      if (answer !== this.listening) {
        this.listening = answer;
        this.onChange(answer);
      }
      if (!answer) {
        this.timer = setTimeout(() => void this.check(), this.options.intervalMs ?? 3_000);
        this.timer.unref();
      }
    });
    return this.checking;
  }

  /** Whether it is waiting to check again (nothing listened last time). */
  get waiting(): boolean {
    return this.timer !== null;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
