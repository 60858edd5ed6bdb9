// Starts a real platform on 127.0.0.1:0 with a temporary data dir, and gives tests a small fetch
// wrapper. Each test file starts its own and closes it in afterAll.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { buildPlatform, type Platform } from '../../src/server/app.js';
import { PLATFORM_LABEL, connectDocker } from '../../src/server/runtime/drivers/docker.js';
import { createAccount } from '../../src/server/accounts/accounts.js';
import type { PlatformConfigInput } from '../../src/server/config.js';
import type { Scope } from '../../src/shared/api/account.js';
import { Problem } from '../../src/shared/api/common.js';
import { ERROR_CODES, type ProblemBody } from '../../src/shared/errors.js';
import { testDatabase } from './test-store.js';

export type { ProblemBody };

export interface TestPlatform {
  platform: Platform;
  /** `http://127.0.0.1:<port>/api/v1` */
  api: string;
  /** The app edge's port on 127.0.0.1: send requests there with the app's Host header. */
  edgePort: number;
  /** The edge's HTTPS port on 127.0.0.1, when the config turned HTTPS on (`tls.httpsPort`, 0: a free one). */
  httpsPort: number | null;
  dataDir: string;
  /** The PostgreSQL database of its store, on the postgres test project (null: SQLite in dataDir). */
  databaseUrl: string | null;
  /** The local account's full key, from local-account.json. */
  key: string;
  accountId: string;
  /** Creates another account directly in the store; returns its id and key. */
  newAccount(options?: {
    scopes?: Scope[];
    verified?: boolean;
    email?: string;
    /** The account's plan (default: free). */
    plan?: string;
  }): Promise<{ accountId: string; key: string }>;
  close(): Promise<void>;
}

let accounts = 0;

export interface StartOptions {
  /** The API's port (default 0: a free one), e.g. to restart a platform where its clients expect it. */
  port?: number;
}

