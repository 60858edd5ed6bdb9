#!/usr/bin/env node
// Benchmark: the app edge, in one run, against a baseline measured in the same run. Requests/s
// (autocannon, 50 connections) and p50/p99 for a 13-byte and a 64 KiB response of a deployed app:
//   direct      straight to the app's port,
//   node        through the Node edge (`--front none`, the default),
//   front       through the HAProxy front (`--front haproxy`),
// plain HTTP, then HTTPS for the two edges (the app itself speaks plain HTTP). Ratios: each edge against
// direct, the front against the Node edge, and HTTPS against plain HTTP for each edge.
// Targets: through the front >= 0.5 of direct for both responses over plain HTTP; HTTPS costs the front
// under 30 % (HTTPS >= 0.7 of plain, through the front).
//
// Processes: two platforms (from dist/platform.js, the process runtime, each with the same app deployed
// from an upload: `node server.js`), one without a front and one with HAProxy in front, each in a child
// process; the load generator runs in a child process of its own.
//
// HTTPS without a CA: the certificate is a self-signed one for bench.localhost made here with openssl,
// put in each platform's store as an issued certificate (its key sealed with the platform's secret, which
// the bench sets, as the certificate manager seals the keys it orders) before the platform starts, so
// that both edges serve it the way they serve a CA's certificate: the Node edge through the certificate
// manager (SNI), the front through the certificate files it writes for HAProxy. No order is made:
// bench.localhost is a name no CA signs, and the ACME directory is never reached.
// The sealing here mirrors src/server/ai/keys.ts: if it drifts, the platform says "cannot be used" and
// the HTTPS loads fail, loudly.
//
// Usage: npm run build && node bench/edge.mjs [--duration 4] [--rounds 2] [--connections 50]
//          [--latency-requests 2000] [--strict] [--cpu-prof DIR]
// --cpu-prof DIR: each platform's V8 CPU profile, `<front>[-tls].cpuprofile` (bench/profile-summary.mjs).
// Needs HAProxy (apt-get install haproxy) and openssl; --strict: exit non-zero when a target is missed.
import { execFileSync, fork } from 'node:child_process';
import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { wharfNodeFlags } from '../scripts/node-flags.mjs';
import { deployApp } from './lib/deploy-app.mjs';
import { HAVE_WRK, fmt, latency as sequential, wrk as runWrk } from './lib/load.mjs';
import { freePort } from './lib/ports.mjs';

const { values } = parseArgs({
  options: {
    serve: { type: 'string' },
    load: { type: 'string' },
    front: { type: 'string', default: 'none' },
    tls: { type: 'boolean', default: false },
    'data-dir': { type: 'string' },
    pem: { type: 'string' },
    duration: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '2' },
    connections: { type: 'string', default: '50' },
    client: { type: 'string' },
    'latency-requests': { type: 'string', default: '2000' },
    strict: { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
  },
});

const HOST = 'bench.localhost';
/**
 * The TLS name the loads ask for: a load generator sends the URL's host as SNI (wrk cannot be told
 * another), and `localhost` is the one name under .localhost that resolves everywhere. Requests carry
 * Host: bench.localhost, which is what both edges route by.
 */
const SNI = 'localhost';
const SECRET = 'wharf-bench-edge-secret-of-at-least-32-bytes';
const TARGETS = { frontPlain: 0.5, frontTlsCost: 0.3 };
const BODIES = [
  ['13 B', '/small'],
  ['64 KiB', '/64k'],
];

const SERVER_JS = `
const http = require('node:http');
const small = Buffer.from('Hello, World!');
const medium = Buffer.alloc(64 * 1024, 'w');
const server = http.createServer((req, res) => {
  const body = req.url === '/small' ? small : req.url === '/64k' ? medium : null;
  if (!body) return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
  res.end(body);
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT));
`;

/** Child processes this script started (the platforms, the load generator). */
const children = new Set();

// ---------------------------------------------------------------------------------------------------
// Children.

/** The same sealing as src/server/ai/keys.ts (sealAiKey), under the certificate manager's context. */
function seal(secret, context, plaintext) {
  const kek = Buffer.from(hkdfSync('sha256', Buffer.from(secret), 'wharf/ai-keys', 'aes-256-gcm v1', 32));
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', kek, iv, { authTagLength: 16 });
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return {
    ciphertext: ciphertext.toString('base64'),
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  };
}

