// The swarm runtime (`--runtime swarm`): each release of a project runs as a Docker Swarm service of its
// image, with the plan's limits, its replicas, Swarm's restart policy and an in-task health check, on
// an overlay network of its own project. Swarm places the tasks on its nodes, restarts what crashes and
// reschedules what a lost node ran; the edge reaches each task on the port Swarm publishes on the node
// that runs it (host mode).
//
// Why host mode and one service per release, not one service updated in place behind a virtual IP:
// the edge is a process on the host, outside every overlay network, and the routing mesh's virtual
// IPs do not route on every host (not in this VM: measured). And Swarm's rolling update stops an old
// task the moment its replacement is healthy, before an edge outside Swarm can know of it: requests
// sent to the old task in that moment fail (measured). So a release starts as a service beside the one
// serving, the edge switches once the new one answers, and the old one is drained, then removed: the
// zero-downtime switch the other runtimes make. Rollback starts a kept release's image again.
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import type { Readable } from 'node:stream';
import { PassThrough } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import type Docker from 'dockerode';
import { readLines } from '../lines.js';
import type { ProcessExit } from '../process.js';
import { type ContainerSpec, PLATFORM_LABEL, RELEASE_LABEL, type RegistryAuth } from './docker.js';

/** Where the edge reaches one task of a service: a Swarm node's address and the port published there. */
export interface Endpoint {
  host: string;
  port: number;
}

/** A container's spec (docker.ts), as a service of `replicas` tasks. */
export interface ServiceSpec extends ContainerSpec {
  replicas: number;
  /** How long a task may take to answer before Swarm counts its failed health checks. */
  startPeriodMs: number;
  /** The pause before Swarm starts a crashed task again. */
  restartDelayMs: number;
  /** The login to the image's registry, handed to the machines that pull it for a task. */
  auth?: RegistryAuth;
}

/** Whether this engine runs a Swarm this node manages; else why not (one line, with what to run). */
export async function swarmState(docker: Docker): Promise<{ nodeId: string } | { reason: string }> {
  const info = (await docker.info()) as {
    Swarm?: { LocalNodeState?: string; ControlAvailable?: boolean; NodeID?: string };
  };
  const swarm = info.Swarm;
  if (!swarm || swarm.LocalNodeState !== 'active') {
    return {
      reason: `the engine is not part of a Swarm (state: ${swarm?.LocalNodeState ?? 'unknown'}): run \`docker swarm init\` on it, or join it to one as a manager`,
    };
  }
  if (!swarm.ControlAvailable) {
    return { reason: 'the engine is a Swarm worker: the platform needs a manager to create services' };
  }
  return { nodeId: swarm.NodeID ?? '' };
}

/** The project's overlay network (created once, attachable): its services see each other, not others'. */
export async function ensureOverlayNetwork(docker: Docker, name: string, labels: Record<string, string>) {
  try {
    await docker.getNetwork(name).inspect();
  } catch {
    try {
      await docker.createNetwork({
        Name: name,
        Driver: 'overlay',
        Attachable: true,
        Labels: labels,
        CheckDuplicate: true,
      });
    } catch (error) {
      if (!/already exists|409/i.test((error as Error).message)) throw error;
    }
  }
}

/**
 * A TCP check of every web port from inside the task, with what images commonly have (bash, nc, node,
 * python3): Swarm keeps a task `starting` until it passes, so a task counts as running once its app
 * listens.
 */
export function healthCommand(ports: number[]): string {
  const one = (port: number) =>
    [
      `bash -c ': >/dev/tcp/127.0.0.1/${port}'`,
      `nc -z 127.0.0.1 ${port}`,
      `node -e "require('net').connect(${port},'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))"`,
      `python3 -c "import socket;socket.create_connection(('127.0.0.1',${port}),2)"`,
    ]
      .map((check) => `${check} 2>/dev/null`)
      .join(' || ');
  return ports.map((port) => `{ ${one(port)}; }`).join(' && ');
}

/** Where a task finds its env values: one file per variable, Swarm secrets only its tasks see. */
export const SECRET_ENV_DIR = '/run/wharf-env';
/**
 * Sets each file in SECRET_ENV_DIR as the variable of its name (its content exactly: a trailing
 * newline is kept, as `$(...)` alone would drop it), then runs the task's command in the shell's place.
 */
