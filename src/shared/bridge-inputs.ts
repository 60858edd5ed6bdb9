// The Bridge's inputs, checked the way the API checks bodies: one zod schema per operation, from which
// the list of operations comes (adding an operation is one entry here, with its types in bridge.ts).
// The Engine parses every input with its operation's schema before a handler sees it; a refusal is a
// 422 naming the field, as the API's are. Bodies the platform checks itself (a project, an AI build)
// are only required to be objects here: the platform's own answer names what is wrong with them.
import { z } from 'zod';
import { fieldErrors } from './api/validation.js';
import { BridgeError, type BridgeInput, type BridgeOperation } from './bridge.js';
import { DNS_LABEL_PATTERN, RESERVED_SUBDOMAINS, isHostHeaderMode } from './dns-label.js';
import { HTTP_TOKEN } from './http-token.js';

/** The most requests a traffic page holds (`TrafficQuery.limit` is capped to it). */
export const MAX_TRAFFIC_PAGE = 1_000;
/** The most requests one HAR file is made of. */
export const MAX_HAR_REQUESTS = 10_000;

/** A status filter: a class (`2xx`), a code (`404`), or `error`. */
export const STATUS_FILTER = /^(?:([1-5])xx|([1-5]\d\d)|error)$/i;
const RUN_ID = /^run_[A-Za-z0-9_-]{8,64}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** An operation without input: whatever the caller sent is dropped. */
const nothing = z.unknown().transform((): void => undefined);

/** An object input; a missing one (undefined, null) reads as `{}`, so that each field says what it lacks. */
function fields<T extends z.ZodRawShape>(shape: T) {
  return z.preprocess((value) => value ?? {}, z.object(shape, { error: 'the input must be an object' }));
}

/** A required id, `what` saying whose: `id is required: a project id`. */
function id(what: string) {
  const message = `is required: ${what}`;
  return z.string({ error: message }).min(1, { error: message });
}

/** A body the platform checks itself: only its being an object is checked here. */
function checkedByPlatform<T>() {
  return z.preprocess(
    (value) => value ?? {},
    z.custom<T>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), {
      error: 'must be an object',
    }),
  );
}

/** Text that may be left out: undefined, null and '' all read as left out. */
function optionalText(message = 'must be text') {
  return z.preprocess(
    (value) => (value === null || value === '' ? undefined : value),
    z.string({ error: message }).optional(),
  );
}

/** A list of strings, each trimmed, the empty ones dropped; undefined and null read as none. */
function textList(message = 'must be a list of strings') {
  return z.preprocess(
    (value) => value ?? [],
    z
      .array(z.unknown(), { error: message })
      .refine((items) => items.every((item) => typeof item === 'string'), { error: message })
      .transform((items) => (items as string[]).map((item) => item.trim()).filter((item) => item !== '')),
  );
}

/** Milliseconds, 0 or more; undefined and null read as left out. */
const milliseconds = z.preprocess(
  (value) => (value === null ? undefined : value),
  z
    .number({ error: 'must be a number of milliseconds, 0 or more' })
    .min(0, { error: 'must be a number of milliseconds, 0 or more' })
    .optional(),
);

/** `smtp_probe` when the UI gave one (null reads as not given). */
const smtpProbe = z.preprocess(
  (value) => (value === null ? undefined : value),
  z.boolean({ error: 'must be true or false' }).optional(),
);

/** Whether text holds whitespace or a control character (not allowed in a request target). */
function hasControlOrSpace(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code <= 0x20 || code === 0x7f) return true;
  }
  return false;
}

const scopesMessage = 'must be a list of scope names: deploy, email or full';

