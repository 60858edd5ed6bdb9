// The HAProxy front's configuration (src/server/front/haproxy-config.ts): what goes straight to an app,
// what the Node edge keeps, and that a tenant's hostname can never become configuration. The rendered
// files are loaded by the real HAProxy (`haproxy -c`) when it is installed.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type FrontConfigOptions,
  type FrontFiles,
  type FrontSnapshot,
  ERROR_PAGES,
  TOO_LARGE_PAGE,
  bindAddress,
  certificateFile,
  isFrontHostname,
  renderFrontConfig,
} from '../../../src/server/front/haproxy-config.js';
import { findHaproxy } from '../../../src/server/front/haproxy.js';
import { selfSignedCertificate } from '../../helpers/certificates.js';

const options: FrontConfigOptions = {
  http: { host: '127.0.0.1', port: 8788 },
  https: null,
  apiHost: 'api.example.com',
  bodyBytes: 100 * 1024 * 1024,
  hardStopAfterS: 900,
  runAs: null,
};

/** An app on `port` of this machine. */
const at = (port: number) => [{ host: '127.0.0.1', port }];

const snapshot: FrontSnapshot = {
  routes: [
    { host: 'shop.example.com', servers: at(40001), hsts: false },
    { host: 'shop-api.example.com', servers: at(40002), hsts: false },
    { host: 'www.shop.test', servers: at(40001), hsts: true },
  ],
  certificates: [],
};