function listen(server, port) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(server.address().port);
    });
  });
}

/** A platform (as servePlatform starts one) with the app deployed; reports its ports. */
async function servePlatform() {
  const dataDir = values['data-dir'];
  const { cert, key } = JSON.parse(values.pem);
  const { buildPlatform } = await import('../dist/platform.js');
  const platform = await buildPlatform({
    dataDir,
    secret: SECRET,
    runtime: 'process',
    front: values.front,
    logger: false,
    // Never reached: the only names are under .localhost, which no CA signs.
    ...(values.tls ? { tls: { httpsPort: 0, acme: { directoryUrl: 'https://127.0.0.1:9/directory' } } } : {}),
  });
  // Whatever happens, the platform closes (stopping its app and HAProxy) before this process ends.
  const close = (code) => {
    platform.app.close().finally(() => process.exit(code));
  };
  process.on('disconnect', () => close(0));
  process.on('error', () => close(1));
  try {
    await serveOn(platform, dataDir, cert, key);
  } catch (error) {
    console.error(`the platform (--front ${values.front}${values.tls ? ', HTTPS' : ''}): ${error.stack}`);
    close(1);
  }
}

async function serveOn(platform, dataDir, cert, key) {
  // The certificate, as the certificate manager keeps one it was issued (loaded at its start).
  const now = new Date();
  await platform.db
    .insertInto('tls_certificates')
    .values({
      name: SNI,
      challenge: 'http-01',
      status: 'issued',
      cert_pem: cert,
      key_secret: JSON.stringify(seal(SECRET, `tls:${SNI}`, key)),
      not_before: now.toISOString(),
      not_after: new Date(now.getTime() + 86_400_000).toISOString(),
      error: null,
      failures: 0,
      next_attempt_at: null,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    })
    .execute();
  const warnings = [];
  platform.events.on('event', (event) => {
    if (event.level === 'warn' && !/directory|ECONNREFUSED|certificates:/.test(event.message))
      warnings.push(event.message);
  });
  let edgePort;
  let httpsPort = null;
  if (platform.front) {
    [edgePort, httpsPort] = [await freePort(), values.tls ? await freePort() : null];
    await platform.front.start({ host: '127.0.0.1', port: edgePort, httpsPort });
  } else {
    edgePort = await listen(platform.edge.server, 0);
    if (values.tls) httpsPort = await listen(platform.edge.secureServer, 0);
  }
  platform.config.edgePort = edgePort;
  platform.config.tls.httpsPort = httpsPort;
  await platform.app.listen({ host: '127.0.0.1', port: 0 });
  await platform.tls?.start();

  const target = await deployApp(platform, { dataDir, subdomain: 'bench', serverJs: SERVER_JS });
  await platform.front?.sync();
  process.send({
    edgePort,
    httpsPort,
    appPort: target.port,
    warnings,
    front: platform.front?.version ?? null,
  });
}

async function loadChild(options) {
  const { default: autocannon } = await import('autocannon');
  const warmUp = await autocannon({ ...options, duration: 1 });
  const result = await autocannon(options);
  process.send({
    requests: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failed: warmUp.non2xx + warmUp.errors + result.non2xx + result.errors,
    total: warmUp.requests.total + result.requests.total,
  });
  process.disconnect();
}

// ---------------------------------------------------------------------------------------------------
// The run.

