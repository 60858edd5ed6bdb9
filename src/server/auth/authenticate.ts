// Who is calling: an `X-API-Key` (looked up by its SHA-256 hash) or an `Authorization: Bearer` JWT
// minted by POST /auth/token. A JWT carries the id of the key that minted it and acts with that key's
// scopes for as long as the key is not revoked. Every route names the scope it needs in its config.
// A URL's `?token=` takes a JWT only (authenticateQueryToken), and redactUrl keeps it out of logs.
import type { FastifyRequest } from 'fastify';
import { SignJWT, errors as joseErrors, jwtVerify } from 'jose';
import { API_KEY_PATTERN, type Scope } from '../../shared/api/account.js';
import { ApiError } from '../errors.js';
import { sha256Hex } from '../ids.js';
import type { Store } from '../store/open.js';

/** `any`: every authenticated caller; `public`: no authentication. */
export type RouteScope = Scope | 'any' | 'public';

export interface Caller {
  accountId: string;
  keyId: string;
  scopes: Scope[];
  via: 'api_key' | 'jwt';
}

const LAST_USED_RESOLUTION_MS = 60_000;
// Revocations through this server apply at once (revoked); one made through another node of a cluster
// as soon as its word arrives (forgetKey, from its `key-revoked` event), and within this time at worst.
const KEY_CACHE_MS = 5_000;
const KEY_CACHE_ENTRIES = 10_000;

export class Authenticator {
  private readonly lastUsedWritten = new Map<string, number>();
  /** Valid keys seen in the last seconds, by hash: most requests then touch no table at all. */
  private readonly validKeys = new Map<string, { caller: Caller; until: number }>();

  constructor(
    private readonly db: Store,
    private readonly secret: Uint8Array,
    private readonly tokenTtlSeconds: number,
  ) {}

