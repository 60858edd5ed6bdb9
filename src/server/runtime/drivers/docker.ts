// The container driver for image sources, through the Docker Engine API (dockerode): any
// Docker-compatible engine at DOCKER_HOST or the default socket. Where none answers, image deploys
// fail with one clear line instead of hanging.
import { existsSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import type { ProcessExit, RunningProcess } from '../process.js';
import { readLines } from '../lines.js';

const DEFAULT_SOCKET = '/var/run/docker.sock';

/** A Docker client when an engine answers within `timeoutMs`, else why not (one line). */
export async function connectDocker(
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 3_000,
): Promise<{ docker: Docker } | { reason: string }> {
  const where = env.DOCKER_HOST ? `DOCKER_HOST=${env.DOCKER_HOST}` : DEFAULT_SOCKET;
  if (!env.DOCKER_HOST && !existsSync(DEFAULT_SOCKET)) {
    return {
      reason: `no container runtime is configured: image deploys need a Docker-compatible engine (set DOCKER_HOST, or start Docker so that ${DEFAULT_SOCKET} exists)`,
    };
  }
  // Loaded on use: only image deploys need it.
  const { default: DockerClient } = await import('dockerode');
  const docker = new DockerClient();
  try {
    await Promise.race([
      docker.ping(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('no answer')), timeoutMs)),
    ]);
    return { docker };
  } catch (error) {
    return {
      reason: `no container runtime answers at ${where} (${(error as Error).message}): image deploys need a running Docker-compatible engine`,
    };
  }
}

export async function pullImage(
  docker: Docker,
  image: string,
  onLine: (line: string) => void,
): Promise<void> {
  const stream = await docker.pull(image);
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (error: Error | null) => (error ? reject(error) : resolve()),
      (event: { status?: string; id?: string; progress?: string; error?: string }) => {
        // Layer progress bars repeat many times a second: keep the status changes only.
        if (event.error) onLine(event.error);
        else if (event.status && !event.progress)
          onLine(event.id ? `${event.id}: ${event.status}` : event.status);
      },
    );
  });
}

/**
 * Starts `image` with PORT=`containerPort` (default `port`), published on 127.0.0.1:`port`, its output
 * read line by line.
 */
export async function runContainer(
  docker: Docker,
  options: {
    image: string;
    name: string;
    port: number;
    containerPort?: number;
    env: Record<string, string>;
    onLine(stream: 'stdout' | 'stderr', line: string): void;
  },
): Promise<RunningProcess> {
  const inside = options.containerPort ?? options.port;
  const portKey = `${inside}/tcp`;
  const container = await docker.createContainer({
    name: options.name,
    Image: options.image,
    Env: Object.entries({ ...options.env, PORT: String(inside) }).map(([k, v]) => `${k}=${v}`),
    ExposedPorts: { [portKey]: {} },
    Labels: { 'dev.wharf.managed': 'true' },
    HostConfig: {
      PortBindings: { [portKey]: [{ HostIp: '127.0.0.1', HostPort: String(options.port) }] },
    },
  });
  await container.start();
  const logs = await container.logs({ follow: true, stdout: true, stderr: true });
  const out = new PassThrough();
  const err = new PassThrough();
  container.modem.demuxStream(logs, out, err);
  logs.on('end', () => {
    out.end();
    err.end();
  });
  readLines(out, (l) => options.onLine('stdout', l));
  readLines(err, (l) => options.onLine('stderr', l));

  const exited: Promise<ProcessExit> = container
    .wait()
    .then((result: { StatusCode: number }) => ({ code: result.StatusCode, signal: null }))
    .catch(() => ({ code: null, signal: null }));
  const info = await container.inspect();
  return {
    pid: info.State.Pid,
    exited,
    async stop(graceMs = 5_000) {
      await container.stop({ t: Math.ceil(graceMs / 1000) }).catch(() => undefined);
      const exit = await exited;
      await container.remove({ force: true }).catch(() => undefined);
      return exit;
    },
  };
}