export async function startPlatform(
  config: PlatformConfigInput = {},
  options: StartOptions = {},
): Promise<TestPlatform> {
  const dataDir = config.dataDir ?? mkdtempSync(join(tmpdir(), 'wharf-test-'));
  // WHARF_TEST_STORE=postgres (the `postgres` test project): the store in a PostgreSQL database of its
  // own (the same one again for a data dir the test keeps), unless the test names a database itself.
  const database = config.databaseUrl === undefined ? await testDatabase(config.dataDir) : null;
  // Host processes in a sandbox unless a test asks for another runtime: `auto` would pick containers
  // wherever an engine answers, and most tests are about the platform, not the runtime.
  let platform: Platform;
  try {
    platform = await buildPlatform({
      runtime: 'sandbox',
      stopContainersOnExit: true,
      ...(database ? { databaseUrl: database.url } : {}),
      ...config,
      dataDir,
    });
  } catch (error) {
    // A test of a platform that refuses to start: nothing of it is left behind.
    if (config.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
    await database?.drop();
    throw error;
  }
  // The edge on a free port (or the one asked for): project URLs then carry it.
  await new Promise<void>((resolve, reject) => {
    platform.edge.server.once('error', reject);
    platform.edge.server.listen(config.edgePort ?? 0, '127.0.0.1', resolve);
  });
  platform.config.edgePort = (platform.edge.server.address() as AddressInfo).port;
  const secure = platform.edge.secureServer;
  if (secure) {
    await new Promise<void>((resolve, reject) => {
      secure.once('error', reject);
      secure.listen(platform.config.tls.httpsPort ?? 0, '127.0.0.1', resolve);
    });
    platform.config.tls.httpsPort = (secure.address() as AddressInfo).port;
  }
  await platform.app.listen({ host: '127.0.0.1', port: options.port ?? 0 });
  await platform.tls?.start();
  const { port } = platform.app.server.address() as AddressInfo;
  const local = JSON.parse(readFileSync(join(dataDir, 'local-account.json'), 'utf8')) as {
    account_id: string;
    api_key: string;
  };
  return {
    platform,
    api: `http://127.0.0.1:${port}/api/v1`,
    edgePort: platform.config.edgePort,
    httpsPort: platform.config.tls.httpsPort,
    dataDir,
    databaseUrl: database?.url ?? config.databaseUrl ?? null,
    key: local.api_key,
    accountId: local.account_id,
    async newAccount(options = {}) {
      accounts += 1;
      const created = await createAccount(platform.db, {
        email: options.email ?? `user${accounts}-${Date.now()}@example.com`,
        verified: options.verified ?? true,
        plan: options.plan ?? 'free',
        scopes: options.scopes ?? ['full'],
      });
      return { accountId: created.accountId, key: created.key.key };
    },
    async close() {
      await platform.app.close();
      if (platform.runtime.kind === 'container' || config.runtime === 'container') {
        await removeEngineObjects(platform.runtime.platformId);
      }
      if (config.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
      await database?.drop();
    },
  };
}

export interface CallResult<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

/** One request with an API key (or none); JSON bodies are sent as JSON, strings and Buffers as given. */
export async function call<T = any>(
  url: string,
  options: { method?: string; key?: string | null; body?: unknown; headers?: Record<string, string> } = {},
): Promise<CallResult<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers['x-api-key'] = options.key;
  let body: string | Buffer | undefined;
  if (typeof options.body === 'string' || Buffer.isBuffer(options.body))
    body = options.body as string | Buffer;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(url, {
    method: options.method ?? (body === undefined ? 'GET' : 'POST'),
    headers,
    body,
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed as T };
}

/** A response as any test holds it: fetch's (`headers: Headers`, `body`) or a raw one (`headers` as Node
 * parses them, the body as `json`, or with its `contentType` read already). */
export type ProblemAnswer = { status: number } & (
  | { headers: Headers | Record<string, string | string[] | undefined>; body?: unknown; json?: unknown }
  | { contentType: string; body: unknown }
);

/**
 * The one check of an RFC 9457 problem (API.md §1), for every surface that sends one (the API, the
 * inspector, the edge): this status and code, content-type `application/problem+json`, and
 * type/title/status/code/detail (an API code also parses against the API's own schema).
 */
export function expectProblem(answer: ProblemAnswer, status: number, code: string): ProblemBody {
  const body = 'contentType' in answer ? answer.body : 'json' in answer ? answer.json : answer.body;
  expect(answer.status, JSON.stringify(body)).toBe(status);
  const contentType =
    'contentType' in answer
      ? answer.contentType
      : answer.headers instanceof Headers
        ? answer.headers.get('content-type')
        : String(answer.headers['content-type'] ?? '');
  expect(contentType ?? '').toMatch(/^application\/problem\+json(;|$)/);
  expect(body).toMatchObject({
    type: 'about:blank',
    title: expect.any(String),
    status,
    code,
    detail: expect.any(String),
  });
  const problem = body as ProblemBody;
  expect(problem.title).not.toBe('');
  expect(problem.detail).not.toBe('');
  if ((ERROR_CODES as string[]).includes(code)) Problem.parse(problem);
  return problem;
}

/** Whatever a test platform left on the engine: containers, images, networks carrying its label. */
async function removeEngineObjects(platformId: string): Promise<void> {
  const engine = await connectDocker();
  if (!('docker' in engine)) return;
  const { docker } = engine;
  const filters = { label: [`${PLATFORM_LABEL}=${platformId}`] };
  for (const c of await docker.listContainers({ all: true, filters })) {
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch(() => undefined);
  }
  for (const image of await docker.listImages({ filters })) {
    await docker
      .getImage(image.Id)
      .remove({ force: true })
      .catch(() => undefined);
  }
  for (const network of await docker.listNetworks({ filters })) {
    await docker
      .getNetwork(network.Id)
      .remove()
      .catch(() => undefined);
  }
}