const trafficQuery = fields({
  tunnelId: optionalText(),
  q: optionalText(),
  methods: textList()
    .transform((methods) => methods.map((method) => method.toUpperCase()))
    .refine((methods) => methods.every((method) => HTTP_TOKEN.test(method)), {
      error: 'must be HTTP methods such as GET',
    }),
  statuses: textList().superRefine((statuses, context) => {
    const wrong = statuses.find((status) => !STATUS_FILTER.test(status));
    if (wrong !== undefined)
      context.addIssue({
        code: 'custom',
        message: `has "${wrong}": use 2xx…5xx, a code such as 404, or error`,
      });
  }),
  path: optionalText(),
  header: optionalText().refine((header) => header === undefined || header.split(':', 1)[0]!.trim() !== '', {
    error: 'must be "name" or "name: value"',
  }),
  minDurationMs: milliseconds,
  maxDurationMs: milliseconds,
  before: z.string({ error: 'must be a request id' }).optional(),
  limit: z.preprocess(
    (value) => (value === null ? undefined : value),
    z
      .number({ error: `must be a whole number from 1 to ${MAX_TRAFFIC_PAGE}` })
      .int({ error: `must be a whole number from 1 to ${MAX_TRAFFIC_PAGE}` })
      .min(1, { error: `must be a whole number from 1 to ${MAX_TRAFFIC_PAGE}` })
      .transform((limit) => Math.min(limit, MAX_TRAFFIC_PAGE))
      .optional(),
  ),
});

const replay = fields({
  id: id('a request id'),
  method: z
    .string({ error: 'must be an HTTP method such as GET or POST' })
    .regex(HTTP_TOKEN, { error: 'must be an HTTP method such as GET or POST' })
    .transform((method) => method.toUpperCase())
    .optional(),
  path: z
    .string({ error: 'must start with / and hold no spaces or control characters' })
    .refine((path) => path.startsWith('/') && !hasControlOrSpace(path), {
      error: 'must start with / and hold no spaces or control characters',
    })
    .optional(),
  headers: z
    .array(
      z.object({
        name: z
          .string({ error: 'must be a header name' })
          .regex(HTTP_TOKEN, { error: 'must be a header name' }),
        value: z
          .string({ error: 'must be text on one line' })
          .refine((value) => !/[\r\n\0]/.test(value), { error: 'must be text on one line' }),
      }),
      { error: 'must be a list of { name, value }' },
    )
    .optional(),
  body: z
    .string({ error: 'must be base64' })
    .refine((body) => BASE64.test(body.replace(/\s+/g, '')), { error: 'must be base64' })
    .nullable()
    .optional(),
});

/**
 * Every Bridge operation's input schema. Its keys are the operations (BRIDGE_OPERATIONS); each
 * schema's output is the operation's input type, normalized (trimmed names, defaults filled in).
 */
