// Routes of API.md §2–§3: tokens, the account and its usage, its own AI key (masked on every read), API keys.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  Account,
  ApiKeyInfo,
  CreateKeyRequest,
  CreatedKey,
  MaskedAiKey,
  PutAiKeyRequest,
  TokenResponse,
  UsageEntry,
} from '../../shared/api/account.js';
import { Deleted, IdParams } from '../../shared/api/index.js';
import type { AiKeyStore } from '../ai/keys.js';
import type { Authenticator } from '../auth/authenticate.js';
import type { DailyCap } from '../billing/daily-cap.js';
import type { Ledger } from '../billing/ledger.js';
import type { PlatformConfig } from '../config.js';
import { ApiError } from '../errors.js';
import type { Store } from '../store/open.js';
import { createKey, getAccount, listKeys, revokeKey } from './accounts.js';

export interface AccountRoutesOptions {
  db: Store;
  config: PlatformConfig;
  auth: Authenticator;
  ledger: Ledger;
  dailyCap: DailyCap;
  /** The accounts' own AI keys, sealed with the server secret. */
  aiKeys: AiKeyStore;
}

const UsageQuery = z.strictObject({
  limit: z.coerce
    .number()
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(1000, 'must be at most 1000')
    .optional(),
});

export const accountRoutes: FastifyPluginAsyncZod<AccountRoutesOptions> = async (
  app,
  { db, config, auth, ledger, dailyCap, aiKeys },
) => {
  app.post('/auth/token', {
    config: { scope: 'any' },
    schema: {
      summary: 'Exchange an API key for a JWT valid one hour',
      tags: ['auth'],
      response: { 200: TokenResponse },
    },
    handler: async (request) => {
      if (request.caller.via !== 'api_key') {
        throw new ApiError('unauthorized', 'tokens are minted with an API key, not with another token');
      }
      return auth.mintToken(request.caller);
    },
  });

  app.get('/account', {
    config: { scope: 'any' },
    schema: {
      summary: 'The calling account, its balance and limits',
      tags: ['account'],
      response: { 200: Account },
    },
    handler: async (request) => getAccount(db, config, request.caller.accountId, { ledger, dailyCap }),
  });

  app.put('/account/ai-key', {
    config: { scope: 'full' },
    schema: {
      summary: "Save the account's own AI key (replacing any saved one); only its masked form is ever shown",
      description:
        'The key is stored encrypted (AES-256-GCM, bound to the account) and used by the `own_key` engine.',
      tags: ['account'],
      body: PutAiKeyRequest,
      response: { 200: MaskedAiKey },
    },
    handler: async (request) => aiKeys.put(request.caller.accountId, request.body.provider, request.body.key),
  });

  app.delete('/account/ai-key', {
    config: { scope: 'full' },
    schema: {
      summary: "Delete the account's own AI key",
      tags: ['account'],
      response: { 200: z.object({ deleted: z.literal(true) }) },
    },
    handler: async (request) => {
      await aiKeys.delete(request.caller.accountId);
      return { deleted: true as const };
    },
  });

  app.get('/account/usage', {
    config: { scope: 'any' },
    schema: {
      summary: 'Ledger entries of the account, newest first: allowance grants, top-ups and usage',
      description: 'Amounts in US dollars, negative for usage. `limit` defaults to 100.',
      tags: ['account'],
      querystring: UsageQuery,
      response: { 200: z.array(UsageEntry) },
    },
    handler: async (request) => ledger.usage(request.caller.accountId, request.query.limit),
  });

  app.post('/keys', {
    config: { scope: 'full' },
    schema: {
      summary: 'Create an API key (shown once)',
      tags: ['keys'],
      body: CreateKeyRequest,
      response: { 201: CreatedKey },
    },
    handler: async (request, reply) => {
      const key = await createKey(
        db,
        request.caller.accountId,
        request.body.scopes,
        request.body.name ?? 'unnamed',
      );
      return reply.code(201).send(key);
    },
  });

  app.get('/keys', {
    config: { scope: 'full' },
    schema: {
      summary: 'The active API keys (never the keys themselves)',
      description:
        'Each key carries `current` (an addition to API.md §3): true for the key this request was ' +
        'authenticated with, or for a JWT the key that minted it, so a client can tell which key it ' +
        'signs in with and not offer to revoke it by mistake.',
      tags: ['keys'],
      response: { 200: z.array(ApiKeyInfo) },
    },
    handler: async (request) => listKeys(db, request.caller.accountId, request.caller.keyId),
  });

  app.delete('/keys/:id', {
    config: { scope: 'full' },
    schema: {
      summary: 'Revoke an API key',
      tags: ['keys'],
      params: IdParams,
      response: { 200: Deleted('key') },
    },
    handler: async (request) => {
      await revokeKey(db, request.caller.accountId, request.params.id);
      auth.revoked(request.params.id);
      return { id: request.params.id, deleted: true as const };
    },
  });
};
