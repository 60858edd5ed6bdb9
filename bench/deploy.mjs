#!/usr/bin/env node
// Benchmark: the deploy runtime and the app edge, in one run.
//  1. Deploy overhead: from POST /projects/:id/deploy of an uploaded Node app without dependencies until
//     GET /projects/:id says `running` (polled every 20 ms), versus spawning the same app directly
//     (`node server.js` with PORT) until its port accepts connections. Median of N each (redeploys
//     count too); target: overhead < 1 s.
//  2. Requests/s through the edge (Host: <sub>.localhost) versus straight to the deployed app's port,
//     same autocannon load; direct and edge alternate twice and the best of each counts, to lessen the
//     noise of a small machine. Target: edge/direct >= 0.5, and no request failed.
// The platform runs in this process (API and edge on 127.0.0.1, port 0, a temp data dir); autocannon
// runs in a child process so the load generator does not share the edge's event loop.
// Usage: npm run build && node bench/deploy.mjs [--runs 5] [--duration 5] [--connections 50] [--strict]
// --strict: exit non-zero when a target is missed.
import { fork, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    load: { type: 'string' },
    runs: { type: 'string', default: '5' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    strict: { type: 'boolean', default: false },
  },
});

const SUBDOMAIN = 'bench-deploy';
const POLL_MS = 20;
const DEPLOY_TIMEOUT_MS = 60_000;
const OVERHEAD_TARGET_MS = 1000;
const RATIO_TARGET = 0.5;

const SERVER_JS = `
const http = require('node:http');
const server = http.createServer((req, res) => res.end('hello from the bench ' + req.url));
server.listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;
const PACKAGE_JSON = JSON.stringify({
  name: 'bench-app',
  private: true,
  scripts: { start: 'node server.js' },
});

// --- the load generator (a child process) ---

async function loadChild(options) {
  const { default: autocannon } = await import('autocannon');
  const warmUp = await autocannon({ ...options, duration: 1 });
  process.send({ measuring: true });
  const result = await autocannon(options);
  process.send({
    requests: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    // Warm-up included; autocannon's errors include timeouts.
    failed: warmUp.non2xx + warmUp.errors + result.non2xx + result.errors,
    total: warmUp.requests.total + result.requests.total,
  });
  process.disconnect();
}

function load(url, headers = {}) {
  const options = {
    url,
    headers,
    connections: Number(values.connections),
    duration: Number(values.duration),
  };
  const child = fork(new URL(import.meta.url), ['--load', JSON.stringify(options)], { stdio: 'inherit' });
  children.add(child);
  return new Promise((resolve, reject) => {
    let result = null;
    // This process's CPU while the load runs (after the warm-up): the edge's, when the load goes there.
    let cpu = null;
    child.on('message', (message) => {
      if (message.measuring) cpu = process.cpuUsage();
      else result = { ...message, cpuMicros: cpu ? sum(process.cpuUsage(cpu)) : NaN };
    });
    child.once('exit', (code) => {
      children.delete(child);
      if (result) resolve(result);
      else reject(new Error(`the load generator exited with ${code} without a result`));
    });
  });
}

// --- helpers ---

/** Child processes this script started (the directly spawned app, the load generator). */
const children = new Set();

const sum = ({ user, system }) => user + system;
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** Spawns `node server.js` in `dir` and resolves with the ms until its port accepts connections. */
async function spawnDirect(dir) {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, ['server.js'], {
    cwd: dir,
    env: { ...process.env, PORT: String(port) },
    stdio: 'ignore',
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  const deadline = Date.now() + DEPLOY_TIMEOUT_MS;
  while (!(await accepts(port))) {
    if (child.exitCode !== null) throw new Error(`node server.js exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error(`node server.js did not listen on ${port}`);
    await sleep(5);
  }
  const ms = performance.now() - started;
  await stop(child);
  return ms;
}

async function archive(dir) {
  const { create } = await import('tar');
  const chunks = [];
  for await (const chunk of create({ gzip: true, cwd: dir, portable: true }, ['package.json', 'server.js']))
    chunks.push(chunk);
  return Buffer.concat(chunks);
}

