#!/usr/bin/env node
// Benchmark: `wharf http` as people run it, against the same app served direct, in one run. The
// commands as a user starts them: `wharf platform` on a temp data dir, a 13 B Node app (or --body), and
// `wharf http <port> --no-inspect` on a temp WHARF_HOME, printing a line per request and writing every
// exchange to its history (mirror.db). tunnel.mjs measures the data path with a client that stores
// nothing; this measures what a user gets, the history included.
//
// In each of --rounds rounds: wrk at --connections (50) against the app direct, then through the tunnel
// host. Printed: each way's requests/s and p99, the ratio (the median of the rounds'), the CPU per
// request of the platform and of the client's threads (the tunnel's thread, the history's writer, the
// rest; from /proc, Linux only), and at the end what the history holds (exchanges, how many with their
// bodies, the file's size). The history fills as the rounds go (at 13 B, ~1.6 kB an exchange):
// --history-size MiB (256, the default of `wharf http`) sets where it starts evicting.
//
// Usage: npm run build && node bench/http.mjs [--duration 10] [--rounds 3] [--connections 50]
//        [--body '64 KiB'] [--history-size 256]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import SQLite from 'better-sqlite3';
import { wharfNodeFlags } from '../scripts/node-flags.mjs';
import { HAVE_WRK, fmt, median, wrk } from './lib/load.mjs';
import { freePort } from './lib/ports.mjs';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    body: { type: 'string', default: '13 B' },
    'history-size': { type: 'string', default: '256' },
  },
});
if (!HAVE_WRK) {
  console.error('bench/http.mjs needs wrk (apt-get install wrk)');
  process.exit(1);
}
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WHARF = join(ROOT, 'bin', 'wharf.js');
const SECONDS = Number(values.duration);
const ROUNDS = Number(values.rounds);
const CONNECTIONS = Number(values.connections);
const BODY = Buffer.alloc(parseSize(values.body), 'x');
const SUBDOMAIN = 'benchhttp';
const HOST = `${SUBDOMAIN}.tunnel.localhost`;

function parseSize(text) {
  const match = /^(\d+)\s*(B|KiB|MiB)$/.exec(text.trim());
  if (!match) throw new Error(`--body: a size such as '13 B' or '64 KiB', not ${text}`);
  return Number(match[1]) * { B: 1, KiB: 1024, MiB: 1024 * 1024 }[match[2]];
}

const children = [];
const temp = mkdtempSync(join(tmpdir(), 'wharf-bench-http-'));
const cleanup = () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(temp, { recursive: true, force: true });
};
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));

