// The swarm runtime's image registry (`--registry`), spoken to over its HTTP API (the Docker Registry
// HTTP API V2, served by distribution and the registries built on it) for one job Docker does not do:
// deleting the images of releases that are gone. The platform pushes an image for every deploy; left
// there, a project deployed every hour would fill the registry's disk, and every account shares it.
//
// A delete takes the image's manifest away (its tag with it). The registry frees the layers in its
// garbage collection, which its operator runs (`registry garbage-collect`), and it takes deletes only
// when its configuration allows them (`storage.delete.enabled`); else it answers 405, said once.
import type { RegistryConfig } from '../config.js';
import { registryAuth } from './drivers/docker.js';

/** The manifest kinds Docker pushes (and OCI's): a HEAD asking for others may be told 404. */
const MANIFEST_TYPES = [
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.oci.image.index.v1+json',
].join(', ');

const REQUEST_TIMEOUT_MS = 15_000;

export class RegistryError extends Error {
  constructor(
    message: string,
    /** `deletes-disabled`: the registry takes no deletes; `refused`: its login refused; else `failed`. */
    readonly kind: 'deletes-disabled' | 'refused' | 'failed',
  ) {
    super(message);
  }
}

export type DeleteOutcome =
  | { deleted: true; digest: string }
  /** `gone`: no such tag (deleted before); `shared`: a tag kept names the same image. */
  | { deleted: false; why: 'gone' | 'shared' };

/** `host/repository:tag` of an image in `registry` as repository and tag; null for another's image. */
export function inRegistry(
  registry: RegistryConfig,
  image: string,
): { repository: string; tag: string } | null {
  const ref = image.split('@')[0]!;
  if (!ref.startsWith(`${registry.host}/`)) return null;
  const name = ref.slice(registry.host.length + 1);
  const colon = name.lastIndexOf(':');
  if (colon <= 0 || name.indexOf('/', colon) !== -1) return null;
  return { repository: name.slice(0, colon), tag: name.slice(colon + 1) };
}

export class RegistryClient {
  /** How the registry is reached: https unless it answered https with plain HTTP (as Docker does). */
  private scheme: 'https' | 'http' | null = null;

  constructor(private readonly registry: RegistryConfig) {}

  /** The digest of `repository:reference`'s manifest; null when the registry has no such tag. */
  async digestOf(repository: string, reference: string): Promise<string | null> {
    const answer = await this.request('HEAD', `/v2/${repository}/manifests/${encodeURIComponent(reference)}`);
    if (answer.status === 404) return null;
    this.expect(answer, [200], `reading ${repository}:${reference}`);
    const digest = answer.headers.get('docker-content-digest');
    if (!digest || !/^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/.test(digest))
      throw new RegistryError(
        `${this.registry.host} named no digest for ${repository}:${reference}`,
        'failed',
      );
    return digest;
  }

  /** The tags of `repository`, read page by page (`pageSize` a page); none when it has none. */
  async tags(repository: string, pageSize = 100): Promise<string[]> {
    const tags: string[] = [];
    let path: string | null = `/v2/${repository}/tags/list?n=${pageSize}`;
    // A registry that links pages round and round is not followed for ever.
    for (let page = 0; path !== null && page < 1_000; page++) {
      const answer = await this.request('GET', path);
      if (answer.status === 404) {
        await discard(answer);
        return tags;
      }
      this.expect(answer, [200], `listing ${repository}`);
      const body = (await answer.json().catch(() => null)) as { tags?: unknown } | null;
      if (body === null || (body.tags !== null && body.tags !== undefined && !Array.isArray(body.tags)))
        throw new RegistryError(
          `${this.registry.host} listed ${repository}'s tags in a form it should not`,
          'failed',
        );
      for (const tag of (body.tags ?? []) as unknown[]) if (typeof tag === 'string') tags.push(tag);
      path = nextPage(answer.headers.get('link'), repository);
    }
    return tags;
  }

  /** The digests of the images `tags` name in `repository` (tags it lacks name none). */
  async digestsOf(repository: string, tags: Iterable<string>): Promise<Set<string>> {
    const digests = new Set<string>();
    for (const tag of new Set(tags)) {
      const digest = await this.digestOf(repository, tag);
      if (digest !== null) digests.add(digest);
    }
    return digests;
  }

