// The tunnel connection's multiplexer (core/tunnel/mux.ts), over real loopback TCP connections: byte
// streams opened by the edge and answered by the client, HTTP/2 on stream 0 beside them, each way's
// window, resets, the channel's end waiting for open streams, frames cut anywhere, and a hostile peer
// (each breach of the protocol ends the connection; what is only unknown is skipped).
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http2 from 'node:http2';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  MAX_METADATA,
  MAX_PAYLOAD,
  MUX_CANCEL,
  MUX_TYPES,
  Mux,
  type MuxResponse,
  type MuxStream,
} from '../../../src/core/tunnel/mux.js';
import { STREAM_WINDOW, sessionTransport } from '../../../src/core/tunnel/protocol.js';
import { until } from '../../helpers/poll.js';
import { socketPair } from '../../helpers/socket-pair.js';

const MiB = 1024 * 1024;
const cleanup: (() => void)[] = [];

afterEach(() => {
  for (const undo of cleanup.splice(0)) undo();
});

/** Two ends of one loopback TCP connection. */
async function sockets(): Promise<{ edgeSide: Socket; clientSide: Socket }> {
  const { near: edgeSide, far: clientSide, close } = await socketPair();
  cleanup.push(close);
  return { edgeSide, clientSide };
}

/** An edge's multiplexer and a client's, joined. */
async function joined(): Promise<{ edge: Mux; client: Mux; edgeSide: Socket; clientSide: Socket }> {
  const { edgeSide, clientSide } = await sockets();
  const edge = new Mux(edgeSide, 'edge');
  const client = new Mux(clientSide, 'client');
  cleanup.push(() => {
    edge.destroy();
    client.destroy();
  });
  return { edge, client, edgeSide, clientSide };
}

/** A raw frame, as a peer that writes its own would send it. */
function frame(
  type: number,
  id: number,
  payload: Buffer | string = Buffer.alloc(0),
  length?: number,
): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  const header = Buffer.alloc(9);
  header.writeUInt32BE(length ?? body.length, 0);
  header[4] = type;
  header.writeUInt32BE(id, 5);
  return Buffer.concat([header, body]);
}

function read(stream: MuxStream | Socket, bytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let got = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      got += chunk.length;
      if (got >= bytes) {
        stream.off('data', onData);
        resolve(Buffer.concat(chunks));
      }
    };
    stream.on('data', onData);
    stream.once('error', reject);
  });
}

const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