  async authenticate(request: Pick<FastifyRequest, 'headers'>): Promise<Caller> {
    const apiKey = headerValue(request.headers['x-api-key']);
    if (apiKey !== undefined) return this.fromApiKey(apiKey);
    const authorization = headerValue(request.headers.authorization);
    if (authorization !== undefined) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!match) throw new ApiError('unauthorized', 'the Authorization header must be "Bearer <token>"');
      const credential = match[1]!;
      return API_KEY_PATTERN.test(credential) ? this.fromApiKey(credential) : this.fromJwt(credential);
    }
    throw new ApiError(
      'unauthorized',
      'authentication required: send an X-API-Key header or Authorization: Bearer <token>',
    );
  }

  /**
   * A credential from a URL's `?token=` (WebSocket upgrades: browsers set no headers there). Only a
   * short-lived JWT: a URL ends up in proxy logs and browser history, where an API key would live on.
   * The refusal never repeats what was sent.
   */
  async authenticateQueryToken(token: string): Promise<Caller> {
    if (token.startsWith('wk_') || API_KEY_PATTERN.test(token)) {
      throw new ApiError(
        'unauthorized',
        'an API key is never accepted in a URL (?token=), where proxies and browser history keep it: mint a short-lived token with POST /api/v1/auth/token and pass that instead, or send the key in the X-API-Key header',
      );
    }
    return this.fromJwt(token);
  }

  async mintToken(caller: Caller): Promise<{ token: string; expires_at: string }> {
    const expiresAt = Math.floor(Date.now() / 1000) + this.tokenTtlSeconds;
    const token = await new SignJWT({ kid: caller.keyId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(caller.accountId)
      .setIssuedAt()
      .setExpirationTime(expiresAt)
      .sign(this.secret);
    return { token, expires_at: new Date(expiresAt * 1000).toISOString() };
  }

  /** In a cluster: tells the other nodes a key was revoked here (set by the platform). */
  announceRevoked: ((keyId: string) => void) | null = null;

  /** A key revoked through this node: forgotten here, and on the other nodes of a cluster. */
  revoked(keyId: string): void {
    this.forgetKey(keyId);
    this.announceRevoked?.(keyId);
  }

  /** Forgets what was cached about a key, so its revocation applies to the very next request. */
  forgetKey(keyId: string): void {
    for (const [hash, entry] of this.validKeys) if (entry.caller.keyId === keyId) this.validKeys.delete(hash);
  }

  private async fromApiKey(key: string): Promise<Caller> {
    if (!API_KEY_PATTERN.test(key)) throw new ApiError('unauthorized', 'the API key is not valid');
    const hash = sha256Hex(key);
    const now = Date.now();
    const cached = this.validKeys.get(hash);
    if (cached && cached.until > now) return cached.caller;
    const row = await this.db
      .selectFrom('api_keys')
      .select(['id', 'account_id', 'scopes', 'revoked_at'])
      .where('hash', '=', hash)
      .executeTakeFirst();
    if (!row) throw new ApiError('unauthorized', 'the API key is not valid');
    if (row.revoked_at !== null) throw new ApiError('unauthorized', 'the API key has been revoked');
    await this.touch(row.id);
    const caller: Caller = {
      accountId: row.account_id,
      keyId: row.id,
      scopes: parseScopes(row.scopes),
      via: 'api_key',
    };
    if (this.validKeys.size >= KEY_CACHE_ENTRIES) this.validKeys.clear();
    this.validKeys.set(hash, { caller, until: now + KEY_CACHE_MS });
    return caller;
  }

  private async fromJwt(token: string): Promise<Caller> {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, this.secret, {
        algorithms: ['HS256'],
        requiredClaims: ['sub', 'exp'],
      }));
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired)
        throw new ApiError(
          'unauthorized',
          'the token has expired: get a new one from POST /api/v1/auth/token',
        );
      throw new ApiError('unauthorized', 'the token is not valid');
    }
    const keyId = typeof payload.kid === 'string' ? payload.kid : undefined;
    if (!keyId || typeof payload.sub !== 'string')
      throw new ApiError('unauthorized', 'the token is not valid');
    const row = await this.db
      .selectFrom('api_keys')
      .select(['account_id', 'scopes', 'revoked_at'])
      .where('id', '=', keyId)
      .executeTakeFirst();
    if (!row || row.account_id !== payload.sub) throw new ApiError('unauthorized', 'the token is not valid');
    if (row.revoked_at !== null)
      throw new ApiError('unauthorized', 'the key that minted this token has been revoked');
    return { accountId: row.account_id, keyId, scopes: parseScopes(row.scopes), via: 'jwt' };
  }

  /** Records when a key was last used, at most once a minute per key to keep reads free of writes. */
  private async touch(keyId: string): Promise<void> {
    const now = Date.now();
    const last = this.lastUsedWritten.get(keyId) ?? 0;
    if (now - last < LAST_USED_RESOLUTION_MS) return;
    this.lastUsedWritten.set(keyId, now);
    await this.db
      .updateTable('api_keys')
      .set({ last_used_at: new Date(now).toISOString() })
      .where('id', '=', keyId)
      .execute();
  }
}

export function parseScopes(stored: string): Scope[] {
  return stored.split(',').filter(Boolean) as Scope[];
}

export function hasScope(caller: Caller, needed: RouteScope): boolean {
  if (needed === 'public' || needed === 'any') return true;
  return caller.scopes.includes('full') || caller.scopes.includes(needed);
}

export function assertScope(caller: Caller, needed: RouteScope): void {
  if (!hasScope(caller, needed)) {
    throw new ApiError(
      'forbidden',
      `this key's scopes (${caller.scopes.join(', ')}) do not include "${needed}", which this endpoint needs`,
    );
  }
}

function headerValue(value: string | string[] | undefined): string | undefined {
  if (Array.isArray(value)) return value[0];
  return value === '' ? undefined : value;
}

/** A request URL for logs: the value of a credential-like query parameter replaced, whatever it holds. */
export function redactUrl(url: string): string {
  return url.replace(/([?&](?:token|access_token|api_key|apikey|key)=)[^&#]*/gi, '$1[redacted]');
}

/** Fastify's request log line (its default fields) with the URL redacted. */
export function logRequest(request: {
  method: string;
  url: string;
  host?: string;
  ip?: string;
  headers?: Record<string, string | string[] | undefined>;
  socket?: { remotePort?: number };
}): Record<string, unknown> {
  return {
    method: request.method,
    url: redactUrl(request.url),
    version: request.headers?.['accept-version'],
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
