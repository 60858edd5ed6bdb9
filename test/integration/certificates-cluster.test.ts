// A TLS handshake on one node of a cluster, for a host another node is ordering a certificate for,
// waits for that order (tls/certificates.ts): however many handshakes wait, the node looks at the
// store once per poll for that name, and every one of them gets the certificate once it is issued.
// Run on both stores.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveKeyEncryptionKey, sealAiKey } from '../../src/server/ai/keys.js';
import { type Store, openStore } from '../../src/server/store/open.js';
import { AcmeIssuer } from '../../src/server/tls/acme.js';
import { CertificateManager } from '../../src/server/tls/certificates.js';
import { HttpChallenges } from '../../src/server/tls/challenges.js';
import { selfSignedCertificate } from '../helpers/certificates.js';
import { countingReads, testStoreLocation } from '../helpers/test-store.js';

const dir = mkdtempSync(join(tmpdir(), 'wharf-certificates-cluster-'));
const secret = 'a-secret-the-nodes-share-of-at-least-32-chars';
const host = 'wait.example.test';
let db: Store;
let drop: () => Promise<void>;

beforeAll(async () => {
  const location = await testStoreLocation(dir);
  drop = location.drop;
  db = await openStore(location.location);
});

afterAll(async () => {
  await db?.destroy();
  await drop?.();
  rmSync(dir, { recursive: true, force: true });
});

