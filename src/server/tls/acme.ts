// Certificates over ACME (RFC 8555) with acme-client: one account per directory, its key sealed in the
// store with the server secret and reused across restarts, and orders for one name at a time (a host,
// or `*.<domain>`) proved by HTTP-01 (the edge answers the token on its plain port) or DNS-01 (a TXT
// record `_acme-challenge.<domain>` published by the operator's hook or the built-in responder).
import { request as httpRequest } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import { rootCertificates } from 'node:tls';
import type * as Acme from 'acme-client';
import { deriveKeyEncryptionKey, openAiKey, sealAiKey, type SealedKey } from '../ai/keys.js';
import type { Store } from '../store/open.js';

export type ChallengeType = 'http-01' | 'dns-01';

/** Publishes what the CA asks for, and takes it back once the CA has looked. */
export interface ChallengeSolver {
  readonly type: ChallengeType;
  /**
   * `domain`: the name the CA checks (for a wildcard, the domain under the `*`); `value`: for HTTP-01
   * the key authorization served at `/.well-known/acme-challenge/<token>`, for DNS-01 the TXT value.
   */
  add(domain: string, token: string, value: string): Promise<void>;
  remove(domain: string, token: string, value: string): Promise<void>;
}

export interface IssuedCertificate {
  /** The certificate and its chain (PEM). */
  certPem: string;
  keyPem: string;
  notBefore: Date;
  notAfter: Date;
}

export interface AcmeOptions {
  directoryUrl: string;
  email: string | null;
  /** An extra CA trusted for the directory's own HTTPS (a private CA, Pebble's). */
  caPem: string | null;
}

// acme-client talks through one shared axios instance: every directory's extra CA joins its trust.
const extraCas = new Set<string>();

let loaded: Promise<typeof Acme> | null = null;
/** How many extra CAs the shared agent trusts (-1: none made yet). */
let trustedCas = -1;

/**
 * acme-client, loaded when a certificate is first ordered (it and axios hold some 20 MB a platform
 * without HTTPS should not), set up once: retries, and the extra CAs' trust.
 */
function acmeClient(): Promise<typeof Acme> {
  loaded ??= import('acme-client').then((acme) => {
    // A CA that does not answer fails the order after a few seconds (3 tries, 2 s apart) instead of
    // 25: the certificate manager retries with its own back-off, and a visitor's handshake may wait.
    const settings = (acme.axios.defaults as unknown as { acmeSettings: Record<string, number> })
      .acmeSettings;
    settings.retryMaxAttempts = 3;
    settings.retryDefaultDelay = 2;
    return acme;
  });
  return loaded.then((acme) => {
    if (trustedCas !== extraCas.size) {
      trustedCas = extraCas.size;
      acme.axios.defaults.httpsAgent = new Agent({ ca: [...rootCertificates, ...extraCas], keepAlive: true });
    }
    return acme;
  });
}

export class AcmeIssuer {
  private readonly kek: Buffer;
  private client: Promise<Acme.Client> | null = null;

  constructor(
    private readonly db: Store,
    secret: Uint8Array | string,
    private readonly options: AcmeOptions,
  ) {
    this.kek = deriveKeyEncryptionKey(secret);
    if (options.caPem !== null) extraCas.add(options.caPem);
  }

  get directoryUrl(): string {
    return this.options.directoryUrl;
  }

  /** Orders a certificate for `name` (`*.<domain>` for a wildcard) proved through `solver`. */
  async issue(name: string, solver: ChallengeSolver): Promise<IssuedCertificate> {
    try {
      return await this.order(name, solver);
    } catch (error) {
      // acme-client loses a network error after its retries (a TypeError of its own): say what it was.
      if (error instanceof TypeError) {
        const unreachable = await this.unreachable();
        if (unreachable) throw new Error(unreachable);
      }
      throw error;
    }
  }

