// POST /ai/build, /ai/deploy and /ai/edit (API.md §8): thin routes over AiBuilder. Each answers 202 at
// once; the deploy and its repairs go on in the background (follow them with GET /projects/:id/logs).
// The builder checks the verified email (403), the engine (503), the rate limit (429) and the balance.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  AiBuildRequest,
  AiBuildResponse,
  AiDeployRequest,
  AiDeployResponse,
  AiEditRequest,
  AiEditResponse,
} from '../../shared/api/ai.js';
import type { AiBuilder } from './builder.js';
import type { AiEngines } from './engines.js';

export interface AiBuildRoutesOptions {
  builder: AiBuilder;
  engines: AiEngines;
}

export const aiBuildRoutes: FastifyPluginAsyncZod<AiBuildRoutesOptions> = async (app, { builder }) => {
  const tags = ['ai'];

  app.post('/ai/build', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Generate an app from a prompt, create its project and deploy it',
      description:
        'Answers 202 `building` (the deploy, with up to 3 self-repair attempts, goes on in the background) or ' +
        '202 `needs_setup` when the app needs env vars or a database first: supply them with POST /ai/deploy. ' +
        'With no AI engine at all the app comes from the built-in templates (offline mode).',
      tags,
      body: AiBuildRequest,
      response: { 202: AiBuildResponse },
    },
    handler: async (request, reply) =>
      reply.code(202).send(await builder.build(request.caller, request.body)),
  });

  app.post('/ai/deploy', {
    config: { scope: 'deploy' },
    schema: {
      summary: "Supply an app's env vars (merged) and database, and deploy it",
      description:
        '`database: "postgres"` creates a database and role on the server of WHARF_POSTGRES_URL and sets ' +
        'DATABASE_URL (503 unavailable when none is configured).',
      tags,
      body: AiDeployRequest,
      response: { 202: AiDeployResponse },
    },
    handler: async (request, reply) =>
      reply.code(202).send(await builder.deploy(request.caller, request.body)),
  });

  app.post('/ai/edit', {
    config: { scope: 'deploy' },
    schema: {
      summary: 'Change an AI project by instruction and redeploy it',
      description:
        'The change is one commit in the project’s repository; the redeploy self-repairs like a build.',
      tags,
      body: AiEditRequest,
      response: { 202: AiEditResponse },
    },
    handler: async (request, reply) => reply.code(202).send(await builder.edit(request.caller, request.body)),
  });
};
