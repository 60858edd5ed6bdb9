// The Traffic screen's filters as pure functions: the filter bar's fields, the TrafficQuery they become
// (sent to `traffic.list`, where the Mirror does the work), and the matcher that applies the same query
// to live exchanges as they arrive. The matcher knows everything a CapturedRequest carries; full-text
// search (`q`) also looks into bodies, which live events do not carry, so a live exchange that passes
// every other filter while `q` is set is answered `ask-mirror`: the store then asks the Mirror.
import type { CapturedRequest, HeaderObject } from '../../../shared/api/tunnels.js';
import type { TrafficQuery } from '../../../shared/bridge.js';
import { subdomainOf } from './traffic-tunnels.js';

export const STATUS_CLASSES = ['2xx', '3xx', '4xx', '5xx', 'error'] as const;
export type StatusClass = (typeof STATUS_CLASSES)[number];

export const COMMON_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

/** The filter bar's fields, as the user typed them. */
export interface TrafficFilter {
  /** The subdomain of one tunnel; empty means every tunnel. */
  tunnel: string;
  /** Full-text search over method, path, headers and text bodies. */
  q: string;
  /** Upper-case methods; none means any. */
  methods: readonly string[];
  /** Status classes picked with the toggles; none (and no codes) means any. */
  statusClasses: readonly StatusClass[];
  /** Exact status codes, comma or space separated (`404, 503`). */
  statusCodes: string;
  /** Substring of the path. */
  path: string;
  /** `name` or `name: value`. */
  header: string;
  /** Milliseconds, as typed. */
  minDuration: string;
  maxDuration: string;
}

export const EMPTY_FILTER: TrafficFilter = {
  tunnel: '',
  q: '',
  methods: [],
  statusClasses: [],
  statusCodes: '',
  path: '',
  header: '',
  minDuration: '',
  maxDuration: '',
};

export type FilterField = 'statusCodes' | 'header' | 'minDuration' | 'maxDuration';

/** What is wrong with the typed fields; an invalid field is left out of the query until fixed. */
export function filterProblems(filter: TrafficFilter): Partial<Record<FilterField, string>> {
  const problems: Partial<Record<FilterField, string>> = {};
  const badCode = splitList(filter.statusCodes).find((code) => !/^[1-5]\d\d$/.test(code));
  if (badCode !== undefined) problems.statusCodes = `"${badCode}" is not a status code (100–599)`;
  if (filter.header.trim() && !parseHeaderFilter(filter.header).name) problems.header = 'a header name first';
  const min = parseMs(filter.minDuration);
  const max = parseMs(filter.maxDuration);
  if (min === 'invalid') problems.minDuration = 'a number of milliseconds';
  if (max === 'invalid') problems.maxDuration = 'a number of milliseconds';
  if (typeof min === 'number' && typeof max === 'number' && min > max) {
    problems.maxDuration = 'at least the minimum';
  }
  return problems;
}

/** The query for `traffic.list` (without paging): blank and invalid fields are left out. */
export function toTrafficQuery(filter: TrafficFilter): TrafficQuery {
  const problems = filterProblems(filter);
  const query: TrafficQuery = {};
  if (filter.tunnel) query.tunnelId = filter.tunnel;
  const q = filter.q.trim();
  if (q) query.q = q;
  if (filter.methods.length > 0) query.methods = [...new Set(filter.methods.map((m) => m.toUpperCase()))];
  const statuses: string[] = [...filter.statusClasses];
  if (!problems.statusCodes) statuses.push(...splitList(filter.statusCodes));
  if (statuses.length > 0) query.statuses = [...new Set(statuses)];
  const path = filter.path.trim();
  if (path) query.path = path;
  const header = filter.header.trim();
  if (header && !problems.header) query.header = header;
  const min = parseMs(filter.minDuration);
  const max = parseMs(filter.maxDuration);
  const rangeOk = !problems.maxDuration && !problems.minDuration;
  if (typeof min === 'number' && rangeOk) query.minDurationMs = min;
  if (typeof max === 'number' && rangeOk) query.maxDurationMs = max;
  return query;
}

/** How many filters narrow the list (each field counts once), for the "Filters (3)" button. */
export function activeFilterCount(query: TrafficQuery): number {
  return (
    (query.q ? 1 : 0) +
    (query.methods?.length ? 1 : 0) +
    (query.statuses?.length ? 1 : 0) +
    (query.path ? 1 : 0) +
    (query.header ? 1 : 0) +
    (query.minDurationMs !== undefined || query.maxDurationMs !== undefined ? 1 : 0) +
    (query.tunnelId ? 1 : 0)
  );
}

