// Replay: a captured request (edited or not) sent again to the local port of the tunnel that captured
// it, over plain HTTP from this machine, its answer captured as a new exchange with `replay_of` set. A
// failure to reach the app is captured too (with its error) rather than thrown: it is what happened.
import { request as httpRequest } from 'node:http';
import type { CapturedRequestDetail, HeaderList } from '../shared/api/tunnels.js';
import { BridgeError, type ReplayInput } from '../shared/bridge.js';
import { parseBridgeInput } from '../shared/bridge-inputs.js';
import { Exchange, headerList, type CapturedExchange } from './capture/capture.js';

/** How long a replay waits for the local app to say anything. */
const REPLAY_IDLE_MS = 30_000;

/** Headers of a connection, not of the request: a replay has its own connection. */
const REPLAY_DROPPED_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'upgrade',
  'content-length',
  'http2-settings',
]);

/** What a replay changes of the original request; absent parts are sent as captured. */
export interface ReplayEdit {
  method?: string;
  path?: string;
  headers?: HeaderList;
  body?: Buffer;
}

/** Where a replay goes, and how its Host is set: the tunnel's local port and Host mode. */
export interface ReplayTarget {
  port: number;
  /** `preserve`, `rewrite` or a fixed host (see LocalTunnel.hostHeader). */
  hostMode: string;
  /** The tunnel the new exchange is captured under. */
  tunnelId: string;
}

/** The edit a Bridge caller asked for, checked: 422 naming the field that is wrong. */
export function checkReplayInput(input: ReplayInput): ReplayEdit {
  const { method, path, headers, body } = parseBridgeInput('traffic.replay', input);
  return {
    ...(method === undefined ? {} : { method }),
    ...(path === undefined ? {} : { path }),
    ...(headers === undefined ? {} : { headers: headers.map(({ name, value }) => ({ name, value })) }),
    ...(body === undefined ? {} : { body: body === null ? Buffer.alloc(0) : Buffer.from(body, 'base64') }),
  };
}

/**
 * Sends `original`, changed by `edit`, to `target` and captures what happened. A body the capture cut
 * short cannot be replayed as it was (400): the caller must give one.
 */
export async function replayExchange(
  original: CapturedRequestDetail,
  edit: ReplayEdit,
  target: ReplayTarget,
): Promise<CapturedExchange> {
  if (edit.body === undefined && original.request_body_truncated) {
    throw new BridgeError(
      'bad_request',
      400,
      `only the first ${Buffer.from(original.request_body ?? '', 'base64').length} of the ${original.request_size} bytes of this request's body were captured: edit the body to replay it`,
    );
  }
  const { port, hostMode } = target;
  const method = edit.method ?? original.method;
  const path = edit.path ?? original.path;
  const body =
    edit.body !== undefined
      ? edit.body
      : original.request_body
        ? Buffer.from(original.request_body, 'base64')
        : Buffer.alloc(0);
  const publicUrl = new URL(original.url);
  // The captured Host is the public one: an unedited replay sends what the tunnel's Host mode says.
  const given = (
    edit.headers ?? original.request_header_list.filter(({ name }) => name.toLowerCase() !== 'host')
  ).filter(({ name }) => !REPLAY_DROPPED_HEADERS.has(name.toLowerCase()));
  const headers: HeaderList = [];
  if (!given.some(({ name }) => name.toLowerCase() === 'host')) {
    const host =
      hostMode === 'preserve' ? publicUrl.host : hostMode === 'rewrite' ? `localhost:${port}` : hostMode;
    headers.push({ name: 'host', value: host });
  }
  headers.push(...given);
  if (body.length > 0 || !['GET', 'HEAD', 'DELETE', 'OPTIONS'].includes(method.toUpperCase()))
    headers.push({ name: 'content-length', value: String(body.length) });

  const exchange = new Exchange({
    tunnelId: target.tunnelId,
    method,
    path,
    url: `${publicUrl.origin}${path}`,
    httpVersion: 'HTTP/1.1',
    requestHeaders: headers,
    // Sent on behalf of the original public client: the capture names it, as the edge's replay does.
    remoteAddr: original.remote_addr,
    replayOf: original.id,
  });
  exchange.requestBody.push(body);
  const error = await new Promise<string | null>((resolve) => {
    const outgoing: Record<string, string | string[]> = {};
    for (const { name, value } of headers) {
      const existing = outgoing[name];
      if (existing === undefined) outgoing[name] = value;
      else if (name.toLowerCase() !== 'host')
        outgoing[name] = [...(Array.isArray(existing) ? existing : [existing]), value];
    }
    const req = httpRequest(
      { host: '127.0.0.1', port, method, path, headers: outgoing, agent: false },
      (res) => {
        exchange.response(res.statusCode ?? 0, headerList(res.rawHeaders));
        res.on('data', (chunk: Buffer) => exchange.responseBody.push(chunk));
        res.on('end', () => resolve(null));
        res.on('error', (e) => resolve(e.message));
        res.on('aborted', () => resolve('the local app closed the connection mid-response'));
      },
    );
    req.setTimeout(REPLAY_IDLE_MS, () => {
      exchange.noResponse(504);
      req.destroy(
        new Error(`the local app on port ${port} did not answer within ${REPLAY_IDLE_MS / 1000} s`),
      );
    });
    req.on('error', (e: NodeJS.ErrnoException) =>
      resolve(e.code === 'ECONNREFUSED' ? `nothing is listening on 127.0.0.1:${port}` : e.message),
    );
    req.end(body);
  });
  return exchange.finish(error);
}
