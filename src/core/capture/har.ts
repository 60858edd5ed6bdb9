// HAR 1.2 export of captured exchanges (http://www.softwareishard.com/blog/har-12-spec/), and the
// content rules that the export, the cURL builder and the Mirror's search index share: which bodies are
// text, and how to undo a Content-Encoding. Pure: no I/O, the same input always gives the same output.
import { STATUS_CODES } from 'node:http';
import { brotliDecompressSync, constants as zlib, gunzipSync, inflateSync, inflateRawSync } from 'node:zlib';
import type { CapturedRequestDetail, HeaderList } from '../../shared/api/tunnels.js';
import { parseForm, queryParams } from '../../shared/form.js';

/** The first value of a header, by case-insensitive name. */
export function headerValue(headers: HeaderList, name: string): string | undefined {
  const lower = name.toLowerCase();
  return headers.find((h) => h.name.toLowerCase() === lower)?.value;
}

/** The media type of a Content-Type value, lowercase, without parameters (`application/json`). */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

const TEXT_TYPES = new Set([
  'application/json',
  'application/xml',
  'application/x-www-form-urlencoded',
  'application/javascript',
  'application/ecmascript',
  'application/x-javascript',
  'application/graphql',
  'application/x-ndjson',
  'application/yaml',
  'application/x-yaml',
  'application/toml',
  'application/sql',
  'application/csp-report',
]);

/** Whether a Content-Type names text: text/*, JSON, XML (and their +json/+xml kinds), forms, JS. */
export function isTextualContentType(contentType: string | undefined): boolean {
  const type = mediaType(contentType);
  if (type === '') return false;
  return type.startsWith('text/') || TEXT_TYPES.has(type) || type.endsWith('+json') || type.endsWith('+xml');
}

/** The most bytes a decompressed body may grow to (a bomb stops here). */
const MAX_DECODED_BYTES = 8 * 1024 * 1024;

export interface DecodedBody {
  body: Buffer;
  /** The Content-Encoding undone (`gzip`…), or null when the body was taken as it is. */
  encoding: string | null;
}

/**
 * The body as the app meant it: gzip, deflate and br undone (as far as a truncated body allows). A body
 * in an unknown encoding, or one that does not decompress, is returned as it is.
 */