describe('a handshake waiting for another node’s order', () => {
  it('polls the store once per name for all the handshakes waiting, and each gets the certificate', async () => {
    const counted = countingReads(db);
    const now = new Date().toISOString();
    // Another node claimed the order a moment ago.
    await db
      .insertInto('tls_certificates')
      .values({
        name: host,
        challenge: 'http-01',
        status: 'pending',
        cert_pem: null,
        key_secret: null,
        not_before: null,
        not_after: null,
        error: null,
        failures: 0,
        next_attempt_at: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
    const events: string[] = [];
    const manager = new CertificateManager({
      db: counted.db,
      secret,
      // Never reached: the other node holds the order.
      issuer: new AcmeIssuer(db, secret, {
        directoryUrl: 'https://127.0.0.1:9/dir',
        email: null,
        caPem: null,
      }),
      http: new HttpChallenges(),
      dns: null,
      wildcardDomains: [],
      routed: async (name) => name === host,
      knownHosts: async () => [],
      renewBeforeMs: 86_400_000,
      retryBaseMs: 60_000,
      retryMaxMs: 3_600_000,
      checkIntervalMs: 3_600_000,
      onDemandTimeoutMs: 15_000,
      event: (_level, message) => events.push(message),
      cluster: { announce: () => undefined },
    });
    try {
      const handshakes = Promise.all(Array.from({ length: 20 }, () => manager.forHandshake(host)));
      // Past the handshakes' first looks: from here on only the waiting is counted.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const before = counted.reads();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const waiting = counted.reads() - before;
      // One poll every 200 ms for the name: about 5 in that second (20 handshakes polling alone: ~100).
      expect(waiting).toBeGreaterThanOrEqual(3);
      expect(waiting).toBeLessThanOrEqual(8);

      const issued = selfSignedCertificate(host, 30)!;
      const notAfter = new Date(Date.now() + 30 * 86_400_000).toISOString();
      const sealed = sealAiKey(deriveKeyEncryptionKey(secret), `tls:${host}`, issued.keyPem);
      await db
        .updateTable('tls_certificates')
        .set({
          status: 'issued',
          cert_pem: issued.certPem,
          key_secret: JSON.stringify(sealed),
          not_before: now,
          not_after: notAfter,
          updated_at: new Date().toISOString(),
        })
        .where('name', '=', host)
        .execute();
      const contexts = await handshakes;
      expect(contexts.every((context) => context !== null)).toBe(true);
      expect(manager.contextFor(host)).not.toBeNull();
      expect(events).toEqual([]);
    } finally {
      await manager.close();
    }
  }, 30_000);
});

describe('the on-demand budget of an account', () => {
  // No CA here: its directory is not found, so an order fails at once (what is counted is that it was made).
  const noCa = createServer((_req, res) => res.writeHead(404).end());
  beforeAll(() => new Promise<void>((resolve) => noCa.listen(0, '127.0.0.1', resolve)));
  afterAll(() => new Promise((resolve) => noCa.close(resolve)));
  const node = (events: string[], perDay: number) =>
    new CertificateManager({
      db,
      secret,
      issuer: new AcmeIssuer(db, secret, {
        directoryUrl: `http://127.0.0.1:${(noCa.address() as AddressInfo).port}/dir`,
        email: null,
        caPem: null,
      }),
      http: new HttpChallenges(),
      dns: null,
      wildcardDomains: [],
      routed: async () => true,
      orderedFor: (name) => /^[a-z0-9-]+\.(acct-[a-z])\.tun\.test$/.exec(name)?.[1] ?? null,
      onDemandPerDay: perDay,
      knownHosts: async () => [],
      renewBeforeMs: 86_400_000,
      retryBaseMs: 60_000,
      retryMaxMs: 3_600_000,
      checkIntervalMs: 3_600_000,
      onDemandTimeoutMs: 300,
      event: (_level, message) => events.push(message),
      cluster: { announce: () => undefined },
    });
  const refusals = (events: string[]) => events.filter((e) => e.startsWith('no certificate ordered for'));
  const orders = async (account: string) =>
    (
      await db
        .selectFrom('certificate_orders')
        .select('host')
        .where('account_id', '=', account)
        .orderBy('host')
        .execute()
    ).map((row) => row.host);

  it('is the account’s across the nodes and through restarts, others’ budgets untouched', async () => {
    const eventsA: string[] = [];
    const eventsB: string[] = [];
    const a = node(eventsA, 2);
    const b = node(eventsB, 2);
    try {
      await a.forHandshake('one.acct-a.tun.test');
      await a.forHandshake('two.acct-a.tun.test');
      expect(refusals(eventsA)).toEqual([]);
      // Another node (or this one started again) finds the day's budget spent.
      expect(await b.forHandshake('three.acct-a.tun.test')).toBeNull();
      expect(refusals(eventsB)).toEqual([
        'no certificate ordered for three.acct-a.tun.test: its account caused 2 on-demand orders in a day, the most it may (wildcards over DNS-01 need none)',
      ]);
      expect(await b.status('three.acct-a.tun.test')).toBeNull();
      // Another account's budget is its own; hosts of no account (apps, domains) are not counted.
      await b.forHandshake('one.acct-b.tun.test');
      await b.forHandshake('app.example.test');
      expect(refusals(eventsB)).toHaveLength(1);
      expect(await orders('acct-a')).toEqual(['one.acct-a.tun.test', 'two.acct-a.tun.test']);
      expect(await orders('acct-b')).toEqual(['one.acct-b.tun.test']);
    } finally {
      await a.close();
      await b.close();
    }
  }, 30_000);

  it('takes no more than the budget from handshakes on two nodes at once, and forgets every account’s orders of a day ago', async () => {
    const dayAgo = new Date(Date.now() - 24 * 3_600_000 - 1_000).toISOString();
    await db
      .insertInto('certificate_orders')
      .values(
        [1, 2, 3].map((n) => ({ account_id: 'acct-c', host: `old${n}.acct-c.tun.test`, ordered_at: dayAgo })),
      )
      .execute();
    // An account that orders no more: its old orders go with the others'.
    await db
      .insertInto('certificate_orders')
      .values({ account_id: 'acct-quiet', host: 'old.acct-quiet.tun.test', ordered_at: dayAgo })
      .execute();
    const events: string[] = [];
    const a = node(events, 3);
    const b = node(events, 3);
    try {
      const hosts = Array.from({ length: 8 }, (_, i) => `h${i}.acct-c.tun.test`);
      await Promise.all(hosts.map((host, i) => (i % 2 === 0 ? a : b).forHandshake(host)));
      const taken = await orders('acct-c');
      expect(taken).toHaveLength(3);
      expect(taken.every((host) => hosts.includes(host))).toBe(true);
      expect(refusals(events)).toHaveLength(5);
      expect(await orders('acct-quiet')).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  }, 30_000);
});
