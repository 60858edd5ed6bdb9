// The numeric limits of API.md §4 and §9, without zod, so the renderer can check input before sending
// it without bundling the schema library. The schemas in api/ build on these.

export const LIMITS = {
  envVars: 200,
  envValueBytes: 32 * 1024,
  services: 5,
  replicas: 10,
  jsonBodyBytes: 1024 * 1024,
  uploadBytes: 100 * 1024 * 1024,
  uploadEntries: 10_000,
  uploadUnpackedBytes: 1024 * 1024 * 1024,
  logLines: 500,
} as const;

export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