export function decodeContentEncoding(body: Buffer, headers: HeaderList): DecodedBody {
  const encoding = (headerValue(headers, 'content-encoding') ?? '').trim().toLowerCase();
  if (body.length === 0 || encoding === '' || encoding === 'identity') return { body, encoding: null };
  const options = { finishFlush: zlib.Z_SYNC_FLUSH, maxOutputLength: MAX_DECODED_BYTES };
  try {
    if (encoding === 'gzip' || encoding === 'x-gzip') return { body: gunzipSync(body, options), encoding };
    if (encoding === 'deflate') {
      try {
        return { body: inflateSync(body, options), encoding };
      } catch {
        // Some servers send raw deflate without the zlib wrapper.
        return { body: inflateRawSync(body, options), encoding };
      }
    }
    if (encoding === 'br') {
      return {
        body: brotliDecompressSync(body, {
          finishFlush: zlib.BROTLI_OPERATION_FLUSH,
          maxOutputLength: MAX_DECODED_BYTES,
        }),
        encoding,
      };
    }
  } catch {
    // not decodable (cut short, wrong header): keep the bytes
  }
  return { body, encoding: null };
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The body as UTF-8 text when it is text, else null. With `sniff`, a body without a Content-Type counts
 * as text when it is valid UTF-8 without control characters. A body cut short may end inside a
 * character: up to 3 trailing bytes are then left out.
 */
export function bodyText(
  body: Buffer,
  headers: HeaderList,
  options: { sniff?: boolean; truncated?: boolean } = {},
): string | null {
  const contentType = headerValue(headers, 'content-type');
  const declared = isTextualContentType(contentType);
  if (!declared && !(options.sniff && (contentType === undefined || contentType.trim() === ''))) return null;
  const text = strictText(body, options.truncated ?? false);
  if (text === null) return null;
  // eslint-disable-next-line no-control-regex
  if (!declared && /[\u0000-\u0008\u000b\u000e-\u001f\u007f]/.test(text)) return null;
  return text;
}

function strictText(body: Buffer, truncated: boolean): string | null {
  for (let cut = 0; cut <= (truncated ? 3 : 0) && cut <= body.length; cut++) {
    try {
      return strictUtf8.decode(body.subarray(0, body.length - cut));
    } catch {
      // try again without the last byte of a cut-off character
    }
  }
  return null;
}

// --- HAR 1.2 ---------------------------------------------------------------------------------------

export interface HarNameValue {
  name: string;
  value: string;
  comment?: string;
}

export interface HarCookie {
  name: string;
  value: string;
  path?: string;
  domain?: string;
  expires?: string;
  httpOnly?: boolean;
  secure?: boolean;
  sameSite?: string;
}

export interface HarPostData {
  mimeType: string;
  params?: HarNameValue[];
  text: string;
  comment?: string;
  /** Not in HAR 1.2 (postData is text only): `base64` when `text` holds a binary body so encoded. */
  _encoding?: 'base64';
}

export interface HarContent {
  size: number;
  compression?: number;
  mimeType: string;
  text?: string;
  encoding?: 'base64';
  comment?: string;
}

export interface HarRequest {
  method: string;
  url: string;
  httpVersion: string;
  cookies: HarCookie[];
  headers: HarNameValue[];
  queryString: HarNameValue[];
  postData?: HarPostData;
  headersSize: number;
  bodySize: number;
  comment?: string;
}

export interface HarResponse {
  status: number;
  statusText: string;
  httpVersion: string;
  cookies: HarCookie[];
  headers: HarNameValue[];
  content: HarContent;
  redirectURL: string;
  headersSize: number;
  bodySize: number;
  comment?: string;
}

export interface HarTimings {
  blocked: number;
  dns: number;
  connect: number;
  ssl: number;
  send: number;
  wait: number;
  receive: number;
}

export interface HarEntry {
  startedDateTime: string;
  time: number;
  request: HarRequest;
  response: HarResponse;
  cache: Record<string, never>;
  timings: HarTimings;
  comment?: string;
  /** Wharf's own fields (custom HAR fields start with an underscore). */
  _wharf: {
    id: string;
    tunnel_id: string;
    replay_of: string | null;
    error: string | null;
    remote_addr: string;
    request_body_truncated: boolean;
    response_body_truncated: boolean;
  };
}

export interface Har {
  log: {
    version: '1.2';
    creator: { name: string; version: string };
    entries: HarEntry[];
    comment?: string;
  };
}

export interface HarOptions {
  /** The creator's version (Wharf's); `dev` when not given. */
  version?: string;
}

/** A HAR 1.2 document of these exchanges, oldest first. */
export function toHar(requests: readonly CapturedRequestDetail[], options: HarOptions = {}): Har {
  const entries = [...requests]
    .sort((a, b) => (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0))
    .map(harEntry);
  return {
    log: { version: '1.2', creator: { name: 'Wharf', version: options.version ?? 'dev' }, entries },
  };
}

const fromBase64 = (value: string | null): Buffer => (value ? Buffer.from(value, 'base64') : Buffer.alloc(0));

export function harEntry(request: CapturedRequestDetail): HarEntry {
  const requestBody = fromBase64(request.request_body);
  const responseBody = fromBase64(request.response_body);
  const duration = Math.max(0, request.duration_ms);
  const notes: string[] = [];
  if (request.replay_of) notes.push(`replay of ${request.replay_of}`);
  if (request.error) notes.push(`error: ${request.error}`);
  const status = request.status_code;
  return {
    startedDateTime: request.timestamp,
    time: duration,
    request: {
      method: request.method,
      url: request.url,
      httpVersion: request.http_version,
      cookies: requestCookies(request.request_header_list),
      headers: request.request_header_list.map(({ name, value }) => ({ name, value })),
      queryString: queryParams(request.path),
      ...(requestBody.length > 0 || request.request_size > 0
        ? {
            postData: postData(
              requestBody,
              request.request_header_list,
              request.request_body_truncated,
              request.request_size,
            ),
          }
        : {}),
      headersSize: -1,
      bodySize: request.request_size,
    },
    response: {
      status,
      statusText: STATUS_CODES[status] ?? '',
      httpVersion: request.http_version,
      cookies: responseCookies(request.response_header_list),
      headers: request.response_header_list.map(({ name, value }) => ({ name, value })),
      content: content(
        responseBody,
        request.response_header_list,
        request.response_body_truncated,
        request.response_size,
      ),
      redirectURL: headerValue(request.response_header_list, 'location') ?? '',
      headersSize: -1,
      bodySize: request.response_size,
      // The status is then the edge's or the tunnel client's own answer, not the app's.
      ...(request.error !== null ? { comment: request.error } : {}),
    },
    cache: {},
    // Wharf times the whole exchange at the tunnel client: all of it is `wait`.
    timings: { blocked: -1, dns: -1, connect: -1, ssl: -1, send: 0, wait: duration, receive: 0 },
    ...(notes.length > 0 ? { comment: notes.join('; ') } : {}),
    _wharf: {
      id: request.id,
      tunnel_id: request.tunnel_id,
      replay_of: request.replay_of,
      error: request.error,
      remote_addr: request.remote_addr,
      request_body_truncated: request.request_body_truncated,
      response_body_truncated: request.response_body_truncated,
    },
  };
}

function truncationNote(kept: number, size: number): string {
  return `only the first ${kept} of ${size} bytes were captured`;
}

function postData(body: Buffer, headers: HeaderList, truncated: boolean, size: number): HarPostData {
  const mimeType = headerValue(headers, 'content-type') ?? '';
  const decoded = decodeContentEncoding(body, headers);
  const text = bodyText(decoded.body, headers, { sniff: true, truncated });
  const comment = truncated ? truncationNote(body.length, size) : undefined;
  if (text === null) {
    return {
      mimeType,
      text: body.toString('base64'),
      _encoding: 'base64',
      comment: [comment, 'binary body, base64-encoded in text'].filter(Boolean).join('; '),
    };
  }
  return {
    mimeType,
    text,
    ...(mediaType(mimeType) === 'application/x-www-form-urlencoded' ? { params: parseForm(text) } : {}),
    ...(comment ? { comment } : {}),
  };
}

function content(body: Buffer, headers: HeaderList, truncated: boolean, size: number): HarContent {
  const mimeType = headerValue(headers, 'content-type') ?? '';
  const decoded = decodeContentEncoding(body, headers);
  const text = bodyText(decoded.body, headers, { sniff: true, truncated });
  const notes: string[] = [];
  if (truncated) notes.push(truncationNote(body.length, size));
  // The decoded size is known only when the whole body was captured.
  const fullSize = decoded.encoding !== null && !truncated ? decoded.body.length : size;
  const compression = decoded.encoding !== null && !truncated ? fullSize - size : undefined;
  const base = {
    size: fullSize,
    ...(compression === undefined ? {} : { compression }),
    mimeType,
  };
  if (decoded.body.length === 0) return { ...base, ...(notes.length ? { comment: notes.join('; ') } : {}) };
  if (text === null) {
    return {
      ...base,
      text: decoded.body.toString('base64'),
      encoding: 'base64',
      ...(notes.length ? { comment: notes.join('; ') } : {}),
    };
  }
  return { ...base, text, ...(notes.length ? { comment: notes.join('; ') } : {}) };
}

function requestCookies(headers: HeaderList): HarCookie[] {
  const cookies: HarCookie[] = [];
  for (const { name, value } of headers) {
    if (name.toLowerCase() !== 'cookie') continue;
    for (const part of value.split(';')) {
      const eq = part.indexOf('=');
      if (eq === -1) continue;
      cookies.push({ name: part.slice(0, eq).trim(), value: part.slice(eq + 1).trim() });
    }
  }
  return cookies;
}

function responseCookies(headers: HeaderList): HarCookie[] {
  const cookies: HarCookie[] = [];
  for (const { name, value } of headers) {
    if (name.toLowerCase() !== 'set-cookie') continue;
    const [pair = '', ...attributes] = value.split(';');
    const eq = pair.indexOf('=');
    if (eq === -1) continue;
    const cookie: HarCookie = { name: pair.slice(0, eq).trim(), value: pair.slice(eq + 1).trim() };
    for (const attribute of attributes) {
      const [key = '', ...rest] = attribute.split('=');
      const attrValue = rest.join('=').trim();
      switch (key.trim().toLowerCase()) {
        case 'path':
          cookie.path = attrValue;
          break;
        case 'domain':
          cookie.domain = attrValue;
          break;
        case 'expires': {
          const time = Date.parse(attrValue);
          if (!Number.isNaN(time)) cookie.expires = new Date(time).toISOString();
          break;
        }
        case 'httponly':
          cookie.httpOnly = true;
          break;
        case 'secure':
          cookie.secure = true;
          break;
        case 'samesite':
          cookie.sameSite = attrValue;
          break;
      }
    }
    cookies.push(cookie);
  }
  return cookies;
}
