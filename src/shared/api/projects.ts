// API.md §4: projects, their sources, env vars, build configuration, uploads and logs.
import { z } from 'zod';
import { DnsLabel, PlainText, Timestamp, idOf } from './common.js';
import { ENV_NAME_PATTERN, LIMITS } from '../limits.js';

export { ENV_NAME_PATTERN, LIMITS };

export const DEPLOY_SOURCES = ['git', 'image', 'upload'] as const;
export const DeploySource = z.enum(DEPLOY_SOURCES);
export type DeploySource = z.infer<typeof DeploySource>;

export const PROJECT_STATUSES = ['created', 'building', 'running', 'failed', 'stopped'] as const;
export const ProjectStatus = z.enum(PROJECT_STATUSES);
export type ProjectStatus = z.infer<typeof ProjectStatus>;

const utf8Length = (value: string) => new TextEncoder().encode(value).length;

export const EnvVars = z
  .record(
    z.string().regex(ENV_NAME_PATTERN, 'names must match ^[A-Za-z_][A-Za-z0-9_]*$').max(256),
    z
      .string({ error: 'must be a string' })
      .refine((v) => utf8Length(v) <= LIMITS.envValueBytes, 'must be at most 32 KiB')
      .refine((v) => !v.includes('\u0000'), 'must not contain NUL characters'),
  )
  .refine(
    (vars) => Object.keys(vars).length <= LIMITS.envVars,
    `must have at most ${LIMITS.envVars} variables`,
  )
  .meta({ id: 'EnvVars' });
export type EnvVars = z.infer<typeof EnvVars>;

/** A directory inside the project: relative, no `..`, no backslashes. */
export const RelativeDir = z
  .string()
  .min(1)
  .max(1024)
  .refine((v) => !v.startsWith('/') && !/^[A-Za-z]:/.test(v), 'must be a relative path')
  .refine((v) => !v.split('/').includes('..'), 'must not contain ".."')
  // eslint-disable-next-line no-control-regex
  .refine((v) => !/[\\\u0000-\u001f]/.test(v), 'must not contain backslashes or control characters');

const Command = z
  .string()
  .min(1, 'must not be empty')
  .max(4096, 'must be at most 4096 characters')
  .refine((v) => !v.includes('\u0000'), 'must not contain NUL characters');

/**
 * An optional command or folder: the empty string, as a form sends an unfilled field, means none
 * (stored as null, or `.` for the project's root_dir; see normalizeBuildConfig).
 */
const OrEmpty = <T extends z.ZodType>(schema: T) => z.union([z.literal(''), schema]);

export const Port = z
  .number({ error: 'must be a number' })
  .int('must be a whole number')
  .min(1, 'must be between 1 and 65535')
  .max(65535, 'must be between 1 and 65535');

export const SERVICE_KINDS = ['web', 'worker'] as const;

export const ServiceConfig = z
  .strictObject({
    name: DnsLabel,
    kind: z
      .enum(SERVICE_KINDS)
      .default('web')
      .meta({ description: 'web services listen on a port; workers do not' }),
    root_dir: OrEmpty(RelativeDir)
      .nullable()
      .default(null)
      .meta({ description: "Directory of the service in the repository; null: the project's root_dir" }),
    install_cmd: OrEmpty(Command).nullable().default(null),
    build_cmd: OrEmpty(Command).nullable().default(null),
    start_cmd: Command,
    port: Port.nullable()
      .default(null)
      .meta({ description: 'Fixed port; null lets the runtime assign PORT' }),
    env_overrides: EnvVars.default({}),
  })
  .meta({ id: 'ServiceConfig' });
export type ServiceConfig = z.infer<typeof ServiceConfig>;

