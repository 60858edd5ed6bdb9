// Extra certificate authorities this process trusts for HTTPS to a platform (`wharf http --ca <pem>`,
// WHARF_CA_FILE): a private CA, or a test CA such as Pebble's. They are added to the system's roots,
// never in place of them, for fetch (undici's global dispatcher, which Node's fetch uses), for
// https.request and for WebSockets. Verification itself is never turned off.
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { Agent, setGlobalDispatcher } from 'undici';

const extra: string[] = [];

/** Trusts the CA certificates in the PEM file `path` from now on; throws a readable error. */
export function trustCaFile(path: string): void {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(
      `cannot read the CA file ${path}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'there is no such file' : (error as Error).message}`,
    );
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----'))
    throw new Error(`the CA file ${path} holds no PEM certificate`);
  if (extra.includes(pem)) return;
  extra.push(pem);
  setGlobalDispatcher(new Agent({ connect: { ca: [...rootCertificates, ...extra] } }));
}

/** The `ca` option for https.request and ws: the system's roots and the extra ones, or none given. */
export function trustedCas(): { ca?: string[] } {
  return extra.length === 0 ? {} : { ca: [...rootCertificates, ...extra] };
}
