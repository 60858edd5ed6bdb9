// Edit and replay as pure functions: the editor's draft made from a captured request, the ReplayInput
// a draft becomes (only what changed is sent; the Engine takes the rest from the original), and the
// header comparison shown between the original response and the replay's.
import type { CapturedRequestDetail, HeaderList } from '../../../shared/api/tunnels.js';
import type { ReplayInput } from '../../../shared/bridge.js';
import { HTTP_TOKEN } from '../../../shared/http-token.js';
import { base64ToBytes, bytesToBase64, decodeUtf8, encodeUtf8, looksBinary } from './body-format.js';

export interface HeaderRow {
  name: string;
  value: string;
}

export interface ReplayDraft {
  method: string;
  path: string;
  headers: HeaderRow[];
  /** The body as text; only used when `bodyEditable`. */
  body: string;
  /** Binary bodies cannot be edited as text: they are sent as captured. */
  bodyEditable: boolean;
  /** What to know about the body: binary, or only partly captured. */
  bodyNote: string | null;
  /** Only the start of the body was captured: the Engine needs the body sent to replay it. */
  bodyTruncated: boolean;
}

export function draftFrom(original: CapturedRequestDetail): ReplayDraft {
  const bytes = base64ToBytes(original.request_body);
  const binary = bytes.length > 0 && looksBinary(bytes);
  const truncated = original.request_body_truncated;
  return {
    method: original.method,
    path: original.path,
    headers: original.request_header_list.map((h) => ({ name: h.name, value: h.value })),
    body: binary ? '' : decodeUtf8(bytes).text,
    bodyEditable: !binary,
    bodyNote: binary
      ? truncated
        ? 'The body is binary and only its start was captured: it cannot be replayed.'
        : 'The body is binary: it is replayed as captured.'
      : truncated
        ? `Only the first ${bytes.length.toLocaleString()} of ${original.request_size.toLocaleString()} bytes were captured: the body below is what is sent.`
        : null,
    bodyTruncated: truncated,
  };
}

export interface DraftProblems {
  method?: string;
  path?: string;
  headers?: string;
}

export function draftProblems(draft: ReplayDraft): DraftProblems {
  const problems: DraftProblems = {};
  if (!HTTP_TOKEN.test(draft.method.trim())) problems.method = 'a method such as GET or POST';
  if (!draft.path.startsWith('/')) problems.path = 'a path starting with /';
  else if (/\s/.test(draft.path)) problems.path = 'no spaces (encode them as %20)';
  const badHeader = draft.headers.find((h) => h.name.trim() !== '' && !HTTP_TOKEN.test(h.name.trim()));
  if (badHeader) problems.headers = `"${badHeader.name}" is not a valid header name`;
  else if (draft.headers.some((h) => /[\r\n]/.test(h.value))) problems.headers = 'header values are one line';
  return problems;
}

/**
 * The replay of `original` as edited in `draft`: fields equal to the original's are left out. When the
 * body changes, a Content-Length header is set to the new length (the old one would be wrong).
 */
export function replayInputFrom(original: CapturedRequestDetail, draft: ReplayDraft): ReplayInput {
  const input: ReplayInput = { id: original.id };
  const method = draft.method.trim().toUpperCase();
  if (method !== original.method.toUpperCase()) input.method = method;
  if (draft.path !== original.path) input.path = draft.path;

  let headers: HeaderList = draft.headers
    .filter((h) => h.name.trim() !== '')
    .map((h) => ({ name: h.name.trim(), value: h.value }));
  const originalText = decodeUtf8(base64ToBytes(original.request_body)).text;
  // A partly captured body is always sent: the Engine will not replay a body it does not have whole.
  const bodyChanged = draft.bodyEditable && (draft.body !== originalText || draft.bodyTruncated);
  if (bodyChanged) {
    const bytes = encodeUtf8(draft.body);
    input.body = bytes.length > 0 ? bytesToBase64(bytes) : null;
    const length = String(bytes.length);
    const at = headers.findIndex((h) => h.name.toLowerCase() === 'content-length');
    if (at !== -1) headers = headers.map((h, i) => (i === at ? { name: h.name, value: length } : h));
    else if (bytes.length > 0) headers = [...headers, { name: 'Content-Length', value: length }];
  }
  if (!sameHeaders(headers, original.request_header_list)) input.headers = headers;
  return input;
}

/** Whether the replay changes anything at all. */
export function isEdited(input: ReplayInput): boolean {
  return (
    input.method !== undefined ||
    input.path !== undefined ||
    input.headers !== undefined ||
    input.body !== undefined
  );
}

function sameHeaders(a: HeaderList, b: HeaderList): boolean {
  return a.length === b.length && a.every((h, i) => h.name === b[i]!.name && h.value === b[i]!.value);
}

export type HeaderChange = 'same' | 'changed' | 'added' | 'removed';

export interface HeaderDiffRow {
  name: string;
  before: string | null;
  after: string | null;
  change: HeaderChange;
}

/**
 * The headers of two messages side by side, by name (any case; repeated headers joined with ", "),
 * in the order of `before` then the names only `after` has. Headers that differ on every exchange
 * (Date) compare like any other: the view decides what to dim.
 */
export function diffHeaders(before: HeaderList, after: HeaderList): HeaderDiffRow[] {
  const group = (headers: HeaderList) => {
    const map = new Map<string, { name: string; values: string[] }>();
    for (const h of headers) {
      const key = h.name.toLowerCase();
      const entry = map.get(key);
      if (entry) entry.values.push(h.value);
      else map.set(key, { name: h.name, values: [h.value] });
    }
    return map;
  };
  const a = group(before);
  const b = group(after);
  const rows: HeaderDiffRow[] = [];
  for (const [key, entry] of a) {
    const other = b.get(key);
    const beforeValue = entry.values.join(', ');
    const afterValue = other ? other.values.join(', ') : null;
    rows.push({
      name: entry.name,
      before: beforeValue,
      after: afterValue,
      change: afterValue === null ? 'removed' : afterValue === beforeValue ? 'same' : 'changed',
    });
  }
  for (const [key, entry] of b) {
    if (a.has(key)) continue;
    rows.push({ name: entry.name, before: null, after: entry.values.join(', '), change: 'added' });
  }
  return rows;
}
