// The Logs panel's pure logic: merging followed batches, filters, pause, highlighting and copy text.
import { describe, expect, it } from 'vitest';
import type { LogLine } from '../../../src/shared/api/projects.js';
import {
  ALL_SERVICES,
  LOG_STREAM_NAMES,
  NO_FILTER,
  NO_SERVICE,
  appendBatch,
  entriesFromFollow,
  formatLogLines,
  highlight,
  isFiltering,
  logView,
  matchesFilter,
  serviceOptions,
  type LogFilter,
} from '../../../src/renderer/src/lib/log-view.js';

const line = (
  text: string,
  stream: LogLine['stream'] = 'runtime',
  service: string | null = null,
): LogLine => ({
  ts: '2025-01-01T10:00:00.000Z',
  stream,
  service,
  line: text,
});

const texts = (entries: Array<{ line: LogLine }>) => entries.map((e) => e.line.line);

describe('entriesFromFollow and appendBatch', () => {
  it('numbers the answer of logs.follow so that its last line is next - 1', () => {
    expect(entriesFromFollow([line('a'), line('b')], 10).map((e) => e.seq)).toEqual([8, 9]);
  });

  it('appends a batch that starts where the held lines end', () => {
    const start = entriesFromFollow([line('a')], 1);
    const { entries, next } = appendBatch(start, 1, [line('b'), line('c')], 1);
    expect(texts(entries)).toEqual(['a', 'b', 'c']);
    expect(entries.map((e) => e.seq)).toEqual([0, 1, 2]);
    expect(next).toBe(3);
  });

  it('skips lines already held, whether the batch overlaps in part or wholly', () => {
    const start = entriesFromFollow([line('a'), line('b'), line('c')], 3);
    const partial = appendBatch(start, 3, [line('b'), line('c'), line('d')], 1);
    expect(texts(partial.entries)).toEqual(['a', 'b', 'c', 'd']);
    expect(partial.next).toBe(4);
    const whole = appendBatch(partial.entries, partial.next, [line('a'), line('b')], 0);
    expect(texts(whole.entries)).toEqual(['a', 'b', 'c', 'd']);
    expect(whole.next).toBe(4);
  });

  it('keeps at most max entries, dropping the oldest', () => {
    const start = entriesFromFollow([line('1'), line('2'), line('3')], 3);
    const { entries } = appendBatch(start, 3, [line('4'), line('5')], 3, 4);
    expect(texts(entries)).toEqual(['2', '3', '4', '5']);
  });
});

describe('filters', () => {
  const all = entriesFromFollow(
    [
      line('npm ci', 'build'),
      line('Listening on 3000', 'runtime', 'web'),
      line('worker ready', 'runtime', 'worker'),
      line('running at http://shop.localhost', 'system'),
      line('GET /health 200', 'runtime', 'web'),
    ],
    5,
  );
  const filter = (patch: Partial<LogFilter>): LogFilter => ({ ...NO_FILTER, ...patch });

  it('shows everything with no filter', () => {
    expect(logView(all, NO_FILTER, null).visible).toHaveLength(5);
    expect(isFiltering(NO_FILTER)).toBe(false);
  });

  it('searches case-insensitively, ignoring surrounding blanks', () => {
    expect(texts(logView(all, filter({ query: '  LISTENING ' }), null).visible)).toEqual([
      'Listening on 3000',
    ]);
    expect(isFiltering(filter({ query: 'x' }))).toBe(true);
    expect(isFiltering(filter({ query: '   ' }))).toBe(false);
  });

  it('keeps one service, or the lines without a service', () => {
    expect(texts(logView(all, filter({ service: 'web' }), null).visible)).toEqual([
      'Listening on 3000',
      'GET /health 200',
    ]);
    expect(texts(logView(all, filter({ service: NO_SERVICE }), null).visible)).toEqual([
      'npm ci',
      'running at http://shop.localhost',
    ]);
  });

  it('keeps only the chosen streams', () => {
    const streams = new Set<LogLine['stream']>(['build', 'system']);
    expect(texts(logView(all, filter({ streams }), null).visible)).toEqual([
      'npm ci',
      'running at http://shop.localhost',
    ]);
    expect(isFiltering(filter({ streams }))).toBe(true);
    expect(matchesFilter(line('x', 'runtime'), filter({ streams: new Set() }))).toBe(false);
  });

  it('combines search, service and streams', () => {
    const view = logView(all, filter({ query: 'e', service: 'web', streams: new Set(['runtime']) }), null);
    expect(texts(view.visible)).toEqual(['Listening on 3000', 'GET /health 200']);
  });
});

describe('pause', () => {
  it('holds back the lines from pausedAt on and counts those that match the filter', () => {
    const entries = entriesFromFollow([line('a'), line('b'), line('c', 'build'), line('d')], 4);
    const view = logView(entries, NO_FILTER, 2);
    expect(texts(view.visible)).toEqual(['a', 'b']);
    expect(view.held).toBe(2);
    const runtimeOnly = logView(entries, { ...NO_FILTER, streams: new Set(['runtime']) }, 2);
    expect(runtimeOnly.held).toBe(1);
  });
});

describe('highlight', () => {
  it('marks every case-insensitive occurrence, keeping the original case', () => {
    expect(highlight('Error: error ERROR', 'error')).toEqual([
      { text: 'Error', match: true },
      { text: ': ', match: false },
      { text: 'error', match: true },
      { text: ' ', match: false },
      { text: 'ERROR', match: true },
    ]);
  });

  it('answers the whole text unmarked for a blank query or no match', () => {
    expect(highlight('hello', '  ')).toEqual([{ text: 'hello', match: false }]);
    expect(highlight('hello', 'xyz')).toEqual([{ text: 'hello', match: false }]);
    expect(highlight('', 'x')).toEqual([{ text: '', match: false }]);
  });
});

describe('serviceOptions', () => {
  it('lists declared and seen services, then "no service" when both kinds exist', () => {
    const entries = entriesFromFollow([line('a', 'build'), line('b', 'runtime', 'worker')], 2);
    expect(serviceOptions(entries, ['web'])).toEqual([
      { value: ALL_SERVICES, label: 'All services' },
      { value: 'web', label: 'web' },
      { value: 'worker', label: 'worker' },
      { value: NO_SERVICE, label: 'Project-wide' },
    ]);
  });

  it('offers only "All services" for a project without services', () => {
    expect(serviceOptions(entriesFromFollow([line('a')], 1), [])).toEqual([
      { value: ALL_SERVICES, label: 'All services' },
    ]);
  });
});

describe('formatLogLines', () => {
  it('writes one line per entry with its time, stream and service', () => {
    const entries = entriesFromFollow([line('npm ci', 'build'), line('up', 'runtime', 'web')], 2);
    expect(formatLogLines(entries)).toBe(
      '2025-01-01T10:00:00.000Z build npm ci\n2025-01-01T10:00:00.000Z runtime:web up',
    );
  });

  it('knows the three streams', () => {
    expect(LOG_STREAM_NAMES).toEqual(['build', 'runtime', 'system']);
  });
});
