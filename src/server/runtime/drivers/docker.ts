// The container engine, through the Docker Engine API (dockerode): Docker, Docker Desktop or Podman's
// Docker-compatible service, found at DOCKER_HOST or the default socket. Where none answers, whatever
// needs one fails with one clear line instead of hanging.
//
// Everything this platform creates carries the label `dev.wharf.platform=<its id>`, so several
// platforms (or test runs) can share one engine without touching each other's containers.
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import type Docker from 'dockerode';
import type { RegistryConfig } from '../../config.js';
import { LineSplitter, readLines } from '../lines.js';
import type { ProcessExit, RunningProcess } from '../process.js';

const DEFAULT_SOCKET = '/var/run/docker.sock';
export const PLATFORM_LABEL = 'dev.wharf.platform';
export const PROJECT_LABEL = 'dev.wharf.project';
export const RELEASE_LABEL = 'dev.wharf.release';

// eslint-disable-next-line no-control-regex
const ANSI_CODES = /\u001b\[[0-9;]*[A-Za-z]/g;

/** A Docker client when an engine answers within `timeoutMs`, else why not (one line). */
export async function connectDocker(
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 3_000,
): Promise<{ docker: Docker; where: string } | { reason: string }> {
  const where = env.DOCKER_HOST ? `DOCKER_HOST=${env.DOCKER_HOST}` : DEFAULT_SOCKET;
  if (!env.DOCKER_HOST && !existsSync(DEFAULT_SOCKET)) {
    return {
      reason: `no container engine is configured (set DOCKER_HOST, or start Docker or Podman so that ${DEFAULT_SOCKET} exists)`,
    };
  }
  // Loaded on use: only container deploys need it.
  const { default: DockerClient } = await import('dockerode');
  const docker = env.DOCKER_HOST ? new DockerClient(dockerOptions(env.DOCKER_HOST)) : new DockerClient();
  try {
    await Promise.race([
      docker.ping(),
      delay(timeoutMs, undefined, { ref: false }).then(() => {
        throw new Error('no answer');
      }),
    ]);
    return { docker, where };
  } catch (error) {
    return { reason: `no container engine answers at ${where} (${(error as Error).message})` };
  }
}

function dockerOptions(host: string): Docker.DockerOptions {
  if (host.startsWith('unix://')) return { socketPath: host.slice('unix://'.length) };
  const url = new URL(host.replace(/^tcp:/, 'http:'));
  return { host: url.hostname, port: Number(url.port || 2375), protocol: 'http' };
}

/** What the engine is (Docker or Podman, its version), for the operator's log. */
export async function describeEngine(docker: Docker): Promise<string> {
  const version = (await docker.version()) as { Version?: string; Components?: Array<{ Name?: string }> };
  const podman = version.Components?.some((c) => /podman/i.test(c.Name ?? '')) ?? false;
  return `${podman ? 'Podman' : 'Docker'} ${version.Version ?? '(unknown version)'}`;
}

export interface RegistryAuth {
  username: string;
  password: string;
  serveraddress: string;
}

/** The login of the swarm runtime's registry, as the engine takes it; none without a user. */
export function registryAuth(registry: RegistryConfig): RegistryAuth | undefined {
  if (registry.username === null || registry.password === null) return undefined;
  return { username: registry.username, password: registry.password, serveraddress: registry.host };
}

/** Pulls `image`, its progress in the log once per layer and status (not every progress tick). */
export async function pullImage(
  docker: Docker,
  image: string,
  onLine: (line: string) => void,
  auth?: RegistryAuth,
): Promise<void> {
  const stream = (await docker.pull(image, auth ? { authconfig: auth } : {})) as Readable;
  await followJson(stream, (event) => {
    if (event.status && !event.progress) onLine(event.id ? `${event.id}: ${event.status}` : event.status);
  });
}

/**
 * Tags `image` as `target` (`registry/repository:tag`) and pushes it, progress in the log once per
 * layer and status. Throws with the registry's error.
 */
export async function pushImage(
  docker: Docker,
  image: string,
  target: string,
  onLine: (line: string) => void,
  auth?: RegistryAuth,
): Promise<void> {
  const colon = target.lastIndexOf(':');
  await docker.getImage(image).tag({ repo: target.slice(0, colon), tag: target.slice(colon + 1) });
  const stream = (await docker.getImage(target).push(auth ? { authconfig: auth } : {})) as Readable;
  await followJson(stream, (event) => {
    if (event.status && !event.progress) onLine(event.id ? `${event.id}: ${event.status}` : event.status);
  });
}

export async function imageExists(docker: Docker, image: string): Promise<boolean> {
  try {
    await docker.getImage(image).inspect();
    return true;
  } catch {
    return false;
  }
}

export interface BuildOptions {
  /** The build context: a folder on this machine, sent as a tar (links stay links). */
  context: string;
  /** The Dockerfile's path inside the context. */
  dockerfile: string;
  tag: string;
  labels: Record<string, string>;
  memoryBytes: number | null;
  cpus: number | null;
  onLine(line: string): void;
  /** Aborts the build (a newer deploy, a stop). */
  signal?: AbortSignal;
}

/** Builds an image; its output goes to `onLine` line by line. Throws with the engine's error. */
export async function buildImage(docker: Docker, options: BuildOptions): Promise<void> {
  const { create: createTar } = await import('tar');
  const context = createTar({ cwd: options.context, portable: true, noMtime: false }, ['.']);
  const stream = (await docker.buildImage(context as unknown as NodeJS.ReadableStream, {
    t: options.tag,
    dockerfile: options.dockerfile,
    labels: options.labels,
    forcerm: true,
    ...(options.memoryBytes ? { memory: options.memoryBytes, memswap: options.memoryBytes } : {}),
    ...(options.cpus ? { cpuperiod: 100_000, cpuquota: Math.round(options.cpus * 100_000) } : {}),
    ...(options.signal ? { abortSignal: options.signal } : {}),
  })) as Readable;
  // The engine sends output in chunks of its own: rejoin them into lines, without the colour codes
  // it wraps a failing step's output in.
  const lines = new LineSplitter((line) => options.onLine(line.replace(ANSI_CODES, '')), 16 * 1024);
  await followJson(stream, (event) => {
    if (typeof event.stream === 'string') lines.push(event.stream);
    else if (event.status) options.onLine(event.id ? `${event.id}: ${event.status}` : event.status);
  }).finally(() => lines.end());
}

interface JsonEvent {
  stream?: string;
  status?: string;
  id?: string;
  progress?: string;
  error?: string;
  errorDetail?: { message?: string };
}

/**
 * Reads a JSON-lines progress stream (pull, build), bounded like any tenant output; rejects with the
 * first `error` event's message.
 */
function followJson(stream: Readable, onEvent: (event: JsonEvent) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let failed: string | null = null;
    // A message longer than this is a layer's noise, not something to show: it is skipped.
    readLines(
      stream,
      (line) => {
        if (!line.trim()) return;
        let event: JsonEvent;
        try {
          event = JSON.parse(line) as JsonEvent;
        } catch {
          return;
        }
        if (event.error || event.errorDetail?.message) {
          failed ??= event.errorDetail?.message ?? event.error ?? 'failed';
          return;
        }
        onEvent(event);
      },
      { maxLineBytes: 256 * 1024 },
    );
    stream.once('end', () => (failed ? reject(new Error(failed)) : resolve()));
    stream.once('close', () => (failed ? reject(new Error(failed)) : resolve()));
    stream.once('error', (error) => reject(error));
  });
}

