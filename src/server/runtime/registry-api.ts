// The swarm runtime's image registry (`--registry`), spoken to over its HTTP API (the Docker Registry
// HTTP API V2, served by distribution and the registries built on it) for one job Docker does not do:
// deleting the images of releases that are gone. The platform pushes an image for every deploy; left
// there, a project deployed every hour would fill the registry's disk, and every account shares it.
//
// A delete takes the image's manifest away (its tag with it). The registry frees the layers in its
// garbage collection, which its operator runs (`registry garbage-collect`), and it takes deletes only
// when its configuration allows them (`storage.delete.enabled`); else it answers 405, said once.
//
// A registry behind a token service (distribution's `auth.token`, and the registries built on it)
// answers 401 with a Bearer challenge naming the service (its realm) and the scope wanted: the client
// asks the service for a token with the platform's login, as Docker does, and goes on with it until it
// expires (https://distribution.github.io/distribution/spec/auth/token/).
//
// A registry whose certificate a private CA signed, or that asks for a client certificate, is spoken to
// as Docker's engine speaks to it: with what `/etc/docker/certs.d/<host:port>/` holds (CA certificates
// in `*.crt`, trusted besides the system's roots; a client certificate in `*.cert` with its key in the
// `*.key` of the same name), for that registry and its token service only. The folder is read again
// for each request, as the engine reads it for each connection: a CA put there later is used without a
// restart.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { isIP } from 'node:net';
import { type ConnectionOptions, connect as tlsConnect, rootCertificates } from 'node:tls';
import authHeader from 'auth-header';
import type { Agent } from 'undici';
import type { RegistryConfig } from '../config.js';
import { registryAuth } from './drivers/docker.js';

/** Where Docker's engine keeps what it trusts for each registry: `<dir>/<host:port>/`. */
export const DOCKER_CERTS_DIR = '/etc/docker/certs.d';

/** What Docker's engine takes from a registry's folder of certs.d. */
export interface RegistryTrust {
  /** CA certificates trusted besides the system's roots (each `*.crt` that holds one). */
  ca: string[];
  /** The client certificate presented: the first `*.cert` in name order, with its `*.key`. */
  client: { cert: string; key: string } | null;
}

/**
 * What `certsDir` holds for registry `host` (nothing when it has no folder there). A `*.crt` that holds
 * no certificate is left out. A `*.cert` without its `*.key`, or a `*.key` without its `*.cert`, is
 * refused (a RegistryError of kind `tls`), as Docker's engine refuses the folder.
 */
export function registryTrust(host: string, certsDir = DOCKER_CERTS_DIR): RegistryTrust {
  const dir = join(certsDir, host);
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return { ca: [], client: null };
  }
  const read = (name: string) => {
    try {
      return readFileSync(join(dir, name), 'utf8');
    } catch {
      return null;
    }
  };
  const ca = names.flatMap((name) => {
    const pem = name.endsWith('.crt') ? read(name) : null;
    return pem?.includes('-----BEGIN CERTIFICATE-----') ? [pem] : [];
  });
  const stems = (ext: string) =>
    new Set(names.filter((n) => n.endsWith(ext)).map((n) => n.slice(0, -ext.length)));
  const certs = stems('.cert');
  const keys = stems('.key');
  for (const stem of certs)
    if (!keys.has(stem))
      throw new RegistryError(
        `the client certificate ${join(dir, `${stem}.cert`)} has no key beside it (${stem}.key); CA certificates end in .crt`,
        'tls',
      );
  for (const stem of keys)
    if (!certs.has(stem))
      throw new RegistryError(
        `the key ${join(dir, `${stem}.key`)} has no client certificate beside it (${stem}.cert)`,
        'tls',
      );
  const first = [...certs][0];
  if (first === undefined) return { ca, client: null };
  const cert = read(`${first}.cert`);
  const key = read(`${first}.key`);
  if (cert === null || key === null)
    throw new RegistryError(
      `cannot read the client certificate ${join(dir, `${first}.cert`)} or its key`,
      'tls',
    );
  return { ca, client: { cert, key } };
}

/** The manifest kinds Docker pushes (and OCI's): a HEAD asking for others may be told 404. */
const MANIFEST_TYPES = [
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.oci.image.index.v1+json',
].join(', ');

const REQUEST_TIMEOUT_MS = 15_000;
/** The most of a token service's answer read: a token is a few KiB. */
const MAX_TOKEN_ANSWER = 256 * 1024;
/** The most tokens kept at once (one a repository). */
const MAX_BEARERS = 1_000;
/** How long a token is taken to live when its service does not say (the spec's default). */
const DEFAULT_TOKEN_SECONDS = 60;