describe('byte streams', () => {
  it('opens a stream with its metadata, answers it, carries bytes both ways and closes it when both sides end', async () => {
    const { edge, client } = await joined();
    const opened = once(client, 'stream') as Promise<[MuxStream]>;
    const out = edge.open({ ':authority': 'demo.example', 'wharf-pipe': '1' });
    const response = once(out, 'response') as Promise<[MuxResponse]>;
    const [inbound] = await opened;
    expect({ ...inbound.metadata }).toEqual({ ':authority': 'demo.example', 'wharf-pipe': '1' });
    inbound.respond({ ':status': 200 });
    expect((await response)[0]).toEqual({ ':status': 200 });
    expect(inbound.headersSent).toBe(true);

    const request = read(inbound, 5);
    out.write('hello');
    expect((await request).toString()).toBe('hello');
    const answer = read(out, 5);
    inbound.write('world');
    expect((await answer).toString()).toBe('world');

    const closed = Promise.all([once(out, 'close'), once(inbound, 'close')]);
    out.end();
    inbound.end();
    await closed;
    expect(out.rstCode).toBe(0);
    expect(inbound.rstCode).toBe(0);
    expect(edge.streamsOpen()).toHaveLength(0);
    expect(client.streamsOpen()).toHaveLength(0);
  });

  it("gives the edge the client's refusal, with why", async () => {
    const { edge, client } = await joined();
    client.on('stream', (stream) =>
      stream.respond(
        { ':status': 502, 'wharf-error': 'nothing is listening on 127.0.0.1:9' },
        { endStream: true },
      ),
    );
    const out = edge.open({ 'wharf-pipe': '1' });
    const [headers] = (await once(out, 'response')) as [MuxResponse];
    expect(headers).toEqual({ ':status': 502, 'wharf-error': 'nothing is listening on 127.0.0.1:9' });
    out.resume();
    await once(out, 'end');
  });

  it('keeps many streams apart, their bytes interleaved on one connection', async () => {
    const { edge, client } = await joined();
    client.on('stream', (stream) => {
      // An echo: each stream's bytes back to it.
      stream.respond({ ':status': 200 });
      stream.pipe(stream);
    });
    const bodies = Array.from({ length: 50 }, (_, i) => randomBytes(1000 + i * 997));
    const echoed = await Promise.all(
      bodies.map(async (body) => {
        const stream = edge.open({ 'wharf-pipe': '1' });
        const back = read(stream, body.length);
        for (let at = 0; at < body.length; at += 333) stream.write(body.subarray(at, at + 333));
        return back;
      }),
    );
    echoed.forEach((back, i) => expect(sha(back)).toBe(sha(bodies[i]!)));
  });

  it('resets a stream from either side: the other side closes with the reset, the connection goes on', async () => {
    const { edge, client } = await joined();
    const streams: MuxStream[] = [];
    client.on('stream', (stream) => {
      stream.on('error', () => undefined);
      streams.push(stream);
    });
    const first = edge.open({});
    await until(() => streams.length === 1, 'the first stream');
    const firstClosed = once(streams[0]!, 'close');
    first.close();
    await firstClosed;
    expect(streams[0]!.rstCode).toBe(MUX_CANCEL);

    const second = edge.open({});
    second.on('error', () => undefined);
    await until(() => streams.length === 2, 'the second stream');
    const secondClosed = once(second, 'close');
    streams[1]!.close();
    await secondClosed;
    expect(second.rstCode).toBe(MUX_CANCEL);
    expect(edge.streamsOpen()).toHaveLength(0);

    const third = edge.open({});
    await until(() => streams.length === 3, 'a third stream on the same connection');
    streams[2]!.respond({ ':status': 200 });
    expect((await once(third, 'response'))[0]).toEqual({ ':status': 200 });
  });

  it('closes every stream, with a reset, when the connection goes', async () => {
    const { edge, client, clientSide } = await joined();
    const inbound: MuxStream[] = [];
    client.on('stream', (stream) => {
      stream.on('error', () => undefined);
      inbound.push(stream);
    });
    const outs = [edge.open({}), edge.open({})];
    for (const out of outs) out.on('error', () => undefined);
    await until(() => inbound.length === 2, 'both streams');
    const closes = [...outs, ...inbound].map((stream) => once(stream, 'close'));
    const edgeGone = once(edge, 'close');
    clientSide.resetAndDestroy();
    await Promise.all([...closes, edgeGone]);
    for (const stream of [...outs, ...inbound]) expect(stream.rstCode).toBe(MUX_CANCEL);
    expect(() => edge.open({})).toThrow(/closing/);
  });
});

describe('how many streams', () => {
  it('opens no more than the most at once on the edge, and again once one closed', async () => {
    const { edgeSide, clientSide } = await sockets();
    const edge = new Mux(edgeSide, 'edge', 3);
    const client = new Mux(clientSide, 'client', 3);
    cleanup.push(() => {
      edge.destroy();
      client.destroy();
    });
    const open = [edge.open({}), edge.open({}), edge.open({})];
    expect(() => edge.open({})).toThrow(/too many streams/);
    const closed = once(open[0]!, 'close');
    open[0]!.close();
    await closed;
    expect(edge.open({}).id).toBe(4);
  });

  it('refuses, on the client, an OPEN past the most with a RESET and goes on', async () => {
    const { edgeSide, clientSide } = await sockets();
    const client = new Mux(clientSide, 'client', 2);
    cleanup.push(() => client.destroy());
    let streams = 0;
    client.on('stream', () => streams++);
    const answered: Buffer[] = [];
    edgeSide.on('data', (chunk: Buffer) => answered.push(chunk));
    for (const id of [1, 2, 3]) edgeSide.write(frame(MUX_TYPES.open, id, '{}'));
    await until(() => Buffer.concat(answered).length >= 9, 'the refusal');
    expect(streams).toBe(2);
    expect(Buffer.concat(answered)).toEqual(frame(MUX_TYPES.reset, 3));
  });
});

