// Bodies of captured exchanges as the detail pane shows them: base64 to bytes, what kind of body it is
// (by Content-Type, then by its bytes), and the views: JSON and XML re-indented without reparsing
// their values (a 20-digit number stays as sent), urlencoded forms and query strings as name/value
// rows, a hex dump for binary data, and tokens to colour pretty JSON. Pure, and tested under Node.
import type { HeaderList } from '../../../shared/api/tunnels.js';

export function base64ToBytes(base64: string | null): Uint8Array {
  if (!base64) return new Uint8Array(0);
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  const chunk = 0x8000;
  for (let i = 0; i < bytes.length; i += chunk) {
    binary += String.fromCharCode(...bytes.subarray(i, i + chunk));
  }
  return btoa(binary);
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const lenientUtf8 = new TextDecoder('utf-8');
const encoder = new TextEncoder();

/** The bytes as UTF-8 text; `valid` is false when they are not UTF-8 (the text then has U+FFFD). */
export function decodeUtf8(bytes: Uint8Array): { text: string; valid: boolean } {
  try {
    return { text: strictUtf8.decode(bytes), valid: true };
  } catch {
    return { text: lenientUtf8.decode(bytes), valid: false };
  }
}

export function encodeUtf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** The value of the first header named `name` (any case), or null. */
export function headerValue(headers: HeaderList, name: string): string | null {
  const lower = name.toLowerCase();
  return headers.find((h) => h.name.toLowerCase() === lower)?.value ?? null;
}

export interface ContentType {
  /** Lower-case type and subtype, e.g. `application/json`; '' when absent. */
  mime: string;
  charset: string | null;
}

export function contentTypeOf(headers: HeaderList): ContentType {
  const raw = headerValue(headers, 'content-type') ?? '';
  const [type = '', ...params] = raw.split(';');
  let charset: string | null = null;
  for (const param of params) {
    const [key, value] = param.split('=');
    if (key?.trim().toLowerCase() === 'charset' && value) charset = value.trim().replace(/^"|"$/g, '');
  }
  return { mime: type.trim().toLowerCase(), charset };
}

export type BodyKind = 'empty' | 'json' | 'xml' | 'form' | 'image' | 'text' | 'binary';
export type BodyViewName = 'pretty' | 'form' | 'image' | 'raw' | 'hex';

/** What the body is: by its Content-Type first, else by what its bytes look like. */
export function bodyKind(mime: string, bytes: Uint8Array): BodyKind {
  if (bytes.length === 0) return 'empty';
  if (mime.startsWith('image/')) return 'image';
  if (mime === 'application/json' || mime.endsWith('+json') || mime === 'text/json') return 'json';
  if (mime === 'application/xml' || mime === 'text/xml' || mime.endsWith('+xml')) return 'xml';
  if (mime === 'application/x-www-form-urlencoded') return 'form';
  if (looksBinary(bytes)) return 'binary';
  // Untyped or loosely typed text: sniff JSON and XML.
  const head = decodeUtf8(bytes.subarray(0, 64)).text.trimStart();
  if (!mime || mime === 'text/plain' || mime === 'application/octet-stream') {
    if ((head.startsWith('{') || head.startsWith('[')) && isJson(decodeUtf8(bytes).text)) return 'json';
    if (head.startsWith('<?xml')) return 'xml';
  }
  return 'text';
}

/** The views offered for a kind, the first being the default. */
export function bodyViews(kind: BodyKind): BodyViewName[] {
  switch (kind) {
    case 'empty':
      return [];
    case 'json':
    case 'xml':
      return ['pretty', 'raw', 'hex'];
    case 'form':
      return ['form', 'raw', 'hex'];
    case 'image':
      return ['image', 'hex'];
    case 'text':
      return ['raw', 'hex'];
    case 'binary':
      return ['hex', 'raw'];
  }
}

/**
 * Binary rather than text: a NUL byte, bytes that are not UTF-8, or many control characters in the
 * first 8 KiB. A multi-byte character cut at the end does not count.
 */
export function looksBinary(bytes: Uint8Array): boolean {
  const sample = bytes.subarray(0, 8192);
  let control = 0;
  for (const byte of sample) {
    if (byte === 0) return true;
    if (byte < 9 || (byte > 13 && byte < 32) || byte === 127) control++;
  }
  if (control > sample.length * 0.1) return true;
  if (decodeUtf8(sample).valid) return false;
  // The sample (or a body truncated by the capture) may end inside a character: drop up to 3
  // trailing bytes and try again.
  for (let cut = 1; cut <= 3 && cut < sample.length; cut++) {
    if (decodeUtf8(sample.subarray(0, sample.length - cut)).valid) return false;
  }
  return true;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * JSON re-indented by two spaces, keys, order and number literals exactly as sent; null when the text
 * is not JSON.
 */
export function prettyJson(text: string): string | null {
  if (!isJson(text)) return null;
  const out: string[] = [];
  let depth = 0;
  let i = 0;
  const newline = () => '\n' + '  '.repeat(depth);
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out.push(text.slice(i, j + 1));
      i = j + 1;
      continue;
    }
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      let j = i + 1;
      while (j < text.length && /\s/.test(text[j]!)) j++;
      if (text[j] === close) {
        out.push(c + close);
        i = j + 1;
        continue;
      }
      depth++;
      out.push(c + newline());
    } else if (c === '}' || c === ']') {
      depth--;
      out.push(newline() + c);
    } else if (c === ',') {
      out.push(',' + newline());
    } else if (c === ':') {
      out.push(': ');
    } else if (!/\s/.test(c)) {
      let j = i + 1;
      while (j < text.length && !/[\s,:{}[\]"]/.test(text[j]!)) j++;
      out.push(text.slice(i, j));
      i = j;
      continue;
    }
    i++;
  }
  return out.join('');
}

export type JsonTokenKind = 'key' | 'string' | 'number' | 'literal' | 'plain';

/** Pretty JSON cut into tokens to colour: keys, strings, numbers, true/false/null, the rest. */
export function jsonTokens(pretty: string): Array<{ text: string; kind: JsonTokenKind }> {
  const tokens: Array<{ text: string; kind: JsonTokenKind }> = [];
  const pattern = /("(?:[^"\\]|\\.)*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|\b(true|false|null)\b/g;
  let at = 0;
  for (let match = pattern.exec(pretty); match; match = pattern.exec(pretty)) {
    if (match.index > at) tokens.push({ text: pretty.slice(at, match.index), kind: 'plain' });
    if (match[1] !== undefined) {
      tokens.push({ text: match[1], kind: match[2] !== undefined ? 'key' : 'string' });
      if (match[2] !== undefined) tokens.push({ text: match[2], kind: 'plain' });
    } else if (match[3] !== undefined) tokens.push({ text: match[3], kind: 'number' });
    else tokens.push({ text: match[4]!, kind: 'literal' });
    at = pattern.lastIndex;
  }
  if (at < pretty.length) tokens.push({ text: pretty.slice(at), kind: 'plain' });
  return tokens;
}

