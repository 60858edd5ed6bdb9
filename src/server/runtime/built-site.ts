// A static site a container build wrote: its files copied out of the image into the release folder,
// where the edge serves them, no bigger than an upload may unpack to and with the same checks.
import { createWriteStream, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type Docker from 'dockerode';
import { LIMITS } from '../../shared/api/projects.js';
import { DeployError } from './build.js';
import { BUILT_STATIC_ROOTS, staticRootAfterBuild } from './detect.js';
import { inApp } from './dockerfile.js';
import { PLATFORM_LABEL } from './drivers/docker.js';
import type { ProjectLog } from './project-log.js';
import { extractUpload } from './sources.js';

/** The tar of a built site (files and their headers), at most what an upload may unpack to. */
const BUILT_SITE_MAX_BYTES = LIMITS.uploadUnpackedBytes + 16 * 1024 * 1024;

/** Passes bytes through, failing with a DeployError once more than `max` went by. */
export function capBytes(max: number, what: string): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (seen > max) done(new DeployError(`${what} is larger than ${Math.floor(max / 1024 / 1024)} MiB`));
      else done(null, chunk);
    },
  });
}

/**
 * A site built inside the image: its files copied out to the release folder, where the edge serves
 * them. A single app: all of /app, and no site fails the deploy. The primary app beside services
 * (`folder`, its root_dir in the image): only the folders a build writes a site to, each copied
 * when it is there, so that the services' folders stay in the image; null when there is no site.
 */
export async function copyBuiltSite(
  docker: Docker,
  platformId: string,
  tag: string,
  dir: string,
  log: ProjectLog,
  folder: string | null,
): Promise<string | null> {
  const container = await docker.createContainer({
    Image: tag,
    Cmd: ['true'],
    Labels: { [PLATFORM_LABEL]: platformId },
  });
  const out = join(dir, '.wharf-built');
  const copy = async (path: string, dest: string) => {
    const archive = join(tmpdir(), `wharf-site-${container.id.slice(0, 12)}.tar`);
    try {
      // The image is the tenant's: what it holds is copied out no bigger than an upload may unpack to.
      await pipeline(
        (await container.getArchive({ path })) as NodeJS.ReadableStream,
        capBytes(BUILT_SITE_MAX_BYTES, 'the built site'),
        createWriteStream(archive),
      );
      // The same checks as an upload: no link may lead out of the release.
      await extractUpload({ archive, dest, onLine: () => undefined });
    } finally {
      rmSync(archive, { force: true });
    }
  };
  try {
    if (folder === null) await copy('/app', out);
    else {
      for (const candidate of BUILT_STATIC_ROOTS) {
        try {
          await copy(`${inApp(folder)}/${candidate}`, join(out, candidate));
        } catch (error) {
          if ((error as { statusCode?: number }).statusCode === 404) continue;
          throw error;
        }
        if (staticRootAfterBuild(out) === candidate) break;
      }
    }
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
  const root = staticRootAfterBuild(out);
  if (!root) {
    if (folder !== null) return null;
    throw new DeployError(
      'no start command, and the build wrote no index.html (in dist/, build/, out/ or public/): set start_cmd, or add a Dockerfile',
    );
  }
  log.build(`detected static site: the build wrote ${root}/index.html; served by the edge`);
  return resolve(out, root);
}
