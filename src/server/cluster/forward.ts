// Sends a request on to another node over the internal hop (hop.ts): a public request or upgrade for a
// tunnel that node holds, as it came (its Host kept); or an API call about such a tunnel (its captures,
// a replay, its live feed), to that node's API at `api.<base domain>` with the caller's own credentials.
import { type IncomingMessage, type ServerResponse, request as httpRequest } from 'node:http';
import type { Duplex } from 'node:stream';
import httpProxy from 'http-proxy';
import { type HopClient, HOP_HEADER, type HopSigner } from './hop.js';

/** Headers of an API call that go on to the other node: the credentials and what describes the body. */
const API_HEADERS = ['authorization', 'x-api-key', 'content-type', 'accept', 'idempotency-key'];
const API_TIMEOUT_MS = 30_000;

export interface ApiAnswer {
  status: number;
  contentType: string | null;
  body: Buffer;
}

export class NodeForwarder {
  private readonly proxy = httpProxy.createProxyServer({ ws: true, proxyTimeout: 0 });
  private readonly upgraded = new Set<Duplex>();

  constructor(
    private readonly signer: HopSigner,
    /** `api.<base domain>`: where a node's edge hands requests to its API. */
    private readonly apiHost: string,
    /** A request that could not be sent on: answered by the caller's page. */
    private readonly failed: (res: ServerResponse) => void,
  ) {
    this.proxy.on('error', (_error, _req, res) => {
      if (isServerResponse(res)) {
        if (!res.headersSent) this.failed(res);
        else res.destroy();
      } else (res as Duplex).destroy();
    });
  }

  /** A public request, to the node at `url`, for the client `client` of `host`. */
  web(req: IncomingMessage, res: ServerResponse, url: string, client: HopClient, host: string): void {
    this.proxy.web(req, res, { target: url, headers: { [HOP_HEADER]: this.signer.sign(client, host) } });
  }

  /** A public upgrade (a WebSocket), the same way. */
  ws(req: IncomingMessage, socket: Duplex, head: Buffer, url: string, client: HopClient, host: string): void {
    this.upgraded.add(socket);
    socket.once('close', () => this.upgraded.delete(socket));
    this.proxy.ws(req, socket, head, {
      target: url,
      headers: { [HOP_HEADER]: this.signer.sign(client, host) },
    });
  }

  /** An API upgrade (the live traffic feed), to the node's API, with the caller's credentials. */
  apiUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: string, client: HopClient): void {
    req.headers.host = this.apiHost;
    this.ws(req, socket, head, url, client, this.apiHost);
  }

  /** An API call, to the node's API; its answer as it came (status, type, body). */
  async api(
    url: string,
    request: { method: string; url: string; headers: IncomingMessage['headers']; body?: unknown },
    client: HopClient,
  ): Promise<ApiAnswer> {
    const headers: Record<string, string> = {
      host: this.apiHost,
      [HOP_HEADER]: this.signer.sign(client, this.apiHost),
    };
    for (const name of API_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const body =
      request.body === undefined || request.method === 'GET'
        ? null
        : Buffer.from(JSON.stringify(request.body));
    if (body) headers['content-length'] = String(body.length);
    const target = new URL(request.url, url);
    return new Promise<ApiAnswer>((resolve, reject) => {
      const call = httpRequest(
        target,
        { method: request.method, headers, timeout: API_TIMEOUT_MS },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () =>
            resolve({
              status: answer.statusCode ?? 502,
              contentType: answer.headers['content-type'] ?? null,
              body: Buffer.concat(chunks),
            }),
          );
          answer.on('error', reject);
        },
      );
      call.on('timeout', () => call.destroy(new Error('the node holding the tunnel did not answer')));
      call.on('error', reject);
      call.end(body ?? undefined);
    });
  }

  close(): void {
    for (const socket of this.upgraded) socket.destroy();
    this.proxy.close();
  }
}

function isServerResponse(value: unknown): value is ServerResponse {
  return typeof (value as ServerResponse | undefined)?.writeHead === 'function';
}
