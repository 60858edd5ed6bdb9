// The `.env` format of the bulk editor and the export: `KEY=value` lines, `export KEY=value`, `#`
// comments (whole lines, and after an unquoted value when preceded by a space), values in double quotes
// (with \n \r \t \" \\ escapes, may span lines) or single quotes (literal), no variable expansion.
import { ENV_NAME_PATTERN } from './limits';

export interface DotenvProblem {
  line: number;
  message: string;
}

export interface ParsedDotenv {
  entries: Array<[string, string]>;
  problems: DotenvProblem[];
}

const ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\' };

export function parseDotenv(text: string): ParsedDotenv {
  const source = text.replace(/\r\n?/g, '\n');
  const entries = new Map<string, string>();
  const problems: DotenvProblem[] = [];
  let pos = 0;
  let line = 1;

  const restOfLine = () => {
    const end = source.indexOf('\n', pos);
    const rest = source.slice(pos, end === -1 ? source.length : end);
    pos = end === -1 ? source.length : end + 1;
    line++;
    return rest;
  };

  while (pos < source.length) {
    const startLine = line;
    // Leading whitespace, then a blank line or a comment.
    while (source[pos] === ' ' || source[pos] === '\t') pos++;
    if (source[pos] === '\n' || source[pos] === '#' || pos >= source.length) {
      restOfLine();
      continue;
    }
    const eq = source.indexOf('=', pos);
    const eol = source.indexOf('\n', pos);
    if (eq === -1 || (eol !== -1 && eol < eq)) {
      const content = restOfLine().trim();
      problems.push({ line: startLine, message: `expected KEY=value, found "${truncate(content)}"` });
      continue;
    }
    const name = source
      .slice(pos, eq)
      .trim()
      .replace(/^export\s+/, '');
    pos = eq + 1;
    while (source[pos] === ' ' || source[pos] === '\t') pos++;

    let value: string;
    const quote = source[pos];
    if (quote === '"' || quote === "'") {
      pos++;
      let out = '';
      let closed = false;
      while (pos < source.length) {
        const char = source[pos]!;
        if (char === quote) {
          closed = true;
          pos++;
          break;
        }
        if (char === '\\' && quote === '"' && pos + 1 < source.length) {
          const next = source[pos + 1]!;
          out += ESCAPES[next] ?? `\\${next}`;
          pos += 2;
          continue;
        }
        if (char === '\n') line++;
        out += char;
        pos++;
      }
      const trailing = restOfLine().trim();
      if (!closed) {
        problems.push({
          line: startLine,
          message: `the ${quote} quote of ${name || 'this value'} is never closed`,
        });
        continue;
      }
      if (trailing !== '' && !trailing.startsWith('#')) {
        problems.push({
          line: startLine,
          message: `unexpected "${truncate(trailing)}" after the closing quote of ${name}`,
        });
        continue;
      }
      value = out;
    } else {
      value = restOfLine()
        .replace(/(^|\s)#.*$/, '')
        .trim();
    }

    if (!ENV_NAME_PATTERN.test(name)) {
      problems.push({
        line: startLine,
        message: name
          ? `"${truncate(name)}" is not a valid name: use letters, digits and _, not starting with a digit`
          : 'the name before "=" is missing',
      });
      continue;
    }
    entries.delete(name); // the last assignment wins, in the position it was written
    entries.set(name, value);
  }
  return { entries: [...entries], problems };
}

const SAFE_VALUE = /^[A-Za-z0-9_./:@%+,=~-]*$/;

export function formatDotenv(entries: ReadonlyArray<readonly [string, string]>): string {
  return entries
    .map(([name, value]) => {
      if (SAFE_VALUE.test(value)) return `${name}=${value}`;
      const escaped = value
        .replace(/\\/g, '\\\\')
        .replace(/"/g, '\\"')
        .replace(/\n/g, '\\n')
        .replace(/\r/g, '\\r')
        .replace(/\t/g, '\\t');
      return `${name}="${escaped}"`;
    })
    .map((line) => `${line}\n`)
    .join('');
}

function truncate(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