  /** Why the directory cannot be reached, or null when it answers (asked once, not through acme-client). */
  private unreachable(): Promise<string | null> {
    const url = this.options.directoryUrl;
    return new Promise((resolve) => {
      const req = (url.startsWith('https:') ? httpsRequest : httpRequest)(url, {
        ca: [...rootCertificates, ...extraCas],
        timeout: 10_000,
      });
      req.on('response', (res) => {
        res.resume();
        resolve(null);
      });
      req.on('timeout', () =>
        req.destroy(Object.assign(new Error('no answer in 10 s'), { code: 'ETIMEDOUT' })),
      );
      req.on('error', (error: NodeJS.ErrnoException) =>
        resolve(
          `the CA at ${url} cannot be reached${error.code ? ` (${error.code})` : ''}: ${error.message}`,
        ),
      );
      req.end();
    });
  }

  private async order(name: string, solver: ChallengeSolver): Promise<IssuedCertificate> {
    const client = await this.account();
    const acme = await acmeClient();
    const key = await acme.crypto.createPrivateEcdsaKey('P-256');
    const [, csr] = await acme.crypto.createCsr({ altNames: [name] }, key);
    const certPem = await client.auto({
      csr,
      ...(this.options.email ? { email: this.options.email } : {}),
      termsOfServiceAgreed: true,
      challengePriority: [solver.type],
      // The CA checks; a check of our own would resolve names as this machine does, not as the CA.
      skipChallengeVerification: true,
      challengeCreateFn: async (authz, challenge, value) => {
        if (challenge.type !== solver.type) throw new Error(`the CA offered no ${solver.type} challenge`);
        await solver.add(authz.identifier.value, challenge.token, value);
      },
      challengeRemoveFn: async (authz, challenge, value) => {
        await solver.remove(authz.identifier.value, challenge.token, value);
      },
    });
    const info = acme.crypto.readCertificateInfo(certPem);
    return { certPem, keyPem: key.toString(), notBefore: info.notBefore, notAfter: info.notAfter };
  }

  /** The client of this directory's account: created once, its key kept sealed in the store. */
  private account(): Promise<Acme.Client> {
    this.client ??= this.openAccount().catch((error: unknown) => {
      // A CA that could not be reached is asked again next time.
      this.client = null;
      throw error;
    });
    return this.client;
  }

  private async openAccount(): Promise<Acme.Client> {
    const acme = await acmeClient();
    const { directoryUrl, email } = this.options;
    const context = `acme-account:${directoryUrl}`;
    let row = await this.db
      .selectFrom('acme_accounts')
      .selectAll()
      .where('directory_url', '=', directoryUrl)
      .executeTakeFirst();
    if (!row) {
      const key = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString();
      await this.db
        .insertInto('acme_accounts')
        .values({
          directory_url: directoryUrl,
          key_secret: JSON.stringify(sealAiKey(this.kek, context, key)),
          account_url: null,
          email,
          created_at: new Date().toISOString(),
        })
        .onConflict((oc) => oc.column('directory_url').doNothing())
        .execute();
      // Read back: another node of a cluster may have stored its key first, and that one is the account's.
      row = await this.db
        .selectFrom('acme_accounts')
        .selectAll()
        .where('directory_url', '=', directoryUrl)
        .executeTakeFirstOrThrow();
    }
    const accountKey = openAiKey(this.kek, context, JSON.parse(row.key_secret) as SealedKey);
    const client = new acme.Client({
      directoryUrl,
      accountKey,
      // Polls an order's state from 1 s on (doubling to 30 s), not 5 s: a first visitor's handshake may wait.
      backoffMin: 1_000,
      backoffMax: 30_000,
      ...(row?.account_url ? { accountUrl: row.account_url } : {}),
    });
    if (!row?.account_url) {
      await client.createAccount({
        termsOfServiceAgreed: true,
        ...(email ? { contact: [`mailto:${email}`] } : {}),
      });
      await this.db
        .updateTable('acme_accounts')
        .set({ account_url: client.getAccountUrl() })
        .where('directory_url', '=', directoryUrl)
        .execute();
    }
    return client;
  }
}

/** The CA's words for a failed order, without acme-client's stack or a key authorization. */
export function describeAcmeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, ' ').trim().slice(0, 500) || 'the CA refused the order';
}
