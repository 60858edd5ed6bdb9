// The /api/v1 contract (shared/API.md) as zod schemas: the server validates requests with them and
// generates its OpenAPI document from them; clients validate responses with them.
export * from './common.js';
export * from './account.js';
export * from './projects.js';
export * from './domains.js';
export * from './email.js';
export * from './tunnels.js';
export * from './ai.js';
export * from './validation.js';
