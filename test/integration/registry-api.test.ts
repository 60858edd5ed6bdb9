// The registry client that deletes gone releases' images (src/server/runtime/registry-api.ts), against
// Debian's docker-registry (distribution) on loopback. Images are pushed over the registry's own API
// (a config blob, one layer, a manifest), so no container engine is needed.
import { spawnSync } from 'node:child_process';
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
      `cannot reach ${host}: ECONNREFUSED; its old images are swept at the next start`,
    ]);
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
