// A TLS handshake on one node of a cluster, for a host another node is ordering a certificate for,
// waits for that order (tls/certificates.ts): however many handshakes wait, the node looks at the
// store once per poll for that name, and every one of them gets the certificate once it is issued.
// Run on both stores.
import { mkdtempSync, rmSync } from 'node:fs';
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
