// SPEC.md's tables as data, and a checker that holds a JSON value to one: every field of the table is
// present with its type (no null where SPEC types a string, boolean or integer; no fraction where it
// says integer), enums hold one of their values, and the string forms (`<host>:<port>`,
// `<owner>/<repo>`, ISO 8601 UTC, …) are kept. Fields SPEC does not list may follow ("other fields:
// not shown"), so they are not reported.
import { expect } from 'vitest';

export type SpecForm =
  'host:port' | 'owner/repo' | 'iso-utc' | 'hostname' | 'git-url' | 'image' | 'http-method' | 'path';

export type SpecType =
  | 'string'
  | 'boolean'
  | 'integer'
  | 'number'
  | { enum: readonly string[] }
  | { form: SpecForm }
  /** An object from string to string (env_vars, headers). */
  | { record: 'string' }
  | { array: SpecType }
  | { object: SpecTable };

export type SpecTable = Readonly<Record<string, SpecType>>;

const FORMS: Record<SpecForm, (v: string) => boolean> = {
  'host:port': (v) => {
    const match = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})$/.exec(v);
    return match !== null && Number(match[2]) >= 0 && Number(match[2]) <= 65535;
  },
  'owner/repo': (v) => /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(v),
  'iso-utc': (v) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(v) && !Number.isNaN(Date.parse(v)),
  hostname: (v) =>
    /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i.test(v),
  'git-url': (v) => /^(https?|ssh|git|file):\/\/\S+$/.test(v) || /^[\w.-]+@[\w.-]+:\S+$/.test(v),
  image: (v) => /^[a-z0-9][\w./:@-]*$/i.test(v),
  'http-method': (v) => /^[A-Z]+$/.test(v),
  path: (v) => v.startsWith('/'),
};

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' && !Number.isInteger(value)) return `the fraction ${value}`;
  return typeof value === 'string'
    ? `the string ${JSON.stringify(value)}`
    : `${typeof value} ${String(value)}`;
}

/** What in `value` breaks `type`, each as `path: problem` (empty when it conforms). */
export function typeViolations(value: unknown, type: SpecType, path: string): string[] {
  const bad = (want: string) => [`${path}: expected ${want}, got ${describeValue(value)}`];
  if (type === 'string') return typeof value === 'string' ? [] : bad('a string');
  if (type === 'boolean') return typeof value === 'boolean' ? [] : bad('a boolean');
  if (type === 'number') return typeof value === 'number' && Number.isFinite(value) ? [] : bad('a number');
  if (type === 'integer') return Number.isInteger(value) ? [] : bad('an integer');
  if ('enum' in type) {
    return typeof value === 'string' && type.enum.includes(value)
      ? []
      : bad(`one of ${type.enum.join(', ')}`);
  }
  if ('form' in type) {
    return typeof value === 'string' && FORMS[type.form](value)
      ? []
      : bad(`a string of the form ${type.form}`);
  }
  if ('record' in type) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad('an object');
    return Object.entries(value).flatMap(([k, v]) =>
      typeof v === 'string' ? [] : [`${path}.${k}: expected a string, got ${describeValue(v)}`],
    );
  }
  if ('array' in type) {
    if (!Array.isArray(value)) return bad('an array');
    return value.flatMap((item, i) => typeViolations(item, type.array, `${path}[${i}]`));
  }
  return tableViolations(value, type.object, path);
}

/** What in `value` breaks the table: missing fields, and fields of the wrong type. */
export function tableViolations(value: unknown, table: SpecTable, path = '$'): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [`${path}: expected an object, got ${describeValue(value)}`];
  }
  const record = value as Record<string, unknown>;
  return Object.entries(table).flatMap(([field, type]) =>
    field in record ? typeViolations(record[field], type, `${path}.${field}`) : [`${path}.${field}: missing`],
  );
}

/** Asserts that `value` conforms to the SPEC table (the message lists every violation). */
export function expectSpec(value: unknown, table: SpecTable, what: string): void {
  expect(tableViolations(value, table), `${what} against SPEC.md: ${JSON.stringify(value)}`).toEqual([]);
}

// ---------------------------------------------------------------------------------------------------
// The tables of SPEC.md.

/** §2.1 and §3: the status values. */
export const SPEC_PROJECT_STATUSES = ['building', 'running', 'failed'] as const;
/**
 * The states SPEC.md §3 leaves open ("the state before building, and the status after stop: not
 * shown"), as API.md §4 names them.
 */