const SECRET_ENV_SHIM = `for f in ${SECRET_ENV_DIR}/*; do [ -f "$f" ] || continue; v=$(cat "$f"; printf x); export "\${f##*/}=\${v%x}"; done; exec "$@"`;
/** Set by the platform, not by the tenant: passed as a plain variable. */
const PLATFORM_ENV = new Set(['PORT']);
/** Names a POSIX shell exports (what the API accepts); another stays a plain variable. */
const PORTABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** On a Swarm secret: the service it was made for. */
export const SERVICE_LABEL = 'dev.wharf.service';

interface SecretRef {
  SecretID: string;
  SecretName: string;
  File: { Name: string; UID: string; GID: string; Mode: number };
}

/**
 * The service's env values as Swarm secrets: kept encrypted in the Swarm's store, handed only to the
 * machines that run its tasks, in memory there, and out of `docker service inspect` and the tasks'
 * container specs (plain variables show in both). A shell in the task reads them into the environment
 * before the app starts, so the app sees ordinary variables. Null (plain variables, and `note` says
 * why) when the task's command cannot be known.
 */
async function envAsSecrets(
  docker: Docker,
  spec: ServiceSpec,
  note: (line: string) => void,
): Promise<{ env: string[]; command: string[]; secrets: SecretRef[] } | null> {
  const hidden = Object.entries(spec.env).filter(
    ([name, value]) => !PLATFORM_ENV.has(name) && PORTABLE_NAME.test(name) && value !== '',
  );
  if (hidden.length === 0) return null;
  const command = spec.cmd ?? (await imageCommand(docker, spec.image));
  if (command === null || command.length === 0) {
    note(`env values passed as plain variables: the command of ${spec.image} could not be read`);
    return null;
  }
  const secrets: SecretRef[] = [];
  // A random stem: secret names are at most 64 characters, and stay unique across services.
  const stem = `wharf-env-${randomBytes(6).toString('hex')}`;
  try {
    for (const [i, [name, value]] of hidden.entries()) {
      const secretName = `${stem}-${i}`;
      const created = (await docker.createSecret({
        Name: secretName,
        Labels: { ...spec.labels, [SERVICE_LABEL]: spec.name },
        Data: Buffer.from(value).toString('base64'),
      })) as { id: string };
      // Readable by whatever user the image runs as: the task's own tmpfs, no one else's.
      secrets.push({
        SecretID: created.id,
        SecretName: secretName,
        File: { Name: `${SECRET_ENV_DIR}/${name}`, UID: '0', GID: '0', Mode: 0o444 },
      });
    }
  } catch (error) {
    await removeSecrets(
      docker,
      secrets.map((s) => s.SecretID),
    );
    throw error;
  }
  const names = new Set(hidden.map(([name]) => name));
  return {
    env: Object.entries(spec.env)
      .filter(([name]) => !names.has(name))
      .map(([k, v]) => `${k}=${v}`),
    command: ['/bin/sh', '-c', SECRET_ENV_SHIM, 'wharf-env', ...command],
    secrets,
  };
}

/** What a container of `image` runs when given no command: its entrypoint, then its command. */
async function imageCommand(docker: Docker, image: string): Promise<string[] | null> {
  try {
    const { Config } = (await docker.getImage(image).inspect()) as {
      Config?: { Entrypoint?: string[] | null; Cmd?: string[] | null };
    };
    return [...(Config?.Entrypoint ?? []), ...(Config?.Cmd ?? [])];
  } catch {
    return null;
  }
}

async function removeSecrets(docker: Docker, ids: string[]): Promise<void> {
  for (const id of ids) {
    await docker
      .getSecret(id)
      .remove()
      .catch(() => undefined);
  }
}

/**
 * Creates the service; its tasks start in the background (waitForTasks follows them). `note` hears
 * what the deploy log should say (env values passed plainly, and why).
 */
