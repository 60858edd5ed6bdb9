// API.md §8: the AI builder, edits and the tool-calling agent, with its stream events.
import { z } from 'zod';
import { DnsLabel, idOf } from './common.js';
import { EnvVars, Project, ProjectStatus } from './projects.js';

export const GENERATORS = [
  'web',
  'api',
  'messaging-bot',
  'community-bot',
  'worker',
  'portfolio',
  'landing',
] as const;
export const Generator = z.enum(GENERATORS);
export type Generator = z.infer<typeof Generator>;

export const AI_ENGINES = ['included', 'own_key'] as const;
export const AiEngine = z.enum(AI_ENGINES);
export type AiEngine = z.infer<typeof AiEngine>;

export const AiBuildRequest = z
  .strictObject({
    generator: Generator,
    prompt: z.string().trim().min(1, 'must not be empty').max(4000, 'must be at most 4000 characters'),
    subdomain: DnsLabel,
    engine: AiEngine.optional(),
  })
  .meta({ id: 'AiBuildRequest' });
export type AiBuildRequest = z.infer<typeof AiBuildRequest>;

export const NeededEnv = z.object({ name: z.string(), description: z.string() });

export const AiBuildResponse = z
  .discriminatedUnion('status', [
    z.object({ status: z.literal('building'), project: Project, url: z.string() }),
    z.object({
      status: z.literal('needs_setup'),
      project: Project,
      needs: z.object({ env: z.array(NeededEnv), database: z.literal('postgres').nullable() }),
    }),
  ])
  .meta({ id: 'AiBuildResponse' });
export type AiBuildResponse = z.infer<typeof AiBuildResponse>;

export const AiDeployRequest = z
  .strictObject({
    project_id: idOf('prj'),
    env: EnvVars.default({}),
    database: z.literal('postgres').nullable().optional(),
  })
  .meta({ id: 'AiDeployRequest' });
export type AiDeployRequest = z.infer<typeof AiDeployRequest>;

export const AiDeployResponse = z
  .object({ status: z.literal('building'), project: Project, url: z.string() })
  .meta({ id: 'AiDeployResponse' });

export const AiEditRequest = z
  .strictObject({ project_id: idOf('prj'), instruction: z.string().min(1, 'must not be empty').max(4000) })
  .meta({ id: 'AiEditRequest' });
export type AiEditRequest = z.infer<typeof AiEditRequest>;

export const AiEditResponse = z
  .object({ status: z.literal('building'), project: Project, changed_files: z.array(z.string()) })
  .meta({ id: 'AiEditResponse' });

export const ChatMessage = z.strictObject({
  role: z.enum(['user', 'assistant']),
  content: z.string().min(1, 'must not be empty').max(32_000),
});

export const AgentRequest = z
  .strictObject({ messages: z.array(ChatMessage).min(1).max(100), engine: AiEngine.optional() })
  .meta({ id: 'AgentRequest' });
export type AgentRequest = z.infer<typeof AgentRequest>;

export const AgentStep = z
  .object({
    id: idOf('stp'),
    tool: z.string(),
    input: z.unknown(),
    output: z.unknown(),
    status: z.enum(['ok', 'error']),
    duration_ms: z.number(),
  })
  .meta({ id: 'AgentStep' });
export type AgentStep = z.infer<typeof AgentStep>;

export const AgentResponse = z
  .object({ reply: z.string(), steps: z.array(AgentStep) })
  .meta({ id: 'AgentResponse' });
export type AgentResponse = z.infer<typeof AgentResponse>;

/** The events of `POST /ai/agent/stream`: the SSE event name is the key, its data the JSON value. */
export const AgentStreamEvents = {
  step: z.object({ id: idOf('stp'), tool: z.string(), input: z.unknown() }),
  step_done: z.object({
    id: idOf('stp'),
    tool: z.string(),
    status: z.enum(['ok', 'error']),
    output: z.unknown(),
    duration_ms: z.number(),
  }),
  token: z.object({ text: z.string() }),
  note: z.object({ text: z.string() }),
  build_log: z.object({ project_id: idOf('prj'), line: z.string() }),
  build_status: z.object({ project_id: idOf('prj'), status: ProjectStatus }),
  error: z.object({ code: z.string(), detail: z.string() }),
  done: z.object({
    reply: z.string(),
    steps: z.array(AgentStep),
    usage: z.object({ engine: AiEngine, cost_usd: z.number() }),
  }),
} as const;
export type AgentStreamEventName = keyof typeof AgentStreamEvents;
export type AgentStreamEvent = {
  [K in AgentStreamEventName]: { event: K; data: z.infer<(typeof AgentStreamEvents)[K]> };
}[AgentStreamEventName];
