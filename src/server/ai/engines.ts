// The AI engines of API.md §3 and §8: which model a request uses (the account's own key, or the
// service's included engine), whether it may call it now (a per-account rate limit, and some balance
// left for the included engine), and what the call cost (the included engine is metered through the
// ledger from token counts; own-key calls are not billed). The builder and the agent go through here
// for every model call: resolve once per request, then admit before and meter after each call.
//
// Metering a call that costs more than the balance left: the call has already happened, so the ledger
// takes what is left (the balance ends at zero, with the entry saying it was partly paid) and the 402
// is then thrown, so the builder or agent stops instead of running on credit.
import type { LanguageModel } from 'ai';
import type { AiProvider } from '../../shared/api/account.js';
import type { AiEngine } from '../../shared/api/ai.js';
import type { Ledger } from '../billing/ledger.js';
import { MICROS_PER_USD, microsToUsd } from '../billing/money.js';
import type { PlatformConfig } from '../config.js';
import { ApiError } from '../errors.js';
import type { Store } from '../store/open.js';
import { AiKeyStore } from './keys.js';
import { DEFAULT_MODELS, languageModel } from './providers/index.js';

export interface ResolvedEngine {
  kind: AiEngine;
  provider: AiProvider;
  modelId: string;
  model: LanguageModel;
}

export interface TokenUsage {
  inputTokens?: number;
  outputTokens?: number;
}

/** The ledger kind of included-engine usage. */
export const AI_USAGE_KIND = 'ai_usage';

/** What the included engine needs left on the balance before a call ($0.001). */
export const MIN_INCLUDED_BALANCE_MICROS = 1_000;

const WINDOW_MS = 60_000;

export class AiEngines {
  /** The saved own keys (encrypted at rest); the account routes use the same store. */
  readonly keys: AiKeyStore;
  /** Per account, the times of the calls admitted in the last minute, oldest first. */
  private readonly recent = new Map<string, number[]>();

  constructor(
    private readonly db: Store,
    private readonly config: PlatformConfig,
    private readonly ledger: Ledger,
    secret: Uint8Array | string,
    private readonly now: () => number = Date.now,
  ) {
    this.keys = new AiKeyStore(db, secret, () => new Date(this.now()));
  }

  /** Whether the service's own engine is configured (a provider and WHARF_AI_KEY). */
  get includedConfigured(): boolean {
    return this.config.ai.provider !== null && this.config.ai.key !== null;
  }

  /**
   * What this platform offers, for `GET /platform`: the included engine's provider and model (null when
   * there is none; never its key), and the model a saved own key of each provider runs on.
   */
  offered(): {
    ai_included: { provider: AiProvider; model: string } | null;
    ai_own_key_models: Record<AiProvider, string>;
  } {
    const { provider, model, ownKeyModels } = this.config.ai;
    const ownKey = { ...DEFAULT_MODELS };
    for (const [name, id] of Object.entries(ownKeyModels) as [AiProvider, string][]) ownKey[name] = id;
    return {
      ai_included:
        this.includedConfigured && provider !== null
          ? { provider, model: model ?? DEFAULT_MODELS[provider] }
          : null,
      ai_own_key_models: ownKey,
    };
  }

  /**
   * The engine a request uses: `asked`, else own_key when the account saved one, else included when
   * configured, else null (offline: no engine at all). Asked for one that is not there → 503.
   */
  async resolve(accountId: string, asked?: AiEngine): Promise<ResolvedEngine | null> {
    if (asked === 'own_key') {
      const own = await this.ownKey(accountId);
      if (!own) {
        throw new ApiError(
          'unavailable',
          'no AI key is saved for this account: add one in Settings (PUT /account/ai-key)',
        );
      }
      return own;
    }
    if (asked === 'included') {
      const included = await this.included();
      if (!included) {
        throw new ApiError(
          'unavailable',
          `this platform has no included AI engine${this.config.ai.provider ? ' (WHARF_AI_KEY is not set)' : ''}: start the platform with --ai-provider and WHARF_AI_KEY, or use your own key (engine "own_key", saved with PUT /account/ai-key)`,
        );
      }
      return included;
    }
    return (await this.ownKey(accountId)) ?? (await this.included());
  }