export async function createService(
  docker: Docker,
  spec: ServiceSpec,
  note: (line: string) => void = () => undefined,
): Promise<string> {
  const ms = 1_000_000;
  const web = spec.ports.length > 0;
  const hidden = await envAsSecrets(docker, spec, note);
  const command = hidden?.command ?? spec.cmd;
  const options = {
    Name: spec.name,
    Labels: spec.labels,
    TaskTemplate: {
      ContainerSpec: {
        Image: spec.image,
        ...(command ? { Command: command } : {}),
        ...(spec.workingDir ? { Dir: spec.workingDir } : {}),
        Env: hidden?.env ?? Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
        ...(hidden ? { Secrets: hidden.secrets } : {}),
        Labels: spec.labels,
        // An init as PID 1 reaps zombies and passes the stop signal on.
        Init: true,
        CapabilityDrop: ['CAP_NET_RAW', 'CAP_SYS_CHROOT', 'CAP_MKNOD', 'CAP_AUDIT_WRITE', 'CAP_SETFCAP'],
        StopGracePeriod: 10_000 * ms,
        ...(web
          ? {
              Healthcheck: {
                Test: ['CMD-SHELL', healthCommand(spec.ports)],
                Interval: 1_000 * ms,
                Timeout: 3_000 * ms,
                Retries: 3,
                StartPeriod: spec.startPeriodMs * ms,
              },
            }
          : {}),
      },
      Resources: {
        Limits: {
          ...(spec.memoryBytes ? { MemoryBytes: spec.memoryBytes } : {}),
          ...(spec.cpus ? { NanoCPUs: Math.round(spec.cpus * 1e9) } : {}),
          ...(spec.pids ? { Pids: spec.pids } : {}),
        },
      },
      RestartPolicy: { Condition: 'any', Delay: spec.restartDelayMs * ms, MaxAttempts: 0 },
      LogDriver: { Name: 'json-file', Options: { 'max-size': '10m', 'max-file': '2' } },
      Networks: [{ Target: spec.network }],
    },
    Mode: { Replicated: { Replicas: spec.replicas } },
    EndpointSpec: {
      // No virtual IP: the edge reaches tasks on their nodes, and names on the overlay resolve to tasks.
      Mode: 'dnsrr',
      Ports: spec.ports.map((port) => ({ Protocol: 'tcp', TargetPort: port, PublishMode: 'host' })),
    },
  } as Docker.CreateServiceOptions;
  try {
    const created = spec.auth
      ? await docker.createService(spec.auth, options)
      : await docker.createService(options);
    return created.id as string;
  } catch (error) {
    await removeSecrets(docker, hidden?.secrets.map((s) => s.SecretID) ?? []);
    throw error;
  }
}

interface Task {
  ID: string;
  NodeID?: string;
  Slot?: number;
  DesiredState: string;
  Status: {
    State: string;
    Err?: string;
    Message?: string;
    ContainerStatus?: { ExitCode?: number };
    PortStatus?: { Ports?: Array<{ TargetPort: number; PublishedPort: number }> };
  };
}

/** Where each web port of the service's running tasks is reached, by port inside; and the tasks. */
export async function serviceEndpoints(
  docker: Docker,
  serviceId: string,
  nodes: NodeAddresses,
): Promise<{ endpoints: Map<number, Endpoint[]>; tasks: Task[] }> {
  const tasks = (await docker.listTasks({ filters: { service: [serviceId] } })) as Task[];
  return { endpoints: await endpointsOf(tasks, nodes), tasks };
}

/** Where each web port of the running ones of `tasks` is reached, by port inside. */
async function endpointsOf(tasks: Task[], nodes: NodeAddresses): Promise<Map<number, Endpoint[]>> {
  const endpoints = new Map<number, Endpoint[]>();
  for (const task of tasks) {
    if (task.DesiredState !== 'running' || task.Status.State !== 'running' || !task.NodeID) continue;
    const host = await nodes.addressOf(task.NodeID);
    if (host === null) continue;
    const published = new Map<number, number[]>();
    for (const { TargetPort, PublishedPort } of task.Status.PortStatus?.Ports ?? []) {
      const ports = published.get(TargetPort) ?? [];
      if (!ports.includes(PublishedPort)) ports.push(PublishedPort);
      published.set(TargetPort, ports);
    }
    for (const [target, ports] of published) {
      const port = await nodes.reachablePort(task.ID, target, host, ports);
      if (port === null) continue;
      const list = endpoints.get(target) ?? [];
      list.push({ host, port });
      endpoints.set(target, list);
    }
  }
  return endpoints;
}

/**
 * Follows the services a platform node runs or routes to: where their running tasks answer, from one
 * task listing a second for all of them (not one per service), and which are gone, from one service
 * listing every third second.
 */
