// Routes of API.md §6: single and batch email verification, paid from the ledger and counted toward
// the account's daily cap. The price is checked before any work is done (402 loses nothing); only
// results that say something (neither `unknown` nor bad syntax) are charged.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  EmailBatchResult,
  EmailVerification,
  VerifyEmailBatchRequest,
  VerifyEmailRequest,
} from '../../shared/api/email.js';
import { type DailyCap, type Ledger, MICROS_PER_USD } from '../billing/index.js';
import type { PlatformConfig } from '../config.js';
import { randomBase62 } from '../ids.js';
import { type EmailVerifier, isBillable } from './index.js';

export interface EmailRoutesOptions {
  config: PlatformConfig;
  verifier: EmailVerifier;
  ledger: Ledger;
  dailyCap: DailyCap;
}

/** A client may name a request (`Idempotency-Key`) so that a retry is not charged twice. */
function idempotencyKey(header: string | string[] | undefined): string {
  const given = Array.isArray(header) ? header[0] : header;
  return given && /^[\x21-\x7e]{1,128}$/.test(given) ? `client:${given}` : randomBase62(24);
}

export const emailRoutes: FastifyPluginAsyncZod<EmailRoutesOptions> = async (
  app,
  { config, verifier, ledger, dailyCap },
) => {
  const priceMicros = (smtp: boolean) =>
    Math.round(
      (smtp ? config.prices.email_smtp_probe_usd : config.prices.email_verification_usd) * MICROS_PER_USD,
    );

  app.post('/email/verify', {
    config: { scope: 'email' },
    schema: {
      summary: 'Verify one email address (syntax, lists, DNS, optionally an SMTP probe)',
      tags: ['email'],
      body: VerifyEmailRequest,
      response: { 200: EmailVerification },
    },
    handler: async (request) => {
      const { accountId } = request.caller;
      const smtp = request.body.smtp_probe ?? false;
      const price = priceMicros(smtp);
      await ledger.assertAvailable(accountId, price);
      await dailyCap.take(accountId, 1);
      const result = await verifier.verify(request.body.email, { smtp });
      if (!isBillable(result)) return result;
      await ledger.charge({
        accountId,
        micros: price,
        kind: 'email_verification',
        description: `Email verification${smtp ? ' with SMTP probe' : ''}: ${result.normalized ?? result.email}`,
        idempotencyKey: `email:${idempotencyKey(request.headers['idempotency-key'])}`,
      });
      return { ...result, cost_usd: price / MICROS_PER_USD };
    },
  });

  app.post('/email/verify/batch', {
    config: { scope: 'email' },
    schema: {
      summary: 'Verify up to 100 addresses; results in input order, duplicates checked once',
      tags: ['email'],
      body: VerifyEmailBatchRequest,
      response: { 200: EmailBatchResult },
    },
    handler: async (request) => {
      const { accountId } = request.caller;
      const smtp = request.body.smtp_probe ?? false;
      const price = priceMicros(smtp);
      const { emails } = request.body;
      const distinct = new Set(emails.map((e) => e.trim().toLowerCase())).size;
      await ledger.assertAvailable(accountId, price * distinct);
      await dailyCap.take(accountId, distinct);
      const results = await verifier.verifyMany(emails, { smtp });
      // A duplicate was checked once: it is charged once, where it first appears.
      const charged = new Set<string>();
      const priced = results.map((result) => {
        const key = (result.normalized ?? result.email).toLowerCase();
        if (!isBillable(result) || charged.has(key)) return result;
        charged.add(key);
        return { ...result, cost_usd: price / MICROS_PER_USD };
      });
      if (charged.size > 0) {
        await ledger.charge({
          accountId,
          micros: price * charged.size,
          kind: 'email_verification',
          description: `Email verification${smtp ? ' with SMTP probe' : ''}: ${charged.size} of ${emails.length} addresses`,
          idempotencyKey: `email-batch:${idempotencyKey(request.headers['idempotency-key'])}`,
        });
      }
      return { count: priced.length, results: priced };
    },
  });
};
