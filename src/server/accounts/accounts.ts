// Accounts and their API keys: creation (the CLI and the local account use it), key minting and
// revocation, and the account view of API.md §3.
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Account, ApiKeyInfo, CreatedKey, Scope } from '../../shared/api/account.js';
import { LOCAL_ACCOUNT_FILE, type PlatformConfig } from '../config.js';

export { LOCAL_ACCOUNT_FILE };
import { ApiError } from '../errors.js';
import { newApiKey, newId, sha256Hex } from '../ids.js';
import type { Store } from '../store/open.js';
import type { ApiKeysTable } from '../store/schema.js';
import type { DailyCap } from '../billing/daily-cap.js';
import type { Ledger } from '../billing/ledger.js';
import { parseScopes } from '../auth/authenticate.js';
import { maskedAiKey } from '../ai/keys.js';

export const LOCAL_ACCOUNT_EMAIL = 'local@wharf.localhost';

export interface NewAccount {
  email: string;
  verified: boolean;
  plan: string;
  scopes: Scope[];
  keyName?: string;
}

export async function createAccount(
  db: Store,
  input: NewAccount,
): Promise<{ accountId: string; key: CreatedKey }> {
  const email = input.email.trim().toLowerCase();
  return db.transaction().execute(async (trx) => {
    const existing = await trx
      .selectFrom('accounts')
      .select('id')
      .where('email', '=', email)
      .executeTakeFirst();
    if (existing) throw new ApiError('conflict', `an account with the email ${email} already exists`);
    const accountId = newId('acc');
    await trx
      .insertInto('accounts')
      .values({
        id: accountId,
        email,
        email_verified: input.verified ? 1 : 0,
        plan: input.plan,
        created_at: new Date().toISOString(),
      })
      .execute();
    const key = await createKey(trx, accountId, input.scopes, input.keyName ?? 'default');
    return { accountId, key };
  });
}

export async function createKey(
  db: Store,
  accountId: string,
  scopes: Scope[],
  name: string,
): Promise<CreatedKey> {
  const key = newApiKey();
  const id = newId('key');
  await db
    .insertInto('api_keys')
    .values({
      id,
      account_id: accountId,
      name,
      scopes: [...new Set(scopes)].join(','),
      hash: sha256Hex(key),
      created_at: new Date().toISOString(),
      last_used_at: null,
      revoked_at: null,
    })
    .execute();
  return { id, key, scopes: [...new Set(scopes)], name };
}

/** The account's active keys; `currentKeyId` (the caller's own key) is marked `current`. */
export async function listKeys(db: Store, accountId: string, currentKeyId: string): Promise<ApiKeyInfo[]> {
  const rows = await db
    .selectFrom('api_keys')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .orderBy('id', 'desc')
    .execute();
  return rows.map((row) => toKeyInfo(row, row.id === currentKeyId));
}

export async function revokeKey(db: Store, accountId: string, keyId: string): Promise<void> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: new Date().toISOString() })
    .where('id', '=', keyId)
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw new ApiError('not_found', `key ${keyId} was not found`);
}

function toKeyInfo(row: ApiKeysTable, current: boolean): ApiKeyInfo {
  return {
    id: row.id,
    name: row.name,
    scopes: parseScopes(row.scopes),
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    current,
  };
}

export { nextMonthStart } from '../billing/money.js';

/** What the account view reads besides the accounts row: the ledger's balance and today's email count. */
export interface AccountBilling {
  ledger: Ledger;
  dailyCap: DailyCap;
}

export async function getAccount(
  db: Store,
  config: PlatformConfig,
  accountId: string,
  billing: AccountBilling,
): Promise<Account> {
  const row = await db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst();
  if (!row) throw new ApiError('unauthorized', 'the account of this key no longer exists');
  const [balance, verificationsToday, aiKey] = await Promise.all([
    billing.ledger.balance(accountId),
    billing.dailyCap.used(accountId),
    maskedAiKey(db, accountId),
  ]);
  return {
    id: row.id,
    email: row.email,
    email_verified: row.email_verified === 1,
    plan: row.plan,
    balance,
    ai_key: aiKey,
    email_verifications_today: verificationsToday,
    email_daily_cap: config.emailDailyCap,
  };
}

export interface LocalAccountFile {
  account_id: string;
  email: string;
  api_key: string;
}

/**
 * Makes sure the embedded platform has its verified local account and that `local-account.json` holds
 * a working full key. When the file is missing (a fresh data dir, or deleted), a new key is minted.
 */
export async function ensureLocalAccount(
  db: Store,
  config: PlatformConfig,
): Promise<LocalAccountFile | null> {
  const file = join(config.dataDir, LOCAL_ACCOUNT_FILE);
  if (existsSync(file)) return null;
  const existing = await db
    .selectFrom('accounts')
    .select('id')
    .where('email', '=', LOCAL_ACCOUNT_EMAIL)
    .executeTakeFirst();
  let accountId: string;
  let apiKey: string;
  if (existing) {
    accountId = existing.id;
    apiKey = (await createKey(db, accountId, ['full'], 'local')).key;
  } else {
    const created = await createAccount(db, {
      email: LOCAL_ACCOUNT_EMAIL,
      verified: true,
      plan: config.defaultPlan,
      scopes: ['full'],
      keyName: 'local',
    });
    accountId = created.accountId;
    apiKey = created.key.key;
  }
  const content: LocalAccountFile = { account_id: accountId, email: LOCAL_ACCOUNT_EMAIL, api_key: apiKey };
  writeFileSync(file, JSON.stringify(content, null, 2) + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return content;
}
