// What our routes declare in their config, and what the auth hook puts on each request.
import 'fastify';
import type { Caller, RouteScope } from './auth/authenticate.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a caller needs; routes without one need `full`. */
    scope?: RouteScope;
    /** The route takes archive uploads (changes how content-type errors read). */
    acceptsUploads?: boolean;
  }
  interface FastifyRequest {
    caller: Caller;
  }
}
