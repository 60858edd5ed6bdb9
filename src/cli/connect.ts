// How the project commands (`projects`, `deploy`, `logs`, `stop`, `releases`, `rollback`) reach a
// platform: the one the Engine uses (settings.json in WHARF_HOME), or the one given with --platform /
// --api-key. A local platform is never started here: it would die with this process, taking the app's
// platform with it.
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { PlatformClient } from '../core/api-client/platform-client.js';
import { resolvePlatformTarget, type PlatformTarget } from '../core/platform-target.js';
import { FileSecretStore } from '../core/secret-store.js';
import { normalizePlatformUrl } from '../core/settings.js';
import { wharfHome } from '../server/config.js';
import { API_KEY_PATTERN } from '../shared/api/account.js';
import { BridgeError } from '../shared/bridge.js';
import { UsageError } from './io.js';

export interface ConnectionOptions {
  platform?: string;
  apiKey?: string;
}

export function parsePlatform(value: string): string {
  if (value.trim() === 'local') return 'local';
  const origin = normalizePlatformUrl(value);
  if (!origin)
    throw new InvalidArgumentError('must be "local" or an http(s) URL such as https://wharf.example.com');
  return origin;
}

export function parseApiKey(value: string): string {
  const key = value.trim();
  if (!API_KEY_PATTERN.test(key))
    throw new InvalidArgumentError('an API key looks like wk_ followed by 32 letters and digits');
  return key;
}

export function platformOption(description: string): Option {
  return new Option('--platform <url|local>', description).env('WHARF_PLATFORM_URL').argParser(parsePlatform);
}

/** `--ca <pem>`: a CA to trust for an https:// platform besides the system's (a private CA). */
export function caOption(): Option {
  return new Option(
    '--ca <pem>',
    "a CA certificate (PEM file) to trust for an https:// platform, besides the system's",
  ).env('WHARF_CA_FILE');
}

export function apiKeyOption(description: string): Option {
  return new Option('--api-key <key>', description).env('WHARF_API_KEY').argParser(parseApiKey);
}

/** Adds --platform and --api-key (and their variables) to a project command. */
export function withConnectionOptions(command: Command): Command {
  return command
    .addOption(platformOption('the platform to use (default: the saved one, see `wharf login`; else local)'))
    .addOption(apiKeyOption("its API key (default: the saved one; the local account's for local)"))
    .addOption(caOption());
}

export function wharfHomeDir(): string {
  return resolve(wharfHome());
}

/** The CLI's secret store, the same file `wharf app` keeps its keys in. */
export function secretsFile(home: string): string {
  return resolve(home, 'secrets.json');
}

export function secretStore(home: string): FileSecretStore {
  return new FileSecretStore(secretsFile(home));
}

/** The local platform's port from WHARF_PORT (as `wharf app` and `wharf platform` read it). */
export function localPort(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const value = env.WHARF_PORT;
  if (value === undefined || value === '') return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65535) {
    throw new UsageError(`WHARF_PORT must be a port number from 1 to 65535, not "${value}"`);
  }
  return port;
}

export interface Connection {
  target: PlatformTarget;
  client: PlatformClient;
  /** Whether the key came from --api-key / WHARF_API_KEY rather than the saved settings. */
  keyGiven: boolean;
}

export function notRunning(origin: string): string {
  return `no platform is running at ${origin}: start one with \`wharf platform\` (or open the app)`;
}

/** Resolves the platform and key; fails with one readable line when there is no key to use. */
export async function connect(options: ConnectionOptions): Promise<Connection> {
  const home = wharfHomeDir();
  const target = resolvePlatformTarget({
    home,
    secrets: secretStore(home),
    ...(options.platform === undefined ? {} : { platform: options.platform }),
    localPort: localPort(),
  });
  const apiKey = options.apiKey ?? target.apiKey;
  const client = new PlatformClient({ baseUrl: target.origin, apiKey });
  if (apiKey === null) {
    if (target.mode === 'local') {
      // No local account file: either no platform ever ran here, or one runs with another data dir.
      if (!(await client.health())) throw new Error(notRunning(target.origin));
      throw new Error(
        `a platform runs at ${target.origin}, but ${target.keySource} does not exist: is it serving another data dir? Pass its key with --api-key`,
      );
    }
    throw new Error(
      `no API key is saved for ${target.origin}: run \`wharf login --platform ${target.origin} --api-key KEY\`, or pass --api-key`,
    );
  }
  return { target, client, keyGiven: options.apiKey !== undefined };
}

/** Turns the errors every command meets (platform down, key refused) into what to do about them. */
export function explain(error: unknown, connection: Connection): unknown {
  if (!(error instanceof BridgeError)) return error;
  const { target, keyGiven } = connection;
  if (error.code === 'offline' && target.mode === 'local') return new Error(notRunning(target.origin));
  if (error.code === 'unauthorized') {
    const refused = `the platform at ${target.origin} refused`;
    if (keyGiven)
      return new Error(`${refused} the API key given with --api-key or WHARF_API_KEY (${error.detail})`);
    if (target.mode === 'local') {
      return new Error(
        `${refused} the local account's key from ${target.keySource} (${error.detail}): is it serving another data dir?`,
      );
    }
    return new Error(
      `${refused} the saved API key (${error.detail}): run \`wharf login --platform ${target.origin} --api-key KEY\` with a valid one`,
    );
  }
  return error;
}

/** Connects, runs `work`, and explains what went wrong in terms of the connection. */
export async function withPlatform<T>(
  options: ConnectionOptions,
  work: (connection: Connection) => Promise<T>,
): Promise<T> {
  const connection = await connect(options);
  try {
    return await work(connection);
  } catch (error) {
    throw explain(error, connection);
  }
}
