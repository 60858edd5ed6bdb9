#!/usr/bin/env node
// Benchmark: the floor under the tunnel. What two Node processes in a chain can move at all, before any
// of Wharf's work: the same 13-byte app reached
//   direct       straight to its port,
//   tcp relays   through two relays that pass bytes and nothing else, one TCP connection per public one,
//   h2 relays    through two relays joined by one HTTP/2 connection, a stream per public connection
//                (the tunnel's shape before the multiplexer: the edge, then the client, with no parsing
//                and no capture),
//   mux relays   the same over a multiplexer of our own instead of HTTP/2 streams (the tunnel's shape
//                since: core/tunnel/mux.ts, here without its windows and checks).
// Each relay is its own process, as the edge and the tunnel client are; each way's ratio to direct and
// the CPU each relay spends per request. The tunnel's own numbers (bench/tunnel.mjs) read against these:
// the gap between "mux relays" and the tunnel is what parsing, head edits and capture cost.
// Then the same for bulk: --bulk-mib MiB streamed down and up each way, MiB/s and the ratio to direct.
// On loopback every hop's bytes are copied by the kernel twice (into the socket, out of it), and the
// relays add two hops to direct's one: on a machine whose cores are all busy with those copies the
// relays' bulk ratio is bounded near 1/3, whatever a relay does in between.
// Usage: node bench/relay-floor.mjs [--duration 4] [--rounds 3] [--bulk-mib 1024]
// (wrk: apt-get install wrk)
import { fork } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HAVE_WRK, answerBulk, bulk, fmt, median, wrk } from './lib/load.mjs';

const { values } = parseArgs({
  options: {
    serve: { type: 'string' },
    to: { type: 'string' },
    duration: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '3' },
    'bulk-mib': { type: 'string', default: '1024' },
  },
});

/**
 * Passes bytes both ways between two duplex streams, with back-pressure. An end is passed on once what
 * came before it is written; a side gone without one (reset, error) takes the other with it. (A side
 * that closed used to destroy the other at once, dropping what the relay had not written yet: a bulk
 * run now and then ended in the client's "aborted", ECONNRESET.)
 */
function join(a, b) {
  for (const [from, to] of [
    [a, b],
    [b, a],
  ]) {
    from.on('data', (chunk) => to.write(chunk) || from.pause());
    to.on('drain', () => from.resume());
    from.on('end', () => to.end());
    from.on('error', () => to.destroy());
    from.on('close', () => {
      if (!from.readableEnded) to.destroy();
    });
  }
}

/**
 * The least a multiplexer of our own can do in place of HTTP/2 streams (what core/tunnel/mux.ts does,
 * less its windows and checks): frames of a 9-byte header (length, type, stream id) and a payload,
 * gathered per event-loop turn into one write, read out of each chunk without copying; each stream a
 * Duplex, joined to its socket as the HTTP/2 relays join theirs. Its flow control is the crudest that
 * holds memory: a full connection pauses every stream, a full stream the connection.
 */
