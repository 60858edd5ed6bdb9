// Container engines for the runtime tests. scripts/ci/engines.sh starts Docker (and Podman's Docker API),
// builds the base images from Debian packages and writes the env vars read here to
// /run/wharf-ci-engines.env; .ci/run loads that file before `npm test`.
//
//   const skip = await requireEngine(); // a reason to skip, or null; throws in CI instead of skipping
//   describe.skipIf(skip)('…', () => { … testImages()!.node … });
//
// startRegistry() runs Debian's `docker-registry` on 127.0.0.1 and a free port, with or without basic
// auth; Docker allows plain HTTP to 127.0.0.0/8 registries, so `docker push 127.0.0.1:<port>/x:1` works.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import {
  type IncomingMessage,
  type ServerResponse,
  createServer as createHttpServer,
  request as httpRequest,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import Docker from 'dockerode';
import { PLATFORM_LABEL, buildImage } from '../../src/server/runtime/drivers/docker.js';
import type { TokenService } from './registry-tokens.js';

export interface TestImages {
  /** Debian bookworm's nodejs and npm (Node 18), bash, ca-certificates. */
  node: string;
  /** Debian bookworm's python3, python3-venv and python3-pip (Python 3.11), bash, ca-certificates. */
  python: string;
}

/** The base images scripts/ci/engines.sh built, from the env, or null when they are not set. */
export function testImages(env: NodeJS.ProcessEnv = process.env): TestImages | null {
  const node = env.WHARF_TEST_NODE_IMAGE;
  const python = env.WHARF_TEST_PYTHON_IMAGE;
  return node && python ? { node, python } : null;
}

/** Podman's Docker-compatible API (unix:///run/wharf-podman.sock), or null when it is not set. */
export function podmanHost(env: NodeJS.ProcessEnv = process.env): string | null {
  return env.WHARF_TEST_PODMAN_HOST || null;
}

/** A client for the Docker engine at DOCKER_HOST or the default socket. */
export function dockerClient(): Docker {
  return new Docker();
}

