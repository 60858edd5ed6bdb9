// Tenant code against the platform and against other tenants, beyond tenant-isolation.test.ts: on the
// container runtime, an attacker's own Dockerfile (its RUN steps and its running app) reaching for the
// platform's secret, its process environment and database (SQLite's file, or PostgreSQL's port), another
// project's variables and the engine's socket; and output floods that do not come from a build step (an
// app's own output in the sandbox and in a container, an install step), each leaving the platform and
// another account's project serving, and the platform's memory without the flood.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type IncomingMessage, get, request } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogLine, Project, ProjectDetail } from '../../src/shared/api/projects.js';
import { LOG_LINES_KEPT } from '../../src/server/projects/logs.js';
import { PLATFORM_LABEL, PROJECT_LABEL } from '../../src/server/runtime/drivers/docker.js';
import { CONTINUED_MARK, MAX_LINE_BYTES } from '../../src/server/runtime/lines.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';
import {
  archiveOf,
  createProject,
  deploy,
  deployFiles,
  nodeApp,
  settled,
  upload,
  viaEdge,
  waitFor,
  waitForLog,
  type Files,
} from '../helpers/deploy.js';
import { until } from '../helpers/poll.js';
import { requireEngine, testImages } from '../helpers/engine.js';

// Throws with CI set and no engine: there the container tests must run, not skip.
const engineMissing = await requireEngine();
const images = testImages() ?? { node: 'unset', python: 'unset' };
const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;
// CI's machine has bubblewrap: there the sandbox's floods must run, not skip.
if (!hasBwrap && process.env.CI) throw new Error('tenant attacks in the sandbox: bwrap is not installed');

const MiB = 1024 * 1024;
/** The flood's one line: far beyond every buffer on its way (16 KiB lines, a 4 MiB log backlog, the engine's 10 MB log files). */
const LINE_BYTES = 64 * MiB;
/** Prints that line, without a newline. */
const LONG_LINE = `head -c ${LINE_BYTES} /dev/zero | tr '\\0' 'a'`;
/**
 * An app's start command: the app, then the long line and lines without end. The app writes through a
 * pipe of its own: node makes its stdout non-blocking, which would end `tr` and `yes` with EAGAIN on
 * a shared one.
 */
const FLOOD_START = `node server.js | cat & ${LONG_LINE}; yes 'flood line'`;
/** The line the platform stores when it drops output (project-log.ts). */
const DROPPED = /^\(\d+ lines dropped: output came faster than the log keeps, 1000 lines a second\)$/;
/** The end of a piece of a cut line, as stored (the store may cut the marked piece once more). */
const CUT = /… \(line cut\)$/;

/** The process's memory once garbage is collected (vitest runs with --expose-gc). */
function settledMemory(): NodeJS.MemoryUsage {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (!collect) throw new Error('run with --expose-gc (vitest.config.ts sets it)');
  collect();
  return process.memoryUsage();
}

/** Of `samples` settled snapshots 100 ms apart, the one holding the least (see held). */
async function leastHeld(samples: number): Promise<NodeJS.MemoryUsage> {
  let least = settledMemory();
  for (let i = 1; i < samples; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const memory = settledMemory();
    if (held(memory) < held(least)) least = memory;
  }
  return least;
}

/** What the platform's process holds of JavaScript objects and of Buffers (a line kept as chunks is there). */
function held(memory: NodeJS.MemoryUsage): number {
  return memory.heapUsed + memory.arrayBuffers;
}

/** The same platform seen with another account's key. */
function as(tp: TestPlatform, key: string): TestPlatform {
  return { ...tp, key };
}

/** All the project's stored lines (the API gives at most 10,000: more than a project keeps). */
async function storedLines(tp: TestPlatform, id: string): Promise<LogLine[]> {
  const answer = await call<LogLine[]>(`${tp.api}/projects/${id}/logs?limit=10000`, { key: tp.key });
  expect(answer.status).toBe(200);
  return answer.body;
}

/**
 * What the project's stored log holds, without the long pieces themselves: a test that then measures
 * the platform's memory must not hold megabytes of them (it runs in the platform's process).
 */
