#!/usr/bin/env node
// Benchmark: the tunnel, all on loopback, in one run, against a baseline measured in the same run.
//  1. 1 GiB streamed through the tunnel (download and upload) versus straight to the app, with the RSS
//     of the edge process (the platform) and of the tunnel client process before and while streaming.
//     First, while the processes are fresh: later loads fill the edge's capture ring (1,000 exchanges,
//     bodies within a 64 MiB budget), which would show as streaming's RSS.
//  2. Requests/s (autocannon) for a 13-byte and a 64 KiB response, straight to the local app versus
//     through the tunnel (edge port, Host: <sub>.tunnel.localhost), at 1 and 50 connections; p50/p99
//     from autocannon at 50 connections, and from a sequential loop timed in microseconds at 1 (autocannon
//     keeps whole milliseconds, too coarse for "under 1 ms").
//  3. Capture on versus off (edge and client both), for the same loads, in rounds that measure off and on
//     back to back; the cost is the median of the rounds (a shared machine drifts more than it).
// Processes: the local app, the platform (API + edge, from dist/platform.js) and the tunnel client each
// run in a child process; autocannon and the public side run here.
// Targets: small responses >= 0.25 of direct at 50 connections; bulk >= 0.5 of direct; added p50 under
// 1 ms at 1 connection; RSS under 150 MB while streaming; capture costs under 10 %.
// Usage: npm run build && node bench/tunnel.mjs [--duration 4] [--rounds 2] [--bulk-mib 1024] [--strict]
// --strict: exit non-zero when a target is missed. --transport websocket: the tunnel's fallback transport.
// --cpu-prof DIR: CPU profiles of the platform and the client (see bench/profile-summary.mjs).
// --dist DIR: another build of the platform (and tunnel.js) than dist/, e.g. to compare two versions.
//
// The tunnel client is not an entry of dist/ (only the CLI and the platform are): it is taken from
// dist/tunnel.js when a build makes one, else bundled from src/core/tunnel/client.ts into a temp dir
// with rolldown (a devDependency), the same way the build bundles everything else.
import { fork } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    serve: { type: 'string' },
    'data-dir': { type: 'string' },
    module: { type: 'string' },
    dist: { type: 'string', default: 'dist' },
    duration: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '2' },
    'bulk-mib': { type: 'string', default: '1024' },
    'latency-requests': { type: 'string', default: '3000' },
    transport: { type: 'string', default: 'raw' },
    strict: { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
  },
});

const ROOT = new URL('..', import.meta.url);
const DIST = pathToFileURL(`${resolve(fileURLToPath(ROOT), values.dist)}/`);
const SUBDOMAIN = 'bench';
const SMALL = Buffer.from('Hello, World!'); // 13 bytes
const MEDIUM = Buffer.alloc(64 * 1024, 'w');
const MiB = 1024 * 1024;
const TARGETS = { small50: 0.25, bulk: 0.5, addedP50Ms: 1, rssMb: 150, captureCost: 0.1 };

switch (values.serve) {
  case 'app':
    await serveApp();
    break;
  case 'platform':
    await servePlatform(values['data-dir']);
    break;
  case 'client':
    await serveClient(JSON.parse(values.module));
    break;
  default:
    await main();
}

// ---------------------------------------------------------------------------------------------------
// Child processes.

/** Reports the process's peak RSS since the last reset, sampled every 20 ms. */
function trackPeakRss() {
  let peak = process.memoryUsage.rss();
  setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20).unref();
  process.on('message', (message) => {
    if (message?.cmd === 'peak-reset') {
      peak = process.memoryUsage.rss();
      process.send({ cmd: 'peak-reset', rss: peak });
    } else if (message?.cmd === 'peak')
      process.send({ cmd: 'peak', peak: Math.max(peak, process.memoryUsage.rss()) });
  });
  process.on('disconnect', () => process.exit(0));
}

