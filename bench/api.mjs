#!/usr/bin/env node
// Benchmark: authenticated GET /api/v1/projects with 100 projects in the store, versus a bare Fastify
// route answering the same JSON, measured in the same run under the same autocannon load. Each server
// runs in its own child process so the load generator does not share its event loop.
// Usage: npm run build && node bench/api.mjs [--duration 5] [--connections 10]
// Target: ratio >= 0.5.
import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { wharfNodeFlags } from '../scripts/node-flags.mjs';

const { values } = parseArgs({
  options: {
    serve: { type: 'string' },
    'data-dir': { type: 'string' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '10' },
  },
});

if (values.serve) await serve(values.serve, values['data-dir']);
else await main();

async function serve(mode, dataDir) {
  const { buildPlatform } = await import('../dist/platform.js');
  const Fastify = (await import('fastify')).default;
  const platform = await buildPlatform({ dataDir });
  const key = JSON.parse(readFileSync(join(dataDir, 'local-account.json'), 'utf8')).api_key;
  let app = platform.app;
  if (mode === 'platform') {
    // Seed 100 projects through the API itself.
    await platform.app.ready();
    for (let i = 0; i < 100; i++) {
      const res = await platform.app.inject({
        method: 'POST',
        url: '/api/v1/projects',
        headers: { 'x-api-key': key },
        payload: { name: `Project ${i}`, subdomain: `bench-${i}`, repo_url: `https://example.com/r${i}.git` },
      });
      if (res.statusCode !== 201) throw new Error(`seeding failed: ${res.body}`);
    }
  } else {
    // The same 100-project payload from a bare route: no auth, no store, no schema.
    const payload = readFileSync(join(dataDir, 'projects.json'), 'utf8');
    await platform.app.close();
    app = Fastify();
    app.get('/api/v1/projects', async (_request, reply) =>
      reply.type('application/json; charset=utf-8').send(payload),
    );
  }
  await app.listen({ host: '127.0.0.1', port: 0 });
  process.send({ port: app.server.address().port, key });
  process.on('disconnect', () => app.close().then(() => process.exit(0)));
}

function start(mode, dataDir) {
  // The flags `wharf` runs Node with, as the platform runs in use.
  const child = fork(new URL(import.meta.url), ['--serve', mode, '--data-dir', dataDir], {
    stdio: 'inherit',
    execArgv: wharfNodeFlags(),
  });
  return new Promise((resolve, reject) => {
    child.once('message', (info) => resolve({ child, ...info }));
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
  });
}

async function load(url, headers) {
  const options = {
    url,
    headers,
    connections: Number(values.connections),
    duration: Number(values.duration),
  };
  await autocannon({ ...options, duration: 1 }); // warm-up
  const result = await autocannon(options);
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return result;
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'wharf-bench-api-'));
  try {
    const platform = await start('platform', dataDir);
    const url = `http://127.0.0.1:${platform.port}/api/v1/projects`;
    const body = await (await fetch(url, { headers: { 'x-api-key': platform.key } })).text();
    if (JSON.parse(body).length !== 100) throw new Error('expected 100 projects');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(dataDir, 'projects.json'), body);
    const ours = await load(url, { 'x-api-key': platform.key });
    platform.child.disconnect();

    const bare = await start('bare', dataDir);
    const baseline = await load(`http://127.0.0.1:${bare.port}/api/v1/projects`, {});
    bare.child.disconnect();

    const ratio = ours.requests.average / baseline.requests.average;
    const kib = (Buffer.byteLength(body) / 1024).toFixed(1);
    console.log(
      `GET /api/v1/projects (100 projects, ${kib} KiB, ${values.connections} connections, ${values.duration} s)`,
    );
    console.log(
      `  wharf platform (auth + store): ${ours.requests.average.toFixed(0)} req/s, p50 ${ours.latency.p50} ms, p99 ${ours.latency.p99} ms`,
    );
    console.log(
      `  bare fastify (same payload):   ${baseline.requests.average.toFixed(0)} req/s, p50 ${baseline.latency.p50} ms, p99 ${baseline.latency.p99} ms`,
    );
    console.log(`  ratio: ${ratio.toFixed(2)} (target >= 0.5) ${ratio >= 0.5 ? 'PASS' : 'FAIL'}`);
    process.exitCode = ratio >= 0.5 ? 0 : 1;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