/** Two queries ask for the same list (paging aside). */
export function sameQuery(a: TrafficQuery, b: TrafficQuery): boolean {
  return queryKey(a) === queryKey(b);
}

export function queryKey(query: TrafficQuery): string {
  const { before: _before, limit: _limit, ...rest } = query;
  return JSON.stringify(rest, Object.keys(rest).sort());
}

/** The live verdict for one exchange: in the list, out of it, or only the Mirror can tell (bodies). */
export type LiveMatch = 'match' | 'no-match' | 'ask-mirror';

/** Applies `query` to a live exchange with the Mirror's semantics (see TrafficQuery). */
export function matchTraffic(request: CapturedRequest, query: TrafficQuery): LiveMatch {
  // The Mirror's meaning: a platform tunnel id, or the subdomain a tunnel keeps across reconnects.
  if (query.tunnelId && request.tunnel_id !== query.tunnelId && subdomainOf(request.url) !== query.tunnelId)
    return 'no-match';
  if (query.methods?.length) {
    const method = request.method.toUpperCase();
    if (!query.methods.some((m) => m.toUpperCase() === method)) return 'no-match';
  }
  if (query.statuses?.length && !query.statuses.some((s) => statusMatches(request, s))) return 'no-match';
  if (query.path && !includesFolded(request.path, query.path)) return 'no-match';
  if (query.header && !headerMatches(request, query.header)) return 'no-match';
  if (query.minDurationMs !== undefined || query.maxDurationMs !== undefined) {
    const duration = request.duration_ms;
    if (query.minDurationMs !== undefined && duration < query.minDurationMs) return 'no-match';
    if (query.maxDurationMs !== undefined && duration > query.maxDurationMs) return 'no-match';
  }
  const q = query.q?.trim();
  if (q) {
    // Words are looked up in the Mirror's full-text index (bodies included); a search of punctuation
    // only (`/`, `?=`) holds no word, and the Mirror matches it in the path, as typed.
    if (hasWord(q)) return 'ask-mirror';
    if (!request.path.includes(q)) return 'no-match';
  }
  return 'match';
}

function hasWord(text: string): boolean {
  return /[\p{L}\p{N}]/u.test(text);
}

/**
 * `2xx`-style classes, exact codes, or `error`: no response from the app, or a failure recorded with
 * one (the Mirror's meaning).
 */
export function statusMatches(
  request: Pick<CapturedRequest, 'status_code' | 'error'>,
  status: string,
): boolean {
  const wanted = status.trim().toLowerCase();
  const code = request.status_code;
  // The status of an exchange without a response from the app is the edge's (502…), and it has its error.
  if (wanted === 'error') return request.error !== null;
  const cls = /^([1-5])xx$/.exec(wanted);
  if (cls) return Math.floor(code / 100) === Number(cls[1]);
  return /^\d{3}$/.test(wanted) && code === Number(wanted);
}

/**
 * `name` matches a request or response header of that name; `name: value` one whose value contains
 * `value`. Names compare case-insensitively (HTTP), values too.
 */
export function headerMatches(
  request: Pick<CapturedRequest, 'request_headers' | 'response_headers'>,
  filter: string,
): boolean {
  const { name, value } = parseHeaderFilter(filter);
  if (!name) return true;
  // The header objects have lower-case names and repeated values joined: one lookup per side.
  const test = (headers: HeaderObject) => {
    const found = Object.hasOwn(headers, name) ? headers[name] : undefined;
    return found !== undefined && (value === null || includesFolded(found, value));
  };
  return test(request.request_headers) || test(request.response_headers);
}

/** `Content-Type: json` → `{ name: 'content-type', value: 'json' }`; `x-debug` → value null. */
export function parseHeaderFilter(filter: string): { name: string; value: string | null } {
  const colon = filter.indexOf(':');
  if (colon === -1) return { name: filter.trim().toLowerCase(), value: null };
  const value = filter.slice(colon + 1).trim();
  return { name: filter.slice(0, colon).trim().toLowerCase(), value: value === '' ? null : value };
}

function includesFolded(text: string, needle: string): boolean {
  return text.toLowerCase().includes(needle.toLowerCase());
}

function splitList(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((part) => part.trim())
    .filter(Boolean);
}

function parseMs(text: string): number | 'invalid' | null {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  const value = Number(trimmed);
  return Number.isFinite(value) && value >= 0 ? value : 'invalid';
}