export class ServiceWatcher {
  private readonly followed = new Map<
    string,
    { onEndpoints(endpoints: Map<number, Endpoint[]>): void; gone(): void }
  >();
  private timer: NodeJS.Timeout | null = null;
  private ticks = 0;
  private ticking = false;

  constructor(
    private readonly docker: Docker,
    readonly nodes: NodeAddresses,
    private readonly platformId: string,
  ) {}

  /** Calls `onEndpoints` every second until stop(); `exited` settles if the service goes meanwhile. */
  follow(
    serviceId: string,
    onEndpoints: (endpoints: Map<number, Endpoint[]>) => void,
  ): { exited: Promise<ProcessExit>; stop(): void } {
    let gone!: () => void;
    const exited = new Promise<ProcessExit>((resolve) => {
      gone = () => resolve({ code: null, signal: null });
    });
    this.followed.set(serviceId, { onEndpoints, gone });
    if (this.timer === null) {
      this.timer = setInterval(() => void this.tick(), 1_000);
      this.timer.unref();
    }
    return {
      exited,
      stop: () => {
        this.followed.delete(serviceId);
        if (this.followed.size === 0 && this.timer) {
          clearInterval(this.timer);
          this.timer = null;
        }
      },
    };
  }

  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const tasks = (await this.docker.listTasks({ filters: { 'desired-state': ['running'] } })) as Array<
        Task & { ServiceID: string }
      >;
      const byService = new Map<string, Task[]>();
      for (const task of tasks) {
        if (!this.followed.has(task.ServiceID)) continue;
        const list = byService.get(task.ServiceID);
        if (list) list.push(task);
        else byService.set(task.ServiceID, [task]);
      }
      for (const [id, entry] of this.followed) {
        const endpoints = await endpointsOf(byService.get(id) ?? [], this.nodes);
        if (this.followed.get(id) === entry) entry.onEndpoints(endpoints);
      }
      if (++this.ticks % 3 === 0) {
        const existing = new Set((await listServices(this.docker, this.platformId)).map((s) => s.ID));
        for (const [id, entry] of this.followed) if (!existing.has(id)) entry.gone();
      }
    } catch {
      // the engine did not answer this time: the next second asks again
    } finally {
      this.ticking = false;
    }
  }
}

/**
 * Each Swarm node's address as the edge reaches it (its advertised address), looked up once; and
 * which of a task's published ports the edge reaches there, found once per task.
 */
export class NodeAddresses {
  private readonly known = new Map<string, string>();
  private readonly ports = new Map<string, number>();

  /**
   * The port of `candidates` that answers at `host`. A task publishes one port per address family,
   * and Docker 20.10 may pick a different number for each (moby#42442): only one of them is bound to
   * the node's IPv4 address. A single candidate is taken as it is.
   */
  async reachablePort(
    taskId: string,
    target: number,
    host: string,
    candidates: number[],
  ): Promise<number | null> {
    if (candidates.length === 1) return candidates[0]!;
    const key = `${taskId}/${target}`;
    const known = this.ports.get(key);
    if (known !== undefined) return known;
    for (const port of candidates) {
      if (await accepts(host, port)) {
        if (this.ports.size > 10_000) this.ports.clear();
        this.ports.set(key, port);
        return port;
      }
    }
    return null;
  }

  constructor(private readonly docker: Docker) {}

  async addressOf(nodeId: string): Promise<string | null> {
    const known = this.known.get(nodeId);
    if (known !== undefined) return known;
    const node = (await this.docker
      .getNode(nodeId)
      .inspect()
      .catch(() => null)) as { Status?: { Addr?: string } } | null;
    const address = node?.Status?.Addr;
    if (!address) return null;
    // A node that advertises the any-address is reached on loopback (a one-machine swarm).
    const host = address === '0.0.0.0' ? '127.0.0.1' : address;
    this.known.set(nodeId, host);
    return host;
  }
}

/**
 * Waits until `replicas` tasks of the service run (Swarm counts a task running once its health check
 * passes); throws with what Swarm said of the tasks that failed, when one fails before that.
 */
