// Routes of API.md §5: list, add, relink, verify and delete custom domains (scope `deploy`).
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Deleted, IdParams } from '../../shared/api/common.js';
import {
  CreateDomainRequest,
  CreatedDomain,
  Domain,
  DomainVerification,
  LinkDomainRequest,
} from '../../shared/api/domains.js';
import type { DomainChecker } from './checker.js';
import type { DomainService } from './domains.js';

export interface DomainRoutesOptions {
  domains: DomainService;
  /** Told when a domain is added: the checks look at its schedule. */
  checker: Pick<DomainChecker, 'wake'>;
}

export const domainRoutes: FastifyPluginAsyncZod<DomainRoutesOptions> = async (app, { domains, checker }) => {
  const tags = ['domains'];

  app.get('/domains', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'List custom domains, newest first',
      tags,
      response: { 200: z.array(Domain) },
    },
    handler: async (request) => domains.list(request.caller.accountId),
  });

  app.post('/domains', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Add a custom domain, optionally linked to a project, and get its DNS instructions',
      description:
        "Create the TXT record `verification` (it proves the domain is this account's) and point a CNAME record of the domain at `instructions.target` (an apex: A/AAAA records equal to the target's), then verify. Unverified domains are re-checked in the background for 72 hours. 409 when the domain is this account's already, or verified by another account; several accounts may hold it unverified, and the first to prove ownership takes it.",
      tags,
      body: CreateDomainRequest,
      response: { 201: CreatedDomain },
    },
    handler: async (request, reply) => {
      const created = await domains.create(request.caller.accountId, request.body);
      checker.wake();
      return reply.code(201).send(created);
    },
  });

  app.patch('/domains/:id', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Link the domain to another project of the account, or to none',
      description: 'A verified domain stays verified: the edge routes it to the new project at once.',
      tags,
      params: IdParams,
      body: LinkDomainRequest,
      response: { 200: Domain },
    },
    handler: async (request) => domains.link(request.caller.accountId, request.params.id, request.body),
  });

  app.post('/domains/:id/verify', {
    config: { scope: 'deploy' },
    schema: {
      summary: "Check the domain's DNS now (its TXT proof and its CNAME or A/AAAA) and record the outcome",
      description: '409 when another account has verified the domain meanwhile.',
      tags,
      params: IdParams,
      response: { 200: DomainVerification },
    },
    handler: async (request) => domains.verify(request.caller.accountId, request.params.id),
  });

  app.delete('/domains/:id', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Remove a custom domain (the edge stops routing it)',
      tags,
      params: IdParams,
      response: { 200: Deleted('dom') },
    },
    handler: async (request) => {
      await domains.remove(request.caller.accountId, request.params.id);
      return { id: request.params.id, deleted: true as const };
    },
  });
};