export class RegistryError extends Error {
  constructor(
    message: string,
    /**
     * `deletes-disabled`: the registry takes no deletes; `refused`: its login refused; `tls`: its
     * certificate not trusted, or a client certificate wanted, refused or unreadable (what certs.d
     * holds can mend it without a restart); else `failed`.
     */
    readonly kind: 'deletes-disabled' | 'refused' | 'tls' | 'failed',
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

/** A token from the registry's token service, for one repository (or scope), while it lives. */
interface Bearer {
  token: string;
  until: number;
  /** The actions it was asked for (`pull`, `delete`): a new one asks for these as well. */
  actions: Set<string>;
}

export class RegistryClient {
  /** How the registry is reached: https unless it answered https with plain HTTP (as Docker does). */
  private scheme: 'https' | 'http' | null = null;
  /** By repository (or, for another kind of scope, by the scope). */
  private readonly bearers = new Map<string, Bearer>();

  /** What connects with the registry's own trust (registryTrust), and the trust it was made with. */
  private dispatcher: { key: string; agent: Promise<Agent> } | null = null;

  constructor(private readonly registry: RegistryConfig) {}

  /** The TLS options of a connection to the registry: its own trust, when certs.d gives it one. */
  private connectOptions(
    trust = registryTrust(this.registry.host, this.registry.certsDir),
  ): ConnectionOptions {
    return {
      ...(trust.ca.length > 0 ? { ca: [...rootCertificates, ...trust.ca] } : {}),
      ...(trust.client ? { cert: trust.client.cert, key: trust.client.key } : {}),
    };
  }

  /**
   * fetch, through the registry's own trust when certs.d gives it one (Node's fetch takes undici's
   * `dispatcher`; undici is loaded only then). A trust that changed gets a new dispatcher; the last one
   * closes once its requests are done.
   */
  private async fetch(url: string | URL, init: RequestInit): Promise<Response> {
    const trust = registryTrust(this.registry.host, this.registry.certsDir);
    if (trust.ca.length === 0 && trust.client === null) return fetch(url, init);
    // Keyed by what certs.d holds, not by the options made of it (those carry the system's ~150 roots).
    const key = createHash('sha256').update(JSON.stringify(trust)).digest('hex');
    if (this.dispatcher?.key !== key) {
      void this.dispatcher?.agent.then((agent) => agent.close()).catch(() => undefined);
      const connect = this.connectOptions(trust);
      this.dispatcher = { key, agent: import('undici').then(({ Agent }) => new Agent({ connect })) };
    }
    const dispatcher = await this.dispatcher.agent;
    // Node's fetch is undici's; its types name the undici it bundles, not the package's Agent.
    return fetch(url, { ...init, dispatcher } as unknown as RequestInit);
  }

  /** The digest of `repository:reference`'s manifest; null when the registry has no such tag. */
  async digestOf(repository: string, reference: string): Promise<string | null> {
    const answer = await this.request(
      'HEAD',
      `/v2/${repository}/manifests/${encodeURIComponent(reference)}`,
      repository,
    );
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
      const answer = await this.request('GET', path, repository);
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
    const answer = await this.request('DELETE', `/v2/${repository}/manifests/${digest}`, repository);
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
    if (answer.status === 401 || answer.status === 403)
      throw new RegistryError(`${host} refused the platform's login ${what} (${answer.status})`, 'refused');
    throw new RegistryError(`${host} answered ${answer.status} ${what}`, 'failed');
  }

  /**
   * Sends a request about `repository`: with its token when one lives, else with the login; a Bearer
   * challenge is answered once with a token from the registry's token service.
   */
  private async request(
    method: 'GET' | 'HEAD' | 'DELETE',
    path: string,
    repository: string,
  ): Promise<Response> {
    const bearer = this.bearers.get(repository);
    const answer = await this.reach(method, path, bearer && bearer.until > Date.now() ? bearer.token : null);
    if (answer.status !== 401) return answer;
    const challenge = bearerChallenge(answer.headers.get('www-authenticate'));
    if (challenge === null) return answer;
    await discard(answer);
    const token = await this.tokenFor(challenge, repository);
    return this.reach(method, path, token);
  }

  /** The registry's answer to `method path`, with `token`, or else the login (basic authentication). */
  private async reach(
    method: 'GET' | 'HEAD' | 'DELETE',
    path: string,
    token: string | null,
  ): Promise<Response> {
    const headers: Record<string, string> = { accept: MANIFEST_TYPES };
    const login = registryAuth(this.registry);
    if (token !== null) headers.authorization = `Bearer ${token}`;
    else if (login) headers.authorization = basicAuthorization(login);
    const send = (scheme: 'https' | 'http') =>
      this.fetch(`${scheme}://${this.registry.host}${path}`, {
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
      if (error instanceof RegistryError || !speaksPlainHttp(error)) throw await this.unreachable(error);
      const answer = await this.send(() => send('http'));
      this.scheme = 'http';
      return answer;
    }
  }

  private async send(attempt: () => Promise<Response>): Promise<Response> {
    try {
      return await attempt();
    } catch (error) {
      throw await this.unreachable(error);
    }
  }

  /**
   * A token for what `challenge` asks (with the actions `repository`'s last token had as well, so that
   * reads and deletes of one repository need not take turns), from the registry's token service, with
   * the platform's login. The login goes to a service over https only, unless the registry itself is
   * spoken to over plain HTTP; and to none that redirects.
   */
  private async tokenFor(challenge: BearerChallenge, repository: string): Promise<string> {
    const host = this.registry.host;
    let realm: URL;
    try {
      realm = new URL(challenge.realm);
    } catch {
      throw new RegistryError(`${host} named a token service that is not a URL`, 'failed');
    }
    if (realm.protocol !== 'https:' && !(realm.protocol === 'http:' && this.scheme === 'http'))
      throw new RegistryError(
        `${host} named a token service at ${realm.protocol}//${realm.host}, not over https: the platform sends its login there over https only`,
        'refused',
      );
    const scope = withActions(challenge.scope, repository, this.bearers.get(repository)?.actions);
    if (challenge.service !== null) realm.searchParams.set('service', challenge.service);
    if (scope !== null) realm.searchParams.set('scope', scope.text);
    const login = registryAuth(this.registry);
    if (login) realm.searchParams.set('account', login.username);
    let answer: Response;
    try {
      answer = await this.fetch(realm, {
        headers: login ? { authorization: basicAuthorization(login) } : {},
        redirect: 'manual',
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      if (error instanceof RegistryError) throw error;
      throw new RegistryError(
        `cannot reach ${host}'s token service at ${realm.host}: ${fetchFailure(error)}`,
        'failed',
      );
    }
    if (answer.status === 401 || answer.status === 403) {
      await discard(answer);
      throw new RegistryError(
        `${host}'s token service refused the platform's login (${answer.status})`,
        'refused',
      );
    }
    const body = answer.status === 200 ? await boundedJson(answer, MAX_TOKEN_ANSWER) : null;
    if (answer.status !== 200) await discard(answer);
    const token = body?.token ?? body?.access_token;
    if (typeof token !== 'string' || token === '' || /\s/.test(token))
      throw new RegistryError(
        answer.status === 200
          ? `${host}'s token service answered without a token`
          : `${host}'s token service answered ${answer.status}`,
        'failed',
      );
    const seconds =
      typeof body?.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : DEFAULT_TOKEN_SECONDS;
    // Taken to end a little early: a request sent as it ends would be refused.
    const until = Date.now() + Math.max(seconds - 10, seconds / 2) * 1000;
    // One a repository swept: those that expired go once there are many.
    if (this.bearers.size >= MAX_BEARERS)
      for (const [key, kept] of this.bearers) if (kept.until <= Date.now()) this.bearers.delete(key);
    if (this.bearers.size >= MAX_BEARERS) this.bearers.clear();
    this.bearers.set(scope?.repository ?? repository, { token, until, actions: scope?.actions ?? new Set() });
    return token;
  }

  private async unreachable(error: unknown): Promise<RegistryError> {
    if (error instanceof RegistryError) return error;
    const host = this.registry.host;
    let why = fetchFailure(error);
    const dir = join(this.registry.certsDir ?? DOCKER_CERTS_DIR, host);
    // A server that wants a client certificate closes the connection after the handshake with an
    // alert that fetch does not report ("other side closed"): one connection of our own reads it.
    if (this.scheme !== 'http' && CLOSED.has(why)) {
      const alert = await Promise.resolve()
        .then(() => tlsAlert(host, this.connectOptions()))
        .catch(() => null);
      if (alert?.startsWith('ERR_SSL_')) why = alert;
    }
    // Standing refusals, not outages: said once, with where Docker's engine takes what mends them.
    if (UNTRUSTED_ISSUER.has(why))
      return new RegistryError(
        `cannot reach ${host}: its certificate's issuer is not trusted (${why}); put the CA's certificate in ${join(dir, 'ca.crt')}, as Docker's engine takes it`,
        'tls',
      );
    if (why === CLIENT_CERTIFICATE_WANTED)
      return new RegistryError(
        `cannot reach ${host}: it asks for a client certificate; put it in ${join(dir, 'client.cert')} and its key in ${join(dir, 'client.key')}, as Docker's engine takes them`,
        'tls',
      );
    if (CLIENT_CERTIFICATE_REFUSED.has(why))
      return new RegistryError(
        `cannot reach ${host}: it refused the client certificate in ${dir} (${why})`,
        'tls',
      );
    return new RegistryError(`cannot reach ${host}: ${why}`, 'failed');
  }
}

/** OpenSSL's verdicts on a certificate whose issuer is not among those trusted (a private CA's). */
const UNTRUSTED_ISSUER = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

/** How fetch tells of a connection the other side closed (or reset) without a word it reports. */
const CLOSED = new Set(['UND_ERR_SOCKET', 'ECONNRESET']);

/** How long the connection that reads a TLS alert is given. */
const ALERT_TIMEOUT_MS = 5_000;

/**
 * The code of the TLS alert the server at `host` (host:port) ends a connection with, or null when it
 * sends none: a request for `/v2/` without credentials is sent, and what comes back is read.
 */
function tlsAlert(host: string, options: ConnectionOptions): Promise<string | null> {
  const url = new URL(`https://${host}`);
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    const socket = tlsConnect({
      ...options,
      host: hostname,
      port: Number(url.port || 443),
      ...(isIP(hostname) ? {} : { servername: hostname }),
    });
    let settled = false;
    const done = (code: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(code);
    };
    const timer = setTimeout(() => done(null), ALERT_TIMEOUT_MS);
    socket.on('error', (error: NodeJS.ErrnoException) => done(error.code ?? null));
    socket.once('close', () => done(null));
    socket.once('secureConnect', () =>
      socket.write(`GET /v2/ HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`),
    );
    socket.resume();
  });
}

/** What a TLS 1.3 server that asks for a client certificate answers a client that sends none. */
const CLIENT_CERTIFICATE_WANTED = 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED';

/** What a server that does not take the client certificate sent answers (its CA unknown, or else). */
const CLIENT_CERTIFICATE_REFUSED = new Set([
  'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA',
  'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE',
  'ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN',
  'ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED',
  'ERR_SSL_TLSV1_ALERT_ACCESS_DENIED',
]);

/** Why a fetch failed: its cause's code (ECONNREFUSED…), else its cause's message or its own. */
function fetchFailure(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

interface BearerChallenge {
  realm: string;
  service: string | null;
  scope: string | null;
}

/** A `WWW-Authenticate: Bearer realm=…,service=…,scope=…` challenge; null for any other. */
function bearerChallenge(header: string | null): BearerChallenge | null {
  if (!header) return null;
  let parsed: ReturnType<typeof authHeader.parse>;
  try {
    parsed = authHeader.parse(header);
  } catch {
    return null;
  }
  const param = (name: string) => {
    const value = parsed.params[name];
    return typeof value === 'string' ? value : null;
  };
  const realm = param('realm');
  if (parsed.scheme.toLowerCase() !== 'bearer' || realm === null) return null;
  return { realm, service: param('service'), scope: param('scope') };
}

/**
 * The scope to ask a token for: the challenge's, its actions joined with `kept` when it is about
 * `repository` (`repository:<name>:<actions>`); null when the challenge named none.
 */
function withActions(
  scope: string | null,
  repository: string,
  kept: ReadonlySet<string> | undefined,
): { text: string; repository: string; actions: Set<string> } | null {
  if (scope === null) return null;
  const match = /^repository:(.+):([a-z*,]+)$/.exec(scope);
  if (!match || match[1] !== repository) return { text: scope, repository: scope, actions: new Set() };
  const actions = new Set([...(kept ?? []), ...match[2]!.split(',').filter(Boolean)]);
  return { text: `repository:${repository}:${[...actions].sort().join(',')}`, repository, actions };
}

function basicAuthorization(login: { username: string; password: string }): string {
  return `Basic ${Buffer.from(`${login.username}:${login.password}`).toString('base64')}`;
}

/** A JSON object answer of at most `limit` bytes; null for anything else. */
async function boundedJson(answer: Response, limit: number): Promise<Record<string, unknown> | null> {
  const declared = Number(answer.headers.get('content-length') ?? 0);
  if (declared > limit || !answer.body) {
    await discard(answer);
    return null;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of answer.body) {
    size += chunk.byteLength;
    if (size > limit) {
      await answer.body.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(chunk);
  }
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
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
 * that takes no deletes, or refuses the login, once per platform run, not once per image; one whose
 * TLS fails for what certs.d holds (an untrusted CA, a client certificate wanted) once until it
 * answers again, its projects kept behind meanwhile, so that the folder mended is used at the next sweep.
 */
export class RegistryJanitor {
  private queue: Promise<void> = Promise.resolve();
  private readonly said = new Set<RegistryError['kind']>();
  /** Projects whose gone images could not all be deleted (the registry did not answer): swept later. */
  private readonly behind = new Set<string>();
  /** A sweep found the registry not answering, said once until a sweep reads it again. */
  private unanswered = false;
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
      if ((await this.deleteAll(repository, gone, keep)) === 'behind') this.behind.add(projectId);
    });
  }

  /**
   * The projects whose gone images a delete or a sweep could not all delete since it was last asked,
   * for a sweep of their repositories (Runtime sweeps them every `registrySweepMs`).
   */
  takeBehind(): string[] {
    const projects = [...this.behind];
    this.behind.clear();
    return projects;
  }

  /** Whether a delete or a sweep left a project behind since takeBehind was last asked. */
  isBehind(): boolean {
    return this.behind.size > 0;
  }

  /**
   * Deletes `tags` of `repository` (see deleteTag): `done` when each is gone, `behind` when some could
   * not be deleted for now (the registry did not answer, or failed), `stopped` when the registry takes
   * no deletes (they are off, or its login is refused).
   */
  private async deleteAll(
    repository: string,
    tags: readonly string[],
    keep: readonly string[],
  ): Promise<'done' | 'behind' | 'stopped'> {
    let keptDigests: Set<string>;
    try {
      // Read once for the batch: a kept tag is a release's id, and names the same image throughout.
      keptDigests = await this.client.digestsOf(repository, keep);
    } catch (error) {
      return afterwards(this.report(error));
    }
    let outcome: 'done' | 'behind' = 'done';
    for (const tag of tags) {
      try {
        if ((await this.client.deleteTag(repository, tag, keptDigests)).deleted) this.deleted += 1;
      } catch (error) {
        const kind = this.report(error);
        // The registry takes none now: the others would fail alike.
        if (kind !== 'failed') return afterwards(kind);
        outcome = 'behind';
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

  /** The registry was read: a TLS refusal said before is said again if it comes back. */
  private answered(): void {
    this.unanswered = false;
    this.said.delete('tls');
  }

  /**
   * Deletes the images of the projects' repositories whose releases are gone: those a delete missed
   * (the registry was down, the platform stopped first), or all of a deleted project's. A tag is a
   * release's id; `live(projectId)` names the releases whose images stay (kept, or building: one may
   * have pushed its image already). A repository's tags are read before it, so that an image pushed
   * meanwhile belongs to a release it names. A registry that cannot be read stops the sweep, said once;
   * the projects it did not get to are behind (takeBehind). Resolves with the projects whose gone
   * images are all deleted now.
   */
  sweep(
    projectIds: readonly string[],
    live: (projectId: string) => Promise<Iterable<string>>,
  ): Promise<ReadonlySet<string>> {
    const swept = new Set<string>();
    const done = this.queue.then(async () => {
      for (const [index, projectId] of projectIds.entries()) {
        const repository = `wharf/${projectId.toLowerCase()}`;
        let tags: string[];
        try {
          tags = await this.client.tags(repository);
        } catch (error) {
          const problem = error instanceof RegistryError ? error : new RegistryError(String(error), 'failed');
          const kind = problem.kind === 'failed' ? 'failed' : this.report(problem);
          if (afterwards(kind) === 'stopped') return;
          // Swept again every few minutes while it is down: said once for the outage.
          if (kind === 'failed' && !this.unanswered)
            this.warn(`${problem.message}; its old images are deleted once it answers again`);
          this.unanswered ||= kind === 'failed';
          for (const left of projectIds.slice(index)) this.behind.add(left);
          return;
        }
        this.answered();
        const keep = tags.length === 0 ? new Set<string>() : new Set(await live(projectId));
        const gone = tags.filter((tag) => !keep.has(tag));
        const outcome = gone.length === 0 ? 'done' : await this.deleteAll(repository, gone, [...keep]);
        if (outcome === 'stopped') return;
        if (outcome === 'done') swept.add(projectId);
        else this.behind.add(projectId);
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

/**
 * What a batch of deletes comes to after trouble of `kind`: `behind` (swept again later) when it may
 * pass by itself (an outage) or with certs.d mended, `stopped` when the registry refuses deletes or the
 * login (the operator's configuration, read at start).
 */
function afterwards(kind: RegistryError['kind']): 'behind' | 'stopped' {
  return kind === 'failed' || kind === 'tls' ? 'behind' : 'stopped';
}