type XmlToken =
  | { type: 'open'; text: string; name: string }
  | { type: 'close'; text: string; name: string }
  | { type: 'self'; text: string }
  | { type: 'text'; text: string };

/**
 * XML re-indented by two spaces, one tag per line, an element holding only text kept on one line;
 * comments, CDATA, processing instructions and the doctype kept as they are. Null when the text is
 * not markup (it must start with `<`) or a tag is never closed.
 */
export function prettyXml(text: string): string | null {
  const source = text.trim();
  if (!source.startsWith('<')) return null;
  const tokens: XmlToken[] = [];
  let i = 0;
  while (i < source.length) {
    if (source[i] !== '<') {
      const next = source.indexOf('<', i);
      const end = next === -1 ? source.length : next;
      const chunk = source.slice(i, end).trim();
      if (chunk) tokens.push({ type: 'text', text: chunk });
      i = end;
      continue;
    }
    const special = (open: string, close: string): boolean => {
      if (!source.startsWith(open, i)) return false;
      const end = source.indexOf(close, i + open.length);
      if (end === -1) throw new Error('unclosed');
      tokens.push({ type: 'self', text: source.slice(i, end + close.length) });
      i = end + close.length;
      return true;
    };
    try {
      if (special('<!--', '-->') || special('<![CDATA[', ']]>') || special('<?', '?>')) continue;
    } catch {
      return null;
    }
    const end = tagEnd(source, i);
    if (end === -1) return null;
    const tag = source.slice(i, end + 1);
    i = end + 1;
    if (tag.startsWith('<!')) tokens.push({ type: 'self', text: tag });
    else if (tag.startsWith('</')) tokens.push({ type: 'close', text: tag, name: tagName(tag.slice(2)) });
    else if (tag.endsWith('/>')) tokens.push({ type: 'self', text: tag });
    else tokens.push({ type: 'open', text: tag, name: tagName(tag.slice(1)) });
  }

  const lines: string[] = [];
  let depth = 0;
  for (let t = 0; t < tokens.length; t++) {
    const token = tokens[t]!;
    const pad = '  '.repeat(Math.max(0, depth));
    if (token.type === 'open') {
      const text = tokens[t + 1];
      const close = tokens[t + 2];
      if (text?.type === 'text' && close?.type === 'close' && close.name === token.name) {
        lines.push(pad + token.text + text.text + close.text);
        t += 2;
        continue;
      }
      if (text?.type === 'close' && text.name === token.name) {
        lines.push(pad + token.text + text.text);
        t += 1;
        continue;
      }
      lines.push(pad + token.text);
      depth++;
    } else if (token.type === 'close') {
      depth--;
      lines.push('  '.repeat(Math.max(0, depth)) + token.text);
    } else {
      lines.push(pad + token.text);
    }
  }
  return lines.join('\n');
}

