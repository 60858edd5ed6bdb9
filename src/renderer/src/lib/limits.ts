// The API limits the UI checks before sending (the platform checks them again and its answer wins).
import { ENV_NAME_PATTERN, LIMITS } from '../../../shared/limits.js';

export { ENV_NAME_PATTERN };
export const MAX_SERVICES = LIMITS.services;
export const MAX_ENV_VARS = LIMITS.envVars;
export const MAX_UPLOAD_BYTES = LIMITS.uploadBytes;
/** What an upload must be: a gzipped tarball. */
export const ARCHIVE_NAME_PATTERN = /\.(tar\.gz|tgz)$/i;