export const OPEN_PROJECT_STATUSES = ['created', 'stopped'] as const;

/** §2.1 Project, the fields every project has whatever its source. */
export const PROJECT: SpecTable = {
  id: 'string',
  name: 'string',
  subdomain: 'string',
  repo_url: 'string',
  git_host_repo: 'string',
  branch: 'string',
  image: 'string',
  deploy_source: 'string',
  env_vars: { record: 'string' },
  status: { enum: [...SPEC_PROJECT_STATUSES, ...OPEN_PROJECT_STATUSES] },
};

/** §2.1 for a repository source: the fields it is made from, in their forms. */
export const REPOSITORY_PROJECT: SpecTable = { ...PROJECT, repo_url: { form: 'git-url' }, branch: 'string' };
export const GIT_HOST_PROJECT: SpecTable = { ...PROJECT, git_host_repo: { form: 'owner/repo' } };
export const IMAGE_PROJECT: SpecTable = { ...PROJECT, image: { form: 'image' } };
export const UPLOAD_PROJECT: SpecTable = { ...PROJECT, deploy_source: { enum: ['upload'] } };

/** §2.2 the service object. */
export const SERVICE: SpecTable = {
  name: 'string',
  root_dir: 'string',
  port: 'integer',
  install_cmd: 'string',
  build_cmd: 'string',
  start_cmd: 'string',
  env_overrides: { record: 'string' },
};

/** §2.2 the body of the build-config update. */
export const BUILD_CONFIG: SpecTable = {
  install_cmd: 'string',
  build_cmd: 'string',
  start_cmd: 'string',
  root_dir: 'string',
  port_override: 'integer',
  services: { array: { object: SERVICE } },
};

/** §2.1: project detail is `{ project, logs }`; the shape of one log line is not shown. */
export const PROJECT_DETAIL: SpecTable = { project: { object: PROJECT }, logs: { array: { object: {} } } };

/** §2.3 Domain. */
export const DOMAIN: SpecTable = {
  id: 'string',
  domain: { form: 'hostname' },
  verified: 'boolean',
  cname_target: { form: 'hostname' },
};

/** §2.3 and §4.3: the answer to adding a domain. */
export const CREATED_DOMAIN: SpecTable = {
  domain: { object: DOMAIN },
  instructions: {
    object: { type: { enum: ['CNAME'] }, name: { form: 'hostname' }, target: { form: 'hostname' } },
  },
};

/** §2.4 Captured request. */
export const CAPTURED_REQUEST: SpecTable = {
  id: 'string',
  method: { form: 'http-method' },
  path: { form: 'path' },
  status_code: 'integer',
  duration_ms: 'integer',
  request_headers: { record: 'string' },
  response_headers: { record: 'string' },
  request_size: 'integer',
  response_size: 'integer',
  remote_addr: { form: 'host:port' },
  timestamp: { form: 'iso-utc' },
};

export const EMAIL_SCORES = ['valid', 'risky', 'invalid', 'unknown'] as const;
export const EMAIL_REASONS = [
  'ok',
  'mailbox_exists',
  'mailbox_not_found',
  'catch_all',
  'smtp_inconclusive',
  'disposable',
  'role_account',
  'no_mail_server',
  'invalid_syntax',
] as const;

/** §2.5 Email verification result. */
export const EMAIL_RESULT: SpecTable = {
  email: 'string',
  normalized: 'string',
  domain: 'string',
  score: { enum: EMAIL_SCORES },
  reason: { enum: EMAIL_REASONS },
  syntax_valid: 'boolean',
  has_mx: 'boolean',
  disposable: 'boolean',
  role_based: 'boolean',
  free_provider: 'boolean',
  suggestion: 'string',
  mailbox_checked: 'boolean',
  catch_all: 'boolean',
};

/** §4.4 the batch answer. */
export const EMAIL_BATCH: SpecTable = { count: 'integer', results: { array: { object: EMAIL_RESULT } } };

/** §2.6 and §4.2: the agent's answer. */
export const AGENT_REPLY: SpecTable = { reply: 'string', steps: { array: { object: {} } } };

/** §6.1 the agent stream's event names. */
export const AGENT_STREAM_EVENTS = [
  'step',
  'step_done',
  'token',
  'note',
  'build_log',
  'build_status',
  'done',
] as const;
