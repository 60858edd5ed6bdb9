// HTTPS at the edge with certificates from a real ACME CA: Pebble stands in for Let's Encrypt, the test
// DNS server for the public DNS. Apps, service subdomains and verified custom domains get their
// certificate over HTTP-01 (the CA fetches the token from the edge's plain port), are served over
// HTTPS with it, and plain HTTP redirects; a host the platform does not route never gets one; a failed
// order says why and backs off; certificates renew before they expire.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import DNS2 from 'dns2';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformEvent } from '../../src/server/app.js';
import type { Domain } from '../../src/shared/api/domains.js';
import type { CertificateStatus } from '../../src/server/tls/certificates.js';
import { TunnelClient } from '../../src/core/tunnel/client.js';
import {
  certificateIssued,
  httpsGet,
  httpsPlatform,
  pebbleMissing,
  startPebble,
  type TestAcme,
} from '../helpers/acme.js';
import { archiveOf, createProject, deploy, settled, upload, viaEdge, waitFor } from '../helpers/deploy.js';
import { type LocalApp, startTextApp } from '../helpers/local-app.js';
import { until } from '../helpers/poll.js';
import { startDns, type FakeDns } from '../helpers/dns.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';
import { assertBuilt, runWharf, wharfBin, wharfEnv } from '../helpers/cli.js';
import { quietPort } from '../helpers/ports.js';

