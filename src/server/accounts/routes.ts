// Routes of API.md §2–§3 that exist so far: tokens, the account, API keys.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  Account,
  ApiKeyInfo,
  CreateKeyRequest,
  CreatedKey,
  TokenResponse,
} from '../../shared/api/account.js';
import { Deleted, IdParams } from '../../shared/api/index.js';
import type { Authenticator } from '../auth/authenticate.js';
import type { PlatformConfig } from '../config.js';
import { ApiError } from '../errors.js';
import type { Store } from '../store/open.js';
import { createKey, getAccount, listKeys, revokeKey } from './accounts.js';

export interface AccountRoutesOptions {
  db: Store;
  config: PlatformConfig;
  auth: Authenticator;
}

export const accountRoutes: FastifyPluginAsyncZod<AccountRoutesOptions> = async (
  app,
  { db, config, auth },
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
    handler: async (request) => getAccount(db, config, request.caller.accountId),
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
      tags: ['keys'],
      response: { 200: z.array(ApiKeyInfo) },
    },
    handler: async (request) => listKeys(db, request.caller.accountId),
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
      auth.forgetKey(request.params.id);
      return { id: request.params.id, deleted: true as const };
    },
  });
};
