// HTTPS at the edge with certificates from a real ACME CA: Pebble stands in for Let's Encrypt, the test
// DNS server for the public DNS. Apps, service subdomains and verified custom domains get their
// certificate over HTTP-01 (the CA fetches the token from the edge's plain port), are served over
// HTTPS with it, and plain HTTP redirects; a host the platform does not route never gets one; a failed
// order says why and backs off; certificates renew before they expire.
import { request } from 'node:https';
import { connect, type PeerCertificate, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformEvent } from '../../src/server/app.js';
import { freePort } from '../../src/server/runtime/process.js';
import { pebbleMissing, startPebble, type TestAcme } from '../helpers/acme.js';
import {
  archiveOf,
  createProject,
  deploy,
  settled,
  upload,
  until,
  viaEdge,
  waitFor,
} from '../helpers/deploy.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';

const missing = pebbleMissing();
// CI installs Pebble: there the suite must run, not skip.
if (missing && process.env.CI) throw new Error(`HTTPS tests: ${missing}`);

export interface HttpsAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  certificate: PeerCertificate;
}

/** GET https://<host><path> at 127.0.0.1:<port>, trusting only `ca`. */
export function httpsGet(port: number, host: string, path: string, ca: string): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        servername: host,
        headers: { host },
        ca,
        agent: false,
        timeout: 20_000,
      },
      (res) => {
        const certificate = (res.socket as TLSSocket).getPeerCertificate();
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, certificate }),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

/** Whether a TLS handshake for `host` succeeds (any certificate): what a scanner would learn. */
function handshake(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, servername: host, rejectUnauthorized: false });
    socket.setTimeout(10_000, () => socket.destroy());
    socket.once('secureConnect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('close', () => resolve(false));
  });
}