  /**
   * Deletes `repository:tag`'s image unless `keptDigests` (digestsOf the tags kept) names it: a delete
   * goes by digest, and would take a kept tag's image too when both name the same one.
   */
  async deleteTag(
    repository: string,
    tag: string,
    keptDigests: ReadonlySet<string> = new Set(),
  ): Promise<DeleteOutcome> {
    const digest = await this.digestOf(repository, tag);
    if (digest === null) return { deleted: false, why: 'gone' };
    if (keptDigests.has(digest)) return { deleted: false, why: 'shared' };
    const answer = await this.request('DELETE', `/v2/${repository}/manifests/${digest}`);
    if (answer.status === 404) {
      await discard(answer);
      return { deleted: false, why: 'gone' };
    }
    this.expect(answer, [200, 202], `deleting ${repository}:${tag}`);
    await discard(answer);
    return { deleted: true, digest };
  }

  private expect(answer: Response, ok: number[], what: string): void {
    if (ok.includes(answer.status)) return;
    // Its connection goes back to the pool once the body is read or cancelled, not at garbage collection.
    void discard(answer);
    const host = this.registry.host;
    if (answer.status === 405)
      throw new RegistryError(
        `${host} does not allow deleting images (its storage.delete.enabled is off): old images stay there`,
        'deletes-disabled',
      );
    if (answer.status === 401 || answer.status === 403) {
      const challenge = answer.headers.get('www-authenticate') ?? '';
      throw new RegistryError(
        /^bearer\b/i.test(challenge)
          ? `${host} asks for token authentication, which Wharf does not use to delete images: old images stay there`
          : `${host} refused the platform's login ${what} (${answer.status})`,
        'refused',
      );
    }
    throw new RegistryError(`${host} answered ${answer.status} ${what}`, 'failed');
  }

