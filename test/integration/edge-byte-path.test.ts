// The app edge's byte path: a public connection for a running app is carried whole to one connection
// to the app. What it must keep: the request head as the client wrote it (but the hop's headers), the
// order of pipelined responses, one connection serving several hosts (each routed afresh), the edge's
// own pages for an app that hangs up or a project that went away, and the body limit.
import { type Socket, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestPlatform, call, startPlatform } from '../helpers/platform.js';
import { type Files, createProject, deployFiles, nodeApp } from '../helpers/deploy.js';

let tp: TestPlatform;
const BODY_LIMIT = 64 * 1024;

/** /raw answers the request head as the app got it (names as sent, in order); /hangup closes unanswered. */
const byteApp = (name: string): Files =>
  nodeApp(name, {
    'server.js': `
const http = require('node:http');
const server = http.createServer((req, res) => {
  if (req.url === '/raw') {
    res.setHeader('content-type', 'application/json');
    return res.end(JSON.stringify(req.rawHeaders));
  }
  if (req.url === '/hangup') return req.socket.destroy();
  if (req.method === 'POST') {
    let size = 0;
    req.on('data', (chunk) => (size += chunk.length));
    req.on('end', () => res.end(${JSON.stringify(name)} + ' got ' + size));
    return;
  }
  res.end(${JSON.stringify(name)} + ' ' + req.url);
});
server.listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`,
  });

beforeAll(async () => {
  tp = await startPlatform({ healthTimeoutMs: 15_000, limits: { bodyBytes: BODY_LIMIT } });
  const [a, b] = await Promise.all([
    createProject(tp, { name: 'Bytes A', subdomain: 'bytes-a', deploy_source: 'upload' }),
    createProject(tp, { name: 'Bytes B', subdomain: 'bytes-b', deploy_source: 'upload' }),
  ]);
  await Promise.all([deployFiles(tp, a.id, byteApp('A')), deployFiles(tp, b.id, byteApp('B'))]);
}, 120_000);

