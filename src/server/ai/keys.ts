// Own AI keys (API.md §3): each account may save one provider key, used by its `own_key` engine. The key
// is stored only encrypted, AES-256-GCM under a key derived from the server secret with HKDF-SHA256, a
// random 12-byte IV per save, and the account id as associated data: a ciphertext copied into another
// account's row fails authentication instead of lending that account the key. Reads outside the engine
// see only the masked form (`sk-…9f2a`); the full key never leaves the server.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { AiProvider, MaskedAiKey } from '../../shared/api/account.js';
import { ApiError } from '../errors.js';
import type { Store } from '../store/open.js';

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
// Fixed HKDF salt and info: they separate this use of the server secret from its others (JWT signing).
const HKDF_SALT = 'wharf/ai-keys';
const HKDF_INFO = 'aes-256-gcm v1';

export interface SealedKey {
  /** Base64 of each part. */
  ciphertext: string;
  iv: string;
  tag: string;
}

/** The 32-byte AES key for own AI keys, derived from the server secret. */
export function deriveKeyEncryptionKey(secret: Uint8Array | string): Buffer {
  const ikm = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : Buffer.from(secret);
  if (ikm.length < 32) throw new RangeError('the server secret must be at least 32 bytes');
  return Buffer.from(hkdfSync('sha256', ikm, HKDF_SALT, HKDF_INFO, 32));
}

export function sealAiKey(kek: Buffer, accountId: string, plaintext: string): SealedKey {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, kek, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(accountId, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return {
    ciphertext: ciphertext.toString('base64'),
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  };
}

/** Decrypts a sealed key; throws when it was tampered with, sealed for another account or another secret. */
export function openAiKey(kek: Buffer, accountId: string, sealed: SealedKey): string {
  const iv = Buffer.from(sealed.iv, 'base64');
  const tag = Buffer.from(sealed.tag, 'base64');
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new Error('the sealed key is malformed');
  const decipher = createDecipheriv(ALGORITHM, kek, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(accountId, 'utf8'));
  decipher.setAuthTag(tag);
  return Buffer.concat([
    decipher.update(Buffer.from(sealed.ciphertext, 'base64')),
    decipher.final(),
  ]).toString('utf8');
}

/** `sk-…9f2a`: the first 3 and last 4 characters; a key shorter than 12 shows only its last 2. */
export function maskAiKey(key: string): string {
  if (key.length < 12) return `…${key.slice(-2)}`;
  return `${key.slice(0, 3)}…${key.slice(-4)}`;
}

/** The `ai_keys` table seen through the encryption: what routes and the engines use. */
export class AiKeyStore {
  private readonly kek: Buffer;

  constructor(
    private readonly db: Store,
    secret: Uint8Array | string,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.kek = deriveKeyEncryptionKey(secret);
  }

  /** Saves (or replaces) the account's key. */
  async put(accountId: string, provider: AiProvider, key: string): Promise<MaskedAiKey> {
    const sealed = sealAiKey(this.kek, accountId, key);
    const masked = maskAiKey(key);
    const row = { provider, ...sealed, masked, updated_at: this.now().toISOString() };
    await this.db
      .insertInto('ai_keys')
      .values({ account_id: accountId, ...row })
      .onConflict((oc) => oc.column('account_id').doUpdateSet(row))
      .execute();
    return { provider, masked };
  }

  /** Deletes the account's key; 404 when it has none. */
  async delete(accountId: string): Promise<void> {
    const result = await this.db.deleteFrom('ai_keys').where('account_id', '=', accountId).executeTakeFirst();
    if (result.numDeletedRows === 0n) throw new ApiError('not_found', 'no AI key is saved for this account');
  }

  async masked(accountId: string): Promise<MaskedAiKey | null> {
    return maskedAiKey(this.db, accountId);
  }

  /** The full key, for the own-key engine only. 503 when it no longer decrypts (the server secret changed). */
  async reveal(accountId: string): Promise<{ provider: AiProvider; key: string } | null> {
    const row = await this.db
      .selectFrom('ai_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!row) return null;
    try {
      return { provider: row.provider as AiProvider, key: openAiKey(this.kek, accountId, row) };
    } catch {
      throw new ApiError(
        'unavailable',
        'the saved AI key can no longer be decrypted (the server secret changed since it was saved): save it again in Settings (PUT /account/ai-key)',
      );
    }
  }
}

/** The account's saved key as every read shows it (GET /account), or null. */
export async function maskedAiKey(db: Store, accountId: string): Promise<MaskedAiKey | null> {
  const row = await db
    .selectFrom('ai_keys')
    .select(['provider', 'masked'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row ? { provider: row.provider as AiProvider, masked: row.masked } : null;
}