  private async request(method: 'GET' | 'HEAD' | 'DELETE', path: string): Promise<Response> {
    const headers: Record<string, string> = { accept: MANIFEST_TYPES };
    const login = registryAuth(this.registry);
    if (login)
      headers.authorization = `Basic ${Buffer.from(`${login.username}:${login.password}`).toString('base64')}`;
    const send = (scheme: 'https' | 'http') =>
      fetch(`${scheme}://${this.registry.host}${path}`, {
        method,
        headers,
        redirect: 'manual',
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    if (this.scheme !== null) return this.send(() => send(this.scheme!));
    try {
      const answer = await send('https');
      this.scheme = 'https';
      return answer;
    } catch (error) {
      // A registry served over plain HTTP (Docker takes those on loopback, or when its daemon lists
      // them as insecure) answers a TLS handshake with an HTTP error line. Nothing else falls back: a
      // certificate refused, or a connection cut, is not a reason to send the login in the clear.
      if (!speaksPlainHttp(error)) throw this.unreachable(error);
      const answer = await this.send(() => send('http'));
      this.scheme = 'http';
      return answer;
    }
  }

  private async send(attempt: () => Promise<Response>): Promise<Response> {
    try {
      return await attempt();
    } catch (error) {
      throw this.unreachable(error);
    }
  }

  private unreachable(error: unknown): RegistryError {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (error as Error).message;
    return new RegistryError(`cannot reach ${this.registry.host}: ${why}`, 'failed');
  }
}

/**
 * The path of the next page from a tags list's `Link` header (`</v2/…/tags/list?last=…&n=…>;
 * rel="next"`); null on the last page, or for a link out of the repository's own list.
 */
function nextPage(link: string | null, repository: string): string | null {
  const next = link ? /<([^>]*)>\s*;\s*rel="?next"?/i.exec(link) : null;
  if (!next) return null;
  const url = new URL(next[1]!, 'http://registry.invalid');
  return url.pathname === `/v2/${repository}/tags/list` ? `${url.pathname}${url.search}` : null;
}

async function discard(answer: Response): Promise<void> {
  await answer.body?.cancel().catch(() => undefined);
}

function speaksPlainHttp(error: unknown): boolean {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return (
    cause?.code === 'ERR_SSL_WRONG_VERSION_NUMBER' ||
    cause?.code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG' ||
    /wrong version number|packet length too long|http request/i.test(cause?.message ?? '')
  );
}

/**
 * Deletes the registry's copies of images whose releases are gone, one at a time, behind the deploy
 * that let them go (a deploy never waits on it). What it cannot do is said through `warn`: a registry
 * that takes no deletes, or refuses the login, once per platform run, not once per image.
 */
export class RegistryJanitor {
  private queue: Promise<void> = Promise.resolve();
  private readonly said = new Set<RegistryError['kind']>();
  /** Images deleted so far (for the platform's own accounting and its tests). */
  deleted = 0;

  constructor(
    private readonly registry: RegistryConfig,
    private readonly warn: (message: string) => void,
    private readonly client = new RegistryClient(registry),
  ) {}

  /**
   * Deletes the images among `images` that the platform built for project `projectId` and pushed
   * here, unless an image in `kept` is the same one under another tag. Any other image is left alone:
   * an image source's (a project may run one from this very registry), and above all another
   * project's, whatever reference a release names.
   */
  drop(projectId: string, images: readonly (string | null)[], kept: readonly (string | null)[] = []): void {
    const repository = `wharf/${projectId.toLowerCase()}`;
    const tagsOf = (list: readonly (string | null)[]) =>
      list.flatMap((image) => {
        const ref = image ? inRegistry(this.registry, image) : null;
        return ref?.repository === repository ? [ref.tag] : [];
      });
    const gone = tagsOf(images);
    if (gone.length === 0) return;
    const keep = tagsOf(kept);
    this.queue = this.queue.then(async () => {
      await this.deleteAll(repository, gone, keep);
    });
  }

  /**
   * Deletes `tags` of `repository` (see deleteTag): `done` when each is gone, `partial` when some
   * could not be deleted, `stopped` when the registry takes no deletes now.
   */
  private async deleteAll(
    repository: string,
    tags: readonly string[],
    keep: readonly string[],
  ): Promise<'done' | 'partial' | 'stopped'> {
    let keptDigests: Set<string>;
    try {
      // Read once for the batch: a kept tag is a release's id, and names the same image throughout.
      keptDigests = await this.client.digestsOf(repository, keep);
    } catch (error) {
      this.report(error);
      return 'stopped';
    }
    let outcome: 'done' | 'partial' = 'done';
    for (const tag of tags) {
      try {
        if ((await this.client.deleteTag(repository, tag, keptDigests)).deleted) this.deleted += 1;
      } catch (error) {
        // The registry takes none now: the others would fail alike.
        if (this.report(error) !== 'failed') return 'stopped';
        outcome = 'partial';
      }
    }
    return outcome;
  }

  /** Says what went wrong (a registry's standing refusal once), and what kind of trouble it was. */
  private report(error: unknown): RegistryError['kind'] {
    const problem = error instanceof RegistryError ? error : new RegistryError(String(error), 'failed');
    if (problem.kind === 'failed') this.warn(problem.message);
    else if (!this.said.has(problem.kind)) {
      this.said.add(problem.kind);
      this.warn(problem.message);
    }
    return problem.kind;
  }

  /**
   * Deletes the images of the projects' repositories whose releases are gone: those a delete missed
   * (the registry was down, the platform stopped first), or all of a deleted project's. A tag is a
   * release's id; `live(projectId)` names the releases whose images stay (kept, or building: one may
   * have pushed its image already). A repository's tags are read before it, so that an image pushed
   * meanwhile belongs to a release it names. A registry that cannot be read stops the sweep, said once:
   * the next start sweeps again. Resolves with the projects whose gone images are all deleted now.
   */
  sweep(
    projectIds: readonly string[],
    live: (projectId: string) => Promise<Iterable<string>>,
  ): Promise<ReadonlySet<string>> {
    const swept = new Set<string>();
    const done = this.queue.then(async () => {
      for (const projectId of projectIds) {
        const repository = `wharf/${projectId.toLowerCase()}`;
        let tags: string[];
        try {
          tags = await this.client.tags(repository);
        } catch (error) {
          const problem = error instanceof RegistryError ? error : new RegistryError(String(error), 'failed');
          if (problem.kind !== 'failed') this.report(problem);
          else this.warn(`${problem.message}; its old images are swept at the next start`);
          return;
        }
        const keep = tags.length === 0 ? new Set<string>() : new Set(await live(projectId));
        const gone = tags.filter((tag) => !keep.has(tag));
        const outcome = gone.length === 0 ? 'done' : await this.deleteAll(repository, gone, [...keep]);
        if (outcome === 'stopped') return;
        if (outcome === 'done') swept.add(projectId);
      }
    });
    // A sweep that failed (its `live` threw) does not hold up the deletes queued after it.
    this.queue = done.catch(() => undefined);
    return done.then(() => swept);
  }

  /** Resolves once the deletes asked for so far are done (for a platform shutting down). */
  idle(): Promise<void> {
    return this.queue;
  }
}
