// Loads for the benches: wrk (a C client: its own cost weighs less on a small machine than a Node
// load generator's) when installed, and sequential requests timed in microseconds for latency.
import { spawn, spawnSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/** Whether wrk is installed (apt-get install wrk). */
export const HAVE_WRK = !spawnSync('wrk', ['--version']).error;

/**
 * One wrk load after a 1 s warm-up: requests/s, p50/p99 in ms. `url` is what wrk connects to (its
 * host is the TLS name), `host` the Host header sent, `headers` more (`Name: value` each).
 */
export async function wrk({ url, host, connections, seconds, name = url, headers = [] }) {
  const run = (duration) =>
    new Promise((resolve, reject) => {
      const extra = headers.flatMap((header) => ['-H', header]);
      const args = [
        '-t1',
        `-c${connections}`,
        `-d${duration}s`,
        '--latency',
        '-H',
        `Host: ${host}`,
        ...extra,
        url,
      ];
      const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.once('error', reject);
      child.once('exit', (code) =>
        code === 0 ? resolve(out) : reject(new Error(`wrk exited with ${code}`)),
      );
    });
  await run(1);
  const out = await run(seconds);
  const ms = (label) => {
    const match = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(out);
    if (!match) return NaN;
    return Number(match[1]) * { us: 0.001, ms: 1, s: 1000 }[match[2]];
  };
  const requests = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const total = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const failed =
    Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0) +
    (errors ? errors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0);
  if (failed > 0 || !(requests > 0))
    throw new Error(`${name}: ${failed} of ${total} requests failed\n${out}`);
  return { requests, total, p50: ms(50), p99: ms(99) };
}

/**
 * `count` sequential requests on one keep-alive connection (after 200 to warm up), each timed in µs:
 * p50/p99 in ms. `tls`: { servername } for HTTPS.
 */
export async function latency({ port, host, path, count, tls = null, name = host }) {
  const agent = tls
    ? new HttpsAgent({
        keepAlive: true,
        maxSockets: 1,
        rejectUnauthorized: false,
        servername: tls.servername,
      })
    : new Agent({ keepAlive: true, maxSockets: 1 });
  const send = tls ? httpsRequest : request;
  const one = () =>
    new Promise((resolve, reject) => {
      const started = process.hrtime.bigint();
      const req = send({ host: '127.0.0.1', port, path, agent, headers: { host } }, (res) => {
        res.on('data', () => undefined);
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(Number(process.hrtime.bigint() - started) / 1e6)
            : reject(new Error(`${name} ${path}: ${res.statusCode}`)),
        );
      });
      req.on('error', reject);
      req.end();
    });
  for (let i = 0; i < 200; i++) await one();
  const times = [];
  for (let i = 0; i < count; i++) times.push(await one());
  agent.destroy();
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(count * 0.5)], p99: times[Math.floor(count * 0.99)] };
}

/** The median of a list of numbers. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

export function fmt(n, digits = 0) {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

const MiB = 1024 * 1024;

/**
 * The app's side of `bulk`: GET /bulk?mib=N and POST /sink; false for any other request. Self-contained
 * (no outside names), so that a bench can put its source into an app it deploys.
 */
export function answerBulk(req, res) {
  const mebibyte = 1024 * 1024;
  if (req.url.startsWith('/bulk?')) {
    const mib = Number(new URL(req.url, 'http://app').searchParams.get('mib'));
    const chunk = Buffer.alloc(mebibyte, 'b');
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': mib * mebibyte });
    let sent = 0;
    const pump = () => {
      while (sent < mib) {
        sent += 1;
        if (!res.write(chunk)) return res.once('drain', pump);
      }
      res.end();
    };
    pump();
    return true;
  }
  if (req.url === '/sink') {
    let size = 0;
    req.on('data', (data) => (size += data.length));
    req.on('end', () => res.end(String(size)));
    return true;
  }
  return false;
}

/**
 * Streams `mib` MiB down (GET /bulk) or up (POST /sink) in one request on a connection of its own;
 * resolves with MiB/s. The app answers GET /bulk?mib=N with N MiB, POST /sink with the bytes it read.
 */
export function bulk(port, host, mib, direction) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const done = (bytes) => {
      if (bytes !== mib * MiB) return reject(new Error(`${direction}: ${bytes} bytes, not ${mib * MiB}`));
      resolve(mib / (Number(process.hrtime.bigint() - started) / 1e9));
    };
    const up = direction === 'upload';
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: up ? '/sink' : `/bulk?mib=${mib}`,
        method: up ? 'POST' : 'GET',
        headers: { host, ...(up ? { 'content-length': String(mib * MiB) } : {}) },
        agent: false,
      },
      (res) => {
        let bytes = 0;
        let text = '';
        res.on('data', (c) => {
          if (up) text += c;
          else bytes += c.length;
        });
        res.on('end', () => done(up ? Number(text) : bytes));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (!up) return req.end();
    const chunk = Buffer.alloc(MiB, 'u');
    let sent = 0;
    const pump = () => {
      while (sent < mib) {
        sent += 1;
        if (!req.write(chunk)) return req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}
