// Pebble (Debian's `pebble`, Let's Encrypt's test CA) on 127.0.0.1, standing in for Let's Encrypt: it
// speaks real ACME (RFC 8555) over HTTPS, resolves names through the test's DNS server and validates
// HTTP-01 against the edge's plain port and DNS-01 against TXT records. Its own HTTPS certificate is
// made here with openssl (a throwaway CA the platform trusts through --acme-ca-file).
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type ClientHttp2Session, type IncomingHttpHeaders, connect as connectHttp2 } from 'node:http2';
import { request } from 'node:https';
import { type PeerCertificate, type TLSSocket, connect as connectTls } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PlatformEvent } from '../../src/server/app.js';
import { until } from './poll.js';
import type { FakeDns } from './dns.js';
import { startPlatform, type TestPlatform } from './platform.js';
import { quietPort } from './ports.js';

export interface TestAcme {
  /** `https://127.0.0.1:<port>/dir` */
  directory: string;
  /** The CA of Pebble's own HTTPS listener (for --acme-ca-file). */
  caFile: string;
  /** The root that signs the certificates Pebble issues (new at each start). */
  issuingRoot(): Promise<string>;
  /** Pebble's output so far. */
  output(): string;
  close(): Promise<void>;
}

/** Why Pebble cannot run here (null: it can). */
export function pebbleMissing(): string | null {
  if (spawnSync('pebble', ['-h']).error) return 'pebble is not installed (apt-get install pebble)';
  if (spawnSync('openssl', ['version']).error) return 'openssl is not installed';
  return null;
}

function openssl(dir: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

function get(url: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

export async function startPebble(options: {
  /** The port Pebble checks HTTP-01 on: the edge's plain port. */
  httpPort: number;
  /** The DNS server Pebble resolves names with (`127.0.0.1:<port>`). */
  dnsServer: string;
  /** How long issued certificates are valid (seconds; Pebble's default is about five years). */
  validitySeconds?: number;
}): Promise<TestAcme> {
  const dir = mkdtempSync(join(tmpdir(), 'wharf-pebble-'));
  // A throwaway CA, and Pebble's listener certificate for 127.0.0.1 and localhost signed by it.
  openssl(
    dir,
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=Wharf test CA',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
  );
  openssl(
    dir,
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    '/CN=localhost',
    '-keyout',
    'pebble.key',
    '-out',
    'pebble.csr',
  );
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl(
    dir,
    'x509',
    '-req',
    '-in',
    'pebble.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
    '-out',
    'pebble.pem',
  );
  const [port, management] = [await quietPort(), await quietPort()];
  writeFileSync(
    join(dir, 'pebble.json'),
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${port}`,
        managementListenAddress: `127.0.0.1:${management}`,
        certificate: join(dir, 'pebble.pem'),
        privateKey: join(dir, 'pebble.key'),
        httpPort: options.httpPort,
        tlsPort: await quietPort(),
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
        ...(options.validitySeconds ? { certificateValidityPeriod: options.validitySeconds } : {}),
      },
    }),
  );
  let output = '';
  const child: ChildProcess = spawn(
    'pebble',
    ['-config', join(dir, 'pebble.json'), '-dnsserver', options.dnsServer],
    {
      env: {
        ...process.env,
        // No random sleeps before validating, every nonce good, and no authorization reused: each order
        // is validated afresh, as a first order with Let's Encrypt is.
        PEBBLE_VA_NOSLEEP: '1',
        PEBBLE_WFE_NONCEREJECT: '0',
        PEBBLE_AUTHZREUSE: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ca = readFileSync(join(dir, 'ca.pem'), 'utf8');
  const directory = `https://127.0.0.1:${port}/dir`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      if ((await get(directory, ca)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`pebble did not start:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    directory,
    caFile: join(dir, 'ca.pem'),
    async issuingRoot() {
      const answer = await get(`https://127.0.0.1:${management}/roots/0`, ca);
      if (answer.status !== 200) throw new Error(`pebble's root: ${answer.status}`);
      return answer.body;
    },
    output: () => output,
    async close() {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

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

/**
 * A platform on 127.0.0.1 with HTTPS on (a free port) and Pebble as its CA, validating HTTP-01 on the
 * edge's plain port through `dns`; its events are collected.
 */
export async function httpsPlatform(
  dns: FakeDns,
  base: string,
  acme: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<{ tp: TestPlatform; pebble: TestAcme; root: string; events: PlatformEvent[] }> {
  const edgePort = (extra.edgePort as number | undefined) ?? (await quietPort());
  const pebble = await startPebble({
    httpPort: edgePort,
    dnsServer: dns.server,
    ...(acme.validitySeconds ? { validitySeconds: acme.validitySeconds as number } : {}),
  });
  delete acme.validitySeconds;
  const events: PlatformEvent[] = [];
  const tp = await startPlatform({
    edgePort,
    baseDomain: base,
    tunnelDomain: `tun.${base}`,
    dnsServers: [dns.server],
    healthTimeoutMs: 20_000,
    ...extra,
    tls: {
      httpsPort: 0,
      acme: { directoryUrl: pebble.directory, caFile: pebble.caFile, retryBaseMs: 60_000, ...acme },
    },
  });
  tp.platform.events.on('event', (event) => events.push(event));
  return { tp, pebble, root: await pebble.issuingRoot(), events };
}

/** An HTTP/2 connection (ALPN `h2` only) to `host` at 127.0.0.1:<port>, trusting only `ca`. */
export function http2Session(port: number, host: string, ca: string): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const client = connectHttp2(`https://${host}:${port}`, {
      createConnection: () =>
        connectTls({ host: '127.0.0.1', port, servername: host, ca, ALPNProtocols: ['h2'] }),
    });
    client.once('connect', () => resolve(client));
    client.once('error', reject);
  });
}

export interface Http2Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * One request on `client`: `body` a Buffer is sent whole; an array is written piece by piece with no
 * Content-Length, a body only HTTP/2's framing (its end) delimits.
 */
export function http2Request(
  client: ClientHttp2Session,
  headers: Record<string, string | number>,
  body?: Buffer | Buffer[],
): Promise<Http2Answer> {
  return new Promise((resolve, reject) => {
    const stream = client.request(headers, { endStream: body === undefined });
    const chunks: Buffer[] = [];
    let answer: IncomingHttpHeaders = {};
    stream.on('response', (h) => (answer = h));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () =>
      resolve({ status: Number(answer[':status']), headers: answer, body: Buffer.concat(chunks) }),
    );
    stream.on('error', reject);
    stream.setTimeout(20_000, () => stream.close());
    if (Array.isArray(body)) {
      const pieces = [...body];
      const next = () => {
        const piece = pieces.shift();
        if (piece === undefined) stream.end();
        else stream.write(piece, () => setTimeout(next, 5));
      };
      next();
    } else if (body) stream.end(body);
  });
}

/** Waits until `platform` holds an issued certificate for `name` (wildcards as `*.<domain>`). */
export async function certificateIssued(
  platform: TestPlatform['platform'],
  name: string,
  timeoutMs = 30_000,
): Promise<void> {
  await until(
    async () => (await platform.tls!.certificates.status(name))?.status === 'issued',
    `${name}'s certificate to be issued`,
    timeoutMs,
    100,
  );
}