/** The project's own bridge network (created once): its containers see each other, not others'. */
export async function ensureNetwork(docker: Docker, name: string, labels: Record<string, string>) {
  try {
    await docker.getNetwork(name).inspect();
  } catch {
    try {
      await docker.createNetwork({ Name: name, Driver: 'bridge', Labels: labels, CheckDuplicate: true });
    } catch (error) {
      // Another deploy of the project created it meanwhile.
      if (!/already exists|409/i.test((error as Error).message)) throw error;
    }
  }
}

export interface ContainerSpec {
  image: string;
  name: string;
  /** Null: the image's own command. */
  cmd: string[] | null;
  workingDir: string | null;
  env: Record<string, string>;
  /** Ports inside the container to publish on 127.0.0.1 (each on a port the engine picks). */
  ports: number[];
  labels: Record<string, string>;
  network: string;
  memoryBytes: number | null;
  pids: number | null;
  cpus: number | null;
}

/** A container running an app: its exit, its stop, and where its ports are published. */
export interface ContainerUnit extends RunningProcess {
  id: string;
  /** Port inside the container → port on 127.0.0.1. */
  hostPorts: Map<number, number>;
  /** Stops following it, and leaves it running (a platform shutting down: the next start follows it again). */
  detach(): void;
}

export async function runContainer(
  docker: Docker,
  spec: ContainerSpec,
  onLine: (line: string) => void,
): Promise<ContainerUnit> {
  const exposed = Object.fromEntries(spec.ports.map((p) => [`${p}/tcp`, {}]));
  const bindings = Object.fromEntries(
    spec.ports.map((p) => [`${p}/tcp`, [{ HostIp: '127.0.0.1', HostPort: '' }]]),
  );
  const container = await docker.createContainer({
    name: spec.name,
    Image: spec.image,
    ...(spec.cmd ? { Cmd: spec.cmd } : {}),
    ...(spec.workingDir ? { WorkingDir: spec.workingDir } : {}),
    Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
    ExposedPorts: exposed,
    Labels: spec.labels,
    HostConfig: {
      PortBindings: bindings,
      NetworkMode: spec.network,
      // An init as PID 1 reaps zombies and passes the stop signal on.
      Init: true,
      SecurityOpt: ['no-new-privileges'],
      CapDrop: ['NET_RAW', 'SYS_CHROOT', 'MKNOD', 'AUDIT_WRITE', 'SETFCAP'],
      ...(spec.memoryBytes ? { Memory: spec.memoryBytes, MemorySwap: spec.memoryBytes } : {}),
      ...(spec.pids ? { PidsLimit: spec.pids } : {}),
      ...(spec.cpus ? { NanoCpus: Math.round(spec.cpus * 1e9) } : {}),
      LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '2' } },
    },
  });
  try {
    await container.start();
  } catch (error) {
    await container.remove({ force: true }).catch(() => undefined);
    throw error;
  }
  return attach(docker, container.id, onLine, 0);
}