  /**
   * Before a model call: the per-account rate limit (429 `rate_limited` with Retry-After, for both
   * engines) and, for the included engine, that some balance is left (402). Refused calls do not count
   * against the rate limit.
   */
  async admit(accountId: string, engine: ResolvedEngine): Promise<void> {
    const now = this.now();
    const limit = this.config.ai.ratePerMinute;
    const times = (this.recent.get(accountId) ?? []).filter((t) => t > now - WINDOW_MS);
    if (times.length >= limit) {
      this.recent.set(accountId, times);
      const oldest = times[times.length - limit] ?? now;
      const retryAfter = Math.max(1, Math.ceil((oldest + WINDOW_MS - now) / 1000));
      throw new ApiError(
        'rate_limited',
        `at most ${limit} AI calls per minute: try again in ${retryAfter} s`,
        undefined,
        { 'retry-after': String(retryAfter) },
        { retry_after_seconds: retryAfter },
      );
    }
    if (engine.kind === 'included') {
      await this.ledger.assertAvailable(accountId, MIN_INCLUDED_BALANCE_MICROS);
    }
    times.push(now);
    this.recent.set(accountId, times);
    this.forgetIdle(now);
  }

  /**
   * After a model call: charges the included engine from the token counts at the configured prices
   * (ledger kind `ai_usage`, once per idempotency key); own-key calls cost 0 and write nothing.
   * Returns the cost in US dollars. See the header for a call that costs more than the balance.
   */
  async meter(
    accountId: string,
    engine: ResolvedEngine,
    usage: TokenUsage,
    description: string,
    idempotencyKey: string,
  ): Promise<number> {
    if (engine.kind !== 'included') return 0;
    const micros = priceMicros(usage, this.config.ai.prices);
    if (micros === 0) return 0;
    const charge = { accountId, kind: AI_USAGE_KIND, idempotencyKey };
    try {
      await this.ledger.charge({ ...charge, micros, description });
      return microsToUsd(micros);
    } catch (error) {
      if (!(error instanceof ApiError) || error.code !== 'insufficient_balance') throw error;
      const left = await this.ledger.availableMicros(accountId);
      if (left > 0) {
        await this.ledger
          .charge({
            ...charge,
            micros: left,
            description: `${description} (partly paid: the balance ran out)`,
          })
          .catch(() => undefined);
      }
      throw error;
    }
  }

  private async included(): Promise<ResolvedEngine | null> {
    const { provider, key, model, baseUrls } = this.config.ai;
    if (provider === null || key === null) return null;
    const modelId = model ?? DEFAULT_MODELS[provider];
    return {
      kind: 'included',
      provider,
      modelId,
      model: await languageModel(provider, { apiKey: key, baseURL: baseUrls[provider], modelId }),
    };
  }

  private async ownKey(accountId: string): Promise<ResolvedEngine | null> {
    const saved = await this.keys.reveal(accountId);
    if (!saved) return null;
    const modelId = this.config.ai.ownKeyModels[saved.provider] ?? DEFAULT_MODELS[saved.provider];
    return {
      kind: 'own_key',
      provider: saved.provider,
      modelId,
      model: await languageModel(saved.provider, {
        apiKey: saved.key,
        baseURL: this.config.ai.baseUrls[saved.provider],
        modelId,
      }),
    };
  }

  /** Drops accounts with no call in the window, so the map does not grow with every account ever seen. */
  private forgetIdle(now: number): void {
    if (this.recent.size < 1_000) return;
    for (const [account, times] of this.recent) {
      if ((times[times.length - 1] ?? 0) <= now - WINDOW_MS) this.recent.delete(account);
    }
  }
}

/** Micro-dollars for a call: prices are USD per million tokens, so tokens × price is micro-dollars. */
export function priceMicros(
  usage: TokenUsage,
  prices: { input_per_mtok_usd: number; output_per_mtok_usd: number },
): number {
  const input = Math.max(0, usage.inputTokens ?? 0);
  const output = Math.max(0, usage.outputTokens ?? 0);
  // (tokens / 1e6) × USD per Mtok × 1e6 micros per USD
  return Math.round(
    ((input * prices.input_per_mtok_usd + output * prices.output_per_mtok_usd) * MICROS_PER_USD) / 1e6,
  );
}

/** AI endpoints need a verified account email (API.md §2): 403 `email_not_verified` otherwise. */
export async function assertEmailVerified(db: Store, accountId: string): Promise<void> {
  const row = await db
    .selectFrom('accounts')
    .select(['email', 'email_verified'])
    .where('id', '=', accountId)
    .executeTakeFirst();
  if (!row) throw new ApiError('unauthorized', 'the account of this key no longer exists');
  if (row.email_verified !== 1) {
    throw new ApiError(
      'email_not_verified',
      `the AI builder and agent need a verified email, and ${row.email} is not verified: ask the platform's administrator to verify it`,
    );
  }
}
