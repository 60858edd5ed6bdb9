// A node killed under traffic (issue 20): node A is `wharf platform` in a child process, node B runs
// here, both on one PostgreSQL database and a one-node Swarm, behind a failover balancer. While an app,
// a tunnel and metered email checks are used without pause through the balancer, A gets SIGKILL:
// - the app keeps answering: through B's edge without one failure, through the balancer with at most
//   the one request that was in flight on A;
// - the tunnel's client reconnects through the balancer to B and keeps its subdomain; meanwhile public
//   requests get 502 at once; every request answered 200 reached the local app once and was captured
//   once (by the client, and by B for those after the move);
// - every email check that was answered is charged exactly once, retried with its Idempotency-Key until
//   answered, even the one A was running when it died (its reservation is freed once A is dead).
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CapturedExchange } from '../../src/core/capture/capture.js';
import { TunnelClient } from '../../src/core/tunnel/client.js';
import type { Release } from '../../src/shared/api/projects.js';
import type { Tunnel } from '../../src/shared/api/tunnels.js';
import { wharfBin } from '../helpers/cli.js';
import {
  createProject,
  deployFiles,
  logLines,
  nodeApp,
  startSlowDeploy,
  viaEdge,
  waitFor,
} from '../helpers/deploy.js';
import { type FakeDns, startDns } from '../helpers/dns.js';
import { removeSwarmServices, requireSwarm, testImages } from '../helpers/engine.js';
import { type Failover, failover, freePort } from '../helpers/failover.js';
import { type LocalApp, startTextApp } from '../helpers/local-app.js';
import { type FakeSmtp, startSmtp } from '../helpers/mail.js';
import { until } from '../helpers/poll.js';
import { type TestPlatform, call, startPlatform } from '../helpers/platform.js';
import { type TestDatabase, testDatabase } from '../helpers/test-store.js';

const reason = await requireSwarm();
const images = testImages() ?? { node: 'unset', python: 'unset' };
const secret = randomBytes(36).toString('base64url');
/** How long before a kill an exchange may have ended whose capture was still on its way (20 ms gather). */
const IN_FLIGHT_CAPTURE_MS = 250;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What an edge page says (its heading and first paragraph), or the start of another body. */
function pageText(body: string): string {
  const page = /<h1>(.*?)<\/h1>\s*<p>(.*?)<\/p>/.exec(body);
  return page ? `${page[1]}: ${page[2]}` : body.slice(0, 80);
}

interface Loop {
  stop(): Promise<void>;
}

/** Runs `step` again and again (one at a time) until stopped. */
function loop(step: () => Promise<void>): Loop {
  let running = true;
  const done = (async () => {
    while (running) await step();
  })();
  return {
    stop: async () => {
      running = false;
      await done;
    },
  };
}