async function storedLog(
  tp: TestPlatform,
  id: string,
): Promise<{ count: number; longestBytes: number; shortLines: string[] }> {
  const lines = (await storedLines(tp, id)).map((l) => l.line);
  return {
    count: lines.length,
    longestBytes: Math.max(0, ...lines.map((l) => Buffer.byteLength(l))),
    shortLines: lines.filter((l) => l.length <= 1024),
  };
}

interface FollowedLog {
  /** Lines stored since the follow began. */
  lines: number;
  /** Of those: pieces of a line cut for its length, pieces continuing one, notes of dropped output. */
  cut: number;
  continued: number;
  dropped: number;
  /**
   * Lines the platform skipped because this follower read slower than the flood came (a `skipped`
   * event): on a loaded machine the pieces counted above may be among them.
   */
  skipped: number;
  /** The longest line, in bytes. */
  longest: number;
  /** How many lines matched each pattern given. */
  matched: Record<string, number>;
  close(): void;
}

/**
 * Follows the project's log as it is stored (GET …/logs?follow=1) and counts what it sees: a flood
 * pushes early lines out of the kept 5,000 within seconds, so the pieces of a long line are counted as
 * they are stored rather than looked for afterwards.
 */
function followLog(
  tp: TestPlatform,
  id: string,
  patterns: Record<string, RegExp> = {},
): Promise<FollowedLog> {
  return new Promise((resolve, reject) => {
    const followed: FollowedLog = {
      lines: 0,
      cut: 0,
      continued: 0,
      dropped: 0,
      skipped: 0,
      longest: 0,
      matched: Object.fromEntries(Object.keys(patterns).map((name) => [name, 0])),
      close: () => req.destroy(),
    };
    const req = request(
      `${tp.api}/projects/${id}/logs?follow=1&limit=1`,
      { headers: { 'x-api-key': tp.key } },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`following the log of ${id}: ${res.statusCode}`));
          return;
        }
        res.setEncoding('utf8');
        let pending = '';
        res.on('data', (chunk: string) => {
          pending += chunk;
          let end: number;
          while ((end = pending.indexOf('\n\n')) !== -1) {
            const fields = pending.slice(0, end).split('\n');
            const data = fields.find((l) => l.startsWith('data: '));
            const event = fields.find((l) => l.startsWith('event: '))?.slice('event: '.length);
            pending = pending.slice(end + 2);
            if (!data) continue;
            if (event === 'skipped') {
              followed.skipped += (JSON.parse(data.slice('data: '.length)) as { lines: number }).lines;
              continue;
            }
            const { line } = JSON.parse(data.slice('data: '.length)) as LogLine;
            followed.lines += 1;
            if (CUT.test(line)) followed.cut += 1;
            if (line.startsWith(CONTINUED_MARK)) followed.continued += 1;
            if (DROPPED.test(line)) followed.dropped += 1;
            followed.longest = Math.max(followed.longest, Buffer.byteLength(line));
            for (const [name, pattern] of Object.entries(patterns)) {
              if (pattern.test(line)) followed.matched[name]! += 1;
            }
          }
        });
        res.on('error', () => undefined);
        resolve(followed);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * Asks the platform's health and the victim's page through the edge, again and again, for `ms` (or
 * until `done`); every answer must be right. Returns how many came and the slowest health answer.
 */
async function keepsServing(
  tp: TestPlatform,
  victim: { host: string; body: string },
  ms: number,
  done: () => boolean = () => false,
): Promise<{ answered: number; slowestHealthMs: number }> {
  const started = Date.now();
  let answered = 0;
  let slowestHealthMs = 0;
  while (Date.now() - started < ms && !done()) {
    const asked = Date.now();
    const health = await call(`${tp.api}/health`, {});
    slowestHealthMs = Math.max(slowestHealthMs, Date.now() - asked);
    expect(health.status).toBe(200);
    const page = await viaEdge(tp.edgePort, victim.host, '/');
    expect(page.body).toBe(victim.body);
    answered += 1;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { answered, slowestHealthMs };
}

/** How fast /health must answer during a flood (a shared 2-core machine is slow, but not this slow). */
const HEALTH_MS = 1_500;

/**
 * An app of the attacker whose start command prints the long line, then lines without end: the
 * platform and the victim keep serving, the platform never holds the line, the line is stored in
 * marked pieces, the log stays bounded. Stops the app at the end.
 */
async function floodFromTheApp(
  tp: TestPlatform,
  attacker: TestPlatform,
  victim: { host: string; body: string },
  subdomain: string,
  files: Files,
): Promise<void> {
  const before = settledMemory();
  const project = await createProject(attacker, {
    name: 'Flood',
    subdomain,
    deploy_source: 'upload',
    build_config: { start_cmd: FLOOD_START },
  });
  const followed = await followLog(attacker, project.id, { flood: /^flood line$/ });
  try {
    await deployFiles(attacker, project.id, files);
    expect((await viaEdge(tp.edgePort, `${subdomain}.localhost`, '/')).body).toBe(`flooded /`);
    // The long line has gone by once plain lines of the flood are stored; the flood goes on meanwhile.
    await until(() => followed.matched.flood! > 0, 'the flood’s lines after the long line', 60_000);
    const serving = await keepsServing(tp, victim, 4_000);
    // What was seen, said by any check below that fails (this one has failed once under a loaded CI).
    const seen = () => JSON.stringify({ serving, ...followed });
    expect(serving.answered, seen()).toBeGreaterThan(10);
    expect(serving.slowestHealthMs, seen()).toBeLessThan(HEALTH_MS);

    // The line was stored in pieces, each marked as cut and the next as continuing it; what came
    // faster than the log keeps was dropped, and said so.
    // Marked pieces and the note of dropped output, unless the follower itself was too slow for them.
    if (followed.skipped === 0) {
      expect(followed.cut, seen()).toBeGreaterThan(0);
      expect(followed.continued, seen()).toBeGreaterThan(0);
      expect(followed.dropped, seen()).toBeGreaterThan(0);
    } else {
      expect(followed.cut + followed.continued + followed.dropped, seen()).toBeGreaterThan(0);
    }
    expect(followed.longest, seen()).toBeLessThanOrEqual(MAX_LINE_BYTES + 64);
    const log = await storedLog(attacker, project.id);
    expect(log.count).toBeLessThanOrEqual(LOG_LINES_KEPT);
    expect(log.longestBytes).toBeLessThanOrEqual(MAX_LINE_BYTES + 64);

    // While the flood still runs, the platform holds neither the line nor the flood: once its garbage is
    // collected, its objects and Buffers together grew by much less than the line. The flood's reads in
    // flight come and go (one snapshot under a loaded CI caught 41 MiB of them); what is held stays in
    // every snapshot, so the least of a few is measured.
    const during = await leastHeld(5);
    const grown = {
      heapMiB: (during.heapUsed - before.heapUsed) / MiB,
      buffersMiB: (during.arrayBuffers - before.arrayBuffers) / MiB,
    };
    expect(held(during) - held(before), JSON.stringify(grown)).toBeLessThan(LINE_BYTES / 2);
  } finally {
    followed.close();
    await call(`${tp.api}/projects/${project.id}/stop`, { key: attacker.key, method: 'POST' });
  }
  expect((await viaEdge(tp.edgePort, victim.host, '/')).body).toBe(victim.body);
}

describe.skipIf(engineMissing !== null)('tenant code on the container runtime', () => {
  const docker = new Docker();
  const marker = `platform-eyes-only-${randomBytes(6).toString('hex')}`;
  const token = `victim-token-${randomBytes(9).toString('hex')}`;
  const victimPage = { host: 'c-victim.localhost', body: 'victim says hi /' };
  let tp: TestPlatform;
  let attacker: TestPlatform;
  let victim: Project;

  beforeAll(async () => {
    // A variable of the platform's own process: no tenant may read it.
    process.env.WHARF_TEST_PLATFORM_ONLY = marker;
    tp = await startPlatform({
      runtime: 'container',
      images,
      healthTimeoutMs: 30_000,
      sandbox: { memoryMiB: 256, pids: 200, cpus: 0.5 },
    });
    attacker = as(tp, (await tp.newAccount()).key);
    victim = await createProject(tp, {
      name: 'Victim',
      subdomain: 'c-victim',
      deploy_source: 'upload',
      env_vars: { VICTIM_TOKEN: token },
    });
    await deployFiles(tp, victim.id, { ...nodeApp('victim says hi'), Procfile: 'web: node server.js\n' });
  }, 90_000);
  afterAll(async () => {
    delete process.env.WHARF_TEST_PLATFORM_ONLY;
    await tp?.close();
  }, 60_000);

  it('an own Dockerfile reads neither the secret, nor the platform’s environment or database, nor another project’s variables, nor the engine', async () => {
    expect(tp.platform.runtime.kind).toBe('container');
    const secret = readFileSync(join(tp.dataDir, 'secret'), 'utf8').trim();
    expect(secret.length).toBeGreaterThanOrEqual(32);

    // Where the victim's variables are to be had: its container, on its own network, and its port
    // published on the machine's loopback. From here, both answer with them (its /env page).
    const [container] = await docker.listContainers({
      filters: {
        label: [`${PLATFORM_LABEL}=${tp.platform.runtime.platformId}`, `${PROJECT_LABEL}=${victim.id}`],
      },
    });
    expect(container).toBeDefined();
    const info = await docker.getContainer(container!.Id).inspect();
    const victimIp = Object.values(info.NetworkSettings.Networks)[0]!.IPAddress;
    const [inside, bindings] = Object.entries(info.NetworkSettings.Ports ?? {})[0]!;
    const victimPort = Number(inside.split('/')[0]);
    const victimHostPort = Number(bindings![0]!.HostPort);
    const direct = await new Promise<string>((resolve, reject) =>
      get(`http://${victimIp}:${victimPort}/env`, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve(body));
      }).on('error', reject),
    );
    expect(direct).toContain(token);
    expect((await viaEdge(tp.edgePort, victimPage.host, '/env')).body).toContain(token);

    const target = {
      secret: join(tp.dataDir, 'secret'),
      // The store: SQLite's file, or PostgreSQL's port (on 127.0.0.1 of the platform's machine).
      db: tp.databaseUrl ? null : join(tp.dataDir, 'platform.db'),
      dbPort: tp.databaseUrl ? Number(new URL(tp.databaseUrl).port) : null,
      pid: process.pid,
      victimIp,
      victimPort,
      victimHostPort,
      edgePort: tp.edgePort,
    };
    // Run by a RUN step of the build and by the app when it starts: one line per attempt, with what it got.
    const probe = `
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const target = ${JSON.stringify(target)};
const printable = (text) => text.replace(/[^\\x20-\\x7e]+/g, ' ').slice(0, 4000);
function gateway() {
  try {
    for (const row of fs.readFileSync('/proc/net/route', 'utf8').trim().split('\\n').slice(1)) {
      const [, dest, gw] = row.trim().split(/\\s+/);
      if (dest === '00000000') return gw.match(/../g).reverse().map((h) => parseInt(h, 16)).join('.');
    }
  } catch {}
  return null;
}
function read(path, needle) {
  try {
    const text = fs.readFileSync(path).toString('latin1');
    if (!needle) return 'READ ' + printable(text);
    const at = text.indexOf(needle);
    return at === -1 ? 'READ, without ' + needle : 'READ ' + printable(text.slice(at, at + 300));
  } catch (error) {
    return 'refused (' + error.code + ')';
  }
}
function environs() {
  let readable = 0;
  const hits = [];
  for (const pid of fs.readdirSync('/proc').filter((e) => /^\\d+$/.test(e))) {
    try {
      const env = fs.readFileSync('/proc/' + pid + '/environ', 'latin1');
      readable += 1;
      for (const entry of env.split('\\0')) {
        if (/VICTIM_TOKEN|WHARF_TEST_PLATFORM_ONLY/.test(entry)) hits.push(pid + ' ' + entry);
      }
    } catch {}
  }
  return readable + ' readable, ' + (hits.length ? 'FOUND ' + hits.join(' ') : 'nothing found');
}
function fetch(host, port, path, headers) {
  return new Promise((resolve) => {
    if (!host) return resolve('refused (no address)');
    const req = http.get({ host, port, path, headers, timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('latin1');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve('ANSWERED ' + res.statusCode + ' ' + printable(body)));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    req.on('error', (error) => resolve('refused (' + (error.code || error.message) + ')'));
  });
}
function connect(host, port) {
  return new Promise((resolve) => {
    if (!host) return resolve('refused (no address)');
    const socket = net.connect({ host, port, timeout: 2000 });
    socket.on('connect', () => {
      socket.destroy();
      resolve('CONNECTED to ' + host + ':' + port);
    });
    socket.on('timeout', () => socket.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    socket.on('error', (error) => resolve('refused (' + (error.code || error.message) + ')'));
  });
}
async function probe() {
  const gw = gateway();
  const sockets = ['/var/run/docker.sock', '/run/docker.sock'].filter((p) => fs.existsSync(p));
  const found = [
    ['secret', read(target.secret)],
    ['platform-environ', read('/proc/' + target.pid + '/environ')],
    ['environs', environs()],
    ['own-env', printable(JSON.stringify(process.env))],
    ['docker-socket', sockets.length ? 'PRESENT ' + sockets.join(' ') : 'absent'],
    ['gateway', String(gw)],
  ];
  const [database, victim, published, edge, engine] = await Promise.all([
    target.db ? read(target.db, 'VICTIM_TOKEN') : connect(gw, target.dbPort),
    fetch(target.victimIp, target.victimPort, '/env'),
    fetch(gw, target.victimHostPort, '/env'),
    fetch(gw, target.edgePort, '/env', { host: 'c-victim.localhost:' + target.edgePort }),
    fetch(gw, 2375, '/version'),
  ]);
  found.push(
    ['database', database],
    ['victim-container', victim],
    ['victim-published', published],
    ['edge', edge],
    ['engine-tcp', engine],
  );
  return found.map(([name, result]) => 'probe ' + name + ': ' + result).concat('probe done');
}
module.exports = { probe };
if (require.main === module) probe().then((lines) => lines.forEach((line) => console.log(line)));
`;
    const server = `
const http = require('node:http');
const report = require('./probe.js').probe();
report.then((lines) => lines.forEach((line) => console.log(line)));
http.createServer((req, res) => report.then((lines) => res.end(lines.join('\\n')))).listen(Number(process.env.PORT));
`;
    const project = await createProject(attacker, {
      name: 'Snoop',
      subdomain: 'c-snoop',
      deploy_source: 'upload',
    });
    await deployFiles(attacker, project.id, {
      'probe.js': probe,
      'server.js': server,
      Dockerfile: [
        `FROM ${images.node}`,
        'WORKDIR /srv',
        'COPY probe.js server.js ./',
        'RUN node probe.js',
        // Each command's errors go down its output's pipe (2>&1): the engine reads stdout and stderr
        // from two pipes, and a line of one could otherwise be cut by a line of the other.
        `RUN cat ${target.secret} 2>&1 || echo 'shell: no secret'; ` +
          `tr '\\0' '\\n' 2>&1 < /proc/${target.pid}/environ || echo 'shell: no platform environ'; ` +
          `ls -l /var/run/docker.sock /run/docker.sock 2>&1 || echo 'shell: no docker socket'`,
        'ENV PORT=8080',
        'EXPOSE 8080',
        'CMD ["node", "server.js"]',
        '',
      ].join('\n'),
    });
    const answer = await viaEdge(tp.edgePort, 'c-snoop.localhost', '/');
    expect(answer.status).toBe(200);
    // The build printed its attempts too: wait for the app's own, in the runtime's lines.
    let stored: LogLine[] = [];
    await until(
      async () =>
        (stored = await storedLines(attacker, project.id)).some(
          (l) => l.stream === 'runtime' && l.line === 'probe done',
        ),
      'the app’s attempts in its log',
      30_000,
      200,
    );
    const build = stored.filter((l) => l.stream === 'build').map((l) => l.line);
    const runtime = stored.filter((l) => l.stream === 'runtime').map((l) => l.line);
    expect(build).toContain('shell: no secret');
    expect(build).toContain('shell: no docker socket');
    for (const [where, lines] of [
      ['build', build],
      ['runtime', runtime],
      ['answer', answer.body.split('\n')],
    ] as const) {
      const text = lines.join('\n');
      // Every attempt was made, and none got anything.
      expect(lines, where).toContain('probe done');
      expect(lines, where).toContain('probe docker-socket: absent');
      for (const attempt of ['secret', 'database', 'victim-container', 'victim-published', 'edge']) {
        expect(
          lines.some((l) => l.startsWith(`probe ${attempt}: refused (`)),
          `${where}: ${attempt}\n${text}`,
        ).toBe(true);
      }
      expect(
        lines.some((l) => /^probe environs: \d+ readable, nothing found$/.test(l)),
        `${where}\n${text}`,
      ).toBe(true);
      expect(text, where).not.toContain('"ApiVersion"');
      expect(text, where).not.toContain(secret);
      expect(text, where).not.toContain(marker);
      expect(text, where).not.toContain(token);
    }
    expect((await viaEdge(tp.edgePort, victimPage.host, '/')).body).toBe(victimPage.body);
  }, 120_000);

  it('an app’s endless output in a container, one long line first, leaves the platform and the victim serving', async () => {
    await floodFromTheApp(tp, attacker, victimPage, 'c-flood', {
      ...nodeApp('flooded'),
      Dockerfile: [
        `FROM ${images.node}`,
        'WORKDIR /srv',
        'COPY server.js .',
        'ENV PORT=8080',
        'EXPOSE 8080',
        'CMD ["node", "server.js"]',
        '',
      ].join('\n'),
    });
  }, 120_000);
});