async function serveApp() {
  const bulk = Buffer.alloc(MiB, 'b');
  const server = createServer((req, res) => {
    if (req.url === '/small') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': SMALL.length });
      res.end(SMALL);
    } else if (req.url === '/64k') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': MEDIUM.length });
      res.end(MEDIUM);
    } else if (req.url.startsWith('/bulk?')) {
      const mib = Number(new URL(req.url, 'http://app').searchParams.get('mib'));
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': mib * MiB });
      let sent = 0;
      const pump = () => {
        while (sent < mib) {
          sent += 1;
          if (!res.write(bulk)) return res.once('drain', pump);
        }
        res.end();
      };
      pump();
    } else if (req.url === '/sink') {
      let size = 0;
      req.on('data', (c) => (size += c.length));
      req.on('end', () => res.end(String(size)));
    } else {
      res.writeHead(404).end();
    }
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  trackPeakRss();
  process.send({ port: server.address().port });
}

async function servePlatform(dataDir) {
  const { buildPlatform } = await import(new URL('platform.js', DIST).href);
  // The upload streams --bulk-mib MiB through the edge in one body, over its default limit (100 MiB).
  const platform = await buildPlatform({ dataDir, limits: { bodyBytes: Number.MAX_SAFE_INTEGER } });
  await new Promise((resolve, reject) => {
    platform.edge.server.once('error', reject);
    platform.edge.server.listen(0, '127.0.0.1', resolve);
  });
  platform.config.edgePort = platform.edge.server.address().port;
  await platform.app.listen({ host: '127.0.0.1', port: 0 });
  const key = JSON.parse(readFileSync(join(dataDir, 'local-account.json'), 'utf8')).api_key;
  trackPeakRss();
  process.on('message', (message) => {
    if (message?.cmd === 'capture') {
      // A build from before the switch existed would ignore it: say so rather than measure nothing.
      if (!('capture' in platform.tunnels)) return process.send({ cmd: 'capture', ok: false });
      platform.tunnels.capture = message.on;
      process.send({ cmd: 'capture', ok: true });
    }
  });
  process.send({ apiPort: platform.app.server.address().port, edgePort: platform.config.edgePort, key });
}

async function serveClient({ module, platformUrl, apiKey, localPort, transport }) {
  const { TunnelClient } = await import(module);
  let client = null;
  const start = async (capture) => {
    await client?.stop();
    client = new TunnelClient({ platformUrl, apiKey, localPort, subdomain: SUBDOMAIN, transport, capture });
    // What a host of the client does with each exchange at least: receive it.
    let exchanges = 0;
    client.on('exchange', () => (exchanges += 1));
    return client.start();
  };
  const info = await start(true);
  trackPeakRss();
  process.on('message', (message) => {
    if (message?.cmd === 'capture') {
      start(message.on).then(() => process.send({ cmd: 'capture', ok: true }));
    }
  });
  process.send({ url: info.url });
}

// ---------------------------------------------------------------------------------------------------
// The run.

function start(mode, args = []) {
  // --cpu-prof DIR: the platform and the tunnel client each write a V8 CPU profile there when they end
  // (summarize them with bench/profile-summary.mjs).
  const profile =
    values['cpu-prof'] && mode !== 'app'
      ? ['--cpu-prof', '--cpu-prof-dir', values['cpu-prof'], '--cpu-prof-name', `${mode}.cpuprofile`]
      : [];
  const child = fork(fileURLToPath(import.meta.url), ['--serve', mode, '--dist', values.dist, ...args], {
    stdio: 'inherit',
    execArgv: profile,
  });
  return new Promise((resolve, reject) => {
    child.once('message', (info) => resolve({ child, ...info }));
    child.once('exit', (code) => reject(new Error(`${mode} exited with ${code}`)));
  });
}

/** Paired measurements `{ on, off }`: their medians, and the median cost (1 - on/off) of the pairs. */
function summarizePairs(pairs) {
  const median = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  };
  const costs = pairs.map((p) => 1 - p.on / p.off);
  return {
    on: median(pairs.map((p) => p.on)),
    off: median(pairs.map((p) => p.off)),
    cost: median(costs),
    costs,
  };
}

