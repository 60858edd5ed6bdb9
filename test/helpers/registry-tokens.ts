// A registry token service (https://distribution.github.io/distribution/spec/auth/token/) on 127.0.0.1
// and a free port, for a docker-registry started with `auth.token` (startRegistry's `tokens`): it
// checks the login sent to it, grants the actions asked (those `allow` lets through), and signs the
// token (ES256, its certificate in the header's x5c) with a key whose self-signed certificate the
// registry trusts.
import { createPrivateKey, randomBytes, sign, X509Certificate } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { selfSignedCertificate } from './certificates.js';

export interface TokenAccess {
  type: string;
  name: string;
  actions: string[];
}

export interface TokenService {
  /** Where the registry sends its clients for a token: http://127.0.0.1:<port>/token. */
  realm: string;
  service: string;
  issuer: string;
  /** The certificate the registry trusts tokens signed by (its rootcertbundle). */
  certPem: string;
  /** Each token asked for, in order: the scope and account asked, and whether the login was right. */
  asked: Array<{ scope: string | null; account: string | null; loggedIn: boolean }>;
  /** A token granting `access`, as the service would sign it (for the test's own pushes and reads). */
  mint(access: TokenAccess[], subject?: string): string;
  close(): Promise<void>;
}

/** Null when openssl is missing (the certificate is made with it). */
export async function startTokenService(
  login: { user: string; password: string },
  options: {
    allow?: (action: string) => boolean;
    expiresIn?: number;
    /** What a logged-in client is answered instead of the token's JSON (a broken service). */
    reply?: (token: string) => string;
  } = {},
): Promise<TokenService | null> {
  const certificate = selfSignedCertificate('wharf-test-token-service');
  if (!certificate) return null;
  const key = createPrivateKey(certificate.keyPem);
  const x5c = Buffer.from(new X509Certificate(certificate.certPem).raw).toString('base64');
  const service = 'wharf-test-registry';
  const issuer = 'wharf-test-token-service';
  const expiresIn = options.expiresIn ?? 300;
  const asked: TokenService['asked'] = [];

  const mint = (access: TokenAccess[], subject = login.user): string => {
    const now = Math.floor(Date.now() / 1000);
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const signed = `${part({ typ: 'JWT', alg: 'ES256', x5c: [x5c] })}.${part({
      iss: issuer,
      sub: subject,
      aud: service,
      exp: now + expiresIn,
      nbf: now - 10,
      iat: now,
      jti: randomBytes(12).toString('hex'),
      access,
    })}`;
    const signature = sign('sha256', Buffer.from(signed), { key, dsaEncoding: 'ieee-p1363' });
    return `${signed}.${signature.toString('base64url')}`;
  };

  const expected = `Basic ${Buffer.from(`${login.user}:${login.password}`).toString('base64')}`;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://token.invalid');
    if (url.pathname !== '/token') {
      res.writeHead(404).end();
      return;
    }
    const loggedIn = req.headers.authorization === expected;
    const scope = url.searchParams.get('scope');
    asked.push({ scope, account: url.searchParams.get('account'), loggedIn });
    if (!loggedIn) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"details":"incorrect login"}');
      return;
    }
    const access: TokenAccess[] = [];
    for (const one of scope?.split(' ') ?? []) {
      const match = /^(repository):(.+):([a-z*,]+)$/.exec(one);
      if (!match) continue;
      const actions = match[3]!.split(',').filter((action) => options.allow?.(action) ?? true);
      access.push({ type: match[1]!, name: match[2]!, actions });
    }
    const token = mint(access);
    const body =
      options.reply?.(token) ??
      JSON.stringify({
        token,
        access_token: token,
        expires_in: expiresIn,
        issued_at: new Date().toISOString(),
      });
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    realm: `http://127.0.0.1:${port}/token`,
    service,
    issuer,
    certPem: certificate.certPem,
    asked,
    mint,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