describe.skipIf(missing !== null)('HTTPS over HTTP-01', () => {
  let dns: TestDns;
  let pebble: TestAcme;
  let tp: TestPlatform;
  let root: string;
  const events: PlatformEvent[] = [];

  beforeAll(async () => {
    dns = await startDns();
    const edgePort = await freePort();
    pebble = await startPebble({ httpPort: edgePort, dnsServer: dns.server });
    tp = await startPlatform({
      edgePort,
      baseDomain: 'apps.test',
      tunnelDomain: 'tun.apps.test',
      dnsServers: [dns.server],
      healthTimeoutMs: 20_000,
      tls: {
        httpsPort: 0,
        acme: {
          directoryUrl: pebble.directory,
          caFile: pebble.caFile,
          email: 'ops@apps.test',
          retryBaseMs: 60_000,
          onDemandTimeoutMs: 20_000,
        },
      },
    });
    tp.platform.events.on('event', (event) => events.push(event));
    root = await pebble.issuingRoot();
  }, 60_000);
  afterAll(async () => {
    if (process.env.WHARF_DEBUG_TLS) console.log(events, pebble.output().slice(-3000));
    await tp?.close();
    await pebble?.close();
    await dns?.close();
  }, 30_000);

  async function certificateOf(name: string) {
    await until(
      async () =>
        (await tp.platform.tls!.certificates.status(name))?.status !== 'pending' &&
        (await tp.platform.tls!.certificates.status(name)) !== null,
      `the order for ${name} to end`,
      30_000,
      100,
    );
    return (await tp.platform.tls!.certificates.status(name))!;
  }

  it('issues an app its certificate when it is created, and serves it over HTTPS with it', async () => {
    dns.set('web.apps.test', { A: ['127.0.0.1'] });
    const project = await createProject(tp, { name: 'Web', subdomain: 'web', deploy_source: 'upload' });
    expect(project.url).toBe(`https://web.apps.test:${tp.httpsPort}`);
    await upload(tp, project.id, archiveOf({ 'index.html': '<h1>over https</h1>' }));
    await deploy(tp, project.id);
    await waitFor(tp, project.id, settled, 30_000);

    const status = await certificateOf('web.apps.test');
    expect(status).toMatchObject({ name: 'web.apps.test', status: 'issued', error: null });
    expect(Date.parse(status.not_after!)).toBeGreaterThan(Date.now() + 30 * 24 * 3_600_000);
    const answer = await httpsGet(tp.httpsPort!, 'web.apps.test', '/', root);
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('<h1>over https</h1>');
    expect(answer.certificate.subjectaltname).toBe('DNS:web.apps.test');
    // Pebble fetched the token from the edge's plain port.
    expect(dns.queries).toContain('A web.apps.test');
    expect(events.map((e) => e.message)).toContainEqual(
      expect.stringMatching(/^certificate for web\.apps\.test issued \(http-01\), valid until /),
    );
  }, 90_000);

  it('redirects plain HTTP to HTTPS with the path and query, keeping the method (308)', async () => {
    const answer = await viaEdge(tp.edgePort, 'web.apps.test', '/a/b?c=d');
    expect(answer.status).toBe(308);
    expect(answer.headers.location).toBe(`https://web.apps.test:${tp.httpsPort}/a/b?c=d`);
  });

  it('answers only the CA’s pending tokens on the plain port', async () => {
    const path = '/.well-known/acme-challenge/' + 'x'.repeat(43);
    const answer = await viaEdge(tp.edgePort, 'web.apps.test', path);
    expect(answer.status).toBe(404);
  });

  it('orders a service subdomain’s certificate on demand, while its first visitor’s handshake waits', async () => {
    dns.set('shop-api.apps.test', { A: ['127.0.0.1'] });
    const project = await createProject(tp, {
      name: 'Shop',
      subdomain: 'shop',
      deploy_source: 'upload',
      build_config: { services: [{ name: 'api', kind: 'web', start_cmd: 'node server.js' }] },
    });
    // Created with its hosts: the certificates are asked for in the background, or at the first visit.
    const answer = await httpsGet(tp.httpsPort!, 'shop-api.apps.test', '/', root);
    expect(answer.certificate.subjectaltname).toBe('DNS:shop-api.apps.test');
    expect(answer.status).toBe(503); // not deployed yet, but over HTTPS with its own certificate
    await call(`${tp.api}/projects/${project.id}`, { key: tp.key, method: 'DELETE' });
  }, 60_000);

  it('never orders a certificate for a host the platform does not route', async () => {
    dns.set('nobody.apps.test', { A: ['127.0.0.1'] });
    expect(await handshake(tp.httpsPort!, 'nobody.apps.test')).toBe(false);
    expect(await handshake(tp.httpsPort!, 'evil.example.com')).toBe(false);
    expect(await tp.platform.tls!.certificates.status('nobody.apps.test')).toBeNull();
    expect(await tp.platform.tls!.certificates.status('evil.example.com')).toBeNull();
    expect(pebble.output()).not.toContain('nobody.apps.test');
  });

  it('says why an order failed, in the CA’s words, backs off, and keeps the app served over plain HTTP’s redirect', async () => {
    // No A record: the CA cannot reach the edge for this name.
    const project = await createProject(tp, { name: 'Lost', subdomain: 'lost', deploy_source: 'upload' });
    const status = await certificateOf('lost.apps.test');
    expect(status.status).toBe('failed');
    expect(status.error).toMatch(/lost\.apps\.test/);
    expect(events.map((e) => e.message)).toContainEqual(
      expect.stringMatching(/^certificate for lost\.apps\.test not issued \(http-01, attempt 1; next at /),
    );
    // Within the back-off a visitor's handshake does not make the platform ask again.
    const orders = pebble.output().split('lost.apps.test').length;
    expect(await handshake(tp.httpsPort!, 'lost.apps.test')).toBe(false);
    expect(pebble.output().split('lost.apps.test').length).toBe(orders);
    await call(`${tp.api}/projects/${project.id}`, { key: tp.key, method: 'DELETE' });
  }, 60_000);
});