describe('flow control', () => {
  it("sends no more than the reader's window while it does not read, and all of it once it does", async () => {
    const { edge, client } = await joined();
    const opened = once(client, 'stream') as Promise<[MuxStream]>;
    const out = edge.open({});
    const [inbound] = await opened;
    inbound.pause();
    const body = randomBytes(20 * MiB);
    let written = 0;
    const writeAll = (async () => {
      for (let at = 0; at < body.length; at += 64 * 1024) {
        const piece = body.subarray(at, at + 64 * 1024);
        if (!out.write(piece)) await once(out, 'drain');
        written += piece.length;
      }
      out.end();
    })();
    // The reader holds a window's worth, and the writer is held back.
    await until(() => inbound.readableLength >= STREAM_WINDOW - 64 * 1024, 'a window to arrive');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(inbound.readableLength).toBeLessThanOrEqual(STREAM_WINDOW);
    expect(written).toBeLessThan(STREAM_WINDOW + 1 * MiB);

    const all = read(inbound, body.length);
    inbound.resume();
    expect(sha(await all)).toBe(sha(body));
    await writeAll;
  });

  it('sends writes made while corked together, in order, waiting for the window in the middle of them', async () => {
    const { edge, client } = await joined();
    const opened = once(client, 'stream') as Promise<[MuxStream]>;
    const out = edge.open({});
    const [inbound] = await opened;
    inbound.pause();
    // Three writes of 3 MiB: the window (4 MiB) runs out in the second.
    const pieces = [0, 1, 2].map(() => randomBytes(3 * MiB));
    let written = false;
    out.cork();
    for (const piece of pieces) out.write(piece);
    out.write(Buffer.alloc(0), () => (written = true));
    out.uncork();
    await until(() => inbound.readableLength >= STREAM_WINDOW - 64 * 1024, 'a window to arrive');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(inbound.readableLength).toBeLessThanOrEqual(STREAM_WINDOW);
    expect(written).toBe(false);
    const all = read(inbound, 9 * MiB);
    inbound.resume();
    expect(sha(await all)).toBe(sha(Buffer.concat(pieces)));
    await until(() => written, 'the corked writes to be done');
  });

  it('cuts writes larger than a frame may be, and they arrive whole', async () => {
    const { edge, client } = await joined();
    const opened = once(client, 'stream') as Promise<[MuxStream]>;
    const out = edge.open({});
    const [inbound] = await opened;
    const body = randomBytes(3 * MAX_PAYLOAD + 17);
    const all = read(inbound, body.length);
    out.write(body);
    expect(sha(await all)).toBe(sha(body));
  });
});

describe('stream 0', () => {
  it('runs an HTTP/2 session beside the byte streams', async () => {
    const { edge, client } = await joined();
    const server = http2.performServerHandshake(sessionTransport(client.channel));
    server.on('stream', (stream, headers) => {
      stream.respond({ ':status': 200 });
      stream.end(`you asked for ${headers[':path']}`);
    });
    const session = http2.connect('http://tunnel', {
      createConnection: () => sessionTransport(edge.channel),
    });
    cleanup.push(() => session.destroy());
    client.on('stream', (stream) => {
      stream.respond({ ':status': 200 });
      stream.pipe(stream);
    });
    const byteStream = edge.open({});
    const echoed = read(byteStream, 4);
    byteStream.write('ping');

    const req = session.request({ ':path': '/beside' });
    req.setEncoding('utf8');
    let body = '';
    req.on('data', (chunk: string) => (body += chunk));
    await once(req, 'end');
    expect(body).toBe('you asked for /beside');
    expect((await echoed).toString()).toBe('ping');
  });

  it("holds the channel's end until the byte streams still open are done", async () => {
    const { edge, client } = await joined();
    const opened = once(client, 'stream') as Promise<[MuxStream]>;
    const out = edge.open({});
    const [inbound] = await opened;
    let channelEnded = false;
    client.channel.on('end', () => (channelEnded = true));
    client.channel.resume();
    edge.channel.end();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(channelEnded).toBe(false);
    expect(() => edge.open({})).toThrow(/closing/);
    // The open stream still carries bytes.
    const got = read(inbound, 5);
    out.write('still');
    expect((await got).toString()).toBe('still');
    out.end();
    out.resume();
    inbound.resume();
    inbound.end();
    await until(() => channelEnded, 'the channel to end once the stream is done');
  });
});