describe.skipIf(!hasBwrap)('tenant output floods in the sandbox', () => {
  const victimPage = { host: 'victim.localhost', body: 'victim says hi /' };
  let tp: TestPlatform;
  let attacker: TestPlatform;

  beforeAll(async () => {
    tp = await startPlatform({ healthTimeoutMs: 20_000 });
    expect(tp.platform.runtime.kind).toBe('sandbox');
    attacker = as(tp, (await tp.newAccount()).key);
    const victim = await createProject(tp, { name: 'Victim', subdomain: 'victim', deploy_source: 'upload' });
    await deployFiles(tp, victim.id, nodeApp('victim says hi'));
  }, 60_000);
  afterAll(async () => {
    await tp?.close();
  });

  it('an app’s endless output, one long line first, leaves the platform and the victim serving', async () => {
    await floodFromTheApp(tp, attacker, victimPage, 'flood', nodeApp('flooded'));
  }, 90_000);

  it('a port another program took after the start is not taken for the app being up', async () => {
    // Above the kernel's ephemeral range: no other connection can hold it by chance.
    const port = 62_000 + Math.floor(Math.random() * 3_000);
    const project = await createProject(attacker, {
      name: 'Late',
      subdomain: 'late-port',
      deploy_source: 'upload',
      build_config: { port_override: port, start_cmd: 'sleep 2; exec node server.js' },
    });
    await upload(attacker, project.id, archiveOf(nodeApp('late')));
    await deploy(attacker, project.id);
    await waitForLog(attacker, project.id, /^starting the app: /);
    // Someone else listens there before the app does: the health check must not count it.
    const squatter = createServer((socket) => socket.end()).listen(port, '127.0.0.1');
    try {
      const detail = await waitFor(attacker, project.id, settled, 30_000);
      expect(detail.project.status).toBe('failed');
      expect(detail.project.last_deploy_error ?? '').toMatch(
        new RegExp(`port ${port} is held by another program, not by this app`),
      );
    } finally {
      squatter.close();
    }
  }, 60_000);

  it('a log follower that stops reading while its app floods holds a bounded buffer, then hears what it missed', async () => {
    const project = await createProject(attacker, {
      name: 'Paused',
      subdomain: 'paused',
      deploy_source: 'upload',
      build_config: { start_cmd: 'node server.js | cat & yes "$(head -c 16000 /dev/zero | tr \'\\0\' x)"' },
    });
    await deployFiles(attacker, project.id, nodeApp('paused'));
    const before = settledMemory();
    // A follower that reads nothing: what the platform keeps for it must stay bounded.
    let received = '';
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(`${attacker.api}/projects/${project.id}/logs?follow=1&limit=1`, {
        headers: { 'x-api-key': attacker.key },
      });
      req.on('response', resolve).on('error', reject).end();
    });
    res.setEncoding('utf8');
    res.pause();
    try {
      await new Promise((r) => setTimeout(r, 6_000));
      const during = await leastHeld(5);
      // 6 s of a 16 KB-line flood is ~100 MB at 1,000 lines a second; one follower may hold ~1 MiB.
      expect(held(during) - held(before)).toBeLessThan(32 * 1024 * 1024);
      res.on('data', (chunk: string) => (received += chunk));
      res.resume();
      await until(
        () => /event: skipped\ndata: \{"lines":\d+,"last_seq":\d+\}/.test(received),
        'a skipped event',
        15_000,
        50,
      );
      expect(Number(/"lines":(\d+)/.exec(received)![1])).toBeGreaterThan(0);
    } finally {
      res.destroy();
      await call(`${attacker.api}/projects/${project.id}/stop`, { key: attacker.key, method: 'POST' });
    }
  }, 90_000);

  it('an install step’s long line and flood leave the platform and the victim serving', async () => {
    const before = settledMemory();
    const project = await createProject(attacker, {
      name: 'Install flood',
      subdomain: 'install-flood',
      deploy_source: 'upload',
      build_config: {
        // The long line, then three seconds of lines as fast as they come.
        install_cmd: `${LONG_LINE}; echo; timeout 3 yes 'install flood' || true`,
        start_cmd: 'node server.js',
      },
    });
    const followed = await followLog(attacker, project.id, { flood: /^install flood$/ });
    let detail: ProjectDetail;
    try {
      await upload(attacker, project.id, archiveOf(nodeApp('installed')));
      await deploy(attacker, project.id);
      // While it floods, and until the deploy is done, the platform and the victim answer.
      let building = true;
      const done = waitFor(attacker, project.id, settled, 60_000).finally(() => (building = false));
      // Awaited below; if an answer fails first, its end is of no interest.
      done.catch(() => undefined);
      const serving = await keepsServing(tp, victimPage, 60_000, () => !building);
      detail = await done;
      expect(serving.answered).toBeGreaterThan(10);
      expect(serving.slowestHealthMs).toBeLessThan(HEALTH_MS);
    } finally {
      followed.close();
    }
    expect(detail.project.status, detail.project.last_deploy_error ?? '').toBe('running');
    expect((await viaEdge(tp.edgePort, 'install-flood.localhost', '/')).body).toBe('installed /');

    // Marked pieces and the note of dropped output, unless the follower itself was too slow for them.
    if (followed.skipped === 0) {
      expect(followed.cut).toBeGreaterThan(0);
      expect(followed.continued).toBeGreaterThan(0);
      expect(followed.dropped).toBeGreaterThan(0);
    } else {
      expect(followed.cut + followed.continued + followed.dropped).toBeGreaterThan(0);
    }
    expect(followed.matched.flood).toBeGreaterThan(0);
    expect(followed.longest).toBeLessThanOrEqual(MAX_LINE_BYTES + 64);
    const log = await storedLog(attacker, project.id);
    expect(log.count).toBeLessThanOrEqual(LOG_LINES_KEPT);
    // (The platform's own "install done" line shares the step's allowance: a flood may drop it too.)
    expect(log.shortLines.some((l) => l.startsWith('running at '))).toBe(true);
    expect(log.shortLines.some((l) => DROPPED.test(l))).toBe(true);
    expect(log.longestBytes).toBeLessThanOrEqual(MAX_LINE_BYTES + 64);

    // Held is what stays in every snapshot: the least of a few is measured, as in the flood above (one
    // snapshot under a loaded CI caught 35 MiB that the next ones no longer held).
    const after = await leastHeld(5);
    const grown = {
      heapMiB: (after.heapUsed - before.heapUsed) / MiB,
      buffersMiB: (after.arrayBuffers - before.arrayBuffers) / MiB,
    };
    expect(held(after) - held(before), JSON.stringify(grown)).toBeLessThan(LINE_BYTES / 2);
    expect((await viaEdge(tp.edgePort, victimPage.host, '/')).body).toBe(victimPage.body);
  }, 90_000);
});