/**
 * Follows a running container: its output from `since` (seconds since the epoch; 0: all of it), its
 * exit, its published ports. Used for a container just started and, after a platform restart, for one
 * that kept running.
 */
export async function attach(
  docker: Docker,
  id: string,
  onLine: (line: string) => void,
  since: number,
): Promise<ContainerUnit> {
  const container = docker.getContainer(id);
  const info = await container.inspect();
  const hostPorts = new Map<number, number>();
  for (const [key, bindings] of Object.entries(info.NetworkSettings.Ports ?? {})) {
    const published =
      (bindings ?? []).find((b) => b.HostIp === '127.0.0.1' || b.HostIp === '') ?? bindings?.[0];
    if (published) hostPorts.set(Number(key.split('/')[0]), Number(published.HostPort));
  }
  const logs = (await container.logs({ follow: true, stdout: true, stderr: true, since })) as Readable;
  const out = new PassThrough();
  const err = new PassThrough();
  if (info.Config.Tty) logs.pipe(out);
  else container.modem.demuxStream(logs, out, err);
  logs.once('end', () => {
    out.end();
    err.end();
  });
  readLines(out, onLine);
  readLines(err, onLine);
  const exited: Promise<ProcessExit> = container
    .wait()
    .then((result: { StatusCode: number }) => ({ code: result.StatusCode, signal: null }))
    .catch(() => ({ code: null, signal: null }));
  return {
    id,
    pid: info.State.Pid,
    hostPorts,
    exited,
    detach() {
      logs.destroy();
    },
    async stop(graceMs = 10_000) {
      await container.stop({ t: Math.ceil(graceMs / 1000) }).catch(() => undefined);
      const exit = await Promise.race([exited, delay(graceMs + 5_000).then(() => null)]);
      await container.remove({ force: true }).catch(() => undefined);
      logs.destroy();
      return exit ?? { code: null, signal: 'SIGKILL' };
    },
  };
}

