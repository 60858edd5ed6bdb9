// How the project commands print: aligned tables and one readable line per log line.
import type { LogLine } from '../shared/api/index.js';

/** Rows as lines with every column but the last padded to its widest cell. */
export function table(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/** `YYYY-MM-DD HH:MM:SS` in the local time zone (the API's times are UTC). */
export function localTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return (
    `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ` +
    `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`
  );
}

/** `2025-01-31 14:02:07 runtime web | listening on 3000` (`wharf logs`). */
export function logLine(line: LogLine): string {
  const service = line.service === null ? '' : ` ${line.service}`;
  return `${localTime(line.ts)} ${line.stream.padEnd(7)}${service} | ${line.line}`;
}

/** `web | listening on 3000`, or the bare line for the project as a whole (`wharf deploy --follow`). */
export function deployLine(line: LogLine): string {
  return line.service === null ? line.line : `${line.service} | ${line.line}`;
}
