// Property-based fuzzing of every write endpoint (API.md §1: "A 500 is a bug: it must never be reachable
// from any input"). Random JSON values, objects with the right keys and random values, and random raw
// strings go to a real platform; every answer must be below 500, and every error problem+json.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Problem } from '../../src/shared/api/common.js';
import { tarball, type TarEntrySpec } from '../fixtures/tarball.js';
import { call, startPlatform, type TestPlatform } from '../helpers/platform.js';

const NUM_RUNS = 150;
const runs = { numRuns: NUM_RUNS, interruptAfterTimeLimit: 5_000, markInterruptAsFailure: false };

let t: TestPlatform;
/** A project the PUT endpoints aim at (random values may well succeed on it). */
let target: string;
/** A project the DELETE fuzz may delete; other ids are random. */
let deletable: string;
/** A key the DELETE /keys fuzz may revoke (never the key the requests are made with). */
let victimKey: string;
/** An upload project for the upload fuzz. */
let uploadTarget: string;
let token: string;

beforeAll(async () => {
  t = await startPlatform();
  const create = async (body: Record<string, unknown>) => {
    const res = await call(`${t.api}/projects`, { key: t.key, body });
    expect(res.status).toBe(201);
    return (res.body as { id: string }).id;
  };
  target = await create({ name: 'target', subdomain: 'target', repo_url: 'https://example.com/a.git' });
  deletable = await create({ name: 'gone', subdomain: 'gone', image: 'nginx' });
  uploadTarget = await create({ name: 'up', subdomain: 'uploads', deploy_source: 'upload' });
  const key = await call(`${t.api}/keys`, { key: t.key, body: { scopes: ['deploy'], name: 'victim' } });
  expect(key.status).toBe(201);
  victimKey = (key.body as { id: string }).id;
  const minted = await call(`${t.api}/auth/token`, { method: 'POST', key: t.key });
  expect(minted.status).toBe(200);
  token = (minted.body as { token: string }).token;
});

afterAll(async () => {
  await t?.close();
});

type Auth = 'key' | 'jwt';

interface Sent {
  method: string;
  path: string;
  body?: string | Uint8Array;
  contentType?: string;
  auth?: Auth;
  headers?: Record<string, string>;
}

/** Sends one request and checks the invariants: never 5xx; every error is problem+json with its status. */
async function expectWellFormed(req: Sent): Promise<number> {
  const headers: Record<string, string> = { ...req.headers };
  if (req.auth === 'jwt') headers.authorization = `Bearer ${token}`;
  else if (req.auth !== undefined) headers['x-api-key'] = t.key;
  if (req.contentType !== undefined) headers['content-type'] = req.contentType;
  const response = await fetch(`${t.api}${req.path}`, { method: req.method, headers, body: req.body });
  const text = await response.text();
  const what = () =>
    `${req.method} ${req.path} [${req.contentType ?? 'no content-type'}] ${JSON.stringify(
      typeof req.body === 'string' ? req.body.slice(0, 500) : req.body ? `<${req.body.length} bytes>` : null,
    )} → ${response.status} ${text.slice(0, 500)}`;
  expect(response.status, what()).toBeLessThan(500);
  if (response.status >= 400) {
    expect(response.headers.get('content-type') ?? '', what()).toMatch(/^application\/problem\+json/);
    const problem = Problem.safeParse(JSON.parse(text));
    expect(problem.success, what()).toBe(true);
    expect(problem.data!.status, what()).toBe(response.status);
  }
  return response.status;
}

/** JSON text for any value; `undefined` (and other values JSON cannot hold) become an empty body. */
const asJson = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
};

/** Percent-encodes an id for the path; lone surrogates (which cannot be encoded) become `x`. */
const asPathSegment = (id: string): string => {
  try {
    return encodeURIComponent(id);
  } catch {
    return 'x';
  }
};

// ---- arbitraries -------------------------------------------------------------------------------

const anyValue = fc.oneof(fc.anything(), fc.jsonValue());
const or = <T>(plausible: fc.Arbitrary<T>) => fc.oneof(plausible, fc.jsonValue());

