// A captured request as a cURL command line for a POSIX shell (sh, bash, zsh): every argument
// single-quoted, the body as --data-binary. A binary body cannot travel in an argument: the command then
// reads it from a file, and a comment line above it says so. Pure.
import type { CapturedRequestDetail, HeaderList } from '../../shared/api/tunnels.js';
import { bodyText, headerValue } from './har.js';

/** One shell word: single quotes, with each `'` written as `'\''`. */
export function shellQuote(value: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Headers that curl writes itself, or that the edge sets: copying them would be wrong or doubled. */
const LEFT_OUT = new Set([
  'host',
  'content-length',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
]);

export interface CurlOptions {
  /** The URL to call instead of the captured one (e.g. the local app's). */
  url?: string;
  /** The file a binary body is read from (default `body.bin`). */
  bodyFile?: string;
}

export function toCurl(request: CapturedRequestDetail, options: CurlOptions = {}): string {
  const url = options.url ?? request.url;
  const body = request.request_body ? Buffer.from(request.request_body, 'base64') : Buffer.alloc(0);
  const headers: HeaderList = request.request_header_list.filter(
    ({ name }) => !LEFT_OUT.has(name.toLowerCase()) && !name.startsWith(':'),
  );
  const acceptEncoding = headerValue(headers, 'accept-encoding');
  const notes: string[] = [];
  /** `curl URL`, then one piece per option with its value: each goes on its own line. */
  const args: string[] = [`curl ${shellQuote(url)}`];

  const hasBody = body.length > 0;
  const method = request.method.toUpperCase();
  if (!(method === 'GET' && !hasBody) && !(method === 'POST' && hasBody))
    args.push(`-X ${shellQuote(method)}`);
  if (/(^|\/)\.\.?(\/|$|\?)/.test(request.path)) args.push('--path-as-is');
  for (const { name, value } of headers) {
    // --compressed asks for the encodings curl can decode, and decodes the answer for the terminal.
    if (name.toLowerCase() === 'accept-encoding') continue;
    args.push(`-H ${shellQuote(`${name}: ${value}`)}`);
  }
  if (acceptEncoding !== undefined) args.push('--compressed');

  if (hasBody) {
    // Sent as captured (still encoded if it had a Content-Encoding): sniffed only when it is undeclared.
    const text = headerValue(headers, 'content-encoding')
      ? null
      : bodyText(body, headers, { sniff: true, truncated: request.request_body_truncated });
    if (text !== null && !text.includes('\0')) {
      // --data-binary would read a file for a body starting with @: --data-raw never does.
      args.push(`${text.startsWith('@') ? '--data-raw' : '--data-binary'} ${shellQuote(text)}`);
    } else {
      const file = options.bodyFile ?? 'body.bin';
      notes.push(
        `# The request body is binary (${body.length} bytes): save it as ${file} first`,
        `# (the body's Download in Traffic, or GET /api/requests/http/${request.id}/request-body on the inspector).`,
      );
      args.push(`--data-binary ${shellQuote(`@${file}`)}`);
    }
    if (request.request_body_truncated) {
      notes.push(
        `# Only the first ${body.length} of ${request.request_size} bytes of the body were captured: this sends those.`,
      );
    }
  } else if (request.request_size > 0) {
    notes.push(`# The request had a ${request.request_size}-byte body that was not captured.`);
  }
  return [...notes, args.join(' \\\n  ')].join('\n');
}
