// The tunnel edge's replay: a request of a tunnel's capture ring sent again through the tunnel, as a
// new stream to its client, with the forwarding headers the edge gave it the first time; the answer is
// captured as a new exchange with `replay_of` set (API.md §7).
import type { ClientHttp2Stream } from 'node:http2';
import { Exchange, headerListOf, hostOfAddress } from '../../core/capture/capture.js';
import { STREAM_HEADERS, requestHeadersToH2 } from '../../core/tunnel/protocol.js';
import type { CapturedRequest } from '../../shared/api/tunnels.js';
import { forwardedHeader } from '../edge/forwarded.js';
import { ApiError, notFound, validationError } from '../errors.js';
import type { Tunnel } from './tunnel.js';

/** How long a replay waits for the app's whole response. */
const REPLAY_TIMEOUT_MS = 60_000;

/** Headers of a captured request that a replay sets afresh. */
const REPLACED_ON_REPLAY = new Set(['content-length', 'x-forwarded-for', 'x-real-ip', 'forwarded']);

/**
 * Sends request `requestId` of the tunnel's ring again; resolves with the new captured request. The
 * tunnel's client must be online (`tunnel_unavailable` otherwise), and the body must have been kept
 * whole: the first 1 MiB sent as if it were all would be another request altogether.
 */
export async function replayThroughTunnel(
  tunnel: Tunnel,
  requestId: string,
  tunnelDomain: string,
): Promise<CapturedRequest> {
  const original = tunnel.ring.get(requestId);
  if (!original) throw notFound(`request ${requestId}`);
  if (!tunnel.online || !tunnel.session) {
    throw new ApiError('tunnel_unavailable', `the tunnel client for ${tunnel.subdomain} is offline`);
  }
  const { request } = original;
  if (original.requestBodyTruncated) {
    throw validationError([
      {
        path: 'request_body',
        message: `the request body (${request.request_size} bytes) was not kept whole, so it cannot be replayed`,
      },
    ]);
  }
  const exchange = new Exchange({
    tunnelId: tunnel.id,
    method: request.method,
    path: request.path,
    url: request.url,
    httpVersion: 'HTTP/2',
    requestHeaders: request.request_header_list,
    // The app sees the replay come from the original client (X-Forwarded-For below), and so does the capture.
    remoteAddr: request.remote_addr,
    replayOf: request.id,
  });
  const authority = hostOfUrl(request.url) ?? `${tunnel.subdomain}.${tunnelDomain}`;
  const clientHost = hostOfAddress(request.remote_addr);
  // A copy: the ring's view of it may be written over by exchanges recorded while this one is sent.
  const body = Buffer.from(original.requestBody);
  // The body is whole and known: its length replaces whatever framing the original came with.
  // What the public client claimed about the hop is not replayed either: the app gets what the edge
  // saw the first time (as it did then).
  const raw = request.request_header_list
    .filter(({ name }) => !REPLACED_ON_REPLAY.has(name.toLowerCase()))
    .flatMap(({ name, value }) => [name, value]);
  let stream: ClientHttp2Stream;
  try {
    stream = tunnel.session.request(
      requestHeadersToH2(
        raw,
        { method: request.method, path: request.path, authority, scheme: 'http' },
        {
          ...(body.length > 0 ? { 'content-length': body.length } : {}),
          'x-forwarded-proto': 'http',
          'x-forwarded-host': authority,
          'x-forwarded-for': clientHost,
          'x-real-ip': clientHost,
          forwarded: forwardedHeader(clientHost, authority),
          [STREAM_HEADERS.remoteAddr]: request.remote_addr,
          [STREAM_HEADERS.requestId]: exchange.id,
          [STREAM_HEADERS.replayOf]: request.id,
        },
      ),
      { endStream: body.length === 0 },
    );
  } catch {
    throw new ApiError('tunnel_unavailable', `the tunnel client for ${tunnel.subdomain} is going away`);
  }
  if (body.length > 0) {
    exchange.requestBody.push(body);
    stream.end(body);
  }
  const error = await new Promise<string | null>((resolve) => {
    stream.setTimeout(REPLAY_TIMEOUT_MS, () => {
      exchange.noResponse(504);
      stream.destroy(new Error(`no whole response within ${REPLAY_TIMEOUT_MS / 1000} s`));
    });
    stream.on('response', (headers) => {
      const failed = headers[STREAM_HEADERS.error];
      exchange.response(
        Number(headers[':status']),
        headerListOf(headers).filter((h) => h.name !== STREAM_HEADERS.error),
      );
      stream.on('data', (chunk: Buffer) => exchange.responseBody.push(chunk));
      stream.on('end', () => resolve(failed === undefined ? null : String(failed)));
    });
    stream.on('error', (e) => resolve(e.message));
    stream.on('close', () => resolve('the tunnel client closed the stream without a whole response'));
  });
  return tunnel.record(exchange, error).request;
}

/** `host[:port]` of a URL, or null. */
function hostOfUrl(url: string): string | null {
  try {
    return new URL(url).host || null;
  } catch {
    return null;
  }
}