/** A client for Podman's API at WHARF_TEST_PODMAN_HOST (unix://… only). */
export function podmanClient(host = podmanHost()): Docker {
  if (!host?.startsWith('unix://'))
    throw new Error(`WHARF_TEST_PODMAN_HOST is not a unix:// address: ${host}`);
  return new Docker({ socketPath: host.slice('unix://'.length) });
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function firstLine(error: unknown): string {
  return String((error as Error)?.message ?? error).split('\n')[0]!;
}

const HOW = 'run `bash scripts/ci/engines.sh`, then `set -a; . /run/wharf-ci-engines.env; set +a`';

/** Null when `docker` answers within `timeoutMs` and has all of `images`; else why not (one line). */
async function reasonFor(
  docker: Docker,
  where: string,
  images: string[],
  timeoutMs: number,
): Promise<string | null> {
  try {
    await withTimeout(docker.ping(), timeoutMs, 'ping');
  } catch (error) {
    return `no container engine answers at ${where} (${firstLine(error)}); ${HOW}`;
  }
  const missing: string[] = [];
  for (const image of images) {
    try {
      await withTimeout(docker.getImage(image).inspect(), timeoutMs, 'inspect');
    } catch {
      missing.push(image);
    }
  }
  return missing.length ? `the engine at ${where} lacks ${missing.join(' and ')}; ${HOW}` : null;
}

/** Null when a Docker engine answers (10 s: a busy machine is slow) and has the test images; otherwise a one-line reason. */
export async function engineReason(timeoutMs = 10_000): Promise<string | null> {
  const images = testImages();
  if (!images) return `WHARF_TEST_NODE_IMAGE and WHARF_TEST_PYTHON_IMAGE are not set; ${HOW}`;
  const where = process.env.DOCKER_HOST ? `DOCKER_HOST=${process.env.DOCKER_HOST}` : '/var/run/docker.sock';
  return reasonFor(dockerClient(), where, [images.node, images.python], timeoutMs);
}

/** Null when Podman's API answers (10 s) and has the node test image; otherwise a one-line reason. */
export async function podmanReason(timeoutMs = 10_000): Promise<string | null> {
  const images = testImages();
  const host = podmanHost();
  if (!images || !host) return `WHARF_TEST_PODMAN_HOST or WHARF_TEST_NODE_IMAGE is not set; ${HOW}`;
  return reasonFor(podmanClient(host), host, [images.node], timeoutMs);
}

function skipOrThrow(reason: string | null): string | null {
  if (reason && process.env.CI) throw new Error(`CI must not skip container tests: ${reason}`);
  return reason;
}

/**
 * For `describe.skipIf(await requireEngine())`: the reason there is no usable Docker engine, or null.
 * With CI set it throws instead, so that CI fails rather than silently skipping container tests.
 */
export async function requireEngine(): Promise<string | null> {
  return skipOrThrow(await engineReason());
}

/** Like requireEngine(), for an engine that manages a Swarm (engines.sh makes this one a one-node Swarm). */
export async function requireSwarm(): Promise<string | null> {
  const reason = await engineReason();
  if (reason) return skipOrThrow(reason);
  const info = (await dockerClient().info()) as {
    Swarm?: { LocalNodeState?: string; ControlAvailable?: boolean };
  };
  const manager = info.Swarm?.LocalNodeState === 'active' && info.Swarm.ControlAvailable === true;
  return skipOrThrow(manager ? null : `the Docker engine manages no Swarm; ${HOW}`);
}

/** Like requireEngine(), for Podman's API (CI installs Podman, so CI fails without it too). */
export async function requirePodman(): Promise<string | null> {
  return skipOrThrow(await podmanReason());
}

// ---------------------------------------------------------------------------------------------
// A loopback image registry

export interface RegistryAuth {
  user: string;
  password: string;
}

export interface TestRegistry {
  /** 127.0.0.1:<port>, to prefix image references with: `${host}/app:1`. */
  host: string;
  /** With auth: the credentials, as dockerode's `authconfig` wants them. */
  authconfig?: { username: string; password: string; serveraddress: string };
  close(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

const BCRYPT_ALPHABET = './ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * A bcrypt hash ($2b$, cost 5), the only kind the registry's htpasswd accepts. No htpasswd binary nor
 * bcrypt package here: Perl (Essential on Debian) calls libcrypt's crypt(3), which does bcrypt.
 */
export function bcryptHash(password: string): string {
  const bytes = randomBytes(22);
  let salt = '';
  for (let i = 0; i < 21; i++) salt += BCRYPT_ALPHABET[bytes[i]! & 63];
  salt += '.Oeu'[bytes[21]! & 3]; // the 22nd character carries 2 bits: the canonical ones
  const hash = execFileSync('perl', ['-e', 'print crypt($ENV{WHARF_PASSWORD}, $ENV{WHARF_SALT})'], {
    env: { PATH: process.env.PATH, WHARF_PASSWORD: password, WHARF_SALT: `$2b$05$${salt}` },
  }).toString();
  if (!/^\$2b\$05\$[./A-Za-z0-9]{53}$/.test(hash)) {
    throw new Error(`crypt(3) did not make a bcrypt hash (got ${JSON.stringify(hash.slice(0, 10))})`);
  }
  return hash;
}

function registryConfig(
  dir: string,
  port: number,
  htpasswd: string | null,
  deletes: boolean,
  tokens: { service: TokenService; bundle: string } | null,
): string {
  // JSON strings are valid YAML double-quoted scalars: no quoting surprises with paths.
  const q = JSON.stringify;
  return [
    'version: 0.1',
    'log:',
    '  level: warn',
    '  accesslog:',
    '    disabled: true',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${q(join(dir, 'data'))}`,
    '  delete:',
    `    enabled: ${deletes}`,
    'http:',
    `  addr: ${q(`127.0.0.1:${port}`)}`,
    `  secret: ${q(randomBytes(16).toString('hex'))}`,
    ...(htpasswd ? ['auth:', '  htpasswd:', '    realm: wharf-test', `    path: ${q(htpasswd)}`] : []),
    ...(tokens
      ? [
          'auth:',
          '  token:',
          `    realm: ${q(tokens.service.realm)}`,
          `    service: ${q(tokens.service.service)}`,
          `    issuer: ${q(tokens.service.issuer)}`,
          `    rootcertbundle: ${q(tokens.bundle)}`,
        ]
      : []),
    '',
  ].join('\n');
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Debian's `docker-registry serve` on 127.0.0.1 and a free port, storing into a fresh temporary
 * folder; with `auth`, behind basic auth (htpasswd); with `tokens`, behind that token service instead
 * (its clients need a token from it); `deletes: false`, refusing deletes (405), as distribution does
 * by default. Resolves once GET /v2/ answers 200 (at most 20 s). close() stops it and
 * removes the folder.
 */
export async function startRegistry(
  auth?: RegistryAuth,
  options: { deletes?: boolean; tokens?: TokenService } = {},
): Promise<TestRegistry> {
  if (auth && (!auth.user || /[:\n]/.test(auth.user) || /\n/.test(auth.password))) {
    throw new Error('registry user names cannot be empty or contain ":" or newlines');
  }
  const dir = mkdtempSync(join(tmpdir(), 'wharf-registry-'));
  let child: ChildProcess | null = null;
  const close = async () => {
    if (child) await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    mkdirSync(join(dir, 'data'));
    let htpasswd: string | null = null;
    let tokens: { service: TokenService; bundle: string } | null = null;
    if (options.tokens) {
      tokens = { service: options.tokens, bundle: join(dir, 'token-root.pem') };
      writeFileSync(tokens.bundle, options.tokens.certPem);
    } else if (auth) {
      htpasswd = join(dir, 'htpasswd');
      writeFileSync(htpasswd, `${auth.user}:${bcryptHash(auth.password)}\n`, { mode: 0o600 });
    }
    const headers: Record<string, string> = tokens
      ? { authorization: `Bearer ${tokens.service.mint([])}` }
      : auth
        ? { authorization: `Basic ${Buffer.from(`${auth.user}:${auth.password}`).toString('base64')}` }
        : {};
    // The free port may be taken between freePort() and the registry's listen: then try another.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const config = join(dir, 'config.yml');
      writeFileSync(config, registryConfig(dir, port, htpasswd, options.deletes ?? true, tokens));
      const output: string[] = [];
      const started: ChildProcess = spawn('docker-registry', ['serve', config], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = started;
      let spawnError: Error | null = null;
      started.on('error', (error) => (spawnError = error));
      for (const stream of [started.stdout!, started.stderr!]) {
        stream.on('data', (chunk: Buffer) => {
          output.push(chunk.toString());
          if (output.length > 100) output.shift();
        });
      }
      const host = `127.0.0.1:${port}`;
      const deadline = Date.now() + 20_000;
      let last = '';
      while (Date.now() < deadline) {
        if (spawnError) {
          throw new Error(
            `cannot run docker-registry (Debian package docker-registry): ${(spawnError as Error).message}`,
          );
        }
        if (started.exitCode !== null || started.signalCode !== null) break;
        try {
          const response = await fetch(`http://${host}/v2/`, { headers, signal: AbortSignal.timeout(2_000) });
          await response.arrayBuffer();
          if (response.status === 200) {
            return {
              host,
              ...(auth && {
                authconfig: { username: auth.user, password: auth.password, serveraddress: host },
              }),
              close,
            };
          }
          last = `GET /v2/ answered ${response.status}`;
        } catch (error) {
          last = firstLine(error);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await stopChild(started);
      const log = output.join('');
      if (attempt < 3 && /address already in use/.test(log)) continue;
      throw new Error(`docker-registry did not answer on ${host} within 20 s (${last}):\n${log}`);
    }
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * A repository's tags in a test registry, sorted; [] when the registry has no such repository. Read
 * with the registry's login when it has one.
 */
export async function registryTags(
  registry: Pick<TestRegistry, 'host' | 'authconfig'>,
  repository: string,
): Promise<string[]> {
  const login = registry.authconfig;
  const headers: Record<string, string> = login
    ? { authorization: `Basic ${Buffer.from(`${login.username}:${login.password}`).toString('base64')}` }
    : {};
  const answer = await fetch(`http://${registry.host}/v2/${repository}/tags/list`, {
    headers,
    signal: AbortSignal.timeout(10_000),
  });
  if (answer.status === 404) {
    await answer.body?.cancel();
    return [];
  }
  if (answer.status !== 200) {
    throw new Error(
      `the registry answered ${answer.status} to the tags of ${repository}: ${await answer.text()}`,
    );
  }
  return (((await answer.json()) as { tags: string[] | null }).tags ?? []).sort();
}

/**
 * A relay in front of a registry, plain HTTP or (with `tls`) HTTPS, as a TLS-terminating proxy serves
 * one: what is asked of it can be watched, and it can go down.
 */
export interface RegistryRelay {
  /** host:port, to name as the registry. */
  host: string;
  /** While true, every request's connection is cut before it reaches the registry. */
  down: boolean;
  close(): Promise<void>;
}

export async function startRegistryRelay(
  target: string,
  onRequest: (req: IncomingMessage) => void = () => undefined,
  /** With `tls.clientCa`, a client must present a certificate that CA signed. */
  options: { tls?: { certPem: string; keyPem: string; clientCa?: string } } = {},
): Promise<RegistryRelay> {
  const relayRequest = (req: IncomingMessage, res: ServerResponse) => {
    if (relay.down) {
      req.socket.destroy();
      return;
    }
    onRequest(req);
    const upstream = httpRequest(
      `http://${target}${req.url}`,
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  };
  const server = options.tls
    ? createHttpsServer(
        {
          cert: options.tls.certPem,
          key: options.tls.keyPem,
          ...(options.tls.clientCa
            ? { ca: options.tls.clientCa, requestCert: true, rejectUnauthorized: true }
            : {}),
        },
        relayRequest,
      )
    : createHttpServer(relayRequest);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const relay: RegistryRelay = {
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    down: false,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  return relay;
}

// ---------------------------------------------------------------------------------------------
// Thin wrappers over dockerode, for either engine (the Docker engine unless `docker` says otherwise)

const LABEL_KEY = 'dev.wharf.test';
const LABEL_VALUE = `${process.pid}-${randomBytes(4).toString('hex')}`;
/**
 * The label of the containers dockerRun() creates: `dev.wharf.test=<id>`, with a fresh id in each test
 * file (Vitest isolates their modules), so removeContainers() leaves other files' containers alone.
 */
export const TEST_LABEL = `${LABEL_KEY}=${LABEL_VALUE}`;

type ProgressEvent = { status?: string; error?: string; errorDetail?: { message?: string } };

/** Waits for a pull/push/import progress stream; rejects with the engine's error when it reports one. */
export function followProgress(docker: Docker, stream: NodeJS.ReadableStream): Promise<ProgressEvent[]> {
  return new Promise((resolve, reject) => {
    docker.modem.followProgress(stream, (error: Error | null, events: ProgressEvent[]) => {
      const failed = events?.find((e) => e.error);
      if (error) reject(error);
      else if (failed) reject(new Error(failed.errorDetail?.message ?? failed.error));
      else resolve(events);
    });
  });
}

export type AuthConfig = NonNullable<TestRegistry['authconfig']>;

/** `docker pull ref`, with registry credentials when given. */
export async function pullImage(
  ref: string,
  { authconfig, docker = dockerClient() }: { authconfig?: AuthConfig; docker?: Docker } = {},
): Promise<void> {
  await followProgress(docker, await docker.pull(ref, authconfig ? { authconfig } : {}));
}

/** `docker push ref` (ref with its tag), with registry credentials when given. */
export async function pushImage(
  ref: string,
  { authconfig, docker = dockerClient() }: { authconfig?: AuthConfig; docker?: Docker } = {},
): Promise<void> {
  // Docker answers 400 to a push without an X-Registry-Auth header: send an empty one ({}), as the CLI does.
  await followProgress(docker, await docker.getImage(ref).push({ authconfig: authconfig ?? {} }));
}

function splitRef(ref: string): { repo: string; tag: string } {
  const colon = ref.lastIndexOf(':');
  return colon > ref.lastIndexOf('/')
    ? { repo: ref.slice(0, colon), tag: ref.slice(colon + 1) }
    : { repo: ref, tag: 'latest' };
}

/** `docker tag source target`. */
export async function tagImage(source: string, target: string, docker = dockerClient()): Promise<void> {
  await docker.getImage(source).tag(splitRef(target));
}

/** A tar archive holding one regular file. */
function tarOf(name: string, content: Buffer): Buffer {
  const header = Buffer.alloc(512);
  const field = (offset: number, length: number, value: string) =>
    header.write(value, offset, length, 'ascii');
  field(0, 100, name);
  field(100, 8, '0000644\0');
  field(108, 8, '0000000\0');
  field(116, 8, '0000000\0');
  field(124, 12, `${content.length.toString(8).padStart(11, '0')}\0`);
  field(136, 12, '00000000000\0'); // mtime: the epoch
  field(148, 8, '        '); // the checksum counts its own field as spaces
  field(156, 1, '0');
  field(257, 6, 'ustar\0');
  field(263, 2, '00');
  let sum = 0;
  for (const byte of header) sum += byte;
  field(148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  const padding = Buffer.alloc((512 - (content.length % 512)) % 512);
  return Buffer.concat([header, content, padding, Buffer.alloc(1024)]);
}

/**
 * A tiny image tagged `ref`: one small file with random content, nothing runnable. For registry tests,
 * where pushing a base image (~350 MB) takes ~20 s. Its layer is unique, so once removeImages() took
 * it away, a pull really transfers it.
 */
export async function importTinyImage(ref: string, docker = dockerClient()): Promise<void> {
  const tar = tarOf('wharf-test.txt', Buffer.from(`wharf test image ${randomBytes(16).toString('hex')}\n`));
  await followProgress(docker, await docker.importImage(Readable.from([tar]), splitRef(ref)));
}

/** Whether the engine has an image by this reference. */
export async function hasImage(ref: string, docker = dockerClient()): Promise<boolean> {
  try {
    await docker.getImage(ref).inspect();
    return true;
  } catch {
    return false;
  }
}

/**
 * Removes every tag that starts with `prefix` (e.g. a registry's `127.0.0.1:5000/`); images left
 * without tags go with them unless a container still uses them. Returns the tags removed.
 */
export async function removeImages(prefix: string, docker = dockerClient()): Promise<string[]> {
  if (!prefix) throw new Error('removeImages needs a prefix');
  const removed: string[] = [];
  for (const image of await docker.listImages()) {
    for (const tag of image.RepoTags ?? []) {
      // Podman names local images localhost/…
      if (!tag.startsWith(prefix) && !tag.replace(/^localhost\//, '').startsWith(prefix)) continue;
      await docker
        .getImage(tag)
        .remove()
        .then(() => removed.push(tag))
        .catch(() => undefined);
    }
  }
  return removed;
}

/** Force-removes the containers with this label (`key` or `key=value`; default: this process's). */
export async function removeContainers(label = TEST_LABEL, docker = dockerClient()): Promise<number> {
  const containers = await docker.listContainers({ all: true, filters: { label: [label] } });
  await Promise.all(
    containers.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
  return containers.length;
}

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Splits Docker's multiplexed log stream (8-byte frame headers) into stdout and stderr. */
function demux(buffer: Buffer): { stdout: string; stderr: string } {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= buffer.length) {
    const kind = buffer[offset];
    const length = buffer.readUInt32BE(offset + 4);
    const frame = buffer.subarray(offset + 8, offset + 8 + length);
    (kind === 2 ? err : out).push(frame);
    offset += 8 + length;
  }
  return { stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
}

/**
 * `docker run --rm image cmd…`: runs to the end (at most `timeoutMs`, default 30 s, then it is killed)
 * and returns its exit code and output. `hostConfig` passes limits etc. (Memory, PidsLimit, Init…).
 */
export async function dockerRun(
  image: string,
  cmd: string[],
  options: {
    env?: Record<string, string>;
    hostConfig?: Docker.HostConfig;
    timeoutMs?: number;
    docker?: Docker;
  } = {},
): Promise<RunResult> {
  const docker = options.docker ?? dockerClient();
  const container = await docker.createContainer({
    Image: image,
    Cmd: cmd,
    Env: Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`),
    Labels: { [LABEL_KEY]: LABEL_VALUE },
    HostConfig: options.hostConfig ?? {},
  });
  try {
    await container.start();
    const timeoutMs = options.timeoutMs ?? 30_000;
    const result = await withTimeout(
      container.wait() as Promise<{ StatusCode: number }>,
      timeoutMs,
      `${image} ${cmd.join(' ')}`,
    ).catch(async (error: unknown) => {
      await container.kill().catch(() => undefined);
      throw error;
    });
    const logs = await container.logs({ stdout: true, stderr: true, follow: false });
    return { exitCode: result.StatusCode, ...demux(logs) };
  } finally {
    await container.remove({ force: true }).catch(() => undefined);
  }
}

/**
 * Removes the Swarm services of the platform `platformId` names: the nodes of a cluster leave their
 * services to each other, so the test that stops the last one removes them.
 */
export async function removeSwarmServices(platformId: string | undefined): Promise<void> {
  if (platformId === undefined) return;
  const docker = new Docker();
  const services = await docker.listServices({ filters: { label: [`${PLATFORM_LABEL}=${platformId}`] } });
  for (const service of services)
    await docker
      .getService(service.ID)
      .remove()
      .catch(() => undefined);
  // The env values of their tasks, kept as Swarm secrets.
  const secrets = await docker.listSecrets({ filters: { label: [`${PLATFORM_LABEL}=${platformId}`] } });
  for (const secret of secrets)
    await docker
      .getSecret(secret.ID)
      .remove()
      .catch(() => undefined);
}

/**
 * Builds `files` (a Dockerfile among them, all in one folder) as image `ref`, pushes it (with
 * `authconfig`), and removes it from the engine: only the registry has it then, so running it means
 * pulling it.
 */
export async function publishTestImage(
  ref: string,
  files: Record<string, string>,
  { authconfig, docker = dockerClient() }: { authconfig?: AuthConfig; docker?: Docker } = {},
): Promise<void> {
  const context = mkdtempSync(join(tmpdir(), 'wharf-test-image-'));
  try {
    for (const [name, content] of Object.entries(files)) writeFileSync(join(context, name), content);
    await buildImage(docker, {
      context,
      dockerfile: 'Dockerfile',
      tag: ref,
      labels: {},
      memoryBytes: null,
      cpus: null,
      onLine: () => undefined,
    });
    await pushImage(ref, { authconfig, docker });
    await docker.getImage(ref).remove({ force: true });
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}