function ask(child, message) {
  return new Promise((resolve) => {
    const listener = (reply) => {
      if (reply?.cmd !== message.cmd) return;
      child.off('message', listener);
      resolve(reply);
    };
    child.on('message', listener);
    child.send(message);
  });
}

/** The tunnel client as an ES module: dist/tunnel.js if the build makes one, else bundled here. */
async function tunnelModule(tempDir) {
  const built = new URL('tunnel.js', DIST);
  if (existsSync(fileURLToPath(built))) return built.href;
  const { build } = await import('rolldown');
  await build({
    input: fileURLToPath(new URL('src/core/tunnel/client.ts', ROOT)),
    platform: 'node',
    external: [/^node:/, 'ws'],
    resolve: { extensionAlias: { '.js': ['.ts', '.js'] } },
    logLevel: 'silent',
    output: { dir: tempDir, format: 'esm', entryFileNames: 'tunnel.js' },
  });
  // Resolve `ws` from this checkout's node_modules.
  const { writeFileSync, symlinkSync } = await import('node:fs');
  symlinkSync(fileURLToPath(new URL('node_modules', ROOT)), join(tempDir, 'node_modules'));
  writeFileSync(join(tempDir, 'package.json'), '{"type":"module"}');
  return pathToFileURL(join(tempDir, 'tunnel.js')).href;
}

async function load(autocannon, url, headers, connections) {
  const options = { url, headers, connections, duration: Number(values.duration) };
  await autocannon({ ...options, duration: 1 }); // warm-up
  const result = await autocannon(options);
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0)
    throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  return result;
}

/** Sequential requests on one keep-alive connection, timed in microseconds. */
async function latency(port, host, path, count) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const one = () =>
    new Promise((resolve, reject) => {
      const started = process.hrtime.bigint();
      const req = request({ host: '127.0.0.1', port, path, agent, headers: { host } }, (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve(Number(process.hrtime.bigint() - started) / 1e6));
      });
      req.on('error', reject);
      req.end();
    });
  for (let i = 0; i < 200; i++) await one(); // warm-up
  const times = [];
  for (let i = 0; i < count; i++) times.push(await one());
  agent.destroy();
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(count * 0.5)], p99: times[Math.floor(count * 0.99)] };
}