export const BRIDGE_INPUTS = {
  'settings.get': nothing,
  'settings.update': fields({
    platform: z.string({ error: 'must be "local" or an http(s) URL' }).optional(),
    apiKey: z.string({ error: 'must be text, or null to forget it' }).nullable().optional(),
  }),
  'settings.testConnection': fields({
    platform: z.string({ error: 'is required: "local" or an http(s) URL' }),
    apiKey: z.string({ error: 'must be text' }).optional(),
  }),
  'platform.status': nothing,
  'platform.info': nothing,
  'account.get': nothing,
  'projects.list': nothing,
  'projects.get': fields({ id: id('a project id') }),
  'projects.create': checkedByPlatform<BridgeInput<'projects.create'>>(),
  'projects.setEnvVars': fields({
    id: id('a project id'),
    env_vars: checkedByPlatform<BridgeInput<'projects.setEnvVars'>['env_vars']>(),
  }),
  'projects.setBuildConfig': fields({
    id: id('a project id'),
    build_config: checkedByPlatform<BridgeInput<'projects.setBuildConfig'>['build_config']>(),
  }),
  'projects.upload': z
    .preprocess(
      (value) => value ?? {},
      z.object({ id: id('a project id'), fileName: z.string(), data: z.unknown() }),
    )
    .superRefine((upload, context) => {
      if (!(upload.data instanceof Uint8Array) || upload.data.length === 0)
        context.addIssue({
          code: 'custom',
          path: ['file'],
          message: 'is empty: choose a non-empty .tar.gz file',
        });
    })
    .transform((upload) => ({ ...upload, data: upload.data as Uint8Array })),
  'projects.delete': fields({ id: id('a project id') }),
  'projects.deploy': fields({ id: id('a project id') }),
  'projects.stop': fields({ id: id('a project id') }),
  'projects.releases': fields({ id: id('a project id') }),
  'projects.rollback': fields({ id: id('a project id'), release_id: id('a release id') }),
  'projects.logs': fields({
    id: id('a project id'),
    since: z.string({ error: 'must be an ISO time' }).optional(),
    limit: z
      .number({ error: 'must be a whole number, 1 or more' })
      .int({ error: 'must be a whole number, 1 or more' })
      .min(1, { error: 'must be a whole number, 1 or more' })
      .optional(),
  }),
  'logs.follow': fields({ id: id('a project id') }),
  'logs.unfollow': fields({ id: id('a project id') }),
  'tunnels.list': nothing,
  'tunnels.start': fields({
    port: z
      .number({ error: 'must be a port number from 1 to 65535' })
      .int({ error: 'must be a port number from 1 to 65535' })
      .min(1, { error: 'must be a port number from 1 to 65535' })
      .max(65535, { error: 'must be a port number from 1 to 65535' }),
    subdomain: optionalText()
      .refine((name) => name === undefined || DNS_LABEL_PATTERN.test(name), {
        error: 'must be a lowercase DNS label: letters, digits and hyphens, such as my-app',
      })
      .superRefine((name, context) => {
        if (name !== undefined && RESERVED_SUBDOMAINS.has(name))
          context.addIssue({ code: 'custom', message: `"${name}" is reserved for the platform` });
      }),
    hostHeader: optionalText()
      .transform((mode) => mode ?? 'preserve')
      .refine(isHostHeaderMode, { error: 'must be preserve, rewrite, or a host name such as myapp.test' }),
  }),
  'tunnels.stop': fields({ id: id('a tunnel id') }),
  'traffic.list': trafficQuery,
  'traffic.get': fields({ id: id('a request id') }),
  'traffic.tunnels': nothing,
  'traffic.replay': replay,
  'traffic.clear': fields({
    tunnelId: z.string({ error: 'must be a tunnel id' }).min(1, { error: 'must be a tunnel id' }).optional(),
  }),
  'traffic.har': fields({
    ids: z
      .array(z.string({ error: 'must be a request id' }), { error: 'must be a list of request ids' })
      .min(1, { error: 'must name at least one request' })
      .max(MAX_HAR_REQUESTS, {
        error: `must name at most ${MAX_HAR_REQUESTS.toLocaleString('en')} requests`,
      }),
  }),
  'traffic.curl': fields({ id: id('a request id') }),
  'account.usage': nothing,
  'domains.list': nothing,
  'domains.create': fields({
    domain: z
      .string({ error: 'is required: a domain name such as app.example.com' })
      .refine((domain) => domain.trim() !== '', {
        error: 'is required: a domain name such as app.example.com',
      }),
    project_id: optionalText('must be a project id'),
  }),
  'domains.link': fields({
    id: id('a domain id'),
    project_id: z
      .string({ error: 'must be a project id, or null for none' })
      .min(1, { error: 'must be a project id, or null for none' })
      .nullable()
      .optional(),
    hsts: z.boolean({ error: 'must be true or false' }).optional(),
  }).refine((link) => link.project_id !== undefined || link.hsts !== undefined, {
    path: ['project_id'],
    error: 'give project_id, hsts or both',
  }),
  'domains.verify': fields({ id: id('a domain id') }),
  'domains.delete': fields({ id: id('a domain id') }),
  'email.verify': fields({
    email: z.string({ error: 'must be an email address' }),
    smtp_probe: smtpProbe,
  }),
  'email.verifyBatch': fields({
    emails: z.array(z.string(), { error: 'must be a list of email addresses' }),
    smtp_probe: smtpProbe,
  }),
  'account.setAiKey': fields({
    provider: z
      .string({ error: 'is required' })
      .min(1, { error: 'is required' })
      .transform((provider) => provider as BridgeInput<'account.setAiKey'>['provider']),
    key: z
      .string({ error: 'is required: paste your key' })
      .transform((key) => key.trim())
      .refine((key) => key !== '', { error: 'is required: paste your key' }),
  }),
  'account.deleteAiKey': nothing,
  'keys.list': nothing,
  'keys.create': fields({
    scopes: z
      .array(z.unknown(), { error: 'must name at least one scope: deploy, email or full' })
      .min(1, { error: 'must name at least one scope: deploy, email or full' })
      .refine((scopes) => scopes.every((scope) => typeof scope === 'string'), { error: scopesMessage })
      .transform((scopes) => scopes as BridgeInput<'keys.create'>['scopes']),
    name: z
      .string({ error: 'must be text' })
      .nullable()
      .optional()
      .transform((name) => (typeof name === 'string' ? name.trim() : undefined))
      .refine((name) => name !== '', {
        error: 'must not be empty: name the key after where it is used, such as "CI"',
      }),
  }).transform(({ scopes, name }) => ({ scopes, ...(name === undefined ? {} : { name }) })),
  'keys.revoke': fields({ id: id('a key id') }),
  'ai.build': checkedByPlatform<BridgeInput<'ai.build'>>(),
  'ai.deploy': fields({
    project_id: id('a project id'),
    env: checkedByPlatform<NonNullable<BridgeInput<'ai.deploy'>['env']>>().optional(),
    database: z.enum(['postgres'], { error: 'must be postgres, or null for none' }).nullable().optional(),
  }),
  'ai.edit': checkedByPlatform<BridgeInput<'ai.edit'>>(),
  'ai.agent.start': fields({
    messages: z
      .array(
        z.object({
          role: z.enum(['user', 'assistant'], { error: 'must be user or assistant' }),
          content: z.string({ error: 'must be text' }),
        }),
        { error: 'must hold at least one message' },
      )
      .min(1, { error: 'must hold at least one message' }),
    // The platform names the engines it has (and refuses another with its own 422).
    engine: z
      .string({ error: 'must be an engine name such as auto' })
      .transform((engine) => engine as NonNullable<BridgeInput<'ai.agent.start'>['engine']>)
      .optional(),
    runId: z
      .string({ error: 'must be run_ followed by 8 to 64 letters, digits, _ or -' })
      .regex(RUN_ID, { error: 'must be run_ followed by 8 to 64 letters, digits, _ or -' })
      .optional(),
  }),
  'ai.agent.stop': fields({ runId: id('a run id') }),
} satisfies { [K in BridgeOperation]: z.ZodType<BridgeInput<K>, unknown> };