const label = fc.oneof(
  fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,12}[a-z0-9])?$/),
  fc.constantFrom('api', 'www', 'admin', 'target', 'uploads', 'a'.repeat(63), 'a'.repeat(64), '-x', 'x-'),
  fc.string(),
);
const envName = fc.oneof(
  fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,10}$/),
  fc.string(),
  fc.constant('__proto__'),
);
const envVars = or(fc.dictionary(envName, or(fc.string()), { maxKeys: 8 }));
const command = or(fc.oneof(fc.constantFrom('npm start', 'node index.js', ''), fc.string()));
const relDir = or(fc.oneof(fc.constantFrom('.', 'app', 'a/b', '/abs', 'a/../b', '..', 'C:\\x'), fc.string()));
const service = fc.record(
  {
    name: or(label),
    kind: or(fc.constantFrom('web', 'worker', 'cron')),
    root_dir: or(fc.oneof(relDir, fc.constant(null))),
    install_cmd: command,
    build_cmd: command,
    start_cmd: command,
    port: or(fc.oneof(fc.integer({ min: -10, max: 70_000 }), fc.constant(null), fc.double())),
    env_overrides: envVars,
    extra: anyValue,
  },
  { requiredKeys: [] },
);
const buildConfig = or(
  fc.record(
    {
      root_dir: relDir,
      install_cmd: command,
      build_cmd: command,
      start_cmd: command,
      services: or(fc.array(service, { maxLength: 7 })),
    },
    { requiredKeys: [] },
  ),
);
const createProject = fc.record(
  {
    name: or(fc.string({ maxLength: 70 })),
    subdomain: or(label),
    repo_url: or(
      fc.oneof(
        fc.constantFrom('https://github.com/a/b.git', 'git@github.com:a/b.git', 'ftp://x', 'file:///tmp/x'),
        fc.webUrl(),
        fc.string(),
      ),
    ),
    git_host_repo: or(fc.oneof(fc.constantFrom('a/b', 'a/b/c', '../x', './.'), fc.string())),
    branch: or(fc.oneof(fc.constantFrom('main', 'release/1', '-x', 'a..b'), fc.string())),
    image: or(fc.oneof(fc.constantFrom('nginx', 'nginx:1.27', 'ghcr.io/a/b:c', 'Bad:Ref'), fc.string())),
    deploy_source: or(fc.constantFrom('git', 'image', 'upload', 'ftp')),
    env_vars: envVars,
    build_config: buildConfig,
  },
  { requiredKeys: [] },
);
const createKey = fc.record(
  {
    scopes: or(fc.oneof(fc.array(fc.constantFrom('deploy', 'email', 'full', 'root', '')), fc.string())),
    name: or(fc.string({ maxLength: 70 })),
  },
  { requiredKeys: [] },
);

/** A JSON text cut short at a random point: valid-looking prefixes, mostly not JSON. */
const truncatedJson = fc
  .jsonValue()
  .map((v) => JSON.stringify(v))
  .chain((s) => fc.nat({ max: s.length }).map((n) => s.slice(0, n)));
const rawString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  truncatedJson,
  fc.constantFrom(
    '',
    'null',
    '{',
    '[]',
    '{"__proto__":{"x":1}}',
    '{"constructor":{"prototype":{}}}',
    '\u0000',
  ),
);
const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/JSON',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'multipart/form-data; boundary=x',
  'application/gzip',
  'application/octet-stream',
  '*/*',
  'garbage',
);
const auth = fc.constantFrom<Auth>('key', 'jwt');

// ---- endpoints ---------------------------------------------------------------------------------

interface Endpoint {
  name: string;
  method: string;
  /** The path, from an arbitrary id where the route takes one. */
  path: fc.Arbitrary<string>;
  /** Objects with the endpoint's own keys and random values. */
  shaped: fc.Arbitrary<unknown>;
}

const idFor = (known: () => string, prefix: string) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant(null).map(() => known()) },
    { weight: 2, arbitrary: fc.string() },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(`${prefix}_`, `${prefix}_${'0'.repeat(100)}`, '%00', '..', 'a/b', ''),
    },
  );

const endpoints: Endpoint[] = [
  { name: 'POST /projects', method: 'POST', path: fc.constant('/projects'), shaped: createProject },
  {
    name: 'PUT /projects/:id',
    method: 'PUT',
    path: idFor(() => target, 'prj').map((id) => `/projects/${asPathSegment(id)}`),
    shaped: fc.record({ env_vars: envVars, extra: anyValue }, { requiredKeys: [] }),
  },
  {
    name: 'PUT /projects/:id/build-config',
    method: 'PUT',
    path: idFor(() => target, 'prj').map((id) => `/projects/${asPathSegment(id)}/build-config`),
    shaped: buildConfig,
  },
  { name: 'POST /keys', method: 'POST', path: fc.constant('/keys'), shaped: createKey },
  {
    name: 'POST /auth/token',
    method: 'POST',
    path: fc.constant('/auth/token'),
    shaped: fc.record({ key: or(fc.string()), scopes: anyValue }, { requiredKeys: [] }),
  },
  {
    name: 'DELETE /projects/:id',
    method: 'DELETE',
    path: idFor(() => deletable, 'prj').map((id) => `/projects/${asPathSegment(id)}`),
    shaped: fc.record({ id: or(fc.string()), force: anyValue }, { requiredKeys: [] }),
  },
  {
    name: 'DELETE /keys/:id',
    method: 'DELETE',
    path: idFor(() => victimKey, 'key').map((id) => `/keys/${asPathSegment(id)}`),
    shaped: fc.record({ id: or(fc.string()) }, { requiredKeys: [] }),
  },
];