/** Streams `mib` MiB down (GET /bulk) or up (POST /sink); resolves with MiB/s. */
function bulk(port, host, mib, direction) {
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

function fmt(n, digits = 0) {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

async function main() {
  const { default: autocannon } = await import('autocannon');
  const temp = mkdtempSync(join(tmpdir(), 'wharf-bench-tunnel-'));
  const dataDir = join(temp, 'data');
  const moduleDir = join(temp, 'module');
  const children = [];
  const results = [];
  const misses = [];
  try {
    const { mkdirSync } = await import('node:fs');
    mkdirSync(dataDir);
    mkdirSync(moduleDir);
    const module = await tunnelModule(moduleDir);
    const app = await start('app');
    children.push(app.child);
    const platform = await start('platform', ['--data-dir', dataDir]);
    children.push(platform.child);
    const client = await start('client', [
      '--module',
      JSON.stringify({
        module,
        platformUrl: `http://127.0.0.1:${platform.apiPort}`,
        apiKey: platform.key,
        localPort: app.port,
        transport: values.transport,
      }),
    ]);
    children.push(client.child);
    const tunnelHost = `${SUBDOMAIN}.tunnel.localhost:${platform.edgePort}`;
    const direct = { port: app.port, host: `127.0.0.1:${app.port}`, url: `http://127.0.0.1:${app.port}` };
    const tunnel = {
      port: platform.edgePort,
      host: tunnelHost,
      url: `http://127.0.0.1:${platform.edgePort}`,
    };
    const rounds = Number(values.rounds);

    console.log(
      `Tunnel bench (${values.transport} transport): ${values.duration} s per load, best of ${rounds}, ` +
        `${process.platform} ${process.arch}, Node ${process.version}, ${(await import('node:os')).cpus().length} CPUs`,
    );

    // 1. Bulk, first: the processes are fresh, so their RSS shows what streaming costs and nothing else.
    const mib = Number(values['bulk-mib']);
    const bulkResults = {};
    for (const direction of ['download', 'upload']) {
      const directRate = await bulk(direct.port, direct.host, mib, direction);
      const [edgeBefore, clientBefore] = await Promise.all([
        ask(platform.child, { cmd: 'peak-reset' }),
        ask(client.child, { cmd: 'peak-reset' }),
      ]);
      const tunnelRate = await bulk(tunnel.port, tunnel.host, mib, direction);
      const [edgePeak, clientPeak] = await Promise.all([
        ask(platform.child, { cmd: 'peak' }),
        ask(client.child, { cmd: 'peak' }),
      ]);
      bulkResults[direction] = {
        directRate,
        tunnelRate,
        edgeMb: edgePeak.peak / 1e6,
        clientMb: clientPeak.peak / 1e6,
        edgeBeforeMb: edgeBefore.rss / 1e6,
        clientBeforeMb: clientBefore.rss / 1e6,
      };
    }
    console.log(
      `\n${fmt(mib)} MiB streamed, direct vs through the tunnel (RSS before -> peak while streaming)`,
    );
    for (const [direction, r] of Object.entries(bulkResults)) {
      console.log(
        `  ${direction.padEnd(8)}  direct ${fmt(r.directRate)} MiB/s, tunnel ${fmt(r.tunnelRate)} MiB/s, ratio ${fmt(r.tunnelRate / r.directRate, 2)}; RSS edge ${fmt(r.edgeBeforeMb)} -> ${fmt(r.edgeMb)} MB, client ${fmt(r.clientBeforeMb)} -> ${fmt(r.clientMb)} MB`,
      );
    }

    // 2. Requests/s and latency.
    const rps = {};
    for (const [name, path] of [
      ['13 B', '/small'],
      ['64 KiB', '/64k'],
    ]) {
      for (const connections of [1, 50]) {
        const best = { direct: null, tunnel: null };
        for (let round = 0; round < rounds; round++) {
          for (const [side, target] of [
            ['direct', direct],
            ['tunnel', tunnel],
          ]) {
            const result = await load(autocannon, target.url + path, { host: target.host }, connections);
            if (!best[side] || result.requests.average > best[side].requests.average) best[side] = result;
          }
        }
        rps[`${name}@${connections}`] = best;
      }
    }
    const lat = {};
    for (const [name, path] of [
      ['13 B', '/small'],
      ['64 KiB', '/64k'],
    ]) {
      const count = Number(values['latency-requests']);
      lat[name] = {
        direct: await latency(direct.port, direct.host, path, count),
        tunnel: await latency(tunnel.port, tunnel.host, path, count),
      };
    }

    console.log('\nRequests/s (autocannon), direct vs through the tunnel');
    console.log('  response  conns     direct     tunnel   ratio   p50/p99 direct   p50/p99 tunnel');
    for (const [key, best] of Object.entries(rps)) {
      const [name, connections] = key.split('@');
      const ratio = best.tunnel.requests.average / best.direct.requests.average;
      const latencies =
        connections === '1'
          ? [lat[name].direct, lat[name].tunnel].map((l) => `${fmt(l.p50, 2)}/${fmt(l.p99, 2)} ms`)
          : [best.direct, best.tunnel].map((r) => `${r.latency.p50}/${r.latency.p99} ms`);
      console.log(
        `  ${name.padEnd(8)}  ${connections.padStart(5)}  ${fmt(best.direct.requests.average).padStart(9)}  ${fmt(best.tunnel.requests.average).padStart(9)}   ${fmt(ratio, 2)}   ${latencies[0].padStart(14)}   ${latencies[1].padStart(14)}`,
      );
      results.push({ key, ratio });
    }
    console.log('  (p50/p99 at 1 connection: sequential requests timed in µs; at 50: autocannon, whole ms)');

    // 3. Capture on versus off: the same loads, alternating.
    const capture = {};
    const setCapture = async (on) => {
      const replies = await Promise.all([
        ask(platform.child, { cmd: 'capture', on }),
        ask(client.child, { cmd: 'capture', on }),
      ]);
      if (replies.some((r) => !r.ok)) throw new Error('this build cannot switch capture off: rebuild dist/');
    };
    // A shared machine drifts by more than the cost measured: each round measures off and on back to
    // back (in turn first), and the cost is the median of the rounds' on/off ratios.
    const captureRounds = Math.max(rounds * 2, 5);
    for (const [name, path] of [
      ['13 B', '/small'],
      ['64 KiB', '/64k'],
    ]) {
      const pairs = [];
      for (let round = 0; round < captureRounds; round++) {
        const pair = {};
        for (const on of round % 2 === 0 ? [false, true] : [true, false]) {
          await setCapture(on);
          const result = await load(autocannon, tunnel.url + path, { host: tunnel.host }, 50);
          pair[on ? 'on' : 'off'] = result.requests.average;
        }
        pairs.push(pair);
      }
      capture[name] = summarizePairs(pairs);
    }
    const bulkPairs = [];
    for (let round = 0; round < 3; round++) {
      const pair = {};
      for (const on of round % 2 === 0 ? [false, true] : [true, false]) {
        await setCapture(on);
        pair[on ? 'on' : 'off'] = await bulk(tunnel.port, tunnel.host, Math.min(mib, 256), 'download');
      }
      bulkPairs.push(pair);
    }
    capture.bulk = summarizePairs(bulkPairs);
    console.log(
      `\nCapture on vs off (edge and client), through the tunnel at 50 connections, median of ${captureRounds} paired rounds`,
    );
    for (const [name, c] of Object.entries(capture)) {
      const unit = name === 'bulk' ? 'MiB/s' : 'req/s';
      console.log(
        `  ${(name === 'bulk' ? `${fmt(Math.min(mib, 256))} MiB` : name).padEnd(9)} off ${fmt(c.off)} ${unit}, on ${fmt(c.on)} ${unit}: costs ${fmt(Math.max(0, c.cost * 100), 1)} % (rounds: ${c.costs.map((x) => fmt(x * 100, 0)).join(', ')} %)`,
      );
    }

    // Against the targets.
    const small50 = results.find((r) => r.key === '13 B@50').ratio;
    const bulkRatio = Math.min(...Object.values(bulkResults).map((r) => r.tunnelRate / r.directRate));
    const addedP50 = Math.max(...Object.values(lat).map((l) => l.tunnel.p50 - l.direct.p50));
    const rss = Math.max(...Object.values(bulkResults).flatMap((r) => [r.edgeMb, r.clientMb]));
    const captureCost = Math.max(...Object.values(capture).map((c) => c.cost));
    const checks = [
      [
        `small responses at 50 connections: ${fmt(small50, 2)} of direct (target >= ${TARGETS.small50})`,
        small50 >= TARGETS.small50,
      ],
      [
        `bulk: ${fmt(bulkRatio, 2)} of direct, the slower direction (target >= ${TARGETS.bulk})`,
        bulkRatio >= TARGETS.bulk,
      ],
      [
        `added p50 at 1 connection: ${fmt(addedP50, 2)} ms, the larger response (target < ${TARGETS.addedP50Ms} ms)`,
        addedP50 < TARGETS.addedP50Ms,
      ],
      [
        `peak RSS while streaming: ${fmt(rss)} MB, edge or client (target < ${TARGETS.rssMb} MB)`,
        rss < TARGETS.rssMb,
      ],
      [
        `capture costs ${fmt(Math.max(0, captureCost) * 100, 1)} %, the worst load (target < ${TARGETS.captureCost * 100} %)`,
        captureCost < TARGETS.captureCost,
      ],
    ];
    console.log('\nTargets');
    for (const [text, ok] of checks) {
      console.log(`  ${ok ? 'PASS' : 'MISS'}  ${text}`);
      if (!ok) misses.push(text);
    }
    if (values.strict && misses.length > 0) process.exitCode = 1;
  } finally {
    for (const child of children) child.disconnect();
    rmSync(temp, { recursive: true, force: true });
  }
}
