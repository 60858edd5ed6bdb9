// Throwaway certificates for tests that need one the CA did not sign (a front's files, another node's
// order as the store keeps it), made with openssl.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A self-signed certificate for `name`, a DNS name or an IP address (its CN and only SAN), with a P-256
 * key; null without openssl.
 */
export function selfSignedCertificate(name: string, days = 1): { certPem: string; keyPem: string } | null {
  if (spawnSync('openssl', ['version']).error) return null;
  const dir = mkdtempSync(join(tmpdir(), 'wharf-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        String(days),
        '-subj',
        `/CN=${name}`,
        '-addext',
        `subjectAltName=${isIP(name) ? 'IP' : 'DNS'}:${name}`,
        '-keyout',
        'key.pem',
        '-out',
        'cert.pem',
      ],
      { cwd: dir, stdio: 'ignore' },
    );
    return {
      certPem: readFileSync(join(dir, 'cert.pem'), 'utf8'),
      keyPem: readFileSync(join(dir, 'key.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