describe('frames as they come', () => {
  it('reads frames cut at every byte', async () => {
    const { edgeSide, clientSide } = await sockets();
    const client = new Mux(clientSide, 'client');
    cleanup.push(() => client.destroy());
    const opened = once(client, 'stream') as Promise<[MuxStream]>;
    const bytes = Buffer.concat([
      frame(MUX_TYPES.open, 7, JSON.stringify({ 'wharf-pipe': '1' })),
      frame(MUX_TYPES.data, 7, 'GET / HTTP/1.1\r\n'),
      frame(MUX_TYPES.data, 7, Buffer.alloc(0)),
      frame(MUX_TYPES.data, 7, 'Host: a\r\n\r\n'),
      frame(MUX_TYPES.end, 7),
    ]);
    edgeSide.setNoDelay(true);
    for (let at = 0; at < bytes.length; at++) {
      edgeSide.write(bytes.subarray(at, at + 1));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const [stream] = await opened;
    expect(stream.id).toBe(7);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('GET / HTTP/1.1\r\nHost: a\r\n\r\n');
  });
});

describe('a hostile peer', () => {
  /** A client's raw bytes to an edge's multiplexer: whether the edge ends the connection for them. */
  async function edgeAfter(bytes: Buffer, open = true): Promise<{ ended: boolean; edge: Mux }> {
    const { edgeSide, clientSide } = await sockets();
    const edge = new Mux(edgeSide, 'edge');
    cleanup.push(() => edge.destroy());
    clientSide.on('error', () => undefined);
    clientSide.resume();
    if (open) edge.open({ 'wharf-pipe': '1' }).on('error', () => undefined);
    let ended = false;
    edge.on('close', () => (ended = true));
    // (not `once`, which rejects on the reset the edge may answer with)
    const closed = new Promise((resolve) => clientSide.once('close', resolve));
    clientSide.write(bytes);
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 300))]);
    return { ended, edge };
  }

  it('ends the connection for a frame longer than a frame may be, before its payload arrives', async () => {
    expect((await edgeAfter(frame(MUX_TYPES.data, 1, Buffer.alloc(0), MAX_PAYLOAD + 1))).ended).toBe(true);
    expect((await edgeAfter(frame(MUX_TYPES.respond, 1, Buffer.alloc(0), MAX_METADATA + 1))).ended).toBe(
      true,
    );
    expect((await edgeAfter(frame(MUX_TYPES.data, 1, Buffer.alloc(0), 0xffffffff))).ended).toBe(true);
  });

  it('ends the connection for an OPEN from the client, which does not open streams', async () => {
    expect((await edgeAfter(frame(MUX_TYPES.open, 2, '{}'))).ended).toBe(true);
  });

  it('ends the connection for DATA past the window it was given', async () => {
    const frames: Buffer[] = [];
    for (let sent = 0; sent <= STREAM_WINDOW; sent += MAX_PAYLOAD)
      frames.push(frame(MUX_TYPES.data, 1, Buffer.alloc(MAX_PAYLOAD)));
    expect((await edgeAfter(Buffer.concat(frames))).ended).toBe(true);
  });

  it('ends the connection for a window that cannot be, or a WINDOW of the wrong size', async () => {
    const huge = Buffer.alloc(4);
    huge.writeUInt32BE(2 ** 31, 0);
    expect((await edgeAfter(frame(MUX_TYPES.window, 1, huge))).ended).toBe(true);
    expect((await edgeAfter(frame(MUX_TYPES.window, 1, Buffer.alloc(4)))).ended).toBe(true);
    expect((await edgeAfter(frame(MUX_TYPES.window, 1, Buffer.alloc(3)))).ended).toBe(true);
  });

  it('ends the connection for an answer that is not JSON, not an object of strings, or has no status', async () => {
    expect((await edgeAfter(frame(MUX_TYPES.respond, 1, '{"status":'))).ended).toBe(true);
    expect((await edgeAfter(frame(MUX_TYPES.respond, 1, '[200]'))).ended).toBe(true);
    expect((await edgeAfter(frame(MUX_TYPES.respond, 1, '{"status":{"a":1}}'))).ended).toBe(true);
    expect((await edgeAfter(frame(MUX_TYPES.respond, 1, '{"error":"x"}'))).ended).toBe(true);
    expect((await edgeAfter(frame(MUX_TYPES.respond, 1, '{"status":99}'))).ended).toBe(true);
  });

  it('ends the connection for a second answer to one OPEN', async () => {
    const ok = frame(MUX_TYPES.respond, 1, '{"status":200}');
    expect((await edgeAfter(ok)).ended).toBe(false);
    expect((await edgeAfter(Buffer.concat([ok, ok]))).ended).toBe(true);
  });

  it('skips frames of unknown types and frames for streams it does not have, and goes on', async () => {
    const bytes = Buffer.concat([
      frame(200, 1, 'a later version'),
      frame(MUX_TYPES.data, 99, 'for nobody'),
      frame(MUX_TYPES.end, 99),
      frame(MUX_TYPES.reset, 99),
      frame(MUX_TYPES.respond, 99, '{"status":200}'),
    ]);
    const { ended, edge } = await edgeAfter(bytes, false);
    expect(ended).toBe(false);
    expect(edge.streamsOpen()).toHaveLength(0);
  });

  it('ends the connection for metadata that is not an object of strings, on the client too', async () => {
    const { edgeSide, clientSide } = await sockets();
    const client = new Mux(clientSide, 'client');
    cleanup.push(() => client.destroy());
    let streams = 0;
    client.on('stream', () => streams++);
    const closed = once(client, 'close');
    edgeSide.resume();
    edgeSide.write(frame(MUX_TYPES.open, 1, '{"wharf-pipe":["1"]}'));
    await closed;
    expect(streams).toBe(0);
  });

  it('does not let the client open streams of its own through the API either', async () => {
    const { client } = await joined();
    expect(() => client.open({})).toThrow(/only the edge/);
  });
});
