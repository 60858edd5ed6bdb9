// The API limits the UI checks before sending. They mirror LIMITS and ENV_NAME_PATTERN of
// src/shared/api/projects.ts, which cannot be imported here without bundling zod (~28 KB gzipped) for
// a few numbers; the platform checks them again and its answer wins.
export const MAX_SERVICES = 5;
export const MAX_ENV_VARS = 200;
export const MAX_UPLOAD_BYTES = 100 * 1024 * 1024;
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** What an upload must be: a gzipped tarball. */
export const ARCHIVE_NAME_PATTERN = /\.(tar\.gz|tgz)$/i;