const haproxy = findHaproxy();
const root = mkdtempSync(join(tmpdir(), 'wharf-front-config-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Writes the rendered files with what the front puts beside them, and asks HAProxy to load them. */
function check(files: FrontFiles, certificates: Record<string, string> = {}): string | null {
  const dir = mkdtempSync(join(root, 'cfg-'));
  mkdirSync(join(dir, 'errors'));
  mkdirSync(join(dir, 'certs'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  for (const [name, text] of Object.entries(certificates)) writeFileSync(join(dir, name), text);
  writeFileSync(join(dir, TOO_LARGE_PAGE), '<h1>413</h1>');
  for (const code of ERROR_PAGES) {
    writeFileSync(join(dir, 'errors', `${code}.http`), `HTTP/1.1 ${code} X\r\ncontent-length: 0\r\n\r\n`);
  }
  const run = spawnSync(haproxy!.path, ['-c', '-q', '-C', dir, '-f', 'haproxy.cfg'], { encoding: 'utf8' });
  return run.status === 0 ? null : `${run.stdout}\n${run.stderr}`;
}

describe('renderFrontConfig', () => {
  it('maps each routed host to the backend of its port, shared by hosts of the same app', () => {
    const { files, skipped } = renderFrontConfig(snapshot, options);
    expect(skipped).toEqual([]);
    expect(files['hosts.map']).toBe(
      'shop-api.example.com app_40002\nshop.example.com app_40001\nwww.shop.test app_40001\n',
    );
    expect(files['hsts.lst']).toBe('www.shop.test\n');
    expect(files['crt-list.txt']).toBe('# none\n');
    const cfg = files['haproxy.cfg'];
    expect(cfg.match(/^backend app_\d+$/gm)).toEqual(['backend app_40001', 'backend app_40002']);
    // The app's port, then the Node edge as the backup (Wharf's pages when the app does not answer).
    expect(cfg).toContain(
      'backend app_40001\n  server app ipv4@127.0.0.1:40001 check inter 2s fall 1 rise 1 observe layer4 error-limit 1 on-error mark-down\n  server edge unix@edge.sock send-proxy-v2-ssl backup',
    );
    expect(cfg).toContain('  default_backend node_edge');
    expect(cfg).toContain('  bind ipv4@127.0.0.1:8788\n');
    expect(cfg).not.toContain('ssl crt-list');
    expect(cfg).not.toContain('redirect');
    // Hostnames live in the map and list files only.
    expect(cfg).not.toContain('shop.example.com');
    expect(cfg).toContain(`gt ${100 * 1024 * 1024}`);
  });

  it('sends the hosts of an app on several servers (a Swarm service’s tasks) to them in turn', () => {
    const tasks = [
      { host: '10.0.0.12', port: 30_002 },
      { host: '10.0.0.11', port: 30_001 },
    ];
    const { files, skipped } = renderFrontConfig(
      {
        routes: [
          { host: 'swarm.example.com', servers: tasks, hsts: false },
          // The same servers in another order: the same backend.
          { host: 'www.swarm.test', servers: [...tasks].reverse(), hsts: false },
          { host: 'shop.example.com', servers: at(40001), hsts: false },
        ],
        certificates: [],
      },
      options,
    );
    expect(skipped).toEqual([]);
    const backend = /^swarm\.example\.com (app_[0-9a-f]{16})$/m.exec(files['hosts.map'])![1]!;
    expect(files['hosts.map']).toContain(`www.swarm.test ${backend}\n`);
    expect(files['hosts.map']).toContain('shop.example.com app_40001\n');
    const cfg = files['haproxy.cfg'];
    expect(cfg).toContain(
      `backend ${backend}\n  balance roundrobin\n` +
        '  server app1 ipv4@10.0.0.11:30001 check inter 2s fall 1 rise 1 observe layer4 error-limit 1 on-error mark-down\n' +
        '  server app2 ipv4@10.0.0.12:30002 check inter 2s fall 1 rise 1 observe layer4 error-limit 1 on-error mark-down\n' +
        '  server edge unix@edge.sock send-proxy-v2-ssl backup',
    );
    // Another set of servers, another backend; one machine's port is its own.
    const moved = renderFrontConfig(
      { routes: [{ host: 'swarm.example.com', servers: [tasks[0]!], hsts: false }], certificates: [] },
      options,
    );
    expect(moved.files['hosts.map']).not.toContain(backend);
    expect(moved.files['hosts.map']).toMatch(/^swarm\.example\.com app_[0-9a-f]{16}\n$/);
    if (haproxy) expect(check(files)).toBeNull();
  });

  it('is the same text for the same table, whatever the order it came in', () => {
    const reversed = { ...snapshot, routes: [...snapshot.routes].reverse() };
    expect(renderFrontConfig(reversed, options).files).toEqual(renderFrontConfig(snapshot, options).files);
  });

  it('adds the HTTPS port with the certificates, and redirects plain HTTP but for ACME challenges', () => {
    const { files } = renderFrontConfig(
      { ...snapshot, certificates: ['certs/shop.example.com.pem', 'certs/_.example.com.pem'] },
      { ...options, https: { host: '127.0.0.1', port: 8443 } },
    );
    const cfg = files['haproxy.cfg'];
    expect(cfg).toContain(
      '  bind ipv4@127.0.0.1:8443 ssl crt-list crt-list.txt strict-sni alpn h2,http/1.1\n',
    );
    // HTTP/2 bodies of unknown length are counted by the Node edge, as chunked HTTP/1.1 ones are.
    expect(cfg).toContain('  http-request unset-var(txn.app) if h2 !sized !bodyless_method\n');
    expect(cfg).toContain('  http-request wait-for-body time 1s at-least 1 if h2 !sized bodyless_method\n');
    expect(cfg).toContain(
      '  http-request redirect code 308 location https://%[var(txn.host)]:8443%[pathq] if !tls !acme !upgrade named\n',
    );
    expect(files['crt-list.txt']).toBe('certs/shop.example.com.pem\ncerts/_.example.com.pem\n');
    // On port 443 the redirect names no port.
    const standard = renderFrontConfig(snapshot, { ...options, https: { host: '0.0.0.0', port: 443 } });
    expect(standard.files['haproxy.cfg']).toContain('location https://%[var(txn.host)]%[pathq]');
  });

  it('leaves out (and says so) a host that is not a plain DNS name, a bad server, and the API host', () => {
    const hostile = [
      'evil.test\n  bind 0.0.0.0:1',
      'evil.test app_1\nother.test',
      'a b.test',
      'quote".test',
      '%[src].test',
      'back\\slash.test',
      '#comment.test',
      '*.wild.test',
      'trailing.dot.',
      'UPPER..test',
      '-leading.test',
      `${'a'.repeat(64)}.test`,
      '',
    ];
    const { files, skipped } = renderFrontConfig(
      {
        routes: [
          ...hostile.map((host) => ({ host, servers: at(40001), hsts: true })),
          { host: 'ok.test', servers: at(0), hsts: false },
          { host: 'ok.test', servers: at(70_000), hsts: false },
          { host: 'api.example.com', servers: at(40001), hsts: false },
          { host: 'Mixed.Case.Test', servers: at(40003), hsts: false },
          // Servers come from Docker, yet nothing but an IPv4 address and a port gets in.
          { host: 'ok.test', servers: [], hsts: false },
          {
            host: 'ok.test',
            servers: [{ host: '10.0.0.1:1 backup\n  server x 1.2.3.4', port: 1 }],
            hsts: false,
          },
          { host: 'ok.test', servers: [{ host: 'node.example.com', port: 30_000 }], hsts: false },
          { host: 'ok.test', servers: [{ host: '::1', port: 30_000 }], hsts: false },
          {
            host: 'ok.test',
            servers: [
              { host: '10.0.0.1', port: 30_000 },
              { host: '10.0.0.2', port: -1 },
            ],
            hsts: false,
          },
        ],
        certificates: ['../../etc/shadow', 'certs/x.pem\n  bind :1', 'certs/ok.test.pem'],
      },
      options,
    );
    expect(skipped).toHaveLength(hostile.length + 3 + 5 + 2);
    expect(files['hosts.map']).toBe('mixed.case.test app_40003\n');
    expect(files['hsts.lst']).toBe('# none\n');
    expect(files['crt-list.txt']).toBe('certs/ok.test.pem\n');
    expect(files['haproxy.cfg']).not.toMatch(
      /evil|quote|%\[src\]\.test|bind 0\.0\.0\.0:1|shadow|1\.2\.3\.4|10\.0\.0/,
    );
  });

  it('never lets a generated host or certificate line break out of its file (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 30 }), { maxLength: 8 }), (hosts) => {
        const { files } = renderFrontConfig(
          {
            routes: hosts.map((host, i) => ({ host, servers: at(40_000 + i), hsts: i % 2 === 0 })),
            certificates: hosts.map((host) => `certs/${host}.pem`),
          },
          options,
        );
        for (const line of files['hosts.map'].trimEnd().split('\n')) {
          expect(line).toMatch(/^(# none|[a-z0-9.-]+ app_\d+)$/);
        }
        for (const line of files['crt-list.txt'].trimEnd().split('\n')) {
          expect(line).toMatch(/^(# none|certs\/(_\.)?[a-z0-9.-]+\.pem)$/);
        }
        // The configuration itself only gains backends, each of digits and fixed words.
        const empty = new Set(
          renderFrontConfig({ routes: [], certificates: [] }, options).files['haproxy.cfg'].split('\n'),
        );
        for (const line of files['haproxy.cfg'].split('\n').filter((l) => !empty.has(l))) {
          expect(line).toMatch(
            /^(backend app_\d+| {2}server app ipv4@127\.0\.0\.1:\d+ check inter 2s fall 1 rise 1 observe layer4 error-limit 1 on-error mark-down| {2}server edge unix@edge\.sock send-proxy-v2-ssl backup)$/,
          );
        }
      }),
    );
  });

  it.skipIf(!haproxy)('writes a configuration HAProxy loads, plain and with HTTPS', () => {
    expect(check(renderFrontConfig(snapshot, options).files)).toBeNull();
    const made = selfSignedCertificate('shop.example.com');
    if (!made) return;
    const pem = made.certPem + made.keyPem;
    const secure = renderFrontConfig(
      { ...snapshot, certificates: ['certs/shop.example.com.pem'] },
      { ...options, https: { host: '::', port: 8443 } },
    );
    expect(check(secure.files, { 'certs/shop.example.com.pem': pem })).toBeNull();
    // With no certificate yet, HAProxy still starts (handshakes fail until one is written).
    expect(check(renderFrontConfig(snapshot, { ...options, https: options.http }).files)).toBeNull();
  });
});

describe('isFrontHostname, certificateFile, bindAddress', () => {
  it('takes DNS names only', () => {
    expect(isFrontHostname('a.example.com')).toBe(true);
    expect(isFrontHostname('xn--bcher-kva.example')).toBe(true);
    expect(isFrontHostname('localhost')).toBe(true);
    expect(isFrontHostname('A.example.com')).toBe(false);
    expect(isFrontHostname('*.example.com')).toBe(false);
    expect(isFrontHostname('*.example.com', { wildcard: true })).toBe(true);
    expect(isFrontHostname('a_b.example.com')).toBe(false);
    expect(isFrontHostname(`${'a.'.repeat(127)}a`)).toBe(false);
  });

  it('names certificate files after their names, a wildcard with _', () => {
    expect(certificateFile('shop.example.com')).toBe('certs/shop.example.com.pem');
    expect(certificateFile('*.example.com')).toBe('certs/_.example.com.pem');
    expect(certificateFile('../x')).toBeNull();
  });

  it('binds IPv4, IPv6 (both families on ::) and hostnames, nothing else', () => {
    expect(bindAddress({ host: '0.0.0.0', port: 80 })).toBe('ipv4@0.0.0.0:80');
    expect(bindAddress({ host: '::', port: 443 })).toBe('ipv6@:::443 v4v6');
    expect(bindAddress({ host: '::1', port: 8788 })).toBe('ipv6@::1:8788');
    expect(bindAddress({ host: 'Localhost', port: 8788 })).toBe('localhost:8788');
    expect(() => bindAddress({ host: '0.0.0.0 ssl', port: 80 })).toThrow();
    expect(() => bindAddress({ host: '127.0.0.1', port: 0 })).toThrow();
  });
});
