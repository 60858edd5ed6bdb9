// Reaching a platform: fetch that follows redirects only within the origin asked (the API key goes
// nowhere else), and why a platform cannot be reached, in words, as a BridgeError with code `offline`.
import { BridgeError } from '../../shared/bridge.js';

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 5;

/**
 * fetch for requests that carry the API key: redirects are followed by hand, and only within the
 * origin asked (fetch's own `follow` would carry X-API-Key to wherever a redirect points). One to
 * another origin fails with a BridgeError before anything is sent there.
 */
export async function fetchWithinOrigin(
  url: string,
  init: RequestInit & { method?: string; headers: Record<string, string> },
): Promise<Response> {
  let current = new URL(url);
  const { origin } = current;
  let { method = 'GET', body, headers } = init;
  for (let hops = 0; ; hops++) {
    const response = await fetch(current, { ...init, method, headers, body, redirect: 'manual' });
    const location = response.headers.get('location');
    if (!REDIRECT_STATUSES.has(response.status) || location === null) return response;
    await response.body?.cancel().catch(() => undefined);
    let next: URL;
    try {
      next = new URL(location, current);
    } catch {
      throw new BridgeError(
        'bad_request',
        502,
        `${origin} answered ${response.status} with a Location that is not a URL`,
      );
    }
    if (next.origin !== origin) {
      throw new BridgeError(
        'bad_request',
        502,
        `${origin} answered ${response.status}, redirecting to ${next.origin}: the API key is never sent to another origin, so the redirect was not followed (if the platform moved there, set its URL to ${next.origin})`,
      );
    }
    if (hops >= MAX_REDIRECTS) {
      throw new BridgeError('bad_request', 502, `${origin} redirected more than ${MAX_REDIRECTS} times`);
    }
    // As fetch does: 303 (and 301/302 after a POST) go on as a GET without the body.
    if (
      response.status === 303 ||
      ((response.status === 301 || response.status === 302) && method === 'POST')
    ) {
      if (method !== 'HEAD') method = 'GET';
      body = undefined;
      headers = Object.fromEntries(
        Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'content-type'),
      );
    }
    current = next;
  }
}

export function offlineError(baseUrl: string, error: unknown): BridgeError {
  return new BridgeError('offline', 0, `cannot reach the platform at ${baseUrl}: ${whyUnreachable(error)}`);
}

const TLS_UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** What went wrong reaching a platform, in words: never a bare "fetch failed". */
function whyUnreachable(error: unknown): string {
  if ((error as Error).name === 'TimeoutError') return 'it did not answer in time';
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code;
  if (code === 'ECONNREFUSED') return 'nothing is listening there';
  if (code === 'ENOTFOUND') return 'the host name does not resolve';
  if (code === 'EAI_AGAIN') return 'the host name could not be looked up (is DNS reachable?)';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'the connection was closed before an answer';
  if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') return 'the connection timed out';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'the network has no route to it';
  if (code !== undefined && TLS_UNTRUSTED.has(code))
    return `its TLS certificate is not trusted here (${code}): pass the CA that signed it with --ca FILE`;
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'EPROTO')
    return 'it does not speak HTTPS on that port (an http:// address?)';
  if (cause?.message === 'bad port')
    return 'fetch refuses that port (one of the "bad ports" browsers block): use another port';
  const message = (error as Error).message;
  return cause ? `${message} (${code ?? cause.message})` : message;
}