describe.each(endpoints)('$name', ({ method, path, shaped }) => {
  it('never answers 5xx to fc.anything() as JSON, and every error is problem+json', async () => {
    await fc.assert(
      fc.asyncProperty(path, anyValue, auth, async (p, value, a) => {
        await expectWellFormed({
          method,
          path: p,
          body: asJson(value),
          contentType: 'application/json',
          auth: a,
        });
      }),
      runs,
    );
  });

  it('never answers 5xx to objects with its own keys and random values', async () => {
    await fc.assert(
      fc.asyncProperty(path, shaped, auth, async (p, value, a) => {
        await expectWellFormed({
          method,
          path: p,
          body: asJson(value),
          contentType: 'application/json',
          auth: a,
        });
      }),
      runs,
    );
  });

  it('never answers 5xx to random strings sent raw as application/json', async () => {
    await fc.assert(
      fc.asyncProperty(path, rawString, async (p, body) => {
        await expectWellFormed({ method, path: p, body, contentType: 'application/json', auth: 'key' });
      }),
      runs,
    );
  });

  it('never answers 5xx to random bodies under random content types, or none', async () => {
    await fc.assert(
      fc.asyncProperty(
        path,
        fc.oneof(rawString, fc.jsonValue().map(asJson)),
        fc.option(contentType, { nil: undefined }),
        async (p, body, type) => {
          // Without a content type, send bytes: fetch would otherwise label a string text/plain.
          await expectWellFormed({
            method,
            path: p,
            body: type === undefined ? new TextEncoder().encode(body) : body,
            contentType: type,
            auth: 'key',
          });
        },
      ),
      runs,
    );
  });
});

describe('authentication headers', () => {
  it('never answers 5xx to random X-API-Key and Authorization values, and rejects them with problem+json', async () => {
    const headerValue = fc.oneof(
      fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)) }),
      fc.constantFrom(
        'Bearer ',
        'Bearer x.y.z',
        `wk_${'A'.repeat(32)}`,
        'Basic abc',
        'Bearer eyJhbGciOiJub25lIn0.e30.',
      ),
      fc.stringMatching(/^wk_[A-Za-z0-9]{0,40}$/),
    );
    // Real routes only: an unknown route answers 404 before authentication.
    const request = fc.constantFrom(
      { method: 'POST', path: '/projects' },
      { method: 'PUT', path: `/projects/${target}` },
      { method: 'PUT', path: `/projects/${target}/build-config` },
      { method: 'POST', path: '/keys' },
      { method: 'POST', path: '/auth/token' },
      { method: 'DELETE', path: `/projects/${target}` },
      { method: 'DELETE', path: `/keys/${victimKey}` },
    );
    await fc.assert(
      fc.asyncProperty(
        request,
        fc.constantFrom('x-api-key', 'authorization'),
        headerValue,
        async ({ method, path }, header, value) => {
          const status = await expectWellFormed({
            method,
            path,
            body: '{}',
            contentType: 'application/json',
            headers: { [header]: value },
          });
          expect(status).toBe(401);
        },
      ),
      runs,
    );
  });
});

describe('POST /projects/:id/upload', () => {
  const entryType = fc.constantFrom<NonNullable<TarEntrySpec['type']>>(
    'File',
    'Directory',
    'SymbolicLink',
    'Link',
    'CharacterDevice',
    'FIFO',
  );
  const segment = fc.oneof(
    fc.stringMatching(/^[a-z0-9._-]{1,8}$/),
    fc.constantFrom('..', '.', '', '/', 'C:', '\\..'),
  );
  const tarPath = fc.array(segment, { minLength: 1, maxLength: 5 }).map((parts) => parts.join('/'));
  const entry = fc.record({
    path: tarPath,
    type: entryType,
    linkpath: tarPath,
    content: fc.string({ maxLength: 64 }),
  });

  const tmpFiles = () => {
    const dir = join(t.dataDir, 'tmp');
    return existsSync(dir) ? readdirSync(dir) : [];
  };

  it('answers 200 or 422 (path file) to random archives, never 5xx, and leaves no temporary file', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(entry, { maxLength: 8 }), async (entries) => {
        let archive: Buffer;
        try {
          archive = tarball(entries);
        } catch {
          return; // the tar encoder cannot write this entry at all
        }
        const status = await expectWellFormed({
          method: 'POST',
          path: `/projects/${uploadTarget}/upload`,
          body: new Uint8Array(archive),
          contentType: 'application/gzip',
          auth: 'key',
        });
        expect([200, 422]).toContain(status);
        expect(tmpFiles()).toEqual([]);
      }),
      runs,
    );
  });

  it('never answers 5xx to random bytes under random content types', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 2048 }),
          fc.uint8Array({ maxLength: 512 }).map((b) => new Uint8Array([0x1f, 0x8b, ...b])),
        ),
        fc.option(contentType, { nil: undefined }),
        async (bytes, type) => {
          await expectWellFormed({
            method: 'POST',
            path: `/projects/${uploadTarget}/upload`,
            body: bytes,
            contentType: type,
            auth: 'key',
          });
          expect(tmpFiles()).toEqual([]);
        },
      ),
      runs,
    );
  });
});

describe('after the fuzzing', () => {
  it('still answers a plain request, and the key used throughout still works', async () => {
    const res = await call(`${t.api}/projects`, { key: t.key });
    expect(res.status).toBe(200);
  });
});
