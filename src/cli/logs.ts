// `wharf logs <project>`: a project's log lines, newest last; with -f it keeps printing new ones until
// Ctrl+C. The API filters by time only, so --service and --stream are applied here.
import { Command, InvalidArgumentError, Option } from 'commander';
import type { PlatformClient } from '../core/api-client/platform-client.js';
import { LOG_STREAMS, type LogLine } from '../shared/api/index.js';
import { type ConnectionOptions, withConnectionOptions, withPlatform } from './connect.js';
import { resolveProject } from './find-project.js';
import { logLine } from './format.js';
import type { Io } from './io.js';
import { abortOnSignals, streamLogs } from './log-stream.js';

export const DEFAULT_LINES = 100;
/** The most lines the platform returns in one answer. */
export const MAX_LINES = 10_000;

type LogStream = (typeof LOG_STREAMS)[number];

interface LogsOptions extends ConnectionOptions {
  follow: boolean;
  since?: string;
  lines: number;
  service?: string;
  stream?: LogStream;
}

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `--since`: a duration back from now (`90s`, `10m`, `2h`, `1d`) or an ISO 8601 date or time (local
 * time unless it ends with `Z` or an offset). Answers the ISO time the API expects.
 */
export function parseSince(value: string, now: number = Date.now()): string {
  const text = value.trim();
  const relative = /^(\d+)\s*([smhd])$/i.exec(text);
  if (relative) return new Date(now - Number(relative[1]) * UNITS[relative[2]!.toLowerCase()]!).toISOString();
  const absolute =
    /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(text);
  if (absolute) {
    const [, date, time, zone] = absolute;
    const ms = Date.parse(`${date}T${time ?? '00:00'}${zone ?? ''}`);
    if (!Number.isNaN(ms)) return new Date(ms).toISOString();
  }
  throw new InvalidArgumentError(
    'must be a duration such as 90s, 10m, 2h or 1d, or a time such as 2025-01-31 or 2025-01-31T14:00',
  );
}

export function parseLines(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < 1 || n > MAX_LINES) {
    throw new InvalidArgumentError(`must be a whole number from 1 to ${MAX_LINES}`);
  }
  return n;
}

export function parseService(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('must be a service name');
  return value.trim();
}

/** The key two equal lines share: the platform stamps a batch with one time, so equal lines can repeat. */
const keyOf = (line: LogLine) => JSON.stringify([line.ts, line.stream, line.service, line.line]);

export function logsCommand(io: Io): Command {
  return withConnectionOptions(
    new Command('logs')
      .description("print a project's log lines (build, runtime and system), newest last")
      .argument('<project>', 'the project: its subdomain, name or id')
      .option('-f, --follow', 'keep printing new lines until Ctrl+C', false)
      .option('--since <time>', 'only lines after this time: 10m, 2h, 1d, or 2025-01-31T14:00', (v) =>
        parseSince(v),
      )
      .option('-n, --lines <n>', `print the last n lines (at most ${MAX_LINES})`, parseLines, DEFAULT_LINES)
      .option('--service <name>', "only this service's lines", parseService)
      .addOption(new Option('--stream <stream>', 'only lines of this stream').choices(LOG_STREAMS)),
  ).action(async (query: string, options: LogsOptions) => {
    const keep = (line: LogLine) =>
      (options.service === undefined || line.service === options.service) &&
      (options.stream === undefined || line.stream === options.stream);
    await withPlatform(options, async ({ client }) => {
      const project = await resolveProject(client, query);
      const filtered = options.service !== undefined || options.stream !== undefined;
      const backlog = await client.logs(project.id, {
        ...(options.since === undefined ? {} : { since: options.since }),
        // Filters apply here, after the limit, and following needs the whole last millisecond of lines:
        // then ask for all the platform keeps (it keeps fewer than MAX_LINES), and cut here.
        limit: filtered || options.follow ? MAX_LINES : options.lines,
      });
      const shown = backlog.filter(keep).slice(-options.lines);
      for (const line of shown) io.out(logLine(line));
      if (!options.follow) {
        if (shown.length === 0) {
          io.err(`${project.name} has no log lines${filtered || options.since ? ' that match' : ' yet'}.`);
        }
        return;
      }
      await follow(client, project.id, backlog, options.since, (line) => {
        if (keep(line)) io.out(logLine(line));
      });
    });
  });
}

/**
 * Follows from where `backlog` ends. The stream starts 1 ms before the backlog's last line, since its
 * `since` is exclusive and lines written in the same millisecond may have arrived after the backlog was
 * read; the lines of that millisecond the backlog already had are skipped, once each.
 */
async function follow(
  client: PlatformClient,
  projectId: string,
  backlog: LogLine[],
  since: string | undefined,
  onLine: (line: LogLine) => void,
): Promise<void> {
  const last = backlog.at(-1);
  const seen = new Map<string, number>();
  let from = since;
  if (last) {
    from = new Date(Date.parse(last.ts) - 1).toISOString();
    for (const line of backlog) {
      if (line.ts === last.ts) seen.set(keyOf(line), (seen.get(keyOf(line)) ?? 0) + 1);
    }
  }
  const controller = new AbortController();
  const release = abortOnSignals(controller);
  try {
    const end = await streamLogs(
      client,
      projectId,
      { ...(from === undefined ? {} : { since: from }), limit: MAX_LINES },
      controller.signal,
      (line) => {
        const key = keyOf(line);
        const count = seen.get(key);
        if (count) {
          if (count === 1) seen.delete(key);
          else seen.set(key, count - 1);
          return;
        }
        onLine(line);
      },
    );
    if (end === 'ended') throw new Error('the platform ended the log stream (did it shut down?)');
  } finally {
    release();
  }
}
