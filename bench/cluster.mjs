#!/usr/bin/env node
// Benchmark: one platform node versus two behind HAProxy, on one PostgreSQL database, in one run
// (issue 20). Each node is `buildPlatform` in a process of its own (--node-url, --runtime swarm, the
// same WHARF_SECRET); HAProxy balances round robin over one node, then over both. Measured through
// HAProxy with wrk:
//  - the API: authenticated GET /api/v1/projects (20 projects in the store);
//  - the edge: a hello-world app deployed as a Swarm service, which both nodes' edges reach.
// Prints requests/s and p50/p99 for one node and for two, and the ratio two/one. On a machine with
// fewer cores than the processes (two nodes, PostgreSQL, HAProxy, wrk), two nodes share the same
// cores: the ratio says what a second node costs or gains there, not what a second machine would.
// Needs: a build (npm run build), PostgreSQL (initdb), HAProxy, wrk, and a Docker engine that manages a
// Swarm (bash scripts/ci/engines.sh makes one).
// Usage: npm run build && node bench/cluster.mjs [--duration 5] [--connections 50]
import { fork, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { wharfNodeFlags } from '../scripts/node-flags.mjs';
import { HAVE_WRK, fmt, wrk } from './lib/load.mjs';
import { freePort } from './lib/ports.mjs';

const ROOT = new URL('../', import.meta.url);
const { values } = parseArgs({
  options: {
    serve: { type: 'string' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
  },
});

if (values.serve) await serve(JSON.parse(values.serve));
else await main();

/** A node: the platform on its API and edge ports, until its parent goes. */
async function serve({ dataDir, databaseUrl, secret, apiPort, edgePort }) {
  const { buildPlatform } = await import(new URL('dist/platform.js', ROOT).href);
  const platform = await buildPlatform({
    dataDir,
    databaseUrl,
    secret,
    runtime: 'swarm',
    nodeUrl: `http://127.0.0.1:${edgePort}`,
    edgePort,
    logger: false,
    ...(process.env.WHARF_TEST_NODE_IMAGE ? { images: { node: process.env.WHARF_TEST_NODE_IMAGE } } : {}),
  });
  await new Promise((resolve) => platform.edge.server.listen(edgePort, '127.0.0.1', resolve));
  await platform.app.listen({ host: '127.0.0.1', port: apiPort });
  process.send({ ready: true });
  process.on('disconnect', () => platform.app.close().then(() => process.exit(0)));
}

/** The test suite's throwaway PostgreSQL server (test/helpers/postgres.ts), bundled with rolldown. */
async function startPostgres(tempDir) {
  const { build } = await import('rolldown');
  await build({
    input: fileURLToPath(new URL('test/helpers/postgres.ts', ROOT)),
    platform: 'node',
    external: [/^node:/, 'pg'],
    resolve: { extensionAlias: { '.js': ['.ts', '.js'] } },
    logLevel: 'silent',
    output: { dir: tempDir, format: 'esm', entryFileNames: 'postgres.js' },
  });
  symlinkSync(fileURLToPath(new URL('node_modules', ROOT)), join(tempDir, 'node_modules'));
  writeFileSync(join(tempDir, 'package.json'), '{"type":"module"}');
  const { startPostgres: start } = await import(pathToFileURL(join(tempDir, 'postgres.js')).href);
  return start();
}

async function startNode(name, shared) {
  const dataDir = mkdtempSync(join(tmpdir(), `wharf-bench-node-${name}-`));
  const apiPort = await freePort();
  const edgePort = await freePort();
  // The flags `wharf` runs Node with, as a platform node runs in use.
  const child = fork(
    fileURLToPath(import.meta.url),
    ['--serve', JSON.stringify({ ...shared, dataDir, apiPort, edgePort })],
    { execArgv: wharfNodeFlags() },
  );
  await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`node ${name} exited with ${code}`)));
  });
  return { name, dataDir, apiPort, edgePort, child };
}