export const BuildConfig = z
  .strictObject({
    root_dir: OrEmpty(RelativeDir).default('.'),
    install_cmd: OrEmpty(Command).nullable().default(null),
    build_cmd: OrEmpty(Command).nullable().default(null),
    start_cmd: OrEmpty(Command).nullable().default(null),
    port_override: Port.nullable()
      .default(null)
      .meta({
        description:
          'The port the app listens on (PORT is set to it); null lets the platform choose. With services, ' +
          'the port of the primary app (the project-level root_dir and commands, at the project subdomain), ' +
          'which must differ from every service port; when root_dir has no app to start, the port of the ' +
          'service named web (else the first web service) if it declares none. For an image source, the ' +
          'port inside the container',
      }),
    replicas: z
      .number({ error: 'must be a number' })
      .int('must be a whole number')
      .min(1, `must be between 1 and ${LIMITS.replicas}`)
      .max(LIMITS.replicas, `must be between 1 and ${LIMITS.replicas}`)
      .default(1)
      .meta({
        description:
          'Instances of the app, each answering in turn: Swarm tasks on the swarm runtime; the other runtimes run one',
      }),
    services: z
      .array(ServiceConfig)
      .max(LIMITS.services, `must have at most ${LIMITS.services} services`)
      .default([]),
  })
  .superRefine((config, ctx) => {
    const names = new Set<string>();
    const ports = new Set<number>();
    if (config.port_override !== null) ports.add(config.port_override);
    config.services.forEach((service, i) => {
      if (names.has(service.name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['services', i, 'name'],
          message: `"${service.name}" is used by another service`,
        });
      }
      names.add(service.name);
      if (service.port !== null) {
        if (ports.has(service.port)) {
          ctx.addIssue({
            code: 'custom',
            path: ['services', i, 'port'],
            message:
              service.port === config.port_override
                ? `port ${service.port} is the project's port_override`
                : `port ${service.port} is used by another service`,
          });
        }
        ports.add(service.port);
      }
    });
  })
  .meta({ id: 'BuildConfig' });
export type BuildConfig = z.infer<typeof BuildConfig>;
export type BuildConfigInput = z.input<typeof BuildConfig>;

export const EMPTY_BUILD_CONFIG: BuildConfig = BuildConfig.parse({});

/** The config as stored and run: empty commands and folders are none (null; the root folder `.`). */
export function normalizeBuildConfig(config: BuildConfig): BuildConfig {
  const none = (value: string | null) => (value === '' ? null : value);
  return {
    ...config,
    root_dir: config.root_dir === '' ? '.' : config.root_dir,
    install_cmd: none(config.install_cmd),
    build_cmd: none(config.build_cmd),
    start_cmd: none(config.start_cmd),
    services: config.services.map((service) => ({
      ...service,
      root_dir: none(service.root_dir),
      install_cmd: none(service.install_cmd),
      build_cmd: none(service.build_cmd),
    })),
  };
}

/** `https://…`, `http://…`, `ssh://…`, `git://…`, `file://…` or scp-like `user@host:path`. */
export const RepoUrl = z
  .string()
  .max(2048, 'must be at most 2048 characters')
  .refine((value) => {
    if (/^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+$/.test(value)) return true;
    try {
      const url = new URL(value);
      return ['https:', 'http:', 'ssh:', 'git:', 'file:'].includes(url.protocol) && !/\s/.test(value);
    } catch {
      return false;
    }
  }, 'must be a git URL: https://, http://, ssh://, git://, file:// or user@host:path');

export const GitHostRepo = z
  .string()
  .max(201)
  .regex(/^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/, 'must be "owner/repo"')
  .refine((v) => !v.split('/').some((part) => part === '.' || part === '..'), 'must be "owner/repo"');

/** A git branch name (the parts of git-check-ref-format that matter here). */
export const Branch = z
  .string()
  .min(1, 'must not be empty')
  .max(255, 'must be at most 255 characters')
  .regex(/^[A-Za-z0-9._/+-]+$/, 'may contain only letters, digits and . _ / + -')
  .refine(
    (v) =>
      !v.startsWith('-') &&
      !v.startsWith('/') &&
      !v.endsWith('/') &&
      !v.endsWith('.lock') &&
      !v.includes('..') &&
      !v.includes('//'),
    'is not a valid branch name',
  );

