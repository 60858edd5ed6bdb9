// The registry client that deletes gone releases' images (src/server/runtime/registry-api.ts), against
// Debian's docker-registry (distribution) on loopback. Images are pushed over the registry's own API
// (a config blob, one layer, a manifest), so no container engine is needed.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RegistryConfig } from '../../src/server/config.js';
import {
  RegistryClient,
  RegistryError,
  RegistryJanitor,
  inRegistry,
} from '../../src/server/runtime/registry-api.js';
import { type TestRegistry, registryTags, startRegistry, startRegistryRelay } from '../helpers/engine.js';
import { type TokenService, startTokenService } from '../helpers/registry-tokens.js';
import { selfSignedCertificate } from '../helpers/certificates.js';
import { quietPort } from '../helpers/ports.js';

const reason =
  spawnSync('sh', ['-c', 'command -v docker-registry']).status === 0
    ? null
    : 'docker-registry is not installed (Debian package docker-registry)';

const MANIFEST_V2 = 'application/vnd.docker.distribution.manifest.v2+json';

function basic(user: string, password: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
}

async function pushBlob(host: string, repository: string, content: Buffer, headers: Record<string, string>) {
  const digest = `sha256:${createHash('sha256').update(content).digest('hex')}`;
  const start = await fetch(`http://${host}/v2/${repository}/blobs/uploads/`, { method: 'POST', headers });
  expect(start.status).toBe(202);
  const location = new URL(start.headers.get('location')!, `http://${host}`);
  location.searchParams.set('digest', digest);
  const put = await fetch(location, {
    method: 'PUT',
    headers: { ...headers, 'content-type': 'application/octet-stream' },
    body: content,
  });
  expect(put.status).toBe(201);
  return { digest, size: content.length };
}

/** A small image of its own (random layer) under `tags`; returns its manifest's digest. */
async function pushImage(
  host: string,
  repository: string,
  tags: string[],
  headers: Record<string, string> = {},
): Promise<string> {
  const layer = await pushBlob(host, repository, randomBytes(64), headers);
  const config = await pushBlob(
    host,
    repository,
    Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config: {},
        rootfs: { type: 'layers', diff_ids: [layer.digest] },
      }),
    ),
    headers,
  );
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: MANIFEST_V2,
    config: { mediaType: 'application/vnd.docker.container.image.v1+json', ...config },
    layers: [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', ...layer }],
  });
  let digest = '';
  for (const tag of tags) {
    const put = await fetch(`http://${host}/v2/${repository}/manifests/${tag}`, {
      method: 'PUT',
      headers: { ...headers, 'content-type': MANIFEST_V2 },
      body: manifest,
    });
    expect(put.status).toBe(201);
    digest = put.headers.get('docker-content-digest')!;
  }
  return digest;
}

const open = (host: string): RegistryConfig => ({ host, username: null, password: null });

