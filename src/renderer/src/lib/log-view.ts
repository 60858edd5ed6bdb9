// The Logs panel's logic as pure functions: numbering followed lines and merging batches without
// duplicates (see ProjectLogsEvent), the filter (search text, service, streams), what a pause holds
// back, highlighting matches, and the text that Copy puts on the clipboard.
import type { LogLine } from '../../../shared/api/projects.js';

export type LogStream = LogLine['stream'];

export const LOG_STREAM_NAMES: readonly LogStream[] = ['build', 'runtime', 'system'];

/** A line with the number the Engine gave it; numbers only grow. */
export interface LogEntry {
  seq: number;
  line: LogLine;
}

/** How many lines the panel keeps per project (the oldest go first). */
export const MAX_LOG_ENTRIES = 5_000;

/** The service filter's value for "every line", and for lines that belong to no service. */
export const ALL_SERVICES = '*';
export const NO_SERVICE = '';

export interface LogFilter {
  /** Text to find in the lines, case-insensitively; blank finds everything. */
  query: string;
  /** A service name, ALL_SERVICES, or NO_SERVICE. */
  service: string;
  /** The streams shown. */
  streams: ReadonlySet<LogStream>;
}

export const NO_FILTER: LogFilter = {
  query: '',
  service: ALL_SERVICES,
  streams: new Set(LOG_STREAM_NAMES),
};

/** The lines of a `logs.follow` answer, numbered so that the last one is `next - 1`. */
export function entriesFromFollow(lines: readonly LogLine[], next: number): LogEntry[] {
  return lines.map((line, i) => ({ seq: next - lines.length + i, line }));
}

/**
 * Adds a batch whose first line is number `from`, skipping lines numbered below `next` (already
 * held), and keeps at most `max` entries. Answers the new entries and the new `next`.
 */
export function appendBatch(
  entries: readonly LogEntry[],
  next: number,
  lines: readonly LogLine[],
  from: number,
  max = MAX_LOG_ENTRIES,
): { entries: LogEntry[]; next: number } {
  const skip = Math.max(0, next - from);
  if (skip >= lines.length) return { entries: [...entries], next };
  const added = lines.slice(skip).map((line, i) => ({ seq: from + skip + i, line }));
  const merged = entries.concat(added);
  return {
    entries: merged.length > max ? merged.slice(merged.length - max) : merged,
    next: from + lines.length,
  };
}

export function matchesFilter(line: LogLine, filter: LogFilter): boolean {
  if (!filter.streams.has(line.stream)) return false;
  if (filter.service !== ALL_SERVICES && (line.service ?? NO_SERVICE) !== filter.service) return false;
  const query = filter.query.trim().toLowerCase();
  return query === '' || line.line.toLowerCase().includes(query);
}

export interface LogView {
  /** The lines to show: up to the pause, if paused, and matching the filter. */
  visible: LogEntry[];
  /** Lines that arrived since the pause and match the filter: shown on resume. */
  held: number;
}

/** What the panel shows. `pausedAt` is the number of the first line that arrived after the pause. */
export function logView(entries: readonly LogEntry[], filter: LogFilter, pausedAt: number | null): LogView {
  const visible: LogEntry[] = [];
  let held = 0;
  for (const entry of entries) {
    if (!matchesFilter(entry.line, filter)) continue;
    if (pausedAt !== null && entry.seq >= pausedAt) held++;
    else visible.push(entry);
  }
  return { visible, held };
}

/** Whether the filter hides anything. */
export function isFiltering(filter: LogFilter): boolean {
  return (
    filter.query.trim() !== '' ||
    filter.service !== ALL_SERVICES ||
    LOG_STREAM_NAMES.some((stream) => !filter.streams.has(stream))
  );
}

/** The text cut at each case-insensitive occurrence of `query`, marking the matches. */
export function highlight(text: string, query: string): Array<{ text: string; match: boolean }> {
  const needle = query.trim().toLowerCase();
  if (needle === '') return [{ text, match: false }];
  const haystack = text.toLowerCase();
  const parts: Array<{ text: string; match: boolean }> = [];
  let at = 0;
  for (;;) {
    const found = haystack.indexOf(needle, at);
    if (found === -1) break;
    if (found > at) parts.push({ text: text.slice(at, found), match: false });
    parts.push({ text: text.slice(found, found + needle.length), match: true });
    at = found + needle.length;
  }
  if (at < text.length || parts.length === 0) parts.push({ text: text.slice(at), match: false });
  return parts;
}

export interface ServiceOption {
  value: string;
  label: string;
}

/**
 * The service filter's choices: every service, then each service the project declares or a line
 * names (sorted), then lines without a service when there are both kinds.
 */
export function serviceOptions(entries: readonly LogEntry[], declared: readonly string[]): ServiceOption[] {
  const names = new Set(declared);
  let unnamed = false;
  for (const { line } of entries) {
    if (line.service === null || line.service === NO_SERVICE) unnamed = true;
    else names.add(line.service);
  }
  const options: ServiceOption[] = [{ value: ALL_SERVICES, label: 'All services' }];
  for (const name of [...names].sort((a, b) => a.localeCompare(b)))
    options.push({ value: name, label: name });
  if (unnamed && names.size > 0) options.push({ value: NO_SERVICE, label: 'Project-wide' });
  return options;
}

/** One line as Copy writes it: `<ISO time> <stream>[:<service>] <text>`. */
export function formatLogLine(line: LogLine): string {
  const source = line.service ? `${line.stream}:${line.service}` : line.stream;
  return `${line.ts} ${source} ${line.line}`;
}

export function formatLogLines(entries: readonly LogEntry[]): string {
  return entries.map((entry) => formatLogLine(entry.line)).join('\n');
}