/** A container image reference: `[registry[:port]/]name[/name…][:tag][@sha256:digest]`. */
export const ImageRef = z
  .string()
  .max(512, 'must be at most 512 characters')
  .regex(
    /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]+)?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$/,
    'must be an image reference such as "nginx:1.27" or "ghcr.io/owner/app:tag"',
  );

export const CreateProjectRequest = z
  .strictObject({
    name: PlainText(1, 64),
    subdomain: DnsLabel,
    repo_url: RepoUrl.optional(),
    git_host_repo: GitHostRepo.optional(),
    branch: Branch.optional(),
    image: ImageRef.optional(),
    deploy_source: DeploySource.optional(),
    env_vars: EnvVars.optional(),
    build_config: BuildConfig.optional(),
  })
  .superRefine((body, ctx) => {
    const given: Array<[string, DeploySource]> = [];
    // SPEC.md §4.1 names both for a repository source: repo_url (what is cloned) and git_host_repo
    // (the repository on the git host) may come together, as one source.
    if (body.repo_url !== undefined) given.push(['repo_url', 'git']);
    else if (body.git_host_repo !== undefined) given.push(['git_host_repo', 'git']);
    if (body.image !== undefined) given.push(['image', 'image']);
    if (body.deploy_source === 'upload') given.push(['deploy_source', 'upload']);
    if (given.length === 0) {
      ctx.addIssue({
        code: 'custom',
        path: body.deploy_source ? ['deploy_source'] : [],
        message: body.deploy_source
          ? `deploy_source "${body.deploy_source}" needs its field: ${body.deploy_source === 'git' ? 'repo_url or git_host_repo' : 'image'}`
          : 'exactly one source is required: repo_url, git_host_repo, image, or deploy_source "upload"',
      });
      return;
    }
    if (given.length > 1) {
      for (const [field] of given.slice(1)) {
        ctx.addIssue({
          code: 'custom',
          path: [field],
          message: `only one source is allowed, but ${given.map(([f]) => f).join(' and ')} were given`,
        });
      }
      return;
    }
    const [field, source] = given[0]!;
    if (body.deploy_source !== undefined && body.deploy_source !== source) {
      ctx.addIssue({
        code: 'custom',
        path: ['deploy_source'],
        message: `must be "${source}" for a project with ${field}`,
      });
    }
    if (body.branch !== undefined && source !== 'git') {
      ctx.addIssue({
        code: 'custom',
        path: ['branch'],
        message: 'applies only to git sources (repo_url or git_host_repo)',
      });
    }
  })
  .meta({ id: 'CreateProjectRequest' });
export type CreateProjectRequest = z.infer<typeof CreateProjectRequest>;

export const UpdateProjectRequest = z
  .strictObject({ env_vars: EnvVars })
  .meta({ id: 'UpdateProjectRequest' });
export type UpdateProjectRequest = z.infer<typeof UpdateProjectRequest>;

export const Project = z
  .object({
    id: idOf('prj'),
    name: z.string(),
    subdomain: z.string(),
    // SPEC.md §2.1 types these strings: the fields of another source are the empty string, never null.
    repo_url: z.string().meta({ description: 'The git URL (credentials masked); empty for other sources' }),
    git_host_repo: z
      .string()
      .meta({ description: '"owner/repo" on the configured git host; empty for other sources' }),
    branch: z.string().meta({ description: 'The branch of a git source; empty for other sources' }),
    image: z.string().meta({ description: 'The container image of an image source; empty for others' }),
    deploy_source: DeploySource,
    env_vars: z.record(z.string(), z.string()),
    build_config: BuildConfig,
    status: ProjectStatus,
    url: z.string(),
    service_urls: z.record(z.string(), z.string()),
    created_at: Timestamp,
    updated_at: Timestamp,
    last_deploy_at: Timestamp.nullable(),
    last_deploy_error: z
      .string()
      .nullable()
      .meta({
        description:
          'Why the last deploy failed, else null. When a redeploy fails while the previous version keeps ' +
          'serving, status stays `running` and this says so.',
      }),
  })
  .meta({ id: 'Project' });