export async function waitForTasks(
  docker: Docker,
  serviceId: string,
  options: { replicas: number; timeoutMs: number; nodes: NodeAddresses; cancelled(): boolean },
): Promise<Map<number, Endpoint[]>> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const { endpoints, tasks } = await serviceEndpoints(docker, serviceId, options.nodes);
    const running = tasks.filter((t) => t.DesiredState === 'running' && t.Status.State === 'running');
    if (running.length >= options.replicas) return endpoints;
    const failed = tasks.find((t) => ['failed', 'rejected'].includes(t.Status.State));
    if (failed) throw new Error(describeTaskFailure(failed));
    if (options.cancelled()) throw new Error('cancelled');
    if (Date.now() > deadline) {
      const starting = tasks.some((t) => t.Status.State === 'starting');
      throw new Error(
        starting
          ? `its tasks did not pass their health check within ${Math.round(options.timeoutMs / 1000)} s: nothing listened on the app's port (the check runs bash, nc, node or python3 inside the image)`
          : `Swarm did not start its tasks within ${Math.round(options.timeoutMs / 1000)} s${tasks[0]?.Status.Err ? ` (${tasks[0].Status.Err})` : tasks[0]?.Status.Message ? ` (${tasks[0].Status.Message})` : ''}`,
      );
    }
    await delay(250);
  }
}

function describeTaskFailure(task: Task): string {
  const code = task.Status.ContainerStatus?.ExitCode;
  const why = task.Status.Err ?? task.Status.Message ?? task.Status.State;
  if (/unhealthy/i.test(why)) return "a task failed its health check: nothing listened on the app's port";
  if (typeof code === 'number' && code !== 0)
    return `a task exited with code ${code} before its app answered (its output is above)`;
  return `a task ${task.Status.State}: ${why}`;
}

/** Where copying a service's output starts: `since` (Docker's), and no line at or before `after`. */
export interface OutputStart {
  /** Seconds since the epoch, whole or with nanoseconds (`1700000000.123456789`). */
  since: number | string;
  /** A line's timestamp (RFC 3339, nanoseconds) already copied: it and those before are skipped. */
  after?: string | null;
}

/** Where a service's output lines go, each with its timestamp (null for a line Docker gave none). */
export type OutputSink = (line: string, at: string | null) => void;

/** A service's output being copied: stop() ends it. */
export interface OutputCopy {
  stop(): void;
}

/** Nanoseconds since the epoch of an RFC 3339 timestamp as Docker writes them; null if it is none. */
export function timestampNanos(timestamp: string): bigint | null {
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z$/.exec(timestamp);
  if (!match) return null;
  const seconds = Date.parse(`${match[1]}Z`);
  if (Number.isNaN(seconds)) return null;
  return BigInt(seconds) * 1_000_000n + BigInt((match[2] ?? '').padEnd(9, '0'));
}

/** Docker's `since` for a timestamp: `seconds.nanoseconds`. */
export function sinceOf(timestamp: string): string {
  const nanos = timestampNanos(timestamp) ?? BigInt(Date.now()) * 1_000_000n;
  return `${nanos / 1_000_000_000n}.${String(nanos % 1_000_000_000n).padStart(9, '0')}`;
}

/**
 * The service's output (every task's, from `start`), line by line without Docker's timestamps, until
 * stopped.
 */
export async function followServiceLogs(
  docker: Docker,
  serviceId: string,
  start: OutputStart,
  onLine: OutputSink,
): Promise<OutputCopy> {
  const service = docker.getService(serviceId);
  const logs = (await service.logs({
    follow: true,
    stdout: true,
    stderr: true,
    timestamps: true,
    since: start.since,
  } as unknown as Parameters<Docker.Service['logs']>[0])) as unknown as Readable;
  const after = start.after ? timestampNanos(start.after) : null;
  const line = (raw: string) => {
    const space = raw.indexOf(' ');
    const at = space > 0 ? raw.slice(0, space) : '';
    const nanos = timestampNanos(at);
    if (nanos === null) {
      onLine(raw, null);
      return;
    }
    if (after !== null && nanos <= after) return;
    onLine(raw.slice(space + 1), at);
  };
  const out = new PassThrough();
  const err = new PassThrough();
  docker.modem.demuxStream(logs, out, err);
  logs.once('end', () => {
    out.end();
    err.end();
  });
  logs.once('error', () => {
    out.end();
    err.end();
  });
  readLines(out, line);
  readLines(err, line);
  return { stop: () => logs.destroy() };
}

/** The services of this platform, with their labels. */
export async function listServices(docker: Docker, platformId: string) {
  return docker.listServices({ filters: { label: [`${PLATFORM_LABEL}=${platformId}`] } });
}