function start(args) {
  // --cpu-prof DIR: each platform writes a V8 CPU profile there when it ends (open it in Chrome's
  // DevTools, or summarize it with bench/profile-summary.mjs).
  const name = args[1] === 'platform' ? `${args[3]}${args.includes('--tls') ? '-tls' : ''}.cpuprofile` : '';
  const profile =
    values['cpu-prof'] && name
      ? ['--cpu-prof', '--cpu-prof-dir', values['cpu-prof'], '--cpu-prof-name', name]
      : [];
  // The flags `wharf` runs Node with, as the platform runs in use.
  const child = fork(new URL(import.meta.url), args, {
    stdio: 'inherit',
    execArgv: [...wharfNodeFlags(), ...profile],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function startPlatform(front, tls, dataDir, pem) {
  mkdirSync(dataDir);
  const child = start([
    '--serve',
    'platform',
    '--front',
    front,
    ...(tls ? ['--tls'] : []),
    '--data-dir',
    dataDir,
    '--pem',
    JSON.stringify(pem),
  ]);
  return new Promise((resolve, reject) => {
    child.once('message', (info) => resolve({ child, ...info }));
    child.once('exit', (code) => reject(new Error(`the platform (--front ${front}) exited with ${code}`)));
  });
}

/** The load generator: wrk (a C client: its own cost, TLS above all, weighs less) when installed. */
const CLIENT = values.client ?? (HAVE_WRK ? 'wrk' : 'autocannon');

function load(target, path) {
  return CLIENT === 'wrk' ? wrk(target, path) : autocannon(target, path);
}

/** One wrk load (after a 1 s warm-up): requests/s and its p50/p99 in ms. */
function wrk(target, path) {
  const url = target.tls ? `https://${SNI}:${target.port}${path}` : `http://127.0.0.1:${target.port}${path}`;
  const connections = Number(values.connections);
  return runWrk({
    url,
    host: target.host,
    connections,
    seconds: Number(values.duration),
    name: `${target.name} ${path}`,
  });
}

/** One autocannon load, in a child process: requests/s and its p50/p99 (whole ms). */
function autocannon(target, path) {
  const options = {
    url: `${target.tls ? 'https' : 'http'}://127.0.0.1:${target.port}${path}`,
    headers: { host: target.host },
    connections: Number(values.connections),
    duration: Number(values.duration),
    ...(target.tls ? { servername: SNI } : {}),
  };
  const child = start(['--load', JSON.stringify(options)]);
  return new Promise((resolve, reject) => {
    let result = null;
    child.on('message', (message) => (result = message));
    child.once('exit', (code) => {
      if (!result) return reject(new Error(`the load generator exited with ${code} without a result`));
      if (result.failed > 0)
        return reject(
          new Error(`${target.name} ${path}: ${result.failed} of ${result.total} requests failed`),
        );
      resolve(result);
    });
  });
}

/** Sequential requests on one keep-alive connection, timed in µs: p50/p99 in ms. */
function latency(target, path, count) {
  const tls = target.tls ? { servername: SNI } : null;
  return sequential({ port: target.port, host: target.host, path, count, tls, name: target.name });
}

function selfSigned(dir) {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${SNI}`,
      '-addext',
      `subjectAltName=DNS:${SNI},DNS:${HOST}`,
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  return {
    cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    key: readFileSync(join(dir, 'key.pem'), 'utf8'),
  };
}

async function main() {
  const temp = mkdtempSync(join(tmpdir(), 'wharf-bench-edge-'));
  const misses = [];
  const stop = () => {
    for (const child of children) {
      if (child.connected) child.disconnect();
      else child.kill();
    }
  };
  process.once('SIGINT', () => {
    stop();
    process.exit(130);
  });
  try {
    const pem = selfSigned(temp);
    // Four platforms (HTTPS on, plain HTTP redirects: plain loads need platforms without it), started one
    // at a time; each waits, idle, while the others are measured.
    const node = await startPlatform('none', false, join(temp, 'node'), pem);
    const front = await startPlatform('haproxy', false, join(temp, 'front'), pem);
    const nodeTls = await startPlatform('none', true, join(temp, 'node-tls'), pem);
    const frontTls = await startPlatform('haproxy', true, join(temp, 'front-tls'), pem);
    for (const p of [node, front, nodeTls, frontTls]) {
      for (const warning of p.warnings) console.warn(`platform: ${warning}`);
    }
    const host = (port) => `${HOST}:${port}`;
    const targets = {
      direct: { name: 'direct', port: front.appPort, host: `127.0.0.1:${front.appPort}`, tls: false },
      node: { name: 'Node edge', port: node.edgePort, host: host(node.edgePort), tls: false },
      front: { name: 'HAProxy front', port: front.edgePort, host: host(front.edgePort), tls: false },
      nodeTls: { name: 'Node edge HTTPS', port: nodeTls.httpsPort, host: HOST, tls: true },
      frontTls: { name: 'HAProxy front HTTPS', port: frontTls.httpsPort, host: HOST, tls: true },
    };
    const rounds = Number(values.rounds);
    console.log(
      `Edge bench: ${values.duration} s per load at ${values.connections} connections, best of ${rounds}; ` +
        `${CLIENT === 'wrk' ? 'wrk -t1' : 'autocannon'}; HAProxy ${frontTls.front}; ${process.platform} ${process.arch}, Node ${process.version}, ${cpus().length} CPUs`,
    );

    const results = {};
    for (const [name, path] of BODIES) {
      const best = {};
      for (let round = 0; round < rounds; round++) {
        for (const [key, target] of Object.entries(targets)) {
          const result = await load(target, path);
          if (!best[key] || result.requests > best[key].requests) best[key] = result;
        }
      }
      const count = Number(values['latency-requests']);
      for (const [key, target] of Object.entries(targets)) best[key].seq = await latency(target, path, count);
      results[name] = best;
    }

    console.log(
      `\nRequests/s (${CLIENT}) and latency: p50/p99 at ${values.connections} connections (${CLIENT === 'wrk' ? 'wrk' : 'autocannon, whole ms'}) and`,
    );
    console.log('at 1 connection (sequential requests from this process, timed in µs)');
    console.log(
      `  response  path                       req/s   ${`p50/p99 @${values.connections}`.padStart(15)}      p50/p99 @1`,
    );
    for (const [name, best] of Object.entries(results)) {
      for (const [key, target] of Object.entries(targets)) {
        const r = best[key];
        console.log(
          `  ${name.padEnd(8)}  ${target.name.padEnd(20)} ${fmt(r.requests).padStart(9)}   ${`${fmt(r.p50, 2)}/${fmt(r.p99, 2)} ms`.padStart(15)}   ${`${fmt(r.seq.p50, 2)}/${fmt(r.seq.p99, 2)} ms`.padStart(13)}`,
        );
      }
    }

    console.log('\nRatios (requests/s)');
    const ratio = (a, b, name) => results[name][a].requests / results[name][b].requests;
    for (const [name] of BODIES) {
      console.log(
        `  ${name.padEnd(8)}  Node edge/direct ${fmt(ratio('node', 'direct', name), 2)}   front/direct ${fmt(ratio('front', 'direct', name), 2)}   front/Node edge ${fmt(ratio('front', 'node', name), 2)}`,
      );
      console.log(
        `  ${''.padEnd(8)}  HTTPS/plain: Node edge ${fmt(ratio('nodeTls', 'node', name), 2)}, front ${fmt(ratio('frontTls', 'front', name), 2)}   front/Node edge over HTTPS ${fmt(ratio('frontTls', 'nodeTls', name), 2)}`,
      );
    }

    const checks = [];
    for (const [name] of BODIES) {
      const plain = ratio('front', 'direct', name);
      checks.push([
        `${name}: through the front ${fmt(plain, 2)} of direct over plain HTTP (target >= ${TARGETS.frontPlain})`,
        plain >= TARGETS.frontPlain,
      ]);
      const cost = 1 - ratio('frontTls', 'front', name);
      checks.push([
        `${name}: HTTPS costs the front ${fmt(Math.max(0, cost) * 100, 1)} % (target < ${TARGETS.frontTlsCost * 100} %)`,
        cost < TARGETS.frontTlsCost,
      ]);
    }
    console.log('\nTargets');
    for (const [text, ok] of checks) {
      console.log(`  ${ok ? 'PASS' : 'MISS'}  ${text}`);
      if (!ok) misses.push(text);
    }
    if (values.strict && misses.length > 0) process.exitCode = 1;
  } finally {
    const exited = [...children].map((child) => new Promise((resolve) => child.once('exit', resolve)));
    stop();
    await Promise.race([Promise.all(exited), new Promise((resolve) => setTimeout(resolve, 10_000))]);
    rmSync(temp, { recursive: true, force: true });
  }
}

if (values.serve) await servePlatform();
else if (values.load) await loadChild(JSON.parse(values.load));
else await main();