/** Starts `wharf <args>`; resolves once `ready(output)` holds for what it printed. */
function wharf(args, env, ready, name) {
  const child = spawn(process.execPath, [...wharfNodeFlags(), WHARF, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  let errors = '';
  // Its lines are read and thrown away as they come, as a terminal would take them.
  child.stdout.on('data', (data) => {
    if (output.length < 64 * 1024) output += data;
  });
  child.stderr.on('data', (data) => (errors += data));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start:\n${output}${errors}`)), 60_000);
    const check = () => {
      if (!ready(output)) return;
      clearTimeout(timer);
      child.stdout.off('data', check);
      resolve(child);
    };
    child.stdout.on('data', check);
    child.once('exit', (code) => reject(new Error(`${name} exited (${code}):\n${output}${errors}`)));
  });
}

/** CPU seconds of each thread of a process (Linux), by thread id. */
function threadTimes(pid) {
  const times = new Map();
  let ticks;
  try {
    ticks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return times;
  }
  for (const tid of ticks) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime and stime, in clock ticks (100 a second on Linux).
      times.set(tid, (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // the thread ended
    }
  }
  return times;
}

/** µs of CPU per request between two readings: the main thread, the busiest other, the rest. */
function perRequest(pid, before, after, requests) {
  let main = 0;
  const others = [];
  for (const [tid, seconds] of after) {
    const spent = seconds - (before.get(tid) ?? 0);
    if (tid === String(pid)) main = spent;
    else others.push(spent);
  }
  others.sort((a, b) => b - a);
  const us = (seconds) => (seconds * 1e6) / requests;
  return {
    main: us(main),
    busiest: us(others[0] ?? 0),
    rest: us(others.slice(1).reduce((a, b) => a + b, 0)),
  };
}

async function main() {
  // The app in a process of its own: this one runs wrk's bookkeeping and reads /proc.
  const appPort = await freePort();
  const appChild = spawn(
    process.execPath,
    [
      '-e',
      `const b = Buffer.alloc(${BODY.length}, 'x'); require('node:http').createServer((q, s) => { s.writeHead(200, { 'content-type': 'text/plain', 'content-length': b.length }); s.end(b); }).listen(${appPort}, '127.0.0.1', () => console.log('ready'));`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(appChild);
  await new Promise((resolve) => appChild.stdout.once('data', resolve));

  const apiPort = await freePort();
  const edgePort = await freePort();
  const dataDir = join(temp, 'platform');
  const platform = await wharf(
    ['platform', '--data-dir', dataDir, '--port', String(apiPort), '--edge-port', String(edgePort)],
    {},
    (out) => out.includes(`${edgePort}`),
    'wharf platform',
  );
  let apiKey = null;
  for (let i = 0; i < 100 && apiKey === null; i++) {
    try {
      apiKey = JSON.parse(readFileSync(join(dataDir, 'local-account.json'), 'utf8')).api_key;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const home = join(temp, 'home');
  const client = await wharf(
    [
      'http',
      String(appPort),
      '--subdomain',
      SUBDOMAIN,
      '--no-inspect',
      '--history-size',
      values['history-size'],
    ],
    { WHARF_HOME: home, WHARF_PLATFORM_URL: `http://127.0.0.1:${apiPort}`, WHARF_API_KEY: apiKey },
    (out) => out.includes('Press Ctrl+C'),
    'wharf http',
  );

  console.log(
    `wharf http bench (wrk -t1 -c${CONNECTIONS}, ${SECONDS} s per load, ${ROUNDS} rounds, ${values.body} responses, history up to ${values['history-size']} MiB)`,
  );
  const rows = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const direct = await wrk({
      url: `http://127.0.0.1:${appPort}/`,
      host: `127.0.0.1:${appPort}`,
      connections: CONNECTIONS,
      seconds: SECONDS,
      name: 'direct',
    });
    const platformBefore = threadTimes(platform.pid);
    const clientBefore = threadTimes(client.pid);
    const tunnel = await wrk({
      url: `http://127.0.0.1:${edgePort}/`,
      host: HOST,
      connections: CONNECTIONS,
      seconds: SECONDS,
      name: 'wharf http',
    });
    // wrk's warm-up second is in the CPU but not in the count: count it at the same rate.
    const requests = tunnel.requests * (SECONDS + 1);
    const clientCpu = perRequest(client.pid, clientBefore, threadTimes(client.pid), requests);
    const platformCpu = perRequest(platform.pid, platformBefore, threadTimes(platform.pid), requests);
    const row = {
      direct,
      tunnel,
      ratio: tunnel.requests / direct.requests,
      platform: platformCpu.main + platformCpu.busiest + platformCpu.rest,
      client: clientCpu,
    };
    rows.push(row);
    console.log(
      `  round ${round}: direct ${fmt(direct.requests)} req/s (p99 ${fmt(direct.p99, 2)} ms), wharf http ${fmt(tunnel.requests)} req/s (p99 ${fmt(tunnel.p99, 2)} ms), ${fmt(row.ratio, 3)} of direct; ` +
        `CPU per request: platform ${fmt(row.platform, 1)} µs, client's tunnel thread ${fmt(clientCpu.main, 1)} µs, its history writer ${fmt(clientCpu.busiest, 1)} µs, the rest ${fmt(clientCpu.rest, 1)} µs`,
    );
  }

  client.kill('SIGINT');
  await new Promise((resolve) => client.once('exit', resolve));
  const file = join(home, 'mirror.db');
  const db = new SQLite(file, { readonly: true });
  const held = db
    .prepare(
      `SELECT count(*) AS exchanges,
              sum(CASE WHEN response_truncated = 0 THEN 1 ELSE 0 END) AS withBodies
         FROM captured_bodies`,
    )
    .get();
  db.close();
  console.log('');
  console.log(
    `wharf http: ${fmt(median(rows.map((r) => r.ratio)), 3)} of direct (median of ${ROUNDS} rounds), p99 ${fmt(median(rows.map((r) => r.tunnel.p99)), 2)} ms against ${fmt(median(rows.map((r) => r.direct.p99)), 2)} direct`,
  );
  console.log(
    `  CPU per request (medians): platform ${fmt(median(rows.map((r) => r.platform)), 1)} µs; client ${fmt(median(rows.map((r) => r.client.main)), 1)} µs on the tunnel's thread, ${fmt(median(rows.map((r) => r.client.busiest)), 1)} µs in the history's writer`,
  );
  console.log(
    `  history: ${fmt(held.exchanges)} exchanges kept, ${fmt(held.withBodies)} with their bodies; mirror.db ${fmt(statSync(file).size / 1024 / 1024)} MiB`,
  );
  platform.kill('SIGINT');
  await new Promise((resolve) => platform.once('exit', resolve));
}

await main().catch((error) => {
  console.error(error.stack ?? error);
  process.exitCode = 1;
});