/** An operation's input as its schema gives it: checked, and normalized (defaults filled in). */
export type CheckedInput<K extends BridgeOperation> = z.output<(typeof BRIDGE_INPUTS)[K]>;

/** Every Bridge operation, as the schemas list them. */
export const BRIDGE_OPERATIONS = Object.keys(BRIDGE_INPUTS) as BridgeOperation[];

export function isBridgeOperation(value: unknown): value is BridgeOperation {
  return typeof value === 'string' && Object.hasOwn(BRIDGE_INPUTS, value);
}

/** An operation's input, checked and normalized by its schema (see `checkedBy`). */
export function parseBridgeInput<K extends BridgeOperation>(operation: K, input: unknown): CheckedInput<K> {
  return checkedBy(BRIDGE_INPUTS[operation] as unknown as z.ZodType<CheckedInput<K>, unknown>, input);
}

/**
 * What `schema` makes of `input`, or a 422 whose detail names the first field that is wrong and whose
 * `errors` name every one (paths written as the API writes them: `headers[0].name`).
 */
export function checkedBy<T>(schema: z.ZodType<T, unknown>, input: unknown): T {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const errors = fieldErrors(parsed.error.issues);
  const first = errors[0]!;
  throw new BridgeError(
    'validation_failed',
    422,
    first.path === '' ? first.message : `${first.path} ${first.message}`,
    errors,
  );
}