export type Project = z.infer<typeof Project>;

export const LOG_STREAMS = ['build', 'runtime', 'system'] as const;
export const LogLine = z
  .object({
    ts: Timestamp,
    stream: z.enum(LOG_STREAMS),
    service: z.string().nullable(),
    line: z.string(),
  })
  .meta({ id: 'LogLine' });
export type LogLine = z.infer<typeof LogLine>;

export const ProjectDetail = z
  .object({ project: Project, logs: z.array(LogLine) })
  .meta({ id: 'ProjectDetail' });
export type ProjectDetail = z.infer<typeof ProjectDetail>;

export const LogsQuery = z.object({
  since: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 time' }).optional(),
  limit: z.coerce.number().int().min(1).max(10_000).optional(),
  follow: z.enum(['0', '1', 'true', 'false']).optional(),
});

export const Upload = z
  .object({
    id: idOf('upl'),
    size_bytes: z.number().int().nonnegative(),
    files: z.number().int().nonnegative(),
    uploaded_at: Timestamp,
  })
  .meta({ id: 'Upload' });
export type Upload = z.infer<typeof Upload>;

export const RELEASE_STATUSES = ['building', 'running', 'failed', 'cancelled', 'retired'] as const;
export const ReleaseStatus = z.enum(RELEASE_STATUSES);
export type ReleaseStatus = z.infer<typeof ReleaseStatus>;

/** API.md §4: one deploy of a project, kept so that a click can bring it back without a build. */
export const Release = z
  .object({
    id: idOf('rel'),
    project_id: idOf('prj'),
    status: ReleaseStatus.meta({
      description:
        '`building` while its deploy runs; `running` while it serves; `retired` once a newer release or a stop replaced it; `failed` or `cancelled` when it never served',
    }),
    current: z.boolean().meta({ description: 'Whether this release serves the project now' }),
    rollback_available: z.boolean().meta({
      description:
        'Whether POST /rollback can bring it back: it served before, is not the current one, and its image or files are still kept',
    }),
    source: z.string().meta({ description: 'Where its code came from (repository credentials masked)' }),
    commit: z.string().nullable().meta({ description: 'The git commit deployed, for git sources' }),
    image: z.string().nullable().meta({
      description:
        'The image it runs: `wharf/<project>:<release>` built by the container runtime, or an image source; null for host runtimes',
    }),
    env_vars: z.record(z.string(), z.string()).meta({ description: 'The env vars it was deployed with' }),
    error: z.string().nullable(),
    created_at: Timestamp,
    finished_at: Timestamp.nullable().meta({
      description: 'When its deploy ended (running, failed or cancelled)',
    }),
  })
  .meta({ id: 'Release' });
export type Release = z.infer<typeof Release>;

export const RollbackRequest = z.object({ release_id: idOf('rel') }).meta({ id: 'RollbackRequest' });
export type RollbackRequest = z.infer<typeof RollbackRequest>;

/** API.md §4: the login an image source is pulled with, from a private registry. */
export const RegistryCredentialsRequest = z
  .object({
    username: PlainText(1, 256),
    password: z
      .string({ error: 'must be a string' })
      .min(1, 'must not be empty')
      .max(4096, 'must be at most 4096 characters')
      // eslint-disable-next-line no-control-regex
      .refine((v) => !/[\u0000-\u001f]/.test(v), 'must not contain control characters'),
  })
  .meta({ id: 'RegistryCredentialsRequest' });
export type RegistryCredentialsRequest = z.infer<typeof RegistryCredentialsRequest>;

/** What is shown of saved registry credentials: never the password. */
export const RegistryCredentials = z
  .object({
    registry: z.string().meta({ description: 'The registry the image is pulled from (from its reference)' }),
    username: z.string(),
  })
  .meta({ id: 'RegistryCredentials' });
export type RegistryCredentials = z.infer<typeof RegistryCredentials>;
