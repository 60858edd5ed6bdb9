// HTTPS on two platform nodes over one PostgreSQL database (issue 20), with Pebble as the CA. The CA's
// HTTP-01 check reaches node B only (as a balancer may send it anywhere), while node A orders: B answers
// A's challenge from the store. One order per name across the nodes, and both serve what it issued:
// the node that did not order loads it when told, or from the store at its first handshake.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformEvent } from '../../src/server/app.js';
import { httpsGet, pebbleMissing, startPebble, type TestAcme } from '../helpers/acme.js';
import { createProject } from '../helpers/deploy.js';
import { type FakeDns, startDns } from '../helpers/dns.js';
import { removeSwarmServices, requireSwarm, testImages } from '../helpers/engine.js';
import { until } from '../helpers/poll.js';
import { type TestPlatform, call, startPlatform } from '../helpers/platform.js';
import { quietPort } from '../helpers/ports.js';
import { type TestDatabase, testDatabase } from '../helpers/test-store.js';

const missing = pebbleMissing() ?? (await requireSwarm());
if (pebbleMissing() && process.env.CI) throw new Error(`cluster HTTPS tests: ${pebbleMissing()}`);
const images = testImages() ?? { node: 'unset', python: 'unset' };
const secret = randomBytes(36).toString('base64url');

describe.skipIf(missing !== null)('HTTPS on two platform nodes', () => {
  let database: TestDatabase;
  let dns: FakeDns;
  let pebble: TestAcme;
  let root: string;
  let a: TestPlatform;
  let b: TestPlatform;
  const events = new Map<string, PlatformEvent[]>();
  const dirs: string[] = [];

  async function node(name: string, edgePort: number): Promise<TestPlatform> {
    const dataDir = mkdtempSync(join(tmpdir(), `wharf-tls-node-${name}-`));
    dirs.push(dataDir);
    const tp = await startPlatform({
      dataDir,
      databaseUrl: database.url,
      nodeUrl: `http://127.0.0.1:${edgePort}`,
      edgePort,
      secret,
      runtime: 'swarm',
      images,
      baseDomain: 'apps.test',
      tunnelDomain: 'tun.apps.test',
      dnsServers: [dns.server],
      tls: {
        httpsPort: 0,
        acme: {
          directoryUrl: pebble.directory,
          caFile: pebble.caFile,
          retryBaseMs: 60_000,
          onDemandTimeoutMs: 30_000,
        },
      },
    });
    const seen: PlatformEvent[] = [];
    tp.platform.events.on('event', (event) => seen.push(event));
    events.set(name, seen);
    return tp;
  }

  const issuedOn = (name: string, host: string) =>
    (events.get(name) ?? []).filter((e) => e.message.startsWith(`certificate for ${host} issued`)).length;

  beforeAll(async () => {
    const made = await testDatabase();
    if (!made) throw new Error('the cluster suites run on PostgreSQL (the postgres test project)');
    database = made;
    dns = await startDns();
    const [edgeA, edgeB] = [await quietPort(), await quietPort()];
    // The CA checks HTTP-01 on B's plain port only.
    pebble = await startPebble({ httpPort: edgeB, dnsServer: dns.server });
    root = await pebble.issuingRoot();
    a = await node('a', edgeA);
    b = await node('b', edgeB);
  }, 90_000);

  afterAll(async () => {
    await b?.close();
    await a?.close();
    await removeSwarmServices(a?.platform.runtime.platformId);
    await pebble?.close();
    await dns?.close();
    await database?.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('issues through A an app’s certificate the CA checked on B, and serves it on both', async () => {
    dns.set('secure.apps.test', { A: ['127.0.0.1'] });
    const project = await createProject(a, { name: 'Secure', subdomain: 'secure', deploy_source: 'upload' });
    await until(
      async () => (await a.platform.tls!.certificates.status('secure.apps.test'))?.status === 'issued',
      'A’s order to be issued',
      60_000,
      100,
    );
    // A ordered (the host was created through it); the CA's check went to B, which answered from the store.
    expect(issuedOn('a', 'secure.apps.test')).toBe(1);
    expect(issuedOn('b', 'secure.apps.test')).toBe(0);
    expect(pebble.output()).toMatch(/secure\.apps\.test/);

    const throughA = await httpsGet(a.httpsPort!, 'secure.apps.test', '/', root);
    const throughB = await httpsGet(b.httpsPort!, 'secure.apps.test', '/', root);
    expect(throughB.certificate.subjectaltname).toBe('DNS:secure.apps.test');
    expect(throughB.certificate.serialNumber).toBe(throughA.certificate.serialNumber);
    expect(throughB.status).toBe(503); // not deployed: served over HTTPS all the same
    await call(`${a.api}/projects/${project.id}`, { key: a.key, method: 'DELETE' });
  }, 120_000);

  it('orders a host once when its first visitor reaches B while A orders it: both serve that one', async () => {
    dns.set('rush.apps.test', { A: ['127.0.0.1'] });
    await createProject(a, { name: 'Rush', subdomain: 'rush', deploy_source: 'upload' });
    // At once, while A's order is about to start or under way: B's handshake waits for the one order.
    const [throughB, throughA] = await Promise.all([
      httpsGet(b.httpsPort!, 'rush.apps.test', '/', root),
      httpsGet(a.httpsPort!, 'rush.apps.test', '/', root),
    ]);
    expect(throughB.certificate.subjectaltname).toBe('DNS:rush.apps.test');
    expect(throughB.certificate.serialNumber).toBe(throughA.certificate.serialNumber);
    expect(issuedOn('a', 'rush.apps.test') + issuedOn('b', 'rush.apps.test')).toBe(1);
  }, 120_000);

  it('answers on B only the challenges pending for that host', async () => {
    const plain = await fetch(`http://127.0.0.1:${b.edgePort}/.well-known/acme-challenge/${'x'.repeat(43)}`);
    expect(plain.status).toBe(404);
  });
});
