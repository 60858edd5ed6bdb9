// What the project commands print: tables, log lines, and the options that shape `wharf logs`.
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { deployLine, localTime, logLine, table } from '../../../src/cli/format.js';
import { logLineOf } from '../../../src/cli/log-stream.js';
import { MAX_LINES, parseLines, parseSince } from '../../../src/cli/logs.js';

describe('table', () => {
  it('pads every column but the last to its widest cell', () => {
    expect(
      table([
        ['NAME', 'STATUS', 'URL'],
        ['A long name', 'running', 'http://a'],
        ['B', 'failed', ''],
      ]),
    ).toEqual(['NAME         STATUS   URL', 'A long name  running  http://a', 'B            failed']);
  });

  it('answers nothing for no rows', () => {
    expect(table([])).toEqual([]);
  });
});

describe('log lines', () => {
  const ts = new Date(2025, 0, 31, 14, 2, 7, 450).toISOString();

  it('shows the time in the local zone without milliseconds', () => {
    expect(localTime(ts)).toBe('2025-01-31 14:02:07');
    expect(localTime('not a time')).toBe('not a time');
  });

  it('prints time, stream padded to one width, the service when there is one, and the line', () => {
    expect(logLine({ ts, stream: 'runtime', service: 'web', line: 'listening on 3000' })).toBe(
      '2025-01-31 14:02:07 runtime web | listening on 3000',
    );
    expect(logLine({ ts, stream: 'build', service: null, line: 'npm ci' })).toBe(
      '2025-01-31 14:02:07 build   | npm ci',
    );
  });

  it('prefixes a deploy line with its service only', () => {
    expect(deployLine({ ts, stream: 'build', service: 'api', line: 'npm ci' })).toBe('api | npm ci');
    expect(deployLine({ ts, stream: 'system', service: null, line: 'running' })).toBe('running');
  });
});

describe('logLineOf', () => {
  const line = { ts: '2025-01-31T14:02:07.450Z', stream: 'runtime', service: null, line: 'hi' };

  it('reads the log line of a `log` event', () => {
    expect(logLineOf({ event: 'log', data: JSON.stringify(line), id: '7' })).toEqual(line);
  });

  it('says how many lines the platform skipped for a reader too slow for them', () => {
    const said = logLineOf({ event: 'skipped', data: '{"lines":1234,"last_seq":99}', id: null });
    expect(said).toMatchObject({ stream: 'system', service: null });
    expect(said!.line).toBe(
      '… 1234 lines skipped: they came faster than this terminal read them (wharf logs --since reads them)',
    );
  });

  it('ignores other events and data that is not a log line', () => {
    expect(logLineOf({ event: 'message', data: JSON.stringify(line), id: null })).toBeNull();
    expect(logLineOf({ event: 'log', data: '{not json', id: null })).toBeNull();
    expect(
      logLineOf({ event: 'log', data: JSON.stringify({ ...line, stream: 'stdout' }), id: null }),
    ).toBeNull();
  });
});

describe('parseSince', () => {
  const now = Date.parse('2025-01-31T12:00:00.000Z');

  it('takes durations back from now', () => {
    expect(parseSince('90s', now)).toBe('2025-01-31T11:58:30.000Z');
    expect(parseSince('10m', now)).toBe('2025-01-31T11:50:00.000Z');
    expect(parseSince('2H', now)).toBe('2025-01-31T10:00:00.000Z');
    expect(parseSince('1d', now)).toBe('2025-01-30T12:00:00.000Z');
  });

  it('takes ISO times, in UTC or with an offset when they say so, else local', () => {
    expect(parseSince('2025-01-31T14:00:00Z')).toBe('2025-01-31T14:00:00.000Z');
    expect(parseSince('2025-01-31T14:00+02:00')).toBe('2025-01-31T12:00:00.000Z');
    expect(parseSince('2025-01-31 14:00:05.25Z')).toBe('2025-01-31T14:00:05.250Z');
    expect(parseSince('2025-01-31T14:00')).toBe(new Date(2025, 0, 31, 14, 0).toISOString());
    expect(parseSince('2025-01-31')).toBe(new Date(2025, 0, 31).toISOString());
  });

  it.each(['yesterday', '10', '10 minutes', '2025-13-45', '2025-01-31T25:00', '-5m', ''])(
    'refuses %j as a usage error',
    (value) => {
      expect(() => parseSince(value, now)).toThrow(InvalidArgumentError);
    },
  );
});

describe('parseLines', () => {
  it('takes whole numbers from 1 to the platform maximum', () => {
    expect(parseLines('1')).toBe(1);
    expect(parseLines(String(MAX_LINES))).toBe(MAX_LINES);
  });

  it.each(['0', '-1', '1.5', 'ten', String(MAX_LINES + 1), ''])('refuses %j', (value) => {
    expect(() => parseLines(value)).toThrow(InvalidArgumentError);
  });
});
