// HTTPS for a platform whose config names an HTTPS port: the ACME issuer, the challenge solvers and
// the certificate manager, wired to the edge (which answers HTTP-01 and serves TLS) and the store.
import { readFileSync } from 'node:fs';
import type { PlatformConfig } from '../config.js';
import type { Edge } from '../edge/edge.js';
import type { Store } from '../store/open.js';
import { AcmeIssuer, type ChallengeSolver } from './acme.js';
import { CertificateManager } from './certificates.js';
import { DnsHookSolver, DnsResponder, HttpChallenges, SharedChallenges } from './challenges.js';

export interface PlatformTls {
  certificates: CertificateManager;
  /** The built-in DNS-01 responder, when `--acme-dns-listen` is set. */
  responder: DnsResponder | null;
  /** How wildcards are proved: `hook`, `responder`, or null (no wildcards: every host on its own). */
  dns: 'hook' | 'responder' | null;
  directoryUrl: string;
  /** Starts the responder and the certificate manager (once the edge listens: HTTP-01 needs it). */
  start(): Promise<void>;
  close(): Promise<void>;
}

export type TlsEvent = (level: 'info' | 'warn', message: string) => void;

export function setUpTls(options: {
  config: PlatformConfig;
  db: Store;
  secret: Uint8Array | string;
  edge: Edge;
  /** In a cluster: how to tell the other nodes a certificate was issued; null on a single node. */
  cluster: { announce(name: string): void } | null;
  event: TlsEvent;
}): PlatformTls | null {
  const { config, db, secret, edge, event, cluster } = options;
  if (config.tls.httpsPort === null) return null;
  const { acme } = config.tls;
  let caPem: string | null = null;
  if (acme.caFile) {
    try {
      caPem = readFileSync(acme.caFile, 'utf8');
    } catch (error) {
      throw new Error(`cannot read --acme-ca-file ${acme.caFile}: ${(error as Error).message}`);
    }
    if (!caPem.includes('-----BEGIN CERTIFICATE-----')) {
      throw new Error(`--acme-ca-file ${acme.caFile} holds no PEM certificate`);
    }
  }
  // A cluster's nodes answer each other's challenges: the CA's check may reach any of them.
  const shared = cluster ? new SharedChallenges(db) : null;
  const http = new HttpChallenges(shared);
  const responder = acme.dnsHook === null && acme.dnsListen !== null ? new DnsResponder(shared) : null;
  const dns: ChallengeSolver | null = acme.dnsHook !== null ? new DnsHookSolver(acme.dnsHook) : responder;
  const issuer = new AcmeIssuer(db, secret, { directoryUrl: acme.directoryUrl, email: acme.email, caPem });
  const certificates = new CertificateManager({
    db,
    secret,
    issuer,
    http,
    dns,
    wildcardDomains: [...new Set([config.baseDomain, config.tunnelDomain])],
    routed: (host) => edge.serves(host),
    orderedFor: (host) => edge.tunnelOwner(host),
    onDemandPerDay: acme.onDemandPerAccountPerDay,
    knownHosts: async () => {
      const [labels, domains] = await Promise.all([
        db.selectFrom('project_hosts').select('label').execute(),
        db.selectFrom('domains').select('domain').where('verified', '=', 1).execute(),
      ]);
      return [
        edge.apiHost,
        ...labels.map((l) => `${l.label}.${config.baseDomain}`),
        ...domains.map((d) => d.domain),
      ];
    },
    renewBeforeMs: acme.renewBeforeMs,
    retryBaseMs: acme.retryBaseMs,
    retryMaxMs: acme.retryMaxMs,
    checkIntervalMs: acme.checkIntervalMs,
    onDemandTimeoutMs: acme.onDemandTimeoutMs,
    event,
    ...(cluster ? { cluster } : {}),
  });
  edge.enableTls(certificates, http);
  return {
    certificates,
    responder,
    dns: acme.dnsHook !== null ? 'hook' : responder ? 'responder' : null,
    directoryUrl: acme.directoryUrl,
    async start() {
      if (responder) {
        const [host, port] = splitHostPort(acme.dnsListen!);
        await responder.listen(host, port);
      }
      await certificates.start();
    },
    async close() {
      await certificates.close();
      await responder?.close();
    },
  };
}

/** `host:port` or `[v6]:port`. */
export function splitHostPort(value: string): [string, number] {
  const match = /^\[?([^\]]*?)\]?:(\d{1,5})$/.exec(value);
  if (!match) throw new Error(`"${value}" is not host:port`);
  return [match[1]!, Number(match[2])];
}