/** This platform's containers, running or not (with their labels). */
export async function listContainers(docker: Docker, platformId: string) {
  return docker.listContainers({ all: true, filters: { label: [`${PLATFORM_LABEL}=${platformId}`] } });
}

export async function removeContainer(docker: Docker, id: string): Promise<void> {
  await docker
    .getContainer(id)
    .remove({ force: true })
    .catch(() => undefined);
}

export async function removeImage(docker: Docker, image: string): Promise<void> {
  await docker
    .getImage(image)
    .remove({ force: true })
    .catch(() => undefined);
}

export async function removeNetwork(docker: Docker, name: string): Promise<void> {
  await docker
    .getNetwork(name)
    .remove()
    .catch(() => undefined);
}

/**
 * Removes this platform's project networks that no container uses any more. A project's network
 * outlives containers stopped with the platform (stopContainersOnExit), and the engine has room for a
 * few dozen bridge networks only: left behind, they end every later deploy's network with "could not
 * find an available, non-overlapping IPv4 address pool".
 */
export async function removeIdleNetworks(docker: Docker, platformId: string): Promise<void> {
  const networks = await docker
    .listNetworks({ filters: { label: [`${PLATFORM_LABEL}=${platformId}`] } })
    .catch(() => []);
  for (const network of networks) {
    const detail = (await docker
      .getNetwork(network.Id)
      .inspect()
      .catch(() => null)) as { Containers?: Record<string, unknown> } | null;
    if (detail && Object.keys(detail.Containers ?? {}).length === 0)
      await removeNetwork(docker, network.Name);
  }
}

/**
 * Waits until an HTTP server answers at 127.0.0.1:`port` (or `host`; any status counts). A TCP connect is not
 * enough: the engine's port proxy accepts connections before the app inside listens.
 */
export async function waitForHttp(
  port: number,
  options: { timeoutMs: number; exited: Promise<unknown>; host?: string },
): Promise<void> {
  let exited = false;
  void options.exited.then(() => (exited = true));
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    if (exited) throw new Error('the container exited before its app answered');
    if (await answers(options.host ?? '127.0.0.1', port)) return;
    if (Date.now() > deadline) {
      throw new Error(`nothing answered HTTP on its port within ${Math.round(options.timeoutMs / 1000)} s`);
    }
    await delay(50);
  }
}

function answers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      { host, port, path: '/', method: 'GET', headers: { host: 'localhost' }, timeout: 2_000 },
      (res) => {
        res.resume();
        resolve(true);
        req.destroy();
      },
    );
    req.once('timeout', () => {
      req.destroy();
      resolve(false);
    });
    req.once('error', () => resolve(false));
    req.end();
  });
}

/**
 * Removes images, but never while one of this platform's builds runs: a build may be reusing a cached
 * layer that the removal would delete under it ("unknown parent image ID"). Removals wait until the
 * builds are done.
 */
export class ImageJanitor {
  private builds = 0;
  private readonly pending = new Set<string>();
  private flushing: Promise<void> | null = null;

  constructor(private readonly docker: () => Promise<Docker>) {}

  async whileBuilding<T>(build: () => Promise<T>): Promise<T> {
    this.builds += 1;
    try {
      return await build();
    } finally {
      this.builds -= 1;
      this.flush();
    }
  }

  remove(image: string): void {
    this.pending.add(image);
    this.flush();
  }

  /** Resolves once no removal is waiting or running (for a platform shutting down). */
  async idle(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private flush(): void {
    if (this.builds > 0 || this.flushing || this.pending.size === 0) return;
    this.flushing = (async () => {
      const docker = await this.docker().catch(() => null);
      while (docker && this.builds === 0 && this.pending.size > 0) {
        const [image] = this.pending;
        this.pending.delete(image!);
        await removeImage(docker, image!);
      }
    })().finally(() => {
      this.flushing = null;
      if (this.builds === 0 && this.pending.size > 0) this.flush();
    });
  }
}
