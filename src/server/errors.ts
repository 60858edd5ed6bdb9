// API errors: ApiError carries a code of API.md §1, and problemHandler turns every error that reaches
// Fastify (ours, its own, zod validation) into RFC 9457 problem+json. Anything unforeseen is a 500 that
// is logged with its stack but never shown to the caller.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';
import { ERROR_STATUS, problemBody, type ErrorCode, type FieldError } from '../shared/errors.js';
import { fieldErrors } from '../shared/api/validation.js';
import type { Problem } from '../shared/api/common.js';
import { isUniqueViolation } from './store/errors.js';

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly fields?: FieldError[],
    readonly headers?: Record<string, string>,
    /** Extension members of the problem body (e.g. `required_usd` of a 402), next to the standard ones. */
    readonly extra?: Record<string, unknown>,
  ) {
    super(detail);
    this.status = ERROR_STATUS[code];
  }
}

export const notFound = (what: string) => new ApiError('not_found', `${what} was not found`);

export const invalid = (path: string, message: string) =>
  new ApiError('validation_failed', `${path || 'the request'} ${message}`, [{ path, message }]);

/**
 * Whether a parsed JSON body holds U+0000 in any string or key. PostgreSQL keeps no NUL in text, so the
 * API takes none on either store: a name, an env value or an id with one is refused before it is used.
 */
export function holdsNul(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') {
      if (item.includes('\u0000')) return true;
    } else if (Array.isArray(item)) {
      // One by one: a 1 MiB body holds half a million elements, too many to spread as arguments.
      for (const inner of item as unknown[]) stack.push(inner);
    } else if (item !== null && typeof item === 'object') {
      const proto = Object.getPrototypeOf(item) as unknown;
      // Only what JSON.parse makes: an upload's stream or buffer is binary, and not looked into.
      if (proto !== Object.prototype && proto !== null) continue;
      for (const [key, inner] of Object.entries(item)) {
        if (key.includes('\u0000')) return true;
        stack.push(inner);
      }
    }
  }
  return false;
}

/** Whether a request URL (as sent, percent-encoded) holds a NUL in its path or query. */
export function urlHoldsNul(url: string): boolean {
  return url.includes('\u0000') || /%00/i.test(url);
}

export const nulRefused = (where: string) =>
  new ApiError('bad_request', `${where} holds a NUL character (U+0000), which no text here may hold`);

export function problem(
  code: ErrorCode,
  detail: string,
  errors?: FieldError[],
  extra?: Record<string, unknown>,
): Problem & Record<string, unknown> {
  return problemBody(code, detail, { errors, extra }) as Problem & Record<string, unknown>;
}

export function sendProblem(reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.headers) reply.headers(error.headers);
  return reply
    .code(error.status)
    .type('application/problem+json; charset=utf-8')
    .send(problem(error.code, error.detail, error.fields, error.extra));
}

function summarize(errors: FieldError[]): string {
  const first = errors[0];
  if (!first) return 'the request is not valid';
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
  return `${first.path || 'the request body'}: ${first.message}${more}`;
}

export function validationError(errors: FieldError[]): ApiError {
  return new ApiError('validation_failed', summarize(errors), errors);
}

/** A request part (body, querystring, params) that failed its zod schema, with the raw issues. */
export class RequestValidationError extends Error {
  readonly statusCode = 422;
  constructor(readonly issues: z.core.$ZodIssue[]) {
    super('request validation failed');
  }
}

/** Fastify validator compiler for zod schemas that keeps zod's issues (and their paths) intact. */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> =
  ({ schema }) =>
  (data: unknown) => {
    const result = schema.safeParse(data);
    return result.success
      ? { value: result.data }
      : { error: new RequestValidationError(result.error.issues) };
  };

/** Maps Fastify's own errors (by their FST_ codes) to our problem codes. */
function fromFastify(error: FastifyError, request: FastifyRequest): ApiError | null {
  const routeAcceptsUploads = Boolean(request.routeOptions.config?.acceptsUploads);
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return routeAcceptsUploads
        ? new ApiError(
            'unsupported_media_type',
            `Content-Type ${request.headers['content-type'] ?? '(none)'} is not accepted: send a .tar.gz as application/gzip, application/x-gzip or application/octet-stream, or as multipart/form-data field "file"`,
          )
        : new ApiError(
            'invalid_json',
            `Content-Type must be application/json, not ${request.headers['content-type'] ?? '(none)'}`,
          );
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_json', 'the body is empty: send a JSON object');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('invalid_json', `the body is not valid JSON: ${error.message}`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(
        'payload_too_large',
        routeAcceptsUploads ? 'the upload is over 100 MiB' : 'the JSON body is over 1 MiB',
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('bad_request', 'Content-Length does not match the body');
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_ASYNC_CONSTRAINT':
      return new ApiError('bad_request', 'the URL is malformed');
    default:
      break;
  }
  if (error instanceof SyntaxError || error.name === 'SyntaxError') {
    return new ApiError('invalid_json', `the body is not valid JSON: ${error.message}`);
  }
  if (error.statusCode === 413) return new ApiError('payload_too_large', error.message);
  if (error.statusCode === 415) return new ApiError('unsupported_media_type', error.message);
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return new ApiError('bad_request', error.message);
  }
  return null;
}

export function problemHandler(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  if (error instanceof ApiError) return sendProblem(reply, error);
  if (error instanceof RequestValidationError) {
    const context =
      (error as RequestValidationError & { validationContext?: string }).validationContext ?? 'body';
    if (context === 'body' && (request.body === undefined || request.body === null)) {
      return sendProblem(reply, new ApiError('invalid_json', 'a JSON object body is required'));
    }
    // A bad :id is not a validation failure: there is simply no such resource.
    if (context === 'params') return sendProblem(reply, new ApiError('not_found', 'no such resource'));
    const prefix = context === 'body' ? [] : [context];
    return sendProblem(reply, validationError(fieldErrors(error.issues, prefix)));
  }
  if (isUniqueViolation(error)) {
    // Another process won a race for a unique name between our check and our insert.
    return sendProblem(reply, new ApiError('conflict', 'that name was taken a moment ago; try another'));
  }
  const mapped = fromFastify(error, request);
  if (mapped) return sendProblem(reply, mapped);
  request.log.error({ err: error }, 'unhandled error');
  return sendProblem(reply, new ApiError('internal', 'an unexpected error occurred; it has been logged'));
}