describe.skipIf(reason !== null)('the registry client that deletes gone releases’ images', () => {
  let registry: TestRegistry;
  beforeAll(async () => {
    registry = await startRegistry();
  }, 30_000);
  afterAll(async () => {
    await registry?.close();
  });

  it('deletes a tag’s image (over plain HTTP, after https was answered with it) and finds it gone after', async () => {
    const repository = 'wharf/p-delete';
    const digest = await pushImage(registry.host, repository, ['r1']);
    await pushImage(registry.host, repository, ['r2']);
    const client = new RegistryClient(open(registry.host));
    expect(await client.digestOf(repository, 'r1')).toBe(digest);
    expect(await client.deleteTag(repository, 'r1')).toEqual({ deleted: true, digest });
    expect(await registryTags(registry, repository)).toEqual(['r2']);
    expect((await fetch(`http://${registry.host}/v2/${repository}/manifests/${digest}`)).status).toBe(404);
    expect(await client.deleteTag(repository, 'r1')).toEqual({ deleted: false, why: 'gone' });
    expect(await client.digestOf(repository, 'never-pushed')).toBeNull();
  });

  it('keeps an image that a kept tag names too: a delete goes by digest and would take both', async () => {
    const repository = 'wharf/p-shared';
    await pushImage(registry.host, repository, ['old', 'current']);
    const client = new RegistryClient(open(registry.host));
    const kept = await client.digestsOf(repository, ['current']);
    expect(await client.deleteTag(repository, 'old', kept)).toEqual({ deleted: false, why: 'shared' });
    expect(await registryTags(registry, repository)).toEqual(['current', 'old']);
  });

  it('deletes only the project’s own images, whatever references its releases name', async () => {
    const warnings: string[] = [];
    const janitor = new RegistryJanitor(open(registry.host), (message) => warnings.push(message));
    await pushImage(registry.host, 'wharf/p-own', ['r1', 'r2']);
    await pushImage(registry.host, 'wharf/p-own', ['r3']);
    await pushImage(registry.host, 'wharf/p-own', ['r4']);
    await pushImage(registry.host, 'wharf/p-other', ['r1']);
    await pushImage(registry.host, 'team/app', ['v1']);
    janitor.drop(
      'P-Own',
      [
        `${registry.host}/wharf/p-own:r3@sha256:${'0'.repeat(64)}`,
        `${registry.host}/wharf/p-own:r1`,
        // Another project's images (r4: a tag the project has too), an image source's, and the same
        // names in another registry.
        `${registry.host}/wharf/p-other:r1`,
        `${registry.host}/wharf/p-other:r4`,
        'registry.example.com:5000/wharf/p-own:r4',
        `${registry.host}/team/app:v1`,
        'registry.example.com:5000/wharf/p-own:r1',
        null,
      ],
      // r1 and r2 are one image: r2 kept, r1 stays with it.
      [`${registry.host}/wharf/p-own:r2`],
    );
    await janitor.idle();
    expect(janitor.deleted).toBe(1);
    expect(await registryTags(registry, 'wharf/p-own')).toEqual(['r1', 'r2', 'r4']);
    expect(await registryTags(registry, 'wharf/p-other')).toEqual(['r1']);
    expect(await registryTags(registry, 'team/app')).toEqual(['v1']);
    expect(warnings).toEqual([]);
  });

  it('sweeps a project’s repository: the images of releases gone go, those kept or building stay', async () => {
    const warnings: string[] = [];
    const janitor = new RegistryJanitor(open(registry.host), (message) => warnings.push(message));
    for (const tag of ['r1', 'r2', 'r3', 'r4']) await pushImage(registry.host, 'wharf/p-sweep', [tag]);
    await pushImage(registry.host, 'wharf/p-sweep-other', ['r1']);
    const asked: string[] = [];
    // p-never-pushed: a project whose repository the registry does not have (nothing to ask).
    const swept = await janitor.sweep(['p-never-pushed', 'P-Sweep'], async (projectId) => {
      asked.push(projectId);
      return projectId === 'P-Sweep' ? ['r3', 'r4', 'r5-building-not-pushed-yet'] : [];
    });
    // Both are swept: every image of a release gone is deleted.
    expect(swept).toEqual(new Set(['p-never-pushed', 'P-Sweep']));
    expect(asked).toEqual(['P-Sweep']);
    expect(await registryTags(registry, 'wharf/p-sweep')).toEqual(['r3', 'r4']);
    expect(await registryTags(registry, 'wharf/p-sweep-other')).toEqual(['r1']);
    expect(janitor.deleted).toBe(2);
    expect(warnings).toEqual([]);
  });

  it('empties a deleted project’s repository, and goes on after a sweep that failed', async () => {
    const warnings: string[] = [];
    const janitor = new RegistryJanitor(open(registry.host), (message) => warnings.push(message));
    for (const tag of ['r1', 'r2']) await pushImage(registry.host, 'wharf/p-failing', [tag]);
    for (const tag of ['r1', 'r2', 'r3']) await pushImage(registry.host, 'wharf/p-deleted', [tag]);
    // The releases could not be read (the store failed): that sweep fails, and deletes nothing.
    const failed = janitor.sweep(['P-Failing'], async () => {
      throw new Error('the store is closed');
    });
    const emptied = janitor.sweep(['P-Deleted'], async () => []);
    await expect(failed).rejects.toThrow('the store is closed');
    expect(await emptied).toEqual(new Set(['P-Deleted']));
    await janitor.idle();
    expect(await registryTags(registry, 'wharf/p-deleted')).toEqual([]);
    expect(await registryTags(registry, 'wharf/p-failing')).toEqual(['r1', 'r2']);
    expect(janitor.deleted).toBe(3);
    expect(warnings).toEqual([]);
  });

  it('reads the kept images’ digests once for a batch of deletes, not once for each image', async () => {
    const repository = 'wharf/p-batch';
    for (const tag of ['k1', 'k2', 'k3', 'g1', 'g2', 'g3', 'g4'])
      await pushImage(registry.host, repository, [tag]);
    // What the janitor asks the registry, seen through a plain HTTP relay in front of it.
    const heads: string[] = [];
    const relay = await startRegistryRelay(registry.host, (req) => {
      if (req.method === 'HEAD') heads.push(req.url!.replace(`/v2/${repository}/manifests/`, ''));
    });
    try {
      const warnings: string[] = [];
      const janitor = new RegistryJanitor(open(relay.host), (m) => warnings.push(m));
      janitor.sweep(['P-Batch'], async () => ['k1', 'k2', 'k3']);
      await janitor.idle();
      expect(warnings).toEqual([]);
      expect(janitor.deleted).toBe(4);
      expect(await registryTags(registry, repository)).toEqual(['k1', 'k2', 'k3']);
      // One HEAD for each kept tag, then one for each image deleted.
      expect(heads.sort()).toEqual(['g1', 'g2', 'g3', 'g4', 'k1', 'k2', 'k3']);
    } finally {
      await relay.close();
    }
  });

  it('reads a repository’s tags page by page', async () => {
    const tags = ['a1', 'a2', 'a3', 'a4', 'a5'];
    for (const tag of tags) await pushImage(registry.host, 'wharf/p-pages', [tag]);
    const client = new RegistryClient(open(registry.host));
    expect((await client.tags('wharf/p-pages', 2)).sort()).toEqual(tags);
    expect(await client.tags('wharf/p-no-such-repository')).toEqual([]);
  });

  it('says once that a registry takes no deletes, and leaves its images', async () => {
    const closed = await startRegistry(undefined, { deletes: false });
    try {
      const repository = 'wharf/p-kept';
      await pushImage(closed.host, repository, ['r1']);
      await pushImage(closed.host, repository, ['r2']);
      const error = await new RegistryClient(open(closed.host)).deleteTag(repository, 'r1').catch((e) => e);
      expect(error).toBeInstanceOf(RegistryError);
      expect((error as RegistryError).kind).toBe('deletes-disabled');
      expect((error as RegistryError).message).toMatch(/storage\.delete\.enabled is off/);

      const warnings: string[] = [];
      const janitor = new RegistryJanitor(open(closed.host), (message) => warnings.push(message));
      janitor.drop('p-kept', [`${closed.host}/${repository}:r1`, `${closed.host}/${repository}:r2`]);
      janitor.drop('p-kept', [`${closed.host}/${repository}:r2`]);
      // A sweep of a deleted project's repository (nothing kept) does not sweep it either.
      expect(await janitor.sweep(['P-Kept'], async () => [])).toEqual(new Set());
      await janitor.idle();
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(closed.host);
      expect(janitor.deleted).toBe(0);
      expect(await registryTags(closed, repository)).toEqual(['r1', 'r2']);
    } finally {
      await closed.close();
    }
  }, 30_000);

  it('logs in with the platform’s login, and says a refused one without its password', async () => {
    const password = randomBytes(12).toString('hex');
    const guarded = await startRegistry({ user: 'pusher', password });
    try {
      const repository = 'wharf/p-guarded';
      const headers = basic('pusher', password);
      await pushImage(guarded.host, repository, ['r1'], headers);
      const wrong = `wrong-${randomBytes(8).toString('hex')}`;
      const error = await new RegistryClient({ host: guarded.host, username: 'pusher', password: wrong })
        .deleteTag(repository, 'r1')
        .catch((e) => e);
      expect(error).toBeInstanceOf(RegistryError);
      expect((error as RegistryError).kind).toBe('refused');
      expect((error as RegistryError).message).toMatch(/refused the platform's login/);
      expect((error as RegistryError).message).not.toContain(wrong);
      expect(await registryTags(guarded, repository)).toEqual(['r1']);

      const client = new RegistryClient({ host: guarded.host, username: 'pusher', password });
      expect((await client.deleteTag(repository, 'r1')).deleted).toBe(true);
      expect(await registryTags(guarded, repository)).toEqual([]);
    } finally {
      await guarded.close();
    }
  }, 30_000);

  it('stops a sweep at a registry it cannot read, said once, and sweeps nothing of it', async () => {
    const gone = await startRegistry();
    const host = gone.host;
    await gone.close();
    const warnings: string[] = [];
    const janitor = new RegistryJanitor(open(host), (message) => warnings.push(message));
    let asked = 0;
    const swept = await janitor.sweep(['p1', 'p2', 'p3'], async () => {
      asked += 1;
      return [];
    });
    await janitor.idle();
    expect(swept).toEqual(new Set());
    expect(asked).toBe(0);
    expect(warnings).toEqual([
      `cannot reach ${host}: ECONNREFUSED; its old images are deleted once it answers again`,
    ]);
    // The projects it did not get to are behind, for the next sweep (once).
    expect(janitor.takeBehind()).toEqual(['p1', 'p2', 'p3']);
    expect(janitor.takeBehind()).toEqual([]);
  }, 30_000);

  it('keeps a project whose deletes the registry did not answer for a later sweep, and none it refused', async () => {
    const relay = await startRegistryRelay(registry.host);
    try {
      const repository = 'wharf/p-behind';
      await pushImage(registry.host, repository, ['r1']);
      await pushImage(registry.host, repository, ['r2']);
      const warnings: string[] = [];
      const janitor = new RegistryJanitor(open(relay.host), (message) => warnings.push(message));
      relay.down = true;
      janitor.drop('p-behind', [`${relay.host}/${repository}:r1`], [`${relay.host}/${repository}:r2`]);
      await janitor.idle();
      expect(warnings).toEqual([expect.stringMatching(new RegExp(`^cannot reach ${relay.host}: `))]);
      expect(janitor.takeBehind()).toEqual(['p-behind']);
      // Swept again while it is still down: kept behind, and the outage said once.
      for (let sweep = 0; sweep < 2; sweep++)
        expect(await janitor.sweep(['p-behind'], async () => ['r2'])).toEqual(new Set());
      expect(warnings).toHaveLength(2);
      expect(warnings[1]).toMatch(/its old images are deleted once it answers again$/);
      relay.down = false;
      // The later sweep deletes what the drop missed, and nothing is behind after it.
      const swept = await janitor.sweep(janitor.takeBehind(), async () => ['r2']);
      expect(swept).toEqual(new Set(['p-behind']));
      expect(await registryTags(registry, repository)).toEqual(['r2']);
      expect(janitor.takeBehind()).toEqual([]);
      // Once it answered, another outage is said again.
      relay.down = true;
      await janitor.sweep(['p-behind'], async () => ['r2']);
      expect(warnings).toHaveLength(3);
    } finally {
      await relay.close();
    }
    // A registry that takes no deletes is not asked again and again.
    const closed = await startRegistry(undefined, { deletes: false });
    try {
      await pushImage(closed.host, 'wharf/p-closed', ['r1']);
      const janitor = new RegistryJanitor(open(closed.host), () => undefined);
      janitor.drop('p-closed', [`${closed.host}/wharf/p-closed:r1`]);
      await janitor.idle();
      expect(janitor.takeBehind()).toEqual([]);
    } finally {
      await closed.close();
    }
  }, 30_000);

  it('says a registry it cannot reach is unreachable', async () => {
    // A port nothing listens on: the registry's, once it is stopped.
    const gone = await startRegistry();
    const host = gone.host;
    await gone.close();
    const error = await new RegistryClient(open(host)).deleteTag('wharf/p', 'r1').catch((e) => e);
    expect(error).toBeInstanceOf(RegistryError);
    expect((error as RegistryError).kind).toBe('failed');
    expect((error as RegistryError).message).toMatch(new RegExp(`cannot reach ${host}: ECONNREFUSED`));
  }, 30_000);
});

describe('image references in the platform’s registry', () => {
  const registry = open('127.0.0.1:5000');
  it('splits repository and tag, a digest after them left out', () => {
    expect(inRegistry(registry, '127.0.0.1:5000/wharf/p1:r1')).toEqual({ repository: 'wharf/p1', tag: 'r1' });
    expect(inRegistry(registry, `127.0.0.1:5000/wharf/p1:r1@sha256:${'a'.repeat(64)}`)).toEqual({
      repository: 'wharf/p1',
      tag: 'r1',
    });
  });

  it('takes no image of another registry, and none without a tag', () => {
    expect(inRegistry(registry, '127.0.0.1:5001/wharf/p1:r1')).toBeNull();
    expect(inRegistry(registry, '127.0.0.1:50000/wharf/p1:r1')).toBeNull();
    expect(inRegistry(registry, 'wharf/p1:r1')).toBeNull();
    expect(inRegistry(registry, '127.0.0.1:5000/wharf/p1')).toBeNull();
  });
});

describe.skipIf(reason !== null)('a registry behind a token service', () => {
  const password = randomBytes(12).toString('hex');
  const login = { user: 'pusher', password };
  let tokens: TokenService;
  let registry: TestRegistry;
  const started: Array<{ close(): Promise<void> }> = [];

  async function serviceAndRegistry(options: Parameters<typeof startTokenService>[1] = {}) {
    const service = await startTokenService(login, options);
    if (!service) throw new Error('openssl is needed to sign the test tokens');
    started.push(service);
    const guarded = await startRegistry(undefined, { tokens: service });
    started.push(guarded);
    return { service, guarded };
  }

  /** Pushes and reads as the test itself, with a token the service would grant for everything. */
  const asTest = (service: TokenService, repository: string) => ({
    authorization: `Bearer ${service.mint([{ type: 'repository', name: repository, actions: ['pull', 'push', 'delete'] }])}`,
  });

  async function tagsOf(service: TokenService, host: string, repository: string): Promise<string[]> {
    const answer = await fetch(`http://${host}/v2/${repository}/tags/list`, {
      headers: asTest(service, repository),
    });
    expect(answer.status).toBe(200);
    return (((await answer.json()) as { tags: string[] | null }).tags ?? []).sort();
  }

  beforeAll(async () => {
    ({ service: tokens, guarded: registry } = await serviceAndRegistry());
  }, 30_000);
  afterAll(async () => {
    for (const one of started.reverse()) await one.close();
  });

  it('asks the token service for a token with the platform’s login, deletes with it, and keeps it for the next', async () => {
    const repository = 'wharf/p-token';
    await pushImage(registry.host, repository, ['r1'], asTest(tokens, repository));
    await pushImage(registry.host, repository, ['r2'], asTest(tokens, repository));
    tokens.asked.length = 0;
    const client = new RegistryClient({ host: registry.host, username: login.user, password });
    expect((await client.deleteTag(repository, 'r1')).deleted).toBe(true);
    expect(await tagsOf(tokens, registry.host, repository)).toEqual(['r2']);
    // The read asked for pull; the delete for delete, with pull kept so that the next read needs no other.
    expect(tokens.asked).toEqual([
      { scope: `repository:${repository}:pull`, account: 'pusher', loggedIn: true },
      { scope: `repository:${repository}:delete,pull`, account: 'pusher', loggedIn: true },
    ]);
    expect((await client.deleteTag(repository, 'r2')).deleted).toBe(true);
    expect(await client.tags(repository)).toEqual([]);
    expect(tokens.asked).toHaveLength(2);
  }, 30_000);

  it('sweeps a deleted project’s repository through the janitor', async () => {
    const repository = 'wharf/p-token-gone';
    await pushImage(registry.host, repository, ['r1', 'r2'], asTest(tokens, repository));
    const warnings: string[] = [];
    const janitor = new RegistryJanitor({ host: registry.host, username: login.user, password }, (message) =>
      warnings.push(message),
    );
    expect(await janitor.sweep(['p-token-gone'], async () => [])).toEqual(new Set(['p-token-gone']));
    await janitor.idle();
    expect(warnings).toEqual([]);
    expect(await tagsOf(tokens, registry.host, repository)).toEqual([]);
  }, 30_000);

  it('says a token service that refuses the login, without the password, and deletes nothing', async () => {
    const repository = 'wharf/p-token-wrong';
    await pushImage(registry.host, repository, ['r1'], asTest(tokens, repository));
    const wrong = `wrong-${randomBytes(8).toString('hex')}`;
    const error = await new RegistryClient({ host: registry.host, username: 'pusher', password: wrong })
      .deleteTag(repository, 'r1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RegistryError);
    expect((error as RegistryError).kind).toBe('refused');
    expect((error as RegistryError).message).toBe(
      `${registry.host}'s token service refused the platform's login (401)`,
    );
    expect((error as RegistryError).message).not.toContain(wrong);
    expect(tokens.asked.at(-1)).toMatchObject({ loggedIn: false });
    expect(await tagsOf(tokens, registry.host, repository)).toEqual(['r1']);
  }, 30_000);

  it('says a login the token service grants no delete is refused, and leaves the image', async () => {
    const { service, guarded } = await serviceAndRegistry({ allow: (action) => action !== 'delete' });
    const repository = 'wharf/p-token-readonly';
    await pushImage(guarded.host, repository, ['r1'], asTest(service, repository));
    const error = await new RegistryClient({ host: guarded.host, username: login.user, password })
      .deleteTag(repository, 'r1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RegistryError);
    expect((error as RegistryError).kind).toBe('refused');
    expect((error as RegistryError).message).toBe(
      `${guarded.host} refused the platform's login deleting ${repository}:r1 (401)`,
    );
    expect(await tagsOf(service, guarded.host, repository)).toEqual(['r1']);
  }, 30_000);

  it('asks for a new token once the last one expires', async () => {
    // Expiring in 2 s, a token is kept for 1 s: a request sent as it ends would be refused.
    const { service, guarded } = await serviceAndRegistry({ expiresIn: 2 });
    const repository = 'wharf/p-token-expiring';
    await pushImage(guarded.host, repository, ['r1'], asTest(service, repository));
    const client = new RegistryClient({ host: guarded.host, username: login.user, password });
    await client.digestOf(repository, 'r1');
    await client.digestOf(repository, 'r1');
    expect(service.asked).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(await client.digestOf(repository, 'r1')).toMatch(/^sha256:/);
    expect(service.asked).toHaveLength(2);
  }, 30_000);

  it('says a token service that answers without a token, or too much, and reads no more of it', async () => {
    for (const reply of [
      () => '{"expires_in":60}',
      () => 'not json',
      (token: string) => JSON.stringify({ token, pad: 'x'.repeat(512 * 1024) }),
    ]) {
      const { service, guarded } = await serviceAndRegistry({ reply });
      const error = await new RegistryClient({ host: guarded.host, username: login.user, password })
        .digestOf('wharf/p-token-broken', 'r1')
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RegistryError);
      expect((error as RegistryError).message).toBe(
        `${guarded.host}'s token service answered without a token`,
      );
      expect(service.asked).toHaveLength(1);
    }
  }, 60_000);

  it('says a token service it cannot reach', async () => {
    const { service, guarded } = await serviceAndRegistry();
    await service.close();
    const error = await new RegistryClient({ host: guarded.host, username: login.user, password })
      .digestOf('wharf/p-token-none', 'r1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RegistryError);
    expect((error as RegistryError).message).toMatch(
      new RegExp(`^cannot reach ${guarded.host}'s token service at 127\\.0\\.0\\.1:\\d+: ECONNREFUSED$`),
    );
  }, 30_000);
});

// A registry behind a TLS-terminating proxy whose certificate a private CA signed (here: self-signed),
// trusted as Docker's engine trusts it, through `certs.d/<host:port>/*.crt`.
describe.skipIf(reason !== null)('a registry over HTTPS with a private CA', () => {
  const password = randomBytes(12).toString('hex');
  const login = { user: 'pusher', password };
  const started: Array<{ close(): Promise<void> }> = [];
  const certsDirs: string[] = [];
  let certificate: { certPem: string; keyPem: string };

  /** The platform's login to the registry at `host`, with `certsDir` for its trust. */
  const over = (host: string, certsDir: string): RegistryConfig => ({
    host,
    username: login.user,
    password,
    certsDir,
  });

  /** A certs.d folder that trusts `pems` for `host` (none: an empty folder). */
  const certsDirFor = (host: string, pems: Record<string, string>) => {
    const dir = mkdtempSync(join(tmpdir(), 'wharf-certs-d-'));
    certsDirs.push(dir);
    mkdirSync(join(dir, host));
    for (const [name, pem] of Object.entries(pems)) writeFileSync(join(dir, host, name), pem);
    return dir;
  };

  /** A registry with the platform's login, behind a TLS relay that notes each request it gets. */
  const behindTls = async () => {
    const plain = await startRegistry({ user: login.user, password });
    started.push(plain);
    const asked: string[] = [];
    const relay = await startRegistryRelay(plain.host, (req) => asked.push(`${req.method} ${req.url}`), {
      tls: certificate,
    });
    started.push(relay);
    return { plain, relay, asked };
  };

  beforeAll(() => {
    const made = selfSignedCertificate('127.0.0.1');
    if (!made) throw new Error('openssl is needed to make the registry’s certificate');
    certificate = made;
  });
  afterAll(async () => {
    for (const one of started.reverse()) await one.close();
    for (const dir of certsDirs) rmSync(dir, { recursive: true, force: true });
  });

  it('trusts the CA Docker’s certs.d holds for the registry, and deletes over HTTPS with the login', async () => {
    const { plain, relay, asked } = await behindTls();
    const repository = 'wharf/p-private-ca';
    await pushImage(plain.host, repository, ['r1'], basic(login.user, password));
    await pushImage(plain.host, repository, ['r2'], basic(login.user, password));
    // A file that is not a certificate beside it, and one of another name, are left out.
    const certsDir = certsDirFor(relay.host, {
      'ca.crt': certificate.certPem,
      'notes.crt': 'not a certificate',
      'README.txt': certificate.keyPem,
    });
    const warnings: string[] = [];
    const janitor = new RegistryJanitor(over(relay.host, certsDir), (m) => warnings.push(m));
    expect(await janitor.sweep(['p-private-ca'], async () => ['r2'])).toEqual(new Set(['p-private-ca']));
    await janitor.idle();
    expect(warnings).toEqual([]);
    expect(await registryTags(plain, repository)).toEqual(['r2']);
    expect(asked.some((line) => line.startsWith('DELETE '))).toBe(true);
  }, 30_000);

  it('refuses a certificate it does not trust, and never falls back to plain HTTP with the login', async () => {
    const { relay, asked } = await behindTls();
    for (const certsDir of [
      certsDirFor(relay.host, {}),
      certsDirFor('127.0.0.1:1', { 'ca.crt': certificate.certPem }),
    ]) {
      const error = await new RegistryClient(over(relay.host, certsDir))
        .tags('wharf/p-untrusted')
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RegistryError);
      expect((error as RegistryError).kind).toBe('tls');
      expect((error as RegistryError).message).toBe(
        `cannot reach ${relay.host}: its certificate's issuer is not trusted (DEPTH_ZERO_SELF_SIGNED_CERT); put the CA's certificate in ${join(certsDir, relay.host, 'ca.crt')}, as Docker's engine takes it`,
      );
      expect((error as RegistryError).message).not.toContain(password);
    }
    expect(asked).toEqual([]);
  }, 30_000);

  it('says an untrusted certificate once, keeps the project behind, and uses a CA put in certs.d later without a restart', async () => {
    const { plain, relay, asked } = await behindTls();
    const repository = 'wharf/p-ca-later';
    await pushImage(plain.host, repository, ['r1'], basic(login.user, password));
    await pushImage(plain.host, repository, ['r2'], basic(login.user, password));
    const certsDir = certsDirFor(relay.host, {});
    const warnings: string[] = [];
    const janitor = new RegistryJanitor(over(relay.host, certsDir), (m) => warnings.push(m));
    for (let sweep = 0; sweep < 2; sweep++)
      expect(await janitor.sweep(['p-ca-later'], async () => ['r2'])).toEqual(new Set());
    janitor.drop('p-ca-later', [`${relay.host}/${repository}:r1`]);
    await janitor.idle();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/its certificate's issuer is not trusted/);
    expect(asked).toEqual([]);
    // Behind, for the next sweep (every few minutes while the platform runs).
    expect(janitor.takeBehind()).toEqual(['p-ca-later']);
    writeFileSync(join(certsDir, relay.host, 'ca.crt'), certificate.certPem);
    expect(await janitor.sweep(['p-ca-later'], async () => ['r2'])).toEqual(new Set(['p-ca-later']));
    expect(await registryTags(plain, repository)).toEqual(['r2']);
    expect(warnings).toHaveLength(1);
    expect(janitor.takeBehind()).toEqual([]);
  }, 30_000);

  it('refuses a token service the HTTPS registry names over plain HTTP, and sends it no login', async () => {
    const service = await startTokenService(login);
    if (!service) throw new Error('openssl is needed to sign the test tokens');
    started.push(service);
    const guarded = await startRegistry(undefined, { tokens: service });
    started.push(guarded);
    const relay = await startRegistryRelay(guarded.host, () => undefined, { tls: certificate });
    started.push(relay);
    const certsDir = certsDirFor(relay.host, { 'ca.crt': certificate.certPem });
    const error = await new RegistryClient(over(relay.host, certsDir))
      .tags('wharf/p-http-realm')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RegistryError);
    expect((error as RegistryError).kind).toBe('refused');
    expect((error as RegistryError).message).toMatch(
      new RegExp(
        `^${relay.host.replace(/\./g, '\\.')} named a token service at http://127\\.0\\.0\\.1:\\d+, not over https: the platform sends its login there over https only$`,
      ),
    );
    expect(service.asked).toEqual([]);
  }, 30_000);
});

// A registry that asks for a client certificate (mutual TLS), as Docker's engine presents it from
// `certs.d/<host:port>/*.cert` with the `*.key` of the same name.
type Pem = { certPem: string; keyPem: string };

describe.skipIf(reason !== null)('a registry that asks for a client certificate', () => {
  const password = randomBytes(12).toString('hex');
  const login = { user: 'pusher', password };
  const started: Array<{ close(): Promise<void> }> = [];
  const dirs: string[] = [];
  let server: { certPem: string; keyPem: string };
  let client: { certPem: string; keyPem: string };
  let stranger: { certPem: string; keyPem: string };
  let plain: { host: string };
  let relay: { host: string };
  const asked: string[] = [];

  const certsDirWith = (files: Record<string, string>) => {
    const dir = mkdtempSync(join(tmpdir(), 'wharf-certs-d-'));
    dirs.push(dir);
    mkdirSync(join(dir, relay.host));
    for (const [name, pem] of Object.entries(files)) writeFileSync(join(dir, relay.host, name), pem);
    return dir;
  };
  const clientOf = (certsDir: string) =>
    new RegistryClient({ host: relay.host, username: login.user, password, certsDir });
  const failure = async (certsDir: string) => {
    const error = await clientOf(certsDir)
      .tags('wharf/p-mtls')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RegistryError);
    const { message } = error as RegistryError;
    expect((error as RegistryError).kind, message).toBe('tls');
    expect(message).not.toContain(password);
    expect(message).not.toContain('PRIVATE KEY');
    return message;
  };

  beforeAll(async () => {
    const made = [
      selfSignedCertificate('127.0.0.1'),
      selfSignedCertificate('wharf-platform'),
      selfSignedCertificate('someone-else'),
    ];
    if (made.some((m) => m === null)) throw new Error('openssl is needed to make the certificates');
    [server, client, stranger] = made as [Pem, Pem, Pem];
    const registry = await startRegistry({ user: login.user, password });
    started.push(registry);
    plain = registry;
    const front = await startRegistryRelay(registry.host, (req) => asked.push(`${req.method} ${req.url}`), {
      tls: { ...server, clientCa: client.certPem },
    });
    started.push(front);
    relay = front;
  });
  afterAll(async () => {
    for (const one of started.reverse()) await one.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('presents the certs.d client certificate, and deletes with it', async () => {
    const repository = 'wharf/p-mtls';
    await pushImage(plain.host, repository, ['r1'], basic(login.user, password));
    await pushImage(plain.host, repository, ['r2'], basic(login.user, password));
    const certsDir = certsDirWith({
      'ca.crt': server.certPem,
      'client.cert': client.certPem,
      'client.key': client.keyPem,
    });
    const warnings: string[] = [];
    const janitor = new RegistryJanitor({ host: relay.host, username: login.user, password, certsDir }, (m) =>
      warnings.push(m),
    );
    expect(await janitor.sweep(['p-mtls'], async () => ['r2'])).toEqual(new Set(['p-mtls']));
    expect(warnings).toEqual([]);
    expect(await registryTags(plain, repository)).toEqual(['r2']);
    expect(asked.some((line) => line.startsWith('DELETE /v2/wharf/p-mtls/manifests/'))).toBe(true);
  }, 30_000);

  it('says where the client certificate goes when it has none', async () => {
    asked.length = 0;
    const none = certsDirWith({ 'ca.crt': server.certPem });
    expect(await failure(none)).toBe(
      `cannot reach ${relay.host}: it asks for a client certificate; put it in ${join(none, relay.host, 'client.cert')} and its key in ${join(none, relay.host, 'client.key')}, as Docker's engine takes them`,
    );
    expect(asked).toEqual([]);
  }, 30_000);

  it('says the registry refused the client certificate, in the words of its TLS alert', async () => {
    // OpenSSL's own server, which ends the handshake with an alert for a certificate it does not take
    // (Node's server just closes): as a registry's TLS front (Go's, HAProxy's) does.
    const dir = mkdtempSync(join(tmpdir(), 'wharf-mtls-server-'));
    dirs.push(dir);
    for (const [name, pem] of Object.entries({
      'cert.pem': server.certPem,
      'key.pem': server.keyPem,
      'clients.pem': client.certPem,
    }))
      writeFileSync(join(dir, name), pem);
    const port = await quietPort();
    const openssl = spawn(
      'openssl',
      [
        's_server',
        '-accept',
        `127.0.0.1:${port}`,
        '-cert',
        join(dir, 'cert.pem'),
        '-key',
        join(dir, 'key.pem'),
        '-CAfile',
        join(dir, 'clients.pem'),
        '-Verify',
        '1',
        '-verify_return_error',
        '-www',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    started.push({ close: async () => void openssl.kill('SIGKILL') });
    await new Promise<void>((resolve, reject) => {
      openssl.stdout.setEncoding('utf8').on('data', (text: string) => text.includes('ACCEPT') && resolve());
      openssl.once('exit', (code) => reject(new Error(`openssl s_server exited ${code}`)));
    });
    const host = `127.0.0.1:${port}`;
    const certsDir = mkdtempSync(join(tmpdir(), 'wharf-certs-d-'));
    dirs.push(certsDir);
    mkdirSync(join(certsDir, host));
    writeFileSync(join(certsDir, host, 'ca.crt'), server.certPem);
    writeFileSync(join(certsDir, host, 'client.cert'), stranger.certPem);
    writeFileSync(join(certsDir, host, 'client.key'), stranger.keyPem);
    const error = await new RegistryClient({ host, username: login.user, password, certsDir })
      .tags('wharf/p-mtls')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RegistryError);
    const { message, kind } = error as RegistryError;
    expect(kind, message).toBe('tls');
    expect(message).toBe(
      `cannot reach ${host}: it refused the client certificate in ${join(certsDir, host)} (ERR_SSL_TLSV1_ALERT_UNKNOWN_CA)`,
    );
    expect(message).not.toContain(password);
  }, 30_000);

  it('refuses a .cert without its .key, and a .key without its .cert, before it connects', async () => {
    asked.length = 0;
    const lone = certsDirWith({ 'ca.crt': server.certPem, 'client.cert': client.certPem });
    expect(await failure(lone)).toBe(
      `the client certificate ${join(lone, relay.host, 'client.cert')} has no key beside it (client.key); CA certificates end in .crt`,
    );
    const keyOnly = certsDirWith({ 'ca.crt': server.certPem, 'client.key': client.keyPem });
    expect(await failure(keyOnly)).toBe(
      `the key ${join(keyOnly, relay.host, 'client.key')} has no client certificate beside it (client.cert)`,
    );
    expect(asked).toEqual([]);
  }, 30_000);
});
