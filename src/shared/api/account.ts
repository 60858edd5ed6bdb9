// API.md §2–§3: tokens, the account, its balance, own AI keys, usage and API keys.
import { z } from 'zod';
import { AiProvider } from './ai-providers.js';
import { PlainText, Timestamp, Usd, idOf } from './common.js';

export const SCOPES = ['deploy', 'email', 'full'] as const;
export const Scope = z.enum(SCOPES);
export type Scope = z.infer<typeof Scope>;

export { AI_PROVIDERS, AiProvider } from './ai-providers.js';

export const TokenResponse = z
  .object({ token: z.string(), expires_at: Timestamp })
  .meta({ id: 'TokenResponse' });
export type TokenResponse = z.infer<typeof TokenResponse>;

export const Balance = z
  .object({
    allowance_usd: Usd,
    allowance_used_usd: Usd,
    allowance_resets_at: Timestamp,
    topup_usd: Usd,
    available_usd: Usd,
  })
  .meta({ id: 'Balance' });
export type Balance = z.infer<typeof Balance>;

export const MaskedAiKey = z.object({ provider: AiProvider, masked: z.string() }).meta({ id: 'MaskedAiKey' });
export type MaskedAiKey = z.infer<typeof MaskedAiKey>;

export const Account = z
  .object({
    id: idOf('acc'),
    email: z.string(),
    email_verified: z.boolean(),
    plan: z.string(),
    balance: Balance,
    ai_key: MaskedAiKey.nullable(),
    email_verifications_today: z.number().int().nonnegative(),
    email_daily_cap: z.number().int().nonnegative(),
  })
  .meta({ id: 'Account' });
export type Account = z.infer<typeof Account>;

export const PutAiKeyRequest = z
  .strictObject({
    provider: AiProvider,
    key: z
      .string()
      .min(8, 'must be at least 8 characters')
      .max(512, 'must be at most 512 characters')
      .regex(/^\S+$/, 'must not contain spaces'),
  })
  .meta({ id: 'PutAiKeyRequest' });
export type PutAiKeyRequest = z.infer<typeof PutAiKeyRequest>;

export const UsageEntry = z
  .object({
    id: idOf('led'),
    at: Timestamp,
    kind: z.string(),
    amount_usd: Usd,
    description: z.string(),
  })
  .meta({ id: 'UsageEntry' });
export type UsageEntry = z.infer<typeof UsageEntry>;

export const CreateKeyRequest = z
  .strictObject({
    scopes: z
      .array(Scope)
      .min(1, 'must name at least one scope')
      .refine((s) => new Set(s).size === s.length, 'must not repeat a scope'),
    name: PlainText(1, 64).optional(),
  })
  .meta({ id: 'CreateKeyRequest' });
export type CreateKeyRequest = z.infer<typeof CreateKeyRequest>;

export const ApiKeyInfo = z
  .object({
    id: idOf('key'),
    name: z.string(),
    scopes: z.array(Scope),
    created_at: Timestamp,
    last_used_at: Timestamp.nullable(),
    current: z.boolean().meta({
      description:
        'True for the key this request was authenticated with (or, for a JWT, the key that minted it)',
    }),
  })
  .meta({ id: 'ApiKeyInfo' });
export type ApiKeyInfo = z.infer<typeof ApiKeyInfo>;

export const CreatedKey = z
  .object({
    id: idOf('key'),
    key: z.string().meta({ description: 'Shown once: only its SHA-256 hash is stored' }),
    scopes: z.array(Scope),
    name: z.string(),
  })
  .meta({ id: 'CreatedKey' });
export type CreatedKey = z.infer<typeof CreatedKey>;

/** `wk_` + 32 base62 characters. */
export const API_KEY_PATTERN = /^wk_[A-Za-z0-9]{32}$/;
