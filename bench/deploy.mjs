#!/usr/bin/env node
// Benchmark: the deploy runtime and the app edge, in one run.
// Host runtime (`--runtime sandbox`, the default; needs bubblewrap):
//  1. Deploy overhead: from POST /projects/:id/deploy of an uploaded Node app without dependencies until
//     GET /projects/:id says `running` (polled every 20 ms), versus spawning the same app directly
//     (`node server.js` with PORT) until its port accepts connections. Median of N each (redeploys
//     count too); target: overhead < 1 s.
//  2. Requests/s through the edge (Host: <sub>.localhost) versus straight to the deployed app's port,
//     same autocannon load; direct and edge alternate twice and the best of each counts, to lessen the
//     noise of a small machine. Target: edge/direct >= 0.5, and no request failed.
// Container runtime (`--runtime container`; the image built FROM --node-image, a Procfile's
// `web: node server.js`, so nothing is installed):
//  1. POST deploy (or rollback) → `running`, each against `docker run -d` of the release's own image
//     until its published port answers HTTP, measured in the same run: the first deploy of a project
//     (cold: its image built on the base, its network made), a redeploy of the same source (the
//     engine's build cache), a redeploy of changed code, and a rollback to the release before (no
//     build). A new project (and a fresh source, so its first build is cold) each of N runs; medians.
//     The edge must answer with the changed code after the redeploy, the old code after the rollback.
//  2. Requests/s as above, direct being the container's port published on 127.0.0.1 (found with the
//     engine's API by the project's and release's labels). Same targets.
// Everything the run made on the engine (containers, images, networks labelled with the platform's
// id) is removed at the end, also on Ctrl+C. Needs a Docker-compatible engine (DOCKER_HOST or the
// default socket), the docker CLI and the base image.
// The platform runs in this process (API and edge on 127.0.0.1, port 0, a temp data dir); autocannon
// runs in a child process so the load generator does not share the edge's event loop.
// Usage: npm run build && node bench/deploy.mjs [--runtime sandbox|container] [--runs 5] [--duration 5]
//          [--connections 50] [--node-image wharf-ci/node:bookworm] [--strict]
// --node-image: the base image of the container runtime's Dockerfile (default: $WHARF_TEST_NODE_IMAGE,
// else wharf-ci/node:bookworm). --strict: exit non-zero when a target is missed.
import { fork, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from './lib/ports.mjs';

const { values } = parseArgs({
  options: {
    load: { type: 'string' },
    runtime: { type: 'string', default: 'sandbox' },
    'node-image': { type: 'string', default: process.env.WHARF_TEST_NODE_IMAGE || 'wharf-ci/node:bookworm' },
    runs: { type: 'string', default: '5' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    strict: { type: 'boolean', default: false },
  },
});
if (!['sandbox', 'container'].includes(values.runtime)) {
  console.error(`--runtime ${values.runtime}: expected sandbox or container`);
  process.exit(2);
}
const CONTAINER = values.runtime === 'container';

const SUBDOMAIN = 'bench-deploy';
const POLL_MS = 20;
const DEPLOY_TIMEOUT_MS = CONTAINER ? 180_000 : 60_000;
const OVERHEAD_TARGET_MS = 1000;
const RATIO_TARGET = 0.5;
// The labels the container runtime puts on what it creates (src/server/runtime/drivers/docker.ts).
const PLATFORM_LABEL = 'dev.wharf.platform';
const PROJECT_LABEL = 'dev.wharf.project';
const RELEASE_LABEL = 'dev.wharf.release';
const CONTAINER_PORT = 3000; // where the container runtime's generated images listen (PORT)
const START_CMD = 'node server.js';
const BASELINE = 'docker run -d → answers HTTP (baseline)';

/** The app; `greeting` tells versions apart, `nonce` makes a source no build has seen. */
const serverJs = (greeting = 'hello from the bench', nonce = '') => `
const http = require('node:http');
const server = http.createServer((req, res) => res.end('${greeting} ' + req.url));
server.listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
${nonce ? `// ${nonce}\n` : ''}`;
const PACKAGE_JSON = JSON.stringify({
  name: 'bench-app',
  private: true,
  scripts: { start: 'node server.js' },
});
const PROCFILE = `web: ${START_CMD}\n`;

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

/** Child processes this script started (the directly spawned app, the load generator, docker). */
const children = new Set();

const sum = ({ user, system }) => user + system;
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

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

/** GET `path` at 127.0.0.1:`port` with this Host; rejects when nothing answers. */
function get(port, path, host = 'localhost', timeout = 2_000) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host }, timeout }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode, body }));
      res.on('error', reject);
    });
    req.once('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
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

/** Runs the docker CLI to its end; resolves with its stdout, rejects with its stderr. */
function dockerCli(args) {
  return new Promise((resolve, reject) => {
    const child = spawn('docker', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    child.once('error', (error) => {
      children.delete(child);
      reject(new Error(`docker ${args[0]}: ${error.message}`));
    });
    child.once('close', (code) => {
      children.delete(child);
      if (code === 0) resolve(out.trim());
      else reject(new Error(`docker ${args.join(' ')} exited with ${code}: ${err.trim()}`));
    });
  });
}

/**
 * The baseline of container deploys: `docker run -d` of `image` (the app's command, PORT, an init like
 * the platform's containers) until its published port answers HTTP (a TCP connect is not enough: the
 * engine's port proxy accepts before the app listens). Resolves with the ms; the container is removed.
 */
async function dockerRun(docker, image, labels) {
  const port = await freePort();
  const started = performance.now();
  const id = await dockerCli([
    'run',
    '--detach',
    '--init',
    ...Object.entries(labels).flatMap(([k, v]) => ['--label', `${k}=${v}`]),
    '--publish',
    `127.0.0.1:${port}:${CONTAINER_PORT}`,
    '--env',
    `PORT=${CONTAINER_PORT}`,
    '--workdir',
    '/app',
    image,
    '/bin/sh',
    '-c',
    START_CMD,
  ]);
  try {
    const deadline = Date.now() + DEPLOY_TIMEOUT_MS;
    for (;;) {
      const answered = await get(port, '/', 'localhost', 1_000).then(
        () => true,
        () => false,
      );
      if (answered) break;
      if (Date.now() > deadline) throw new Error(`docker run of ${image}: nothing answered on ${port}`);
      await sleep(5);
    }
    return performance.now() - started;
  } finally {
    await docker
      .getContainer(id)
      .remove({ force: true })
      .catch(() => undefined);
  }
}

async function archive(dir, files) {
  const { create } = await import('tar');
  const chunks = [];
  for await (const chunk of create({ gzip: true, cwd: dir, portable: true }, files)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Removes the containers, images and networks on the engine labelled with this platform's id. */
async function removeLabelled(docker, platformId) {
  const filters = { label: [`${PLATFORM_LABEL}=${platformId}`] };
  const containers = await docker.listContainers({ all: true, filters });
  await Promise.all(
    containers.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
  for (const image of await docker.listImages({ filters })) {
    await docker
      .getImage(image.Id)
      .remove({ force: true })
      .catch(() => undefined);
  }
  for (const network of await docker.listNetworks({ filters })) {
    await docker
      .getNetwork(network.Id)
      .remove()
      .catch(() => undefined);
  }
}

// --- the run ---

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'wharf-bench-deploy-'));
  const appDir = mkdtempSync(join(tmpdir(), 'wharf-bench-deploy-app-'));
  let platform = null;
  let docker = null;
  let platformId = null;
  let cleaning = null;
  // Once, whether the run ends or is interrupted (both may ask).
  const cleanup = () =>
    (cleaning ??= (async () => {
      await Promise.all([...children].map(stop));
      // Closing the platform closes the edge and stops every deployed process (and container:
      // stopContainersOnExit).
      await platform?.app.close().catch((error) => console.error(`closing the platform: ${error.message}`));
      if (docker && platformId) {
        // Twice: a build cancelled by the close may still commit a step (a labelled image) meanwhile.
        for (const pass of [1, 2]) {
          if (pass === 2) await sleep(1_000);
          await removeLabelled(docker, platformId).catch((error) =>
            console.error(`removing the bench's containers, images and networks: ${error.message}`),
          );
        }
      }
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(appDir, { recursive: true, force: true });
    })());
  const interrupted = () => void cleanup().finally(() => process.exit(130));
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    writeFileSync(join(appDir, 'package.json'), PACKAGE_JSON);
    writeFileSync(join(appDir, 'server.js'), serverJs());

    let engine = '';
    if (CONTAINER) {
      const { default: Docker } = await import('dockerode');
      docker = new Docker(); // DOCKER_HOST, else the default socket (as the platform does)
      const version = await docker.version();
      engine = `${/podman/i.test(JSON.stringify(version.Components ?? [])) ? 'Podman' : 'Docker'} ${version.Version}`;
      const base = values['node-image'];
      if (
        !(await docker
          .getImage(base)
          .inspect()
          .catch(() => null))
      ) {
        throw new Error(
          `the engine has no image ${base} (scripts/ci/engines.sh builds wharf-ci/node:bookworm; or pass --node-image)`,
        );
      }
    }

    const { buildPlatform } = await import('../dist/platform.js');
    platform = await buildPlatform({
      dataDir,
      runtime: values.runtime,
      images: { node: values['node-image'] },
      stopContainersOnExit: true,
    });
    platformId = platform.runtime.platformId;
    if (platform.runtime.kind !== values.runtime)
      throw new Error(`asked for --runtime ${values.runtime}, the platform runs ${platform.runtime.kind}`);
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

    const createProject = async (subdomain) =>
      expect(
        await call('POST', '/projects', { name: 'Bench deploy', subdomain, deploy_source: 'upload' }),
        201,
        'create project',
      );
    const upload = async (project, files) =>
      expect(
        await call('POST', `/projects/${project.id}/upload`, await archive(appDir, files), {
          'content-type': 'application/gzip',
        }),
        200,
        'upload',
      );
    /** POSTs `path` (deploy, rollback) and resolves with the ms until the project is `running`. */
    const untilRunning = async (project, path, body) => {
      const started = performance.now();
      expect(await call('POST', `/projects/${project.id}/${path}`, body), 202, path);
      const deadline = Date.now() + DEPLOY_TIMEOUT_MS;
      for (;;) {
        const detail = expect(await call('GET', `/projects/${project.id}`), 200, 'get project');
        if (detail.project.status === 'running') return performance.now() - started;
        if (detail.project.status === 'failed' || Date.now() > deadline) {
          const logs = detail.logs.map((l) => `  ${l.line}`).join('\n');
          throw new Error(
            `the ${path} is ${detail.project.status}: ${detail.project.last_deploy_error}\n${logs}`,
          );
        }
        await sleep(POLL_MS);
      }
    };
    // fetch would send its own Host: a plain request carries the app's.
    const probe = async (host, expected) => {
      const answer = await get(edgePort, '/probe', host);
      if (answer.status !== 200 || answer.body !== `${expected} /probe`)
        throw new Error(`the edge answered ${answer.status}: ${answer.body.slice(0, 200)}`);
    };

    // Requests/s: the serving version's own port, and the same app through the edge.
    const measureLoad = async (appPort, host) => {
      const directUrl = `http://127.0.0.1:${appPort}/`;
      const edgeUrl = `http://127.0.0.1:${edgePort}/`;
      const directRuns = [];
      const edgeRuns = [];
      for (let i = 0; i < 2; i++) {
        directRuns.push(await load(directUrl));
        edgeRuns.push(await load(edgeUrl, { host }));
      }
      const best = (list) => list.reduce((a, b) => (b.requests > a.requests ? b : a));
      const all = [...directRuns, ...edgeRuns];
      return {
        directRuns,
        edgeRuns,
        direct: best(directRuns),
        edge: best(edgeRuns),
        failed: all.reduce((n, r) => n + r.failed, 0),
        total: all.reduce((n, r) => n + r.total, 0),
      };
    };
    const verdict = (ok) => (ok ? 'PASS' : 'FAIL');
    const list = (numbers) => numbers.map((n) => n.toFixed(0)).join(', ');
    const rate = (r) => `${r.requests.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms`;
    /** Prints the requests/s part; true when its targets are met. */
    const printLoad = ({ directRuns, edgeRuns, direct, edge, failed, total }, appPort, host, where) => {
      const ratio = edge.requests / direct.requests;
      // What one proxied request costs the edge (this process), in CPU time.
      const edgeCpu = edge.cpuMicros / (edge.requests * Number(values.duration));
      const ratioOk = ratio >= RATIO_TARGET;
      const errorsOk = failed === 0;
      console.log(
        `Requests/s through the edge vs direct (${values.connections} connections, ${values.duration} s, best of 2 alternating)`,
      );
      console.log(`  edge (Host: ${host}): ${rate(edge)}  (runs: ${list(edgeRuns.map((r) => r.requests))})`);
      console.log(
        `  direct (${where}port ${appPort}): ${rate(direct)}  (runs: ${list(directRuns.map((r) => r.requests))})`,
      );
      console.log(`  edge CPU: ${edgeCpu.toFixed(0)} µs per proxied request`);
      console.log(`  ratio: ${ratio.toFixed(2)} (target >= ${RATIO_TARGET}) ${verdict(ratioOk)}`);
      console.log(`  failed requests (non-2xx or errors): ${failed} of ${total} ${verdict(errorsOk)}`);
      return ratioOk && errorsOk;
    };
    const runs = Number(values.runs);

    if (CONTAINER) {
      const V1 = 'hello from the bench';
      const V2 = 'hello again from the bench';
      const labels = { [PLATFORM_LABEL]: platformId };
      const times = { baseline: [], cold: [], cached: [], changed: [], rollback: [] };
      // Warm-up: the first container of the base image pays for cold caches.
      await dockerCli([
        'run',
        '--rm',
        '--label',
        `${PLATFORM_LABEL}=${platformId}`,
        values['node-image'],
        'true',
      ]);
      let last = null;
      for (let i = 0; i < runs; i++) {
        // A new project and a source no build has seen: its first deploy builds on the base alone.
        const nonce = `bench run ${randomUUID()}`;
        const subdomain = `${SUBDOMAIN}-${i + 1}`;
        const project = await createProject(subdomain);
        writeFileSync(join(appDir, 'Procfile'), PROCFILE);
        writeFileSync(join(appDir, 'server.js'), serverJs(V1, nonce));
        await upload(project, ['package.json', 'server.js', 'Procfile']);
        times.cold.push(await untilRunning(project, 'deploy'));
        times.cached.push(await untilRunning(project, 'deploy'));
        const releases = expect(await call('GET', `/projects/${project.id}/releases`), 200, 'releases');
        const previous = releases.find((r) => r.current);
        if (!previous?.image)
          throw new Error(`no current release with an image: ${JSON.stringify(releases)}`);
        // The baseline between deploys, so that both see the same machine state.
        times.baseline.push(await dockerRun(docker, previous.image, labels));
        writeFileSync(join(appDir, 'server.js'), serverJs(V2, nonce));
        await upload(project, ['package.json', 'server.js', 'Procfile']);
        times.changed.push(await untilRunning(project, 'deploy'));
        await probe(`${subdomain}.localhost`, V2);
        times.rollback.push(await untilRunning(project, 'rollback', { release_id: previous.id }));
        await probe(`${subdomain}.localhost`, V1);
        // Only the last project stays up for the load: the others go, as a user would delete them.
        if (last) expect(await call('DELETE', `/projects/${last.project.id}`), 200, 'delete project');
        last = { project, subdomain, release: previous.id };
      }

      // The serving container's published port, from the engine by its labels.
      const [serving] = await docker.listContainers({
        filters: {
          label: [
            `${PLATFORM_LABEL}=${platformId}`,
            `${PROJECT_LABEL}=${last.project.id}`,
            `${RELEASE_LABEL}=${last.release}`,
          ],
          status: ['running'],
        },
      });
      if (!serving) throw new Error(`no running container of release ${last.release}`);
      const info = await docker.getContainer(serving.Id).inspect();
      const bindings = info.NetworkSettings.Ports?.[`${CONTAINER_PORT}/tcp`] ?? [];
      const published = bindings.find((b) => b.HostIp === '127.0.0.1') ?? bindings[0];
      if (!published) throw new Error(`the container publishes no port for ${CONTAINER_PORT}/tcp`);
      const appPort = Number(published.HostPort);
      const host = `${last.subdomain}.localhost`;
      await probe(host, V1);
      const loaded = await measureLoad(appPort, host);

      const baseline = median(times.baseline);
      const label = (text) => `  ${text}:`.padEnd(48);
      const row = (text, times_) => {
        const m = median(times_);
        const vs =
          text === BASELINE
            ? ''
            : `; ×${(m / baseline).toFixed(1)} docker run, +${(m - baseline).toFixed(0)} ms`;
        return `${label(text)}${m.toFixed(0)} ms  (${list(times_)})${vs}`;
      };
      console.log(
        `Deploy to running, container runtime (${engine}, FROM ${values['node-image']}; Node app without dependencies, a Procfile; median of ${runs}, a new project each)`,
      );
      console.log(row(BASELINE, times.baseline));
      console.log(row('cold (first deploy, image built on the base)', times.cold));
      console.log(row('cached (same source again, build cache)', times.cached));
      console.log(row('redeploy of changed code', times.changed));
      console.log(row('rollback to the release before (no build)', times.rollback));
      const loadOk = printLoad(loaded, appPort, host, 'published ');
      if (values.strict && !loadOk) process.exitCode = 1;
      return;
    }

    const project = await createProject(SUBDOMAIN);
    await upload(project, ['package.json', 'server.js']);

    // 1. Deploy overhead: direct spawn and deploy alternate, so both see the same machine state.
    const directTimes = [];
    const deployTimes = [];
    await spawnDirect(appDir); // warm-up: the first spawn pays for cold caches
    for (let i = 0; i < runs; i++) {
      directTimes.push(await spawnDirect(appDir));
      deployTimes.push(await untilRunning(project, 'deploy'));
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
    await probe(host, 'hello from the bench');
    const loaded = await measureLoad(appPort, host);

    const overheadOk = overhead < OVERHEAD_TARGET_MS;
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
    const loadOk = printLoad(loaded, appPort, host, '');
    if (values.strict && !(overheadOk && loadOk)) process.exitCode = 1;
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    await cleanup();
  }
}

if (values.load) await loadChild(JSON.parse(values.load));
else await main();