describe.skipIf(reason !== null)('a node killed under traffic', () => {
  let database: TestDatabase;
  let dns: FakeDns;
  let smtp: FakeSmtp;
  let nodeA: ChildProcess;
  let aOutput = '';
  let b: TestPlatform;
  let local: LocalApp;
  let api: Failover;
  let edge: Failover;
  let key: string;
  const dirs: string[] = [];
  /** What reached the tunnel's local app: path → times. */
  const hits = new Map<string, number>();
  const ports = { aApi: 0, aEdge: 0 };

  beforeAll(async () => {
    const made = await testDatabase();
    if (!made) throw new Error('this suite runs on PostgreSQL (the postgres test project)');
    database = made;
    dns = await startDns({
      'kill.test': { MX: [{ exchange: 'mx.kill.test', priority: 10 }] },
      'mx.kill.test': { A: ['127.0.0.1'] },
    });
    // Each SMTP reply waits a little, so a check is often under way when A dies.
    smtp = await startSmtp({ replyDelayMs: 40 });

    ports.aApi = await freePort();
    ports.aEdge = await freePort();
    const aDir = mkdtempSync(join(tmpdir(), 'wharf-node-a-'));
    dirs.push(aDir);
    nodeA = spawn(
      process.execPath,
      [
        wharfBin,
        'platform',
        ...['--data-dir', aDir, '--database-url', database.url],
        ...['--node-url', `http://127.0.0.1:${ports.aEdge}`],
        ...['--port', String(ports.aApi), '--edge-port', String(ports.aEdge)],
        ...['--runtime', 'swarm', '--node-image', images.node, '--python-image', images.python],
        ...['--health-timeout', '20'],
        ...['--dns-server', dns.server, '--smtp-port', String(smtp.port), '--smtp-allow-private'],
      ],
      { env: { ...process.env, WHARF_SECRET: secret }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    nodeA.stdout!.on('data', (d: Buffer) => (aOutput += d.toString()));
    nodeA.stderr!.on('data', (d: Buffer) => (aOutput += d.toString()));
    await until(
      () => /Press Ctrl\+C/.test(aOutput) || nodeA.exitCode !== null,
      'node A to start',
      30_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}:\n${aOutput}`);
    });
    if (nodeA.exitCode !== null) throw new Error(`node A exited:\n${aOutput}`);
    key = (JSON.parse(readFileSync(join(aDir, 'local-account.json'), 'utf8')) as { api_key: string }).api_key;

    const bDir = mkdtempSync(join(tmpdir(), 'wharf-node-b-'));
    dirs.push(bDir);
    const bEdge = await freePort();
    b = await startPlatform({
      dataDir: bDir,
      databaseUrl: database.url,
      nodeUrl: `http://127.0.0.1:${bEdge}`,
      edgePort: bEdge,
      secret,
      runtime: 'swarm',
      images,
      healthTimeoutMs: 20_000,
      dnsServers: [dns.server],
      email: { smtpPort: smtp.port, allowPrivate: true },
    });
    const bApi = Number(new URL(b.api).port);
    api = await failover(() => [ports.aApi, bApi]);
    edge = await failover(() => [ports.aEdge, bEdge]);
    local = await startTextApp((req) => {
      hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
      return `local ${req.url}`;
    });
  }, 120_000);

  afterAll(async () => {
    nodeA?.kill('SIGKILL');
    await local?.close();
    await api?.close();
    await edge?.close();
    await b?.close();
    await removeSwarmServices(b?.platform.runtime.platformId);
    await database?.drop();
    await smtp?.close();
    await dns?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }, 90_000);

  it('keeps apps, the tunnel and the ledger whole: nothing answered is lost or doubled', async () => {
    // Everything goes through the balancer, so to A while it lives.
    const viaBalancer = { api: `http://127.0.0.1:${api.port}/api/v1`, key } as TestPlatform;
    const project = await createProject(viaBalancer, {
      name: 'Survivor',
      subdomain: 'k-app',
      deploy_source: 'upload',
    });
    // The app says each /say/<n> in its output: the project log must hold each once, whichever node
    // copies that output.
    const server = [
      "const http = require('node:http');",
      'http.createServer((req, res) => {',
      '  const said = /^\\/say\\/(\\d+)$/.exec(req.url);',
      "  if (said) console.log('said ' + said[1]);",
      "  res.end('alive ' + req.url);",
      "}).listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));",
      '',
    ].join('\n');
    await deployFiles(viaBalancer, project.id, {
      ...nodeApp('alive'),
      'server.js': server,
      Procfile: 'web: node server.js\n',
    });
    await until(
      async () => (await viaEdge(b.edgePort, 'k-app.localhost', '/').catch(() => null))?.status === 200,
      'B’s edge to serve the app',
      20_000,
    );

    const client = new TunnelClient({
      platformUrl: `http://127.0.0.1:${api.port}`,
      apiKey: key,
      localPort: local.port,
      subdomain: 'k-tunnel',
      backoffMs: 50,
    });
    const captured: string[] = [];
    client.on('exchange', (exchange: CapturedExchange) => captured.push(exchange.request.path));
    await client.start();

    // A deploy A is running when it dies: its image build sleeps.
    const slow = await createProject(viaBalancer, {
      name: 'Orphan',
      subdomain: 'k-slow',
      deploy_source: 'upload',
    });
    await startSlowDeploy(viaBalancer, slow.id, images.node);
    const before = (await call<Tunnel[]>(`${viaBalancer.api}/tunnels`, { key })).body.find(
      (t) => t.subdomain === 'k-tunnel',
    );
    expect(before).toBeDefined();

    let killedAt = 0;
    const app = { direct: { ok: 0, failed: [] as string[] }, balanced: { ok: 0, failed: [] as string[] } };
    const appLoop = (port: () => number, tally: { ok: number; failed: string[] }) =>
      loop(async () => {
        try {
          const answer = await viaEdge(port(), 'k-app.localhost', '/');
          if (answer.status === 200 && answer.body === 'alive /') tally.ok++;
          else tally.failed.push(`${answer.status} ${pageText(answer.body)}`);
        } catch (error) {
          tally.failed.push((error as Error).message);
        }
        // Paced: the suites beside this one keep their share of the machine.
        await sleep(10);
      });
    const tunnel = {
      answered: [] as { path: string; at: number }[],
      offline: 0,
      failed: [] as string[],
      movedAt: 0,
    };
    let sent = 0;
    const tunnelLoop = loop(async () => {
      const path = `/t/${sent++}`;
      try {
        const answer = await viaEdge(edge.port, 'k-tunnel.tunnel.localhost', path);
        if (answer.status === 200 && answer.body === `local ${path}`) {
          tunnel.answered.push({ path, at: Date.now() });
          if (killedAt && !tunnel.movedAt) tunnel.movedAt = Date.now();
        } else if (answer.status === 502) tunnel.offline++;
        else tunnel.failed.push(`${answer.status} ${pageText(answer.body)}`);
      } catch (error) {
        tunnel.failed.push((error as Error).message);
      }
      await sleep(20);
    });
    const checks: { key: string; body: unknown; replayed: boolean; afterKill: boolean }[] = [];
    let attempts = 0;
    let n = 0;
    const emailLoop = loop(async () => {
      const op = n++;
      const idempotencyKey = `check-${op}`;
      for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
        attempts++;
        try {
          const answer = await call(`${viaBalancer.api}/email/verify`, {
            key,
            body: { email: `user${op}@kill.test` },
            headers: { 'idempotency-key': idempotencyKey },
          });
          if (answer.status === 200) {
            checks.push({
              key: idempotencyKey,
              body: answer.body,
              replayed: answer.headers.get('idempotent-replayed') === 'true',
              afterKill: killedAt > 0,
            });
            return;
          }
          // 409: still running (on A, until B takes A for dead); 5xx: A died under it.
          expect([409, 500, 502, 503]).toContain(answer.status);
        } catch {
          // The connection died with A: the same key is sent again.
        }
        await sleep(100);
      }
      throw new Error(`email check ${op} never answered`);
    });
    const said: number[] = [];
    let saying = 0;
    let saidAfterKill = 0;
    const sayLoop = loop(async () => {
      const n = saying++;
      const answer = await viaEdge(b.edgePort, 'k-app.localhost', `/say/${n}`).catch(() => null);
      if (answer?.status === 200) {
        said.push(n);
        if (killedAt > 0) saidAfterKill++;
      }
      await sleep(150);
    });
    const direct = appLoop(() => b.edgePort, app.direct);
    const balanced = appLoop(() => edge.port, app.balanced);

    await sleep(2_000);
    expect(checks.length).toBeGreaterThan(0);
    expect(tunnel.answered.length).toBeGreaterThan(0);
    // The moment A is gone (not when it is told to go: it answers a little longer).
    const exited = once(nodeA, 'exit');
    nodeA.kill('SIGKILL');
    await exited;
    killedAt = Date.now();
    await until(
      () => tunnel.movedAt > 0 && checks.filter((c) => c.afterKill).length >= 3,
      'the tunnel to answer through B and email checks to go on',
      45_000,
      100,
    );
    await sleep(1_000);
    await Promise.all([direct.stop(), balanced.stop(), tunnelLoop.stop(), emailLoop.stop(), sayLoop.stop()]);
    const afterMove = tunnel.answered.filter((a) => a.at >= tunnel.movedAt).map((a) => a.path);
    await until(
      () => afterMove.every((path) => captured.includes(path)),
      'the client to have the captures B sent',
      10_000,
    ).catch(async (error: Error) => {
      const missing = afterMove.filter((path) => !captured.includes(path));
      const onB = await call<{ path: string }[]>(`${b.api}/tunnels/k-tunnel/requests`, { key });
      const listedOnB = missing.filter((path) => onB.body.some((r) => r.path === path));
      throw new Error(
        `${error.message}: missing ${missing.join(' ')} of ${afterMove.length} (B lists ${listedOnB.join(' ') || 'none of them'}; client has ${captured.length})`,
      );
    });
    // B holds the tunnel now, under the same subdomain and id.
    const moved = (await call<Tunnel[]>(`${b.api}/tunnels`, { key })).body.find(
      (t) => t.subdomain === 'k-tunnel',
    );
    expect(moved?.id).toBe(before!.id);
    await client.stop();

    // Apps: B's edge never failed; the balancer lost at most the one request in flight on A.
    expect(app.direct.failed).toEqual([]);
    expect(app.direct.ok).toBeGreaterThan(10);
    expect(app.balanced.failed.length, app.balanced.failed.join('\n')).toBeLessThanOrEqual(1);

    // The tunnel: offline (502, at once) until its client reconnected through B, then answering; the
    // same subdomain and id.
    expect(tunnel.failed.length, tunnel.failed.join('\n')).toBeLessThanOrEqual(1);
    expect(tunnel.movedAt - killedAt).toBeLessThan(15_000);
    // Every answered request reached the local app once; nothing reached it twice.
    for (const { path } of tunnel.answered) expect(hits.get(path), path).toBe(1);
    for (const [path, times] of hits) expect(times, path).toBe(1);
    // The client captured each once. The edge sends a capture a few milliseconds after the exchange
    // ended (gathered with others): those of exchanges that ended just before A died were in flight
    // with it, and may be missing; none is doubled.
    const count = (list: string[]) =>
      list.reduce((m, p) => m.set(p, (m.get(p) ?? 0) + 1), new Map<string, number>());
    const seenByClient = count(captured);
    for (const [path, times] of seenByClient) expect(times, path).toBe(1);
    for (const { path, at } of tunnel.answered)
      if (at < killedAt - IN_FLIGHT_CAPTURE_MS || at >= tunnel.movedAt)
        expect(seenByClient.get(path), path).toBe(1);
    // B captured those after the move once each (A's captures were in A's memory).
    const onB = await call<{ path: string }[]>(`${b.api}/tunnels/k-tunnel/requests`, { key });
    expect(onB.status).toBe(200);
    const capturedOnB = count(onB.body.map((r) => r.path));
    for (const path of afterMove) expect(capturedOnB.get(path), path).toBe(1);
    for (const [path, times] of capturedOnB) expect(times, path).toBe(1);

    // The deploy A was running ends once A is taken for dead: its project no longer says `building`
    // (which would hold one of the account's build slots for ever), its release is cancelled.
    const orphan = await waitFor(b, slow.id, (p) => p.status !== 'building', 40_000);
    expect(orphan.project.status).toBe('failed');
    expect(orphan.project.last_deploy_error).toMatch(
      /the node running it \(node_\w+\) stopped; deploy again/,
    );
    const [release] = (await call<Release[]>(`${b.api}/projects/${slow.id}/releases`, { key })).body;
    expect(release).toMatchObject({ status: 'cancelled' });
    expect(orphan.logs.map((l) => l.line)).toContain(
      `deploy cancelled: the node running it (${/node_\w+/.exec(orphan.project.last_deploy_error!)![0]}) stopped`,
    );

    // The app's output: copied by A, then by B from the last line A stored, each line once.
    const saidInLog = async () => {
      const counts = new Map<number, number>();
      for (const line of await logLines(b, project.id)) {
        const match = /^said (\d+)$/.exec(line);
        if (match) counts.set(Number(match[1]), (counts.get(Number(match[1])) ?? 0) + 1);
      }
      return counts;
    };
    await until(
      async () => {
        const counts = await saidInLog();
        return said.every((n) => counts.has(n));
      },
      'every line the app said to be in the project log',
      30_000,
      250,
    );
    const counts = await saidInLog();
    for (const n of said) expect(counts.get(n), `said ${n}`).toBe(1);
    expect(saidAfterKill).toBeGreaterThan(5);
    expect((await logLines(b, project.id)).join('\n')).toMatch(
      new RegExp(
        `the node copying this release's output \\(node_\\w+\\) stopped: ${b.platform.cluster.nodeId} copies it from here`,
      ),
    );

    // The ledger: one charge per answered check, under its own reservation; no retry charged twice.
    expect(attempts).toBeGreaterThan(checks.length);
    const entries = await b.platform.db
      .selectFrom('ledger_entries')
      .select(['idempotency_key', 'amount_micros'])
      .where('kind', '=', 'email_verification')
      .execute();
    const stored = await b.platform.db
      .selectFrom('idempotency_keys')
      .select(['key', 'id', 'state'])
      .where('endpoint', '=', 'email/verify')
      .execute();
    const byKey = new Map(stored.map((row) => [row.key, row]));
    for (const check of checks) expect(byKey.get(check.key)?.state, check.key).toBe('done');
    // Each answered check is charged under its reservation's id, exactly once.
    const charged = count(entries.map((e) => e.idempotency_key));
    for (const check of checks)
      expect(charged.get(`email/verify:${byKey.get(check.key)!.id}`), check.key).toBe(1);
    // Nothing else was charged (the loop ends after its last check is answered).
    expect(entries).toHaveLength(checks.length);
  }, 180_000);
});