const DATA = 0;
const OPEN = 1;
const END = 3;
const RESET = 4;
class MuxStream extends Duplex {
  constructor(mux, id) {
    super({ allowHalfOpen: true });
    this.mux = mux;
    this.id = id;
  }
  _write(chunk, _encoding, callback) {
    this.mux.send(DATA, this.id, chunk);
    if (this.mux.full) this.mux.waiting.push(callback);
    else callback();
  }
  _final(callback) {
    this.mux.send(END, this.id);
    callback();
  }
  _read() {
    this.mux.socket.resume();
  }
  _destroy(error, callback) {
    if (!this.readableEnded || !this.writableFinished) this.mux.send(RESET, this.id);
    this.mux.streams.delete(this.id);
    callback(error);
  }
}
class Mux {
  /** `onOpen`: the local side, which answers each stream the other side opens with a socket. */
  constructor(socket, onOpen = null) {
    this.socket = socket;
    this.onOpen = onOpen;
    this.streams = new Map();
    this.nextId = 1;
    this.parts = [];
    this.size = 0;
    this.scheduled = false;
    this.rest = null;
    this.full = false;
    this.waiting = [];
    socket.setNoDelay(true);
    socket.on('data', (chunk) => this.read(chunk));
    socket.on('drain', () => {
      this.full = false;
      for (const callback of this.waiting.splice(0)) callback();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      for (const stream of this.streams.values()) stream.destroy();
    });
    this.flush = () => {
      this.scheduled = false;
      const all = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts, this.size);
      this.parts = [];
      this.size = 0;
      if (!this.socket.write(all)) this.full = true;
    };
  }
  open() {
    const stream = this.add(this.nextId++);
    this.send(OPEN, stream.id);
    return stream;
  }
  add(id) {
    const stream = new MuxStream(this, id);
    this.streams.set(id, stream);
    return stream;
  }
  send(type, id, payload) {
    const header = Buffer.allocUnsafe(9);
    header.writeUInt32BE(payload ? payload.length : 0, 0);
    header[4] = type;
    header.writeUInt32BE(id, 5);
    this.parts.push(header);
    this.size += 9;
    if (payload) {
      this.parts.push(payload);
      this.size += payload.length;
    }
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }
  read(chunk) {
    const buffer = this.rest ? Buffer.concat([this.rest, chunk]) : chunk;
    let at = 0;
    while (buffer.length - at >= 9) {
      const length = buffer.readUInt32BE(at);
      if (buffer.length - at - 9 < length) break;
      const type = buffer[at + 4];
      const id = buffer.readUInt32BE(at + 5);
      const payload = buffer.subarray(at + 9, at + 9 + length);
      at += 9 + length;
      if (type === OPEN && this.onOpen) join(this.add(id), this.onOpen());
      const stream = this.streams.get(id);
      if (!stream) continue;
      if (type === DATA && !stream.push(payload)) this.socket.pause();
      else if (type === END) stream.push(null);
      else if (type === RESET) stream.destroy();
    }
    this.rest = at < buffer.length ? buffer.subarray(at) : null;
  }
}

function tcp(port) {
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  return socket;
}

/** The child processes: the app and the four kinds of relay. Each says its port once listening. */
async function serve(kind, to) {
  let server;
  if (kind === 'app') {
    const body = Buffer.from('Hello, World!');
    server = http.createServer((req, res) => {
      if (answerBulk(req, res)) return;
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
      res.end(body);
    });
    server.keepAliveTimeout = 60_000;
  } else if (kind === 'tcp') {
    server = net.createServer((socket) => {
      socket.setNoDelay(true);
      join(socket, tcp(to));
    });
  } else if (kind === 'mux-public') {
    // The edge's place, as for h2-public, over one multiplexed connection.
    const mux = new Mux(tcp(to));
    server = net.createServer((socket) => {
      socket.setNoDelay(true);
      join(socket, mux.open());
    });
  } else if (kind === 'mux-local') {
    server = net.createServer((socket) => {
      new Mux(socket, () => tcp(to));
    });
  } else if (kind === 'h2-public') {
    // The edge's place: public connections in, each over a stream of one HTTP/2 connection.
    const session = http2.connect(`http://127.0.0.1:${to}`);
    session.on('connect', () => session.setLocalWindowSize(16 * 1024 * 1024));
    server = net.createServer((socket) => {
      socket.setNoDelay(true);
      join(socket, session.request({ ':method': 'POST', ':path': '/' }, { endStream: false }));
    });
  } else if (kind === 'h2-local') {
    // The tunnel client's place: each stream to a connection of its own to the app.
    server = http2.createServer();
    server.on('session', (session) => session.setLocalWindowSize(16 * 1024 * 1024));
    server.on('stream', (stream) => {
      const socket = tcp(to);
      socket.once('connect', () => stream.respond({ ':status': 200 }));
      join(stream, socket);
    });
  }
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.on('message', (message) => {
    if (message === 'cpu') {
      const { user, system } = process.cpuUsage();
      process.send({ cpu: user + system });
    }
  });
  process.send({ port: server.address().port });
}