/** The index of the `>` ending the tag that starts at `start`, skipping quoted attribute values. */
function tagEnd(source: string, start: number): number {
  let quote: string | null = null;
  for (let i = start + 1; i < source.length; i++) {
    const c = source[i];
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '>') return i;
  }
  return -1;
}

function tagName(rest: string): string {
  return /^[^\s/>]*/.exec(rest)?.[0] ?? '';
}

/** The path without its query string. */
export function pathOnly(path: string): string {
  const question = path.indexOf('?');
  return question === -1 ? path : path.slice(0, question);
}

export const HEX_ROW_BYTES = 16;

/**
 * The classic dump: offset, 16 bytes in two groups of 8, and the printable ASCII, one row per line.
 * `limit` bytes at most (the rest is left for "show all").
 */
export function hexDump(bytes: Uint8Array, limit = bytes.length): string {
  const end = Math.min(bytes.length, limit);
  const lines: string[] = [];
  for (let row = 0; row < end; row += HEX_ROW_BYTES) {
    let hex = '';
    let ascii = '';
    for (let i = 0; i < HEX_ROW_BYTES; i++) {
      const at = row + i;
      if (i === 8) hex += ' ';
      if (at < end) {
        const byte = bytes[at]!;
        hex += byte.toString(16).padStart(2, '0') + ' ';
        ascii += byte >= 32 && byte < 127 ? String.fromCharCode(byte) : '.';
      } else hex += '   ';
    }
    lines.push(`${row.toString(16).padStart(8, '0')}  ${hex} |${ascii}|`);
  }
  return lines.join('\n');
}

/** A data: URL for an image body; only image types, so nothing but an image can be made of it. */
export function imageDataUrl(mime: string, base64: string | null): string | null {
  if (!base64 || !/^image\/[a-z0-9.+-]+$/.test(mime)) return null;
  return `data:${mime};base64,${base64}`;
}