// --- the run ---

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'wharf-bench-deploy-'));
  const appDir = mkdtempSync(join(tmpdir(), 'wharf-bench-deploy-app-'));
  let platform = null;
  const cleanup = async () => {
    await Promise.all([...children].map(stop));
    // Closing the platform closes the edge and stops every deployed process.
    await platform?.app.close();
    platform = null;
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(appDir, { recursive: true, force: true });
  };
  const interrupted = () => void cleanup().finally(() => process.exit(130));
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    writeFileSync(join(appDir, 'package.json'), PACKAGE_JSON);
    writeFileSync(join(appDir, 'server.js'), SERVER_JS);

    const { buildPlatform } = await import('../dist/platform.js');
    platform = await buildPlatform({ dataDir });
    // As servePlatform does: the edge first (port 0 picks one, which the project URLs then carry).
    await new Promise((resolve, reject) => {
      const server = platform.edge.server;
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    platform.config.edgePort = platform.edge.server.address().port;
    await platform.app.listen({ host: '127.0.0.1', port: 0 });
    const api = `http://127.0.0.1:${platform.app.server.address().port}/api/v1`;
    const edgePort = platform.config.edgePort;
    const key = JSON.parse(readFileSync(join(dataDir, 'local-account.json'), 'utf8')).api_key;

    const call = async (method, path, body, headers = {}) => {
      const res = await fetch(`${api}${path}`, {
        method,
        headers: {
          'x-api-key': key,
          ...(body && !Buffer.isBuffer(body) ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
        body: body === undefined ? undefined : Buffer.isBuffer(body) ? body : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    };
    const expect = (result, status, what) => {
      if (result.status !== status)
        throw new Error(`${what}: ${result.status} ${JSON.stringify(result.body)}`);
      return result.body;
    };

    const project = expect(
      await call('POST', '/projects', {
        name: 'Bench deploy',
        subdomain: SUBDOMAIN,
        deploy_source: 'upload',
      }),
      201,
      'create project',
    );
    const tarball = await archive(appDir);
    expect(
      await call('POST', `/projects/${project.id}/upload`, tarball, { 'content-type': 'application/gzip' }),
      200,
      'upload',
    );

    const deployOnce = async () => {
      const started = performance.now();
      expect(await call('POST', `/projects/${project.id}/deploy`), 202, 'deploy');
      const deadline = Date.now() + DEPLOY_TIMEOUT_MS;
      for (;;) {
        const detail = expect(await call('GET', `/projects/${project.id}`), 200, 'get project');
        if (detail.project.status === 'running') return performance.now() - started;
        if (detail.project.status === 'failed' || Date.now() > deadline) {
          const logs = detail.logs.map((l) => `  ${l.line}`).join('\n');
          throw new Error(
            `the deploy is ${detail.project.status}: ${detail.project.last_deploy_error}\n${logs}`,
          );
        }
        await sleep(POLL_MS);
      }
    };

    // 1. Deploy overhead: direct spawn and deploy alternate, so both see the same machine state.
    const runs = Number(values.runs);
    const directTimes = [];
    const deployTimes = [];
    await spawnDirect(appDir); // warm-up: the first spawn pays for cold caches
    for (let i = 0; i < runs; i++) {
      directTimes.push(await spawnDirect(appDir));
      deployTimes.push(await deployOnce());
    }
    const overhead = median(deployTimes) - median(directTimes);

    // 2. Requests/s: the serving version's own port, and the same app through the edge.
    const detail = expect(await call('GET', `/projects/${project.id}`), 200, 'get project');
    const ports = detail.logs.flatMap((l) => {
      const match = /^starting .*\(PORT=(\d+)\)$/.exec(l.line);
      return match ? [Number(match[1])] : [];
    });
    // Every deploy started a new process of the app: none was skipped or reused.
    if (ports.length < runs) throw new Error(`${runs} deploys, but ${ports.length} "starting" log lines`);
    const appPort = ports.at(-1);
    const host = `${SUBDOMAIN}.localhost`;
    // fetch would send its own Host: a plain request carries the app's.
    const probe = await new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: edgePort, path: '/probe', headers: { host } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode, body }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
    if (probe.status !== 200 || probe.body !== 'hello from the bench /probe')
      throw new Error(`the edge answered ${probe.status}: ${probe.body.slice(0, 200)}`);

    const directUrl = `http://127.0.0.1:${appPort}/`;
    const edgeUrl = `http://127.0.0.1:${edgePort}/`;
    const directRuns = [];
    const edgeRuns = [];
    for (let i = 0; i < 2; i++) {
      directRuns.push(await load(directUrl));
      edgeRuns.push(await load(edgeUrl, { host }));
    }
    const best = (list) => list.reduce((a, b) => (b.requests > a.requests ? b : a));
    const direct = best(directRuns);
    const edge = best(edgeRuns);
    const ratio = edge.requests / direct.requests;
    const all = [...directRuns, ...edgeRuns];
    const failed = all.reduce((n, r) => n + r.failed, 0);
    const total = all.reduce((n, r) => n + r.total, 0);
    // What one proxied request costs the edge (this process), in CPU time.
    const edgeCpu = edge.cpuMicros / (edge.requests * Number(values.duration));

    const overheadOk = overhead < OVERHEAD_TARGET_MS;
    const ratioOk = ratio >= RATIO_TARGET;
    const errorsOk = failed === 0;
    const verdict = (ok) => (ok ? 'PASS' : 'FAIL');
    const list = (numbers) => numbers.map((n) => n.toFixed(0)).join(', ');
    const rate = (r) => `${r.requests.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms`;
    console.log(`Deploy to running (upload project, Node app without dependencies; median of ${runs})`);
    console.log(
      `  wharf (POST deploy → running):   ${median(deployTimes).toFixed(0)} ms  (${list(deployTimes)})`,
    );
    console.log(
      `  node server.js (spawn → listens): ${median(directTimes).toFixed(0)} ms  (${list(directTimes)})`,
    );
    console.log(
      `  overhead: ${overhead.toFixed(0)} ms (target < ${OVERHEAD_TARGET_MS} ms) ${verdict(overheadOk)}`,
    );
    console.log(
      `Requests/s through the edge vs direct (${values.connections} connections, ${values.duration} s, best of 2 alternating)`,
    );
    console.log(`  edge (Host: ${host}): ${rate(edge)}  (runs: ${list(edgeRuns.map((r) => r.requests))})`);
    console.log(
      `  direct (port ${appPort}): ${rate(direct)}  (runs: ${list(directRuns.map((r) => r.requests))})`,
    );
    console.log(`  edge CPU: ${edgeCpu.toFixed(0)} µs per proxied request`);
    console.log(`  ratio: ${ratio.toFixed(2)} (target >= ${RATIO_TARGET}) ${verdict(ratioOk)}`);
    console.log(`  failed requests (non-2xx or errors): ${failed} of ${total} ${verdict(errorsOk)}`);
    if (values.strict && !(overheadOk && ratioOk && errorsOk)) process.exitCode = 1;
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    await cleanup();
  }
}

if (values.load) await loadChild(JSON.parse(values.load));
else await main();
