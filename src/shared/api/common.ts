// Building blocks shared by the /api/v1 schemas: identifiers, times, problem+json.
import { z } from 'zod';
import { AiProvider } from './ai-providers.js';
import { ERROR_CODES } from '../errors.js';
import { DNS_LABEL_PATTERN } from '../dns-label.js';

export const ID_PREFIXES = {
  account: 'acc',
  key: 'key',
  project: 'prj',
  upload: 'upl',
  domain: 'dom',
  request: 'req',
  tunnel: 'tun',
  ledger: 'led',
  step: 'stp',
} as const;

/** An opaque identifier with its type prefix, e.g. `prj_5fK2…`. */
export const idOf = (prefix: string) =>
  z
    .string()
    .regex(new RegExp(`^${prefix}_[A-Za-z0-9]{1,64}$`), `must be an identifier starting with ${prefix}_`);

export const Timestamp = z.string().meta({ format: 'date-time', description: 'ISO 8601 UTC' });

export const Usd = z.number().meta({ description: 'US dollars' });

export const DnsLabel = z
  .string()
  .max(63, 'must be at most 63 characters')
  .regex(DNS_LABEL_PATTERN, 'must be a lowercase DNS label: a-z, 0-9 and inner hyphens, 1–63 characters');

export const FieldErrorSchema = z.object({ path: z.string(), message: z.string() });

export const Problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    code: z.enum(ERROR_CODES as [string, ...string[]]),
    detail: z.string(),
    errors: z.array(FieldErrorSchema).optional(),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details' });
export type Problem = z.infer<typeof Problem>;

export const Deleted = (prefix: string) => z.object({ id: idOf(prefix), deleted: z.literal(true) });

/** Text without control characters (tab allowed), for names and single-line fields. */
export const PlainText = (min: number, max: number) =>
  z
    .string()
    .min(min, min === 1 ? 'must not be empty' : `must be at least ${min} characters`)
    .max(max, `must be at most ${max} characters`)
    // eslint-disable-next-line no-control-regex
    .regex(/^[^\u0000-\u0008\u000a-\u001f\u007f]*$/, 'must not contain control characters');

/** `:id` path parameters: any string; an id of the wrong shape is simply not found (404). */
export const IdParams = z.object({ id: z.string() });

/** GET /platform: how this platform runs apps (shown in the desktop app's Settings). */
export const PlatformInfo = z
  .object({
    runtime: z.enum(['container', 'swarm', 'sandbox', 'process']).meta({
      description:
        '`container`: an image per release on a Docker-compatible engine; `swarm`: an image per release, run as a Docker Swarm service; `sandbox`: bubblewrap; `process`: plain processes (one account only)',
    }),
    runtime_notes: z
      .array(z.string())
      .meta({ description: 'Why this runtime, and its limits, one line each' }),
    keep_releases: z
      .number()
      .int()
      .positive()
      .meta({ description: 'Releases kept for a rollback per project' }),
    ai_included: z.object({ provider: AiProvider, model: z.string() }).nullable().optional().meta({
      description:
        'The included AI engine (the service’s own key, billed to the balance): its provider and model; null when this platform has none. Never the key. Absent from older platforms.',
    }),
    ai_own_key_models: z.record(AiProvider, z.string()).optional().meta({
      description: 'The model a saved own key of each provider runs on. Absent from older platforms.',
    }),
  })
  .meta({ id: 'PlatformInfo' });
export type PlatformInfo = z.infer<typeof PlatformInfo>;