afterAll(async () => {
  await tp?.close();
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A raw connection to the edge: requests written as given, answers read in order (Content-Length). */
class Wire {
  private readonly socket: Socket;
  private buffer = Buffer.alloc(0);
  private waiting: (() => void) | null = null;
  ended = false;

  private constructor(port: number) {
    this.socket = connect({ host: '127.0.0.1', port, noDelay: true });
    this.socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.waiting?.();
    });
    this.socket.on('close', () => {
      this.ended = true;
      this.waiting?.();
    });
    this.socket.on('error', () => undefined);
  }

  static async open(port: number): Promise<Wire> {
    const wire = new Wire(port);
    await new Promise<void>((resolve, reject) => {
      wire.socket.once('connect', resolve);
      wire.socket.once('error', reject);
    });
    return wire;
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  async read(): Promise<Answer> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const lines = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
        const headers: Record<string, string> = {};
        for (const line of lines.slice(1)) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
        }
        const length = Number(headers['content-length'] ?? 'NaN');
        if (Number.isNaN(length)) throw new Error(`an answer without Content-Length: ${lines[0]}`);
        if (this.buffer.length >= end + 4 + length) {
          const body = this.buffer.subarray(end + 4, end + 4 + length).toString();
          this.buffer = this.buffer.subarray(end + 4 + length);
          return { status: Number(lines[0]!.split(' ')[1]), headers, body };
        }
      }
      if (this.ended)
        throw new Error(`the connection closed; unread: ${this.buffer.toString().slice(0, 200)}`);
      if (Date.now() > deadline) throw new Error('no whole answer within 10 s');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 200);
        this.waiting = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiting = null;
    }
  }

  /** Resolves once the edge closed the connection. */
  async closed(): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!this.ended) {
      if (Date.now() > deadline) throw new Error('the edge kept the connection open');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

const get = (host: string, path: string, extra = '') =>
  `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`;

describe('the byte path to an app', () => {
  it('passes the request head as the client wrote it, but the hop’s own headers', async () => {
    const wire = await Wire.open(tp.edgePort);
    try {
      wire.write(
        get(
          `bytes-a.localhost:${tp.edgePort}`,
          '/raw',
          'X-MiXed-Case: kept\r\nX-Forwarded-For: 203.0.113.9\r\nConnection: keep-alive, X-Secret-Hop\r\nX-Secret-Hop: dropped\r\n',
        ),
      );
      const answer = await wire.read();
      expect(answer.status).toBe(200);
      const raw = JSON.parse(answer.body) as string[];
      const names = raw.filter((_, i) => i % 2 === 0);
      // Names keep their case and order; the client's claims about the hop and what its Connection
      // header named are gone, the edge's own are added.
      expect(names.slice(0, 2)).toEqual(['Host', 'X-MiXed-Case']);
      expect(names).not.toContain('X-Secret-Hop');
      expect(raw).not.toContain('203.0.113.9');
      expect(raw[raw.indexOf('x-forwarded-for') + 1]).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
      expect(raw[raw.indexOf('x-forwarded-port') + 1]).toBe(String(tp.edgePort));
    } finally {
      wire.close();
    }
  });

  it('answers pipelined requests in order, and routes each host of one connection afresh', async () => {
    const wire = await Wire.open(tp.edgePort);
    try {
      wire.write(
        get('bytes-a.localhost', '/1') +
          get('bytes-a.localhost', '/2') +
          get('bytes-b.localhost', '/3') +
          get('nobody.localhost', '/4') +
          get('BYTES-A.localhost.', '/5') +
          get('api.localhost', '/api/v1/health') +
          get('bytes-b.localhost', '/7', 'Connection: close\r\n'),
      );
      const answers = [];
      for (let i = 0; i < 7; i++) answers.push(await wire.read());
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 404, 200, 200, 200]);
      expect(answers[0]!.body).toBe('A /1');
      expect(answers[1]!.body).toBe('A /2');
      expect(answers[2]!.body).toBe('B /3');
      expect(answers[3]!.headers['x-wharf-edge']).toBe('No app here');
      expect(answers[4]!.body).toBe('A /5');
      expect(JSON.parse(answers[5]!.body)).toEqual({ ok: true });
      expect(answers[6]!.body).toBe('B /7');
      await wire.closed();
    } finally {
      wire.close();
    }
  });

  it('routes a head that comes a few bytes at a time, its blank line split between reads', async () => {
    const wire = await Wire.open(tp.edgePort);
    try {
      // Three bytes a write, each after the edge read the last: the head's end spans two reads.
      const head = get('bytes-b.localhost', '/trickle', 'X-Padding: 12345\r\n');
      for (let at = 0; at < head.length; at += 3) {
        wire.write(head.slice(at, at + 3));
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      const answer = await wire.read();
      expect(answer.status).toBe(200);
      expect(answer.body).toBe('B /trickle');
      // The connection goes on as any other: the next request, whole, routes afresh.
      wire.write(get('bytes-a.localhost', '/after'));
      expect((await wire.read()).body).toBe('A /after');
    } finally {
      wire.close();
    }
  });

  it('answers the edge’s 502 page, saying nothing of why, when the app hangs up', async () => {
    const wire = await Wire.open(tp.edgePort);
    try {
      wire.write(get('bytes-a.localhost', '/before') + get('bytes-a.localhost', '/hangup'));
      expect((await wire.read()).body).toBe('A /before');
      const page = await wire.read();
      expect(page.status).toBe(502);
      expect(page.headers['x-wharf-edge']).toBe('Not running');
      expect(page.headers.connection).toBe('close');
      expect(page.body).toContain('This app is not running.');
      expect(page.body).not.toContain('closed the connection');
      await wire.closed();
    } finally {
      wire.close();
    }
    // The app, and the edge, serve the next connection.
    const again = await Wire.open(tp.edgePort);
    try {
      again.write(get('bytes-a.localhost', '/after'));
      expect((await again.read()).body).toBe('A /after');
    } finally {
      again.close();
    }
  });

  it('holds request bodies to the limit on a kept-alive connection, declared or chunked', async () => {
    const wire = await Wire.open(tp.edgePort);
    try {
      const within = 'x'.repeat(BODY_LIMIT);
      wire.write(
        `POST /up HTTP/1.1\r\nHost: bytes-a.localhost\r\nContent-Length: ${within.length}\r\n\r\n${within}`,
      );
      expect((await wire.read()).body).toBe(`A got ${BODY_LIMIT}`);
      const chunk = 'y'.repeat(BODY_LIMIT / 2);
      const chunked = `${chunk.length.toString(16)}\r\n${chunk}\r\n`;
      wire.write(
        `POST /up HTTP/1.1\r\nHost: bytes-a.localhost\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}${chunked}${chunked}`,
      );
      const refused = await wire.read();
      expect(refused.status).toBe(413);
      expect(refused.headers['x-wharf-edge']).toBe('Request body too large');
      await wire.closed();
    } finally {
      wire.close();
    }
    const declared = await Wire.open(tp.edgePort);
    try {
      declared.write(
        `POST /up HTTP/1.1\r\nHost: bytes-b.localhost\r\nContent-Length: ${BODY_LIMIT + 1}\r\n\r\n`,
      );
      expect((await declared.read()).status).toBe(413);
    } finally {
      declared.close();
    }
  });

  it('refuses a request framed two ways with 400, before the app sees it', async () => {
    const wire = await Wire.open(tp.edgePort);
    try {
      wire.write(
        'POST /up HTTP/1.1\r\nHost: bytes-a.localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      );
      const answer = await wire.read();
      expect(answer.status).toBe(400);
      expect(answer.body).toContain('both Transfer-Encoding and Content-Length');
      await wire.closed();
    } finally {
      wire.close();
    }
  });

  it('refuses header lines it cannot read with 400 rather than pass them on unread', async () => {
    for (const [line, why] of [
      ['Transfer-Encoding : chunked', 'a malformed header line'],
      ['Host: other.localhost', 'two Host headers'],
    ]) {
      const wire = await Wire.open(tp.edgePort);
      try {
        wire.write(
          `POST /up HTTP/1.1\r\nHost: bytes-a.localhost\r\nContent-Length: 5\r\n${line}\r\n\r\n0\r\n\r\n`,
        );
        const answer = await wire.read();
        expect(answer.status).toBe(400);
        expect(answer.body).toContain(why);
        await wire.closed();
      } finally {
        wire.close();
      }
    }
  });

  it('a kept-alive connection to a project that is deleted gets the edge’s 404 next', async () => {
    const gone = await createProject(tp, {
      name: 'Bytes gone',
      subdomain: 'bytes-gone',
      deploy_source: 'upload',
    });
    await deployFiles(tp, gone.id, byteApp('G'));
    const wire = await Wire.open(tp.edgePort);
    try {
      wire.write(get('bytes-gone.localhost', '/first'));
      expect((await wire.read()).body).toBe('G /first');
      const deleted = await call(`${tp.api}/projects/${gone.id}`, { key: tp.key, method: 'DELETE' });
      expect(deleted.status).toBe(200);
      wire.write(get('bytes-gone.localhost', '/second'));
      const answer = await wire.read();
      expect(answer.status).toBe(404);
      expect(answer.headers['x-wharf-edge']).toBe('No app here');
    } finally {
      wire.close();
    }
  });
});