/** The platform's service running `releaseId`, if any. */
export async function findService(
  docker: Docker,
  platformId: string,
  releaseId: string,
): Promise<string | null> {
  const [found] = await docker.listServices({
    filters: { label: [`${PLATFORM_LABEL}=${platformId}`, `${RELEASE_LABEL}=${releaseId}`] },
  });
  return (found?.ID as string | undefined) ?? null;
}

/**
 * Removes a service (its tasks stop, each given its grace period) and the secrets made for it; gone
 * already is fine.
 */
export async function removeService(docker: Docker, serviceId: string): Promise<void> {
  const service = docker.getService(serviceId);
  const found = (await service.inspect().catch(() => null)) as {
    Spec?: { TaskTemplate?: { ContainerSpec?: { Secrets?: Array<{ SecretID: string }> } } };
  } | null;
  await service.remove().catch(() => undefined);
  const secrets = found?.Spec?.TaskTemplate?.ContainerSpec?.Secrets ?? [];
  await removeSecrets(
    docker,
    secrets.map((s) => s.SecretID),
  );
}

/** How long a secret may wait for its service: a node creates the secrets, then the service. */
const SECRET_GRACE_MS = 10 * 60_000;

/**
 * Removes this platform's secrets whose service is gone (a crash between removing a service and its
 * secrets, or between making them and the service), once older than SECRET_GRACE_MS.
 */
export async function removeStraySecrets(
  docker: Docker,
  platformId: string,
  services: string[],
  graceMs = SECRET_GRACE_MS,
) {
  const live = new Set(services);
  const secrets = (await docker.listSecrets({
    filters: { label: [`${PLATFORM_LABEL}=${platformId}`] },
  })) as Array<{ ID: string; CreatedAt?: string; Spec?: { Labels?: Record<string, string> } }>;
  const old = Date.now() - graceMs;
  const stray = secrets.filter((secret) => {
    const service = secret.Spec?.Labels?.[SERVICE_LABEL];
    return (!service || !live.has(service)) && Date.parse(secret.CreatedAt ?? '') <= old;
  });
  await removeSecrets(
    docker,
    stray.map((s) => s.ID),
  );
}

/** A release's service as the supervisor follows it: where its tasks answer, kept fresh while it runs. */
export interface ServiceUnit {
  id: string;
  pid: number;
  /** Settles when the service is gone without the platform removing it. */
  exited: Promise<ProcessExit>;
  /** Removes the service; resolves once it is gone. */
  stop(graceMs?: number): Promise<ProcessExit>;
  /** Stops following it, and leaves it running (a platform shutting down: the next start follows it). */
  detach(): void;
  /** Copies its output into `onLine` from `start` (nothing if it does already). */
  copyOutput(start: OutputStart, onLine: OutputSink): Promise<void>;
}

/**
 * Follows a service (just created, or found again after a platform restart): its output into
 * `onLine` from `since`, and where its tasks answer into `onEndpoints` (every second, as Swarm
 * restarts and reschedules them).
 */
export async function followService(
  docker: Docker,
  serviceId: string,
  options: {
    /** Seconds since the epoch to copy its output from; null: copy none (another node does). */
    since: number | null;
    watcher: ServiceWatcher;
    onLine: OutputSink;
    onEndpoints(endpoints: Map<number, Endpoint[]>): void;
  },
): Promise<ServiceUnit> {
  let output: OutputCopy | null = null;
  let left = false;
  const copyOutput = async (start: OutputStart, onLine: OutputSink) => {
    if (output || left) return;
    const copy = await followServiceLogs(docker, serviceId, start, onLine).catch(() => null);
    if (copy && (output || left)) copy.stop();
    else output = copy;
  };
  if (options.since !== null) await copyOutput({ since: options.since }, options.onLine);
  const followed = options.watcher.follow(serviceId, options.onEndpoints);
  const leave = () => {
    left = true;
    followed.stop();
    output?.stop();
  };
  return {
    id: serviceId,
    pid: 0,
    exited: followed.exited,
    detach: leave,
    copyOutput,
    async stop() {
      leave();
      await removeService(docker, serviceId);
      return { code: null, signal: 'SIGTERM' };
    },
  };
}

/** Whether something accepts a TCP connection at host:port within a second. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 1_000 });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}
