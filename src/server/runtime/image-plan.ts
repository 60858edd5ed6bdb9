// The plan of an image source: the image pulled (or found on this engine), then run as it is in a
// container, on any runtime.
import { mkdirSync } from 'node:fs';
import type Docker from 'dockerode';
import type { BuildConfig } from '../../shared/api/projects.js';
import { DeployError } from './build.js';
import { DEFAULT_CONTAINER_PORT } from './container-plan.js';
import { imageExists, pullImage } from './drivers/docker.js';
import type { PlanContext, PlannerDeps, ReleasePlan } from './plan.js';

/** An image source: pulled (progress in the log), then run as it is. */
export async function imagePlan(
  deps: PlannerDeps,
  { row, releaseId, dir, build, log }: PlanContext,
): Promise<ReleasePlan> {
  const docker = await deps.docker();
  const image = row.image!;
  log.build(`pulling ${image}`);
  try {
    const auth = deps.registryAuth(row);
    if (auth) log.build(`as ${auth.username} at ${auth.serveraddress}`);
    await pullImage(docker, image, (line) => log.build(line), auth ?? undefined);
  } catch (error) {
    // An image only this engine has (built or loaded here) needs no pull.
    if (!(await imageExists(docker, image))) {
      throw new DeployError(`could not pull ${image}: ${(error as Error).message}`);
    }
    log.build(`${image} is not in a registry this engine reaches; using the local image`);
  }
  build.check();
  const config = JSON.parse(row.build_config) as BuildConfig;
  const port = config.port_override ?? (await exposedPort(docker, image)) ?? DEFAULT_CONTAINER_PORT;
  mkdirSync(dir, { recursive: true });
  return {
    id: releaseId,
    dir,
    runs: 'container',
    image,
    cmd: null,
    workingDir: null,
    env: { ...(JSON.parse(row.env_vars) as Record<string, string>), PORT: String(port) },
    services: [
      {
        name: null,
        kind: 'web',
        cwd: '',
        start: null,
        staticRoot: null,
        image,
        fixedPort: null,
        containerPort: port,
        env: { ...(JSON.parse(row.env_vars) as Record<string, string>), PORT: String(port) },
        path: [],
      },
    ],
  };
}

/** The first port an image declares with EXPOSE, if any. */
async function exposedPort(docker: Docker, image: string): Promise<number | null> {
  try {
    const info = await docker.getImage(image).inspect();
    const first = Object.keys(info.Config?.ExposedPorts ?? {})
      .filter((key) => key.endsWith('/tcp'))
      .map((key) => Number(key.split('/')[0]))
      .sort((a, b) => a - b)[0];
    return first ?? null;
  } catch {
    return null;
  }
}