const missing = pebbleMissing();
// CI installs Pebble: there the suite must run, not skip.
if (missing && process.env.CI) throw new Error(`HTTPS tests: ${missing}`);

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
  let dns: FakeDns;
  let pebble: TestAcme;
  let tp: TestPlatform;
  let root: string;
  const events: PlatformEvent[] = [];

  beforeAll(async () => {
    dns = await startDns();
    const edgePort = await quietPort();
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
    // One read per look: two could straddle the order's start (none yet, then pending).
    const seen: { ended?: CertificateStatus } = {};
    await until(
      async () => {
        const status = await tp.platform.tls!.certificates.status(name);
        if (status && status.status !== 'pending') seen.ended = status;
        return seen.ended !== undefined;
      },
      `the order for ${name} to end`,
      30_000,
      100,
    );
    return seen.ended!;
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

  it('issues a verified custom domain its certificate, shows its state, and sends HSTS once its owner turns it on', async () => {
    const project = await createProject(tp, { name: 'Blog', subdomain: 'blog', deploy_source: 'upload' });
    await upload(tp, project.id, archiveOf({ 'index.html': '<h1>my blog</h1>' }));
    await deploy(tp, project.id);
    await waitFor(tp, project.id, settled, 30_000);
    const created = await call<{ domain: Domain; verification: { name: string; value: string } }>(
      `${tp.api}/domains`,
      { key: tp.key, body: { domain: 'www.myblog.test', project_id: project.id } },
    );
    expect(created.status).toBe(201);
    // Not verified: not routed, so no certificate is asked for.
    expect(created.body.domain.certificate).toEqual({ status: 'none', not_after: null, error: null });
    expect(await handshake(tp.httpsPort!, 'www.myblog.test')).toBe(false);
    dns.set(created.body.verification.name, { TXT: [created.body.verification.value] });
    dns.set('www.myblog.test', { CNAME: tp.platform.config.cnameTarget });
    dns.set(tp.platform.config.cnameTarget, { A: ['127.0.0.1'] });
    const verified = await call<{ verified: boolean }>(`${tp.api}/domains/${created.body.domain.id}/verify`, {
      key: tp.key,
      method: 'POST',
    });
    expect(verified.body.verified).toBe(true);
    const status = await certificateOf('www.myblog.test');
    expect(status.status).toBe('issued');
    const [listed] = (await call<Domain[]>(`${tp.api}/domains`, { key: tp.key })).body.filter(
      (d) => d.domain === 'www.myblog.test',
    );
    expect(listed!.certificate).toEqual({ status: 'issued', not_after: status.not_after, error: null });
    expect(listed!.hsts).toBe(false);

    const first = await httpsGet(tp.httpsPort!, 'www.myblog.test', '/', root);
    expect(first.body).toBe('<h1>my blog</h1>');
    expect(first.certificate.subjectaltname).toBe('DNS:www.myblog.test');
    expect(first.headers['strict-transport-security']).toBeUndefined();

    const patched = await call<Domain>(`${tp.api}/domains/${created.body.domain.id}`, {
      key: tp.key,
      method: 'PATCH',
      body: { hsts: true },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ hsts: true, project_id: project.id, verified: true });
    const after = await httpsGet(tp.httpsPort!, 'www.myblog.test', '/', root);
    expect(after.headers['strict-transport-security']).toBe('max-age=31536000');
    // Never over plain HTTP (RFC 6797 §7.2), and never for the app's own host, which its owner did not ask.
    expect(
      (await viaEdge(tp.edgePort, 'www.myblog.test', '/')).headers['strict-transport-security'],
    ).toBeUndefined();
    expect(
      (await httpsGet(tp.httpsPort!, 'blog.apps.test', '/', root).catch(() => null))?.headers[
        'strict-transport-security'
      ],
    ).toBeUndefined();
  }, 90_000);

  it('refuses a PATCH of a domain with nothing to change, of another account, or with a bad hsts', async () => {
    const created = await call<{ domain: Domain }>(`${tp.api}/domains`, {
      key: tp.key,
      body: { domain: 'patch.myblog.test' },
    });
    const id = created.body.domain.id;
    const empty = await call(`${tp.api}/domains/${id}`, { key: tp.key, method: 'PATCH', body: {} });
    expect(empty.status).toBe(422);
    const bad = await call(`${tp.api}/domains/${id}`, {
      key: tp.key,
      method: 'PATCH',
      body: { hsts: 'yes' },
    });
    expect(bad.status).toBe(422);
    const other = await tp.newAccount();
    const theirs = await call(`${tp.api}/domains/${id}`, {
      key: other.key,
      method: 'PATCH',
      body: { hsts: true },
    });
    expect(theirs.status).toBe(404);
    const [still] = (await call<Domain[]>(`${tp.api}/domains`, { key: tp.key })).body.filter(
      (d) => d.id === id,
    );
    expect(still!.hsts).toBe(false);
  });

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

/** A platform with HTTPS and its own Pebble, on `base`; `tls` adds to the ACME settings. */
describe.skipIf(missing !== null)('wildcards over DNS-01', () => {
  let dns: FakeDns;
  let dir: string;
  const stop: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    dns = await startDns();
    dir = mkdtempSync(join(tmpdir(), 'wharf-dns01-'));
  });
  afterAll(async () => {
    for (const close of stop.reverse()) await close();
    await dns?.close();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('through the operator’s hook: *.<base> and *.<tunnel> issued at start, new apps served at once with no order of their own, and kept across a restart', async () => {
    // The hook an operator would write for their DNS provider: here it edits a file the test DNS reads.
    const records = join(dir, 'records');
    writeFileSync(records, '');
    const hook = join(dir, 'hook.sh');
    writeFileSync(
      hook,
      [
        '#!/bin/sh',
        `f=${records}`,
        'case "$1" in',
        '  add) echo "$2 $3" >> "$f" ;;',
        '  remove) grep -v -F -x "$2 $3" "$f" > "$f.new"; mv "$f.new" "$f" ;;',
        '  *) echo "unknown action $1" >&2; exit 2 ;;',
        'esac',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    const calls: string[] = [];
    dns.dynamic = (name) => {
      if (!name.startsWith('_acme-challenge.')) return undefined;
      const values = readFileSync(records, 'utf8')
        .split('\n')
        .filter((line) => line.startsWith(`${name} `))
        .map((line) => line.slice(name.length + 1));
      calls.push(`${name}: ${values.length}`);
      return { TXT: values };
    };
    const dataDir = mkdtempSync(join(dir, 'data-'));
    const first = await httpsPlatform(dns, 'hook.test', { dnsHook: hook }, { dataDir });
    stop.push(() => first.pebble.close());
    const { certificates } = first.tp.platform.tls!;
    await until(
      async () =>
        (await certificates.status('*.hook.test'))?.status === 'issued' &&
        (await certificates.status('*.tun.hook.test'))?.status === 'issued',
      'both wildcards',
      30_000,
      100,
    );
    expect(calls.some((c) => c.startsWith('_acme-challenge.hook.test: 1'))).toBe(true);
    expect(calls.some((c) => c.startsWith('_acme-challenge.tun.hook.test: 1'))).toBe(true);
    // The hook took its records back once the CA had looked.
    expect(readFileSync(records, 'utf8').trim()).toBe('');

    const project = await createProject(first.tp, {
      name: 'Fresh',
      subdomain: 'fresh',
      deploy_source: 'upload',
    });
    const answer = await httpsGet(first.tp.httpsPort!, 'fresh.hook.test', '/', first.root);
    expect(answer.certificate.subjectaltname).toBe('DNS:*.hook.test');
    expect(answer.status).toBe(503); // not deployed yet: served over HTTPS all the same
    await first.tp.platform.tls!.certificates.reconcileNow();
    expect(await certificates.status('fresh.hook.test')).toBeNull();
    expect(project.url).toBe(`https://fresh.hook.test:${first.tp.httpsPort}`);

    // A restart on the same data serves the kept wildcard without asking the CA again.
    const orders = first.pebble.output().split('POST /order-plz').length;
    await first.tp.close();
    const second = await startPlatform({
      edgePort: first.tp.edgePort,
      dataDir,
      baseDomain: 'hook.test',
      tunnelDomain: 'tun.hook.test',
      dnsServers: [dns.server],
      tls: {
        httpsPort: 0,
        acme: { directoryUrl: first.pebble.directory, caFile: first.pebble.caFile, dnsHook: hook },
      },
    });
    stop.push(() => second.close());
    const again = await httpsGet(second.httpsPort!, 'fresh.hook.test', '/', first.root);
    expect(again.certificate.serialNumber).toBe(answer.certificate.serialNumber);
    await second.platform.tls!.certificates.reconcileNow();
    expect(first.pebble.output().split('POST /order-plz').length).toBe(orders);
  }, 120_000);

  it('through a hook that fails: the wildcard fails with the hook’s words, and hosts fall back to HTTP-01', async () => {
    const hook = join(dir, 'broken.sh');
    writeFileSync(hook, '#!/bin/sh\necho "provider said: invalid API token" >&2\nexit 3\n', { mode: 0o755 });
    dns.set('fallback.broken.test', { A: ['127.0.0.1'] });
    const { tp, pebble, root } = await httpsPlatform(dns, 'broken.test', { dnsHook: hook });
    stop.push(async () => {
      await tp.close();
      await pebble.close();
    });
    const { certificates } = tp.platform.tls!;
    await until(
      async () => (await certificates.status('*.broken.test'))?.status === 'failed',
      'the wildcard to fail',
      30_000,
      100,
    );
    expect((await certificates.status('*.broken.test'))!.error).toMatch(
      /the DNS hook \(add _acme-challenge\.broken\.test\) failed with exit code 3: provider said: invalid API token/,
    );
    await createProject(tp, { name: 'Fallback', subdomain: 'fallback', deploy_source: 'upload' });
    const answer = await httpsGet(tp.httpsPort!, 'fallback.broken.test', '/', root);
    expect(answer.certificate.subjectaltname).toBe('DNS:fallback.broken.test');
  }, 90_000);

  it('through the built-in responder, for _acme-challenge names delegated to the platform', async () => {
    // The test DNS plays a recursive resolver following the delegation (NS) to the platform's responder.
    let responder = '';
    dns.dynamic = async (name) => {
      if (!name.startsWith('_acme-challenge.') || !responder) return undefined;
      const [host, port] = responder.split(/:(?=\d+$)/);
      const packet = await new DNS2({ nameServers: [host!], port: Number(port), timeout: 2_000 }).resolve(
        name,
        'TXT',
      );
      return { TXT: packet.answers.map((a) => ((a as unknown as { data: string[] }).data ?? []).join('')) };
    };
    const { tp, pebble, root } = await httpsPlatform(dns, 'resp.test', { dnsListen: '127.0.0.1:0' });
    stop.push(async () => {
      await tp.close();
      await pebble.close();
    });
    responder = tp.platform.tls!.responder!.address!;
    const { certificates } = tp.platform.tls!;
    await certificates.reconcileNow();
    await certificateIssued(tp.platform, '*.resp.test');
    await createProject(tp, { name: 'Resp', subdomain: 'resp', deploy_source: 'upload' });
    const answer = await httpsGet(tp.httpsPort!, 'resp.resp.test', '/', root);
    expect(answer.certificate.subjectaltname).toBe('DNS:*.resp.test');
    // The responder answers only _acme-challenge names, and refuses the rest.
    const other = await new DNS2({
      nameServers: ['127.0.0.1'],
      port: Number(responder.split(':')[1]),
      timeout: 2_000,
    }).resolve('resp.test', 'A');
    expect(other.header.rcode).toBe(5);
  }, 90_000);
});

describe.skipIf(missing !== null)('renewal', () => {
  it('renews a certificate once it is due, serving the new one, and says so', async () => {
    const dns = await startDns({ 'short.renew.test': { A: ['127.0.0.1'] } });
    // Certificates valid one hour, renewed when less than an hour minus 3 s is left: due 3 s after issue.
    const { tp, pebble, root, events } = await httpsPlatform(dns, 'renew.test', {
      validitySeconds: 3_600,
      renewBeforeMs: 3_600_000 - 3_000,
      checkIntervalMs: 500,
    });
    try {
      await createProject(tp, { name: 'Short', subdomain: 'short', deploy_source: 'upload' });
      const first = await httpsGet(tp.httpsPort!, 'short.renew.test', '/', root);
      await until(
        () => events.some((e) => e.message.startsWith('certificate for short.renew.test renewed (http-01)')),
        'a renewal',
        30_000,
        100,
      );
      const second = await httpsGet(tp.httpsPort!, 'short.renew.test', '/', root);
      expect(second.certificate.serialNumber).not.toBe(first.certificate.serialNumber);
      expect(Date.parse(second.certificate.valid_to)).toBeGreaterThanOrEqual(
        Date.parse(first.certificate.valid_to),
      );
    } finally {
      await tp.close();
      await pebble.close();
      await dns.close();
    }
  }, 90_000);
});

describe.skipIf(missing !== null)('tunnels and the API over HTTPS', () => {
  let dns: FakeDns;
  let env: { tp: TestPlatform; pebble: TestAcme; root: string };
  let app: LocalApp;
  let appPort: number;
  let dir: string;
  let rootFile: string;

  beforeAll(async () => {
    assertBuilt();
    dns = await startDns({
      'api.tl.test': { A: ['127.0.0.1'] },
      'demo.tun.tl.test': { A: ['127.0.0.1'] },
    });
    env = await httpsPlatform(dns, 'tl.test', {});
    dir = mkdtempSync(join(tmpdir(), 'wharf-tls-cli-'));
    rootFile = join(dir, 'root.pem');
    writeFileSync(rootFile, env.root);
    app = await startTextApp((req) => `from the local app ${req.url}`);
    appPort = app.port;
  }, 60_000);
  afterAll(async () => {
    await env?.tp.close();
    await env?.pebble.close();
    await dns?.close();
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  /** `wharf http` against the platform's public HTTPS address; `.tl.test` names resolve to 127.0.0.1. */
  function wharfHttp(extra: string[]) {
    return spawn(
      process.execPath,
      [
        wharfBin,
        'http',
        String(appPort),
        '--platform',
        `https://api.tl.test:${env.tp.httpsPort}`,
        '--api-key',
        env.tp.key,
        '--subdomain',
        'demo',
        '--no-inspect',
        ...extra,
      ],
      {
        env: wharfEnv({
          home: mkdtempSync(join(dir, 'home-')),
          env: {
            NODE_OPTIONS: `--import ${join(import.meta.dirname, '..', 'fixtures', 'test-hosts.mjs')}`,
            WHARF_TEST_HOSTS: '.tl.test',
          },
        }),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
  }

  it('serves the API at https://api.<base>, with its own certificate', async () => {
    const answer = await httpsGet(env.tp.httpsPort!, 'api.tl.test', '/api/v1/health', env.root);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ ok: true });
    expect(answer.certificate.subjectaltname).toBe('DNS:api.tl.test');
    const plain = await viaEdge(env.tp.edgePort, 'api.tl.test', '/api/v1/health');
    expect(plain.status).toBe(308);
  }, 60_000);

  it('wharf http --ca connects over HTTPS, verifying the platform, and its public URL is https with a CA certificate', async () => {
    const child = wharfHttp(['--ca', rootFile]);
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    try {
      await until(() => output.includes('Forwarding'), `wharf http to connect:\n${output}`, 30_000, 100);
      expect(output).toContain(
        `Forwarding  https://demo.tun.tl.test:${env.tp.httpsPort} -> http://localhost:${appPort}`,
      );
      const answer = await httpsGet(env.tp.httpsPort!, 'demo.tun.tl.test', '/over-tls', env.root);
      expect(answer.status).toBe(200);
      expect(answer.body).toBe('from the local app /over-tls');
      expect(answer.certificate.subjectaltname).toBe('DNS:demo.tun.tl.test');
    } finally {
      child.kill('SIGINT');
      await new Promise((resolve) => child.once('close', resolve));
    }
  }, 90_000);

  it('refuses a platform whose certificate it cannot verify, saying so, when no --ca is given', async () => {
    const child = wharfHttp([]);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code).toBe(1);
    expect(stderr).toMatch(/certificate/i);
    expect(stderr.trim().split('\n')).toHaveLength(1);
  }, 60_000);

  it('refuses a --ca file that is not there or holds no certificate, in one line', async () => {
    const missingFile = await runWharf([
      'http',
      '3000',
      '--platform',
      'https://api.tl.test',
      '--ca',
      join(dir, 'nope.pem'),
    ]);
    expect(missingFile.code).toBe(1);
    expect(missingFile.stderr.trim()).toBe(
      `wharf: cannot read the CA file ${join(dir, 'nope.pem')}: there is no such file`,
    );
    const notPem = join(dir, 'not.pem');
    writeFileSync(notPem, 'hello');
    const garbage = await runWharf(['http', '3000', '--platform', 'https://api.tl.test', '--ca', notPem]);
    expect(garbage.stderr.trim()).toBe(`wharf: the CA file ${notPem} holds no PEM certificate`);
  });
});

describe.skipIf(missing !== null)('wharf platform with HTTPS, as the README runs it', () => {
  it('prints the HTTPS port, the ACME directory and how wildcards are proved, then each certificate issued', async () => {
    assertBuilt();
    const dns = await startDns({ 'api.cli.test': { A: ['127.0.0.1'] } });
    const edgePort = await quietPort();
    const pebble = await startPebble({ httpPort: edgePort, dnsServer: dns.server });
    const dir = mkdtempSync(join(tmpdir(), 'wharf-tls-platform-'));
    const child = spawn(
      process.execPath,
      [
        wharfBin,
        'platform',
        '--data-dir',
        join(dir, 'data'),
        '--port',
        '0',
        '--edge-port',
        String(edgePort),
        '--https-port',
        '0',
        '--base-domain',
        'cli.test',
        '--tunnel-domain',
        'tunnel.cli.test',
        '--dns-server',
        dns.server,
        '--acme-directory',
        pebble.directory,
        '--acme-ca-file',
        pebble.caFile,
        '--acme-email',
        'ops@cli.test',
        '--runtime',
        'sandbox',
      ],
      { env: wharfEnv({ home: dir }), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    try {
      await until(
        () => output.includes('[tls] certificate for api.cli.test issued'),
        `the API's certificate:\n${output}`,
        30_000,
        100,
      );
      const port = Number(
        /HTTPS +port (\d+); plain port (\d+) answers ACME HTTP-01 and redirects/.exec(output)?.[1],
      );
      expect(port).toBeGreaterThan(0);
      expect(output).toContain(`public: https://api.cli.test:${port}/api/v1`);
      expect(output).toContain(`Apps       https://<subdomain>.cli.test:${port}`);
      expect(output).toContain(`ACME       ${pebble.directory}; no wildcards (each host on its own`);
      const answer = await httpsGet(port, 'api.cli.test', '/api/v1/health', await pebble.issuingRoot());
      expect(answer.status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('close', resolve));
      await pebble.close();
      await dns.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it.each([
    [['--acme-dns-hook', '/bin/true'], /the --acme-\* options take effect with --https-port/],
    [['--https-port', '0', '--acme-dns-hook', '/bin/true', '--acme-dns-listen', '127.0.0.1:0'], /choose one/],
    [['--https-port', '0', '--acme-directory', 'ftp://ca.example'], /--acme-directory.*must be an https URL/],
    [['--https-port', '0', '--acme-dns-listen', 'nowhere'], /must be host:port/],
  ])('refuses %j with exit code 2 and says why', async (args, message) => {
    const home = mkdtempSync(join(tmpdir(), 'wharf-tls-usage-'));
    const result = await runWharf(['platform', '--port', '0', '--edge-port', '0', ...args], { home });
    rmSync(home, { recursive: true, force: true });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });

  it('refuses an --acme-ca-file that is not a certificate, before listening', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wharf-tls-ca-'));
    writeFileSync(join(dir, 'ca.pem'), 'not a certificate');
    const result = await runWharf(
      [
        'platform',
        '--port',
        '0',
        '--edge-port',
        '0',
        '--data-dir',
        join(dir, 'data'),
        '--https-port',
        '0',
        '--acme-ca-file',
        join(dir, 'ca.pem'),
      ],
      { home: dir },
    );
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      `wharf: --acme-ca-file ${join(dir, 'ca.pem')} holds no PEM certificate`,
    );
    rmSync(dir, { recursive: true, force: true });
  });
});

describe.skipIf(missing !== null)('on-demand certificates for tunnels', () => {
  it('counts them per account: past its daily budget an account’s new tunnel names get no order', async () => {
    const dns = await startDns({
      'one.tun.bud.test': { A: ['127.0.0.1'] },
      'two.tun.bud.test': { A: ['127.0.0.1'] },
    });
    const { tp, pebble, root, events } = await httpsPlatform(dns, 'bud.test', {
      onDemandPerAccountPerDay: 1,
    });
    const app = await startTextApp(
      (req) => `tunnelled ${req.url} ${req.headers['x-forwarded-proto']} ${req.headers.forwarded}`,
    );
    const clients: TunnelClient[] = [];
    const tunnel = async (subdomain: string) => {
      const client = new TunnelClient({
        platformUrl: tp.api.replace(/\/api\/v1$/, ''),
        apiKey: tp.key,
        localPort: app.port,
        subdomain,
      });
      clients.push(client);
      await client.start();
    };
    try {
      await tunnel('one');
      const first = await httpsGet(tp.httpsPort!, 'one.tun.bud.test', '/a', root);
      // The app hears that its visitor came over HTTPS.
      expect(first.body).toMatch(
        /^tunnelled \/a https for=127\.0\.0\.1;host="one\.tun\.bud\.test";proto=https$/,
      );
      expect(first.certificate.subjectaltname).toBe('DNS:one.tun.bud.test');
      await tunnel('two');
      expect(await handshake(tp.httpsPort!, 'two.tun.bud.test')).toBe(false);
      expect(await tp.platform.tls!.certificates.status('two.tun.bud.test')).toBeNull();
      expect(events.map((e) => e.message)).toContain(
        'no certificate ordered for two.tun.bud.test: its account caused 1 on-demand orders in a day, the most it may (wildcards over DNS-01 need none)',
      );
    } finally {
      for (const client of clients) await client.stop();
      await app.close();
      await tp.close();
      await pebble.close();
      await dns.close();
    }
  }, 90_000);
});
