// What the traffic history's search index holds of an exchange besides its method: its path (also
// decoded), its header lines and the text of its bodies (by Content-Type, after undoing gzip/deflate/br;
// the first 128 KiB of each).
import type { CapturedRequest, HeaderList } from '../../shared/api/tunnels.js';
import { decodeFormComponent } from '../../shared/form.js';
import { bodyText, decodeContentEncoding, headerValue, mediaType } from '../capture/har.js';

/** The most text of one body that goes into the search index. */
const MAX_INDEXED_CHARS = 128 * 1024;

/** The indexed columns of one exchange (`body`: both bodies' text, empty when neither is text). */
export interface IndexedText {
  path: string;
  headers: string;
  body: string;
}

/** The indexed text of an exchange, from the bodies being stored (empty when they are not kept). */
export function indexedText(
  request: Pick<CapturedRequest, 'path' | 'request_header_list' | 'response_header_list'>,
  requestBody: Buffer,
  responseBody: Buffer,
  truncated: { request: boolean; response: boolean },
): IndexedText {
  const headers = [...request.request_header_list, ...request.response_header_list]
    .map(({ name, value }) => `${name}: ${value}`)
    .join('\n');
  const body = [
    bodyIndexText(requestBody, request.request_header_list, truncated.request),
    bodyIndexText(responseBody, request.response_header_list, truncated.response),
  ]
    .filter((t) => t !== '')
    .join('\n');
  const decodedPath = decodeFormComponent(request.path);
  const path = decodedPath === request.path ? request.path : `${request.path}\n${decodedPath}`;
  return { path, headers, body };
}

/** The text of a body for the index: only bodies whose Content-Type is text, decoded. */
function bodyIndexText(body: Buffer, headers: HeaderList, truncated: boolean): string {
  if (body.length === 0) return '';
  const decoded = decodeContentEncoding(body, headers);
  if (decoded.body.length === 0) return '';
  let text = bodyText(decoded.body, headers, { truncated: truncated || decoded.encoding !== null });
  if (text === null) return '';
  if (text.length > MAX_INDEXED_CHARS) text = text.slice(0, MAX_INDEXED_CHARS);
  if (mediaType(headerValue(headers, 'content-type')) === 'application/x-www-form-urlencoded') {
    const form = decodeFormComponent(text);
    if (form !== text) text = `${text}\n${form}`;
  }
  return text;
}