/** HAProxy on a free port, round robin over `nodes`' edges (which serve the API at api.localhost). */
async function startHaproxy(nodes, dir) {
  const port = await freePort();
  const file = join(dir, `haproxy-${nodes.length}.cfg`);
  writeFileSync(
    file,
    [
      'global',
      '  maxconn 4096',
      'defaults',
      '  mode http',
      '  timeout connect 5s',
      '  timeout client 60s',
      '  timeout server 60s',
      '  http-reuse always',
      'frontend nodes',
      `  bind 127.0.0.1:${port}`,
      '  default_backend nodes',
      'backend nodes',
      '  balance roundrobin',
      ...nodes.map((node) => `  server ${node.name} 127.0.0.1:${node.edgePort}`),
      '',
    ].join('\n'),
  );
  const haproxy = spawn('haproxy', ['-db', '-f', file], { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 100; i++) {
    // (fetch sends no Host header of the caller's: http.get does.)
    const up = await new Promise((resolve) => {
      const req = get(
        { host: '127.0.0.1', port, path: '/api/v1/health', headers: { host: 'api.localhost' } },
        (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        },
      );
      req.on('error', () => resolve(false));
    });
    if (up) return { port, stop: () => haproxy.kill() };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  haproxy.kill();
  throw new Error('HAProxy did not answer');
}

async function call(apiPort, key, method, path, body, type = 'application/json') {
  const res = await fetch(`http://127.0.0.1:${apiPort}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body ? { 'content-type': type } : {}) },
    body,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** 20 projects, one of them a hello-world app deployed from an upload (a Swarm service). */
async function seed(node, key) {
  for (let i = 0; i < 19; i++) {
    await call(
      node.apiPort,
      key,
      'POST',
      '/projects',
      JSON.stringify({ name: `P${i}`, subdomain: `p-${i}`, deploy_source: 'upload' }),
    );
  }
  const site = await call(
    node.apiPort,
    key,
    'POST',
    '/projects',
    JSON.stringify({ name: 'Site', subdomain: 'site', deploy_source: 'upload' }),
  );
  const dir = mkdtempSync(join(tmpdir(), 'wharf-bench-site-'));
  writeFileSync(join(dir, 'Procfile'), 'web: node server.js\n');
  writeFileSync(join(dir, 'package.json'), '{"name":"site","private":true}\n');
  writeFileSync(
    join(dir, 'server.js'),
    "require('node:http').createServer((req, res) => res.end('hello world\\n')).listen(Number(process.env.PORT));\n",
  );
  const files = ['Procfile', 'package.json', 'server.js'];
  const { create } = await import('tar');
  const chunks = [];
  for await (const chunk of create({ gzip: true, cwd: dir, portable: true }, files)) chunks.push(chunk);
  rmSync(dir, { recursive: true, force: true });
  await call(
    node.apiPort,
    key,
    'POST',
    `/projects/${site.id}/upload`,
    Buffer.concat(chunks),
    'application/gzip',
  );
  await call(node.apiPort, key, 'POST', `/projects/${site.id}/deploy`);
  for (let i = 0; i < 1200; i++) {
    const { project } = await call(node.apiPort, key, 'GET', `/projects/${site.id}`);
    if (project.status === 'running') return site.id;
    if (project.status === 'failed') throw new Error('the app did not deploy');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the app did not deploy within 120 s');
}

async function measure(port, key) {
  const seconds = Number(values.duration);
  const connections = Number(values.connections);
  const api = await wrk({
    url: `http://127.0.0.1:${port}/api/v1/projects`,
    host: 'api.localhost',
    headers: [`X-API-Key: ${key}`],
    connections,
    seconds,
    name: 'API',
  });
  const edge = await wrk({
    url: `http://127.0.0.1:${port}/`,
    host: 'site.localhost',
    connections,
    seconds,
    name: 'edge',
  });
  return { api, edge };
}

async function main() {
  for (const [tool, args] of [['haproxy', ['-v']]]) {
    if (spawnSync(tool, args).error) throw new Error(`${tool} is not installed`);
  }
  if (!HAVE_WRK) throw new Error('wrk is not installed (apt-get install wrk)');
  const temp = mkdtempSync(join(tmpdir(), 'wharf-bench-cluster-'));
  const postgres = await startPostgres(temp);
  const nodes = [];
  try {
    const pg = (await import('pg')).default;
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query('CREATE DATABASE wharf_bench');
    await admin.end();
    const databaseUrl = postgres.url.replace(/\/postgres$/, '/wharf_bench');
    const shared = { databaseUrl, secret: randomBytes(36).toString('base64url') };
    nodes.push(await startNode('a', shared));
    nodes.push(await startNode('b', shared));
    const { readFileSync } = await import('node:fs');
    const key = JSON.parse(readFileSync(join(nodes[0].dataDir, 'local-account.json'), 'utf8')).api_key;
    const app = await seed(nodes[0], key);

    const results = {};
    for (const count of [1, 2]) {
      const haproxy = await startHaproxy(nodes.slice(0, count), temp);
      try {
        results[count] = await measure(haproxy.port, key);
      } finally {
        haproxy.stop();
      }
    }
    const line = (label, one, two) =>
      console.log(
        `  ${label.padEnd(6)} one node ${fmt(one.requests)} req/s (p50 ${fmt(one.p50, 2)} ms, p99 ${fmt(one.p99, 2)} ms); two nodes ${fmt(two.requests)} req/s (p50 ${fmt(two.p50, 2)} ms, p99 ${fmt(two.p99, 2)} ms); ratio ${(two.requests / one.requests).toFixed(2)}`,
      );
    console.log(
      `Behind HAProxy, ${values.connections} connections, ${values.duration} s each (wrk), PostgreSQL store, swarm runtime:`,
    );
    line('API', results[1].api, results[2].api);
    line('edge', results[1].edge, results[2].edge);
    // Its Swarm service goes with it (the nodes of a cluster leave services running when they stop).
    await call(nodes[0].apiPort, key, 'DELETE', `/projects/${app}`);
  } finally {
    for (const node of nodes) {
      node.child.disconnect();
      await new Promise((resolve) => node.child.once('exit', resolve));
      rmSync(node.dataDir, { recursive: true, force: true });
    }
    await postgres.stop();
    rmSync(temp, { recursive: true, force: true });
  }
}
