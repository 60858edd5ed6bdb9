// The problem+json error codes of API.md §1, with the HTTP status each one is sent with. Both the
// server (to answer) and the clients (to tell errors apart) use this table.

export const ERROR_STATUS = {
  bad_request: 400,
  invalid_json: 400,
  unauthorized: 401,
  insufficient_balance: 402,
  forbidden: 403,
  email_not_verified: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  upload_required: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  upgrade_required: 426,
  validation_failed: 422,
  idempotency_key_reused: 422,
  rate_limited: 429,
  daily_cap_reached: 429,
  limit_reached: 429,
  internal: 500,
  tunnel_unavailable: 502,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

export const ERROR_TITLES: Record<ErrorCode, string> = {
  bad_request: 'Bad request',
  invalid_json: 'Invalid JSON',
  unauthorized: 'Unauthorized',
  insufficient_balance: 'Insufficient balance',
  forbidden: 'Forbidden',
  email_not_verified: 'Email not verified',
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  conflict: 'Conflict',
  upload_required: 'Upload required',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  upgrade_required: 'Upgrade required',
  validation_failed: 'Validation failed',
  idempotency_key_reused: 'Idempotency key reused',
  rate_limited: 'Rate limited',
  daily_cap_reached: 'Daily cap reached',
  limit_reached: 'Account limit reached',
  internal: 'Internal server error',
  tunnel_unavailable: 'Tunnel unavailable',
  unavailable: 'Service unavailable',
};

/** One failed rule of a request body, with the path in `services[2].name` form. */
export interface FieldError {
  path: string;
  message: string;
}

/** Formats a schema path (`['services', 2, 'name']`) the way API.md writes it: `services[2].name`. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? String(segment) : `.${String(segment)}`;
  }
  return out;
}

/** An RFC 9457 problem body as every Wharf HTTP surface sends it (the API, the inspector, raw sockets). */
export interface ProblemBody {
  type: 'about:blank';
  title: string;
  status: number;
  code: string;
  detail: string;
  errors?: FieldError[];
}

/**
 * The one builder of problem bodies: `title` and `status` from the error code's table unless given;
 * `extra` members (e.g. `required_usd` of a 402) go first, so they can never replace a standard one.
 */
export function problemBody(
  code: string,
  detail: string,
  options: { status?: number; title?: string; errors?: FieldError[]; extra?: Record<string, unknown> } = {},
): ProblemBody & Record<string, unknown> {
  const known = code in ERROR_STATUS ? (code as ErrorCode) : null;
  const body: ProblemBody & Record<string, unknown> = {
    ...options.extra,
    type: 'about:blank',
    title: options.title ?? (known ? ERROR_TITLES[known] : 'Error'),
    status: options.status ?? (known ? ERROR_STATUS[known] : 500),
    code,
    detail,
  };
  if (options.errors) body.errors = options.errors;
  return body;
}