function start(kind, to) {
  const child = fork(fileURLToPath(import.meta.url), ['--serve', kind, '--to', String(to ?? 0)]);
  return new Promise((resolve, reject) => {
    child.once('message', ({ port }) => resolve({ child, port }));
    child.once('exit', (code) => reject(new Error(`${kind} exited with ${code}`)));
  });
}

function cpuOf(child) {
  return new Promise((resolve) => {
    child.once('message', ({ cpu }) => resolve(cpu));
    child.send('cpu');
  });
}

async function main() {
  if (!HAVE_WRK) throw new Error('this bench needs wrk (apt-get install wrk)');
  const children = [];
  const started = async (kind, to) => {
    const one = await start(kind, to);
    children.push(one.child);
    return one;
  };
  try {
    const app = await started('app');
    const tcpLocal = await started('tcp', app.port);
    const tcpPublic = await started('tcp', tcpLocal.port);
    const h2Local = await started('h2-local', app.port);
    const h2Public = await started('h2-public', h2Local.port);
    const muxLocal = await started('mux-local', app.port);
    const muxPublic = await started('mux-public', muxLocal.port);
    const ways = {
      direct: { port: app.port, relays: [] },
      'tcp relays': { port: tcpPublic.port, relays: [tcpPublic.child, tcpLocal.child] },
      'h2 relays': { port: h2Public.port, relays: [h2Public.child, h2Local.child] },
      'mux relays': { port: muxPublic.port, relays: [muxPublic.child, muxLocal.child] },
    };
    const seconds = Number(values.duration);
    const results = Object.fromEntries(Object.keys(ways).map((name) => [name, []]));
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const [name, way] of Object.entries(ways)) {
        const before = await Promise.all(way.relays.map(cpuOf));
        const load = await wrk({
          url: `http://127.0.0.1:${way.port}/`,
          host: `127.0.0.1:${way.port}`,
          connections: 50,
          seconds,
        });
        const after = await Promise.all(way.relays.map(cpuOf));
        results[name].push({ rps: load.requests, cpu: after.map((c, i) => (c - before[i]) / load.total) });
      }
    }
    const direct = median(results.direct.map((r) => r.rps));
    console.log(
      `Relay floor (wrk -t1, 50 connections, 13 B, median of ${values.rounds} rounds of ${seconds} s), Node ${process.version}`,
    );
    for (const [name, rows] of Object.entries(results)) {
      const rps = median(rows.map((r) => r.rps));
      const cpu =
        name === 'direct'
          ? ''
          : `   CPU/request: public relay ${fmt(median(rows.map((r) => r.cpu[0])), 1)} µs, local relay ${fmt(median(rows.map((r) => r.cpu[1])), 1)} µs`;
      console.log(`  ${name.padEnd(11)} ${fmt(rps).padStart(8)} req/s   ratio ${fmt(rps / direct, 2)}${cpu}`);
    }

    const mib = Number(values['bulk-mib']);
    if (mib <= 0) return;
    const rates = Object.fromEntries(Object.keys(ways).map((name) => [name, { download: [], upload: [] }]));
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const [name, way] of Object.entries(ways)) {
        for (const direction of ['download', 'upload'])
          rates[name][direction].push(await bulk(way.port, `127.0.0.1:${way.port}`, mib, direction));
      }
    }
    console.log(`\n${fmt(mib)} MiB streamed in one request (median of ${values.rounds} rounds)`);
    for (const [name, r] of Object.entries(rates)) {
      const line = ['download', 'upload'].map((direction) => {
        const rate = median(r[direction]);
        return `${direction} ${fmt(rate).padStart(6)} MiB/s (ratio ${fmt(rate / median(rates.direct[direction]), 2)})`;
      });
      console.log(`  ${name.padEnd(11)} ${line.join('   ')}`);
    }
  } finally {
    for (const child of children) child.kill();
  }
}

if (values.serve) await serve(values.serve, Number(values.to));
else await main();
