// Routes of API.md §6: single and batch email verification, paid from the ledger and counted toward
// the account's daily cap. The price is checked before any work is done (402 loses nothing); only
// results that say something (neither `unknown` nor bad syntax) are charged. An Idempotency-Key is
// reserved before the work and the answer stored with the charge: see billing/idempotency.ts.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  EmailBatchResult,
  EmailVerification,
  VerifyEmailBatchRequest,
  VerifyEmailRequest,
} from '../../shared/api/email.js';
import {
  type DailyCap,
  type Ledger,
  MICROS_PER_USD,
  MeteredRequests,
  canonicalHash,
  parseIdempotencyKey,
} from '../billing/index.js';
import type { NodeLiveness, Outcome } from '../billing/idempotency.js';
import type { PlatformConfig } from '../config.js';
import { type EmailVerifier, isBillable } from './index.js';

export interface EmailRoutesOptions {
  config: PlatformConfig;
  verifier: EmailVerifier;
  ledger: Ledger;
  dailyCap: DailyCap;
  /** The nodes alive: a reservation of a request a dead node ran is freed. */
  nodes: NodeLiveness;
}

export const emailRoutes: FastifyPluginAsyncZod<EmailRoutesOptions> = async (
  app,
  { config, verifier, ledger, dailyCap, nodes },
) => {
  const metered = new MeteredRequests(ledger, dailyCap, nodes);
  await metered.releaseAbandoned();

  /** Runs `work` once per Idempotency-Key; a replay answers the stored status and JSON. */
  async function once<T>(
    request: FastifyRequest,
    reply: FastifyReply,
    asked: { endpoint: string; body: unknown; priceMicros: number; capCount: number },
    work: () => Promise<{ body: T; charge: Outcome['charge'] }>,
  ): Promise<T> {
    const begun = await metered.begin({
      accountId: request.caller.accountId,
      endpoint: asked.endpoint,
      key: parseIdempotencyKey(request.headers['idempotency-key']),
      bodyHash: canonicalHash(asked.body),
      priceMicros: asked.priceMicros,
      capCount: asked.capCount,
    });
    if (begun.kind === 'replay') {
      reply.code(begun.status).header('idempotent-replayed', 'true');
      return begun.body as T;
    }
    try {
      const { body, charge } = await work();
      await metered.complete(begun.reservation, { status: 200, body, charge });
      return body;
    } catch (error) {
      await metered.release(begun.reservation);
      throw error;
    }
  }

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
    handler: async (request, reply) => {
      const smtp = request.body.smtp_probe ?? false;
      const price = priceMicros(smtp);
      const { email } = request.body;
      return once(
        request,
        reply,
        { endpoint: 'email/verify', body: { email, smtp_probe: smtp }, priceMicros: price, capCount: 1 },
        async () => {
          const result = await verifier.verify(email, { smtp });
          if (!isBillable(result)) return { body: result, charge: null };
          return {
            body: { ...result, cost_usd: price / MICROS_PER_USD },
            charge: {
              micros: price,
              kind: 'email_verification',
              description: `Email verification${smtp ? ' with SMTP probe' : ''}: ${result.normalized}`,
            },
          };
        },
      );
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
    handler: async (request, reply) => {
      const smtp = request.body.smtp_probe ?? false;
      const price = priceMicros(smtp);
      const { emails } = request.body;
      const distinct = new Set(emails.map((e) => e.trim().toLowerCase())).size;
      return once(
        request,
        reply,
        {
          endpoint: 'email/verify/batch',
          body: { emails, smtp_probe: smtp },
          priceMicros: price * distinct,
          capCount: distinct,
        },
        async () => {
          const results = await verifier.verifyMany(emails, { smtp });
          // A duplicate was checked once: it is charged once, where it first appears.
          const charged = new Set<string>();
          const priced = results.map((result) => {
            const key = result.normalized.toLowerCase();
            if (!isBillable(result) || charged.has(key)) return result;
            charged.add(key);
            return { ...result, cost_usd: price / MICROS_PER_USD };
          });
          return {
            body: { count: priced.length, results: priced },
            charge:
              charged.size === 0
                ? null
                : {
                    micros: price * charged.size,
                    kind: 'email_verification',
                    description: `Email verification${smtp ? ' with SMTP probe' : ''}: ${charged.size} of ${emails.length} addresses`,
                  },
          };
        },
      );
    },
  });
};
