// buildPlatform(config): the Wharf platform as a Fastify app, not yet listening, so tests can start it
// on port 0 and the CLI on its configured port. Everything under /api/v1 is authenticated by the
// onRequest hook (before any body is read) unless its route is `public`, and every error leaves as
// problem+json through one handler.
import './fastify-types.js';
import { join } from 'node:path';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance } from 'fastify';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { LIMITS } from '../shared/api/projects.js';
import { PlatformInfo } from '../shared/api/common.js';
import { LOCAL_ACCOUNT_FILE, ensureLocalAccount } from './accounts/accounts.js';
import { accountRoutes } from './accounts/routes.js';
import { aiAgentRoutes } from './ai/agent/routes.js';
import { AiBuilder } from './ai/builder.js';
import { SharedRepos } from './ai/shared-repos.js';
import { AiEngines } from './ai/engines.js';
import { aiBuildRoutes } from './ai/routes.js';
import { AppDatabases } from './ai/postgres.js';
import { Authenticator, assertScope, logRequest } from './auth/authenticate.js';
import { loadOrCreateSecret } from './auth/secret.js';
import { DailyCap } from './billing/daily-cap.js';
import { Ledger } from './billing/ledger.js';
import { type PlatformConfig, type PlatformConfigInput, REGISTRY_HOST, resolveConfig } from './config.js';
import { DomainChecker } from './domains/checker.js';
import { dnsLookup } from './domains/dns-check.js';
import { DomainService } from './domains/domains.js';
import { domainRoutes } from './domains/routes.js';
import { EmailVerifier } from './email/index.js';
import { emailRoutes } from './email/routes.js';
import { Edge } from './edge/edge.js';
import {
  ApiError,
  holdsNul,
  nulRefused,
  problemHandler,
  sendProblem,
  urlHoldsNul,
  zodValidatorCompiler,
} from './errors.js';
import { ProjectService } from './projects/projects.js';
import { LogStore } from './projects/logs.js';
import { projectRoutes } from './projects/routes.js';
import { chooseDriver } from './runtime/drivers/choose.js';
import { Runtime } from './runtime/runtime.js';
import { TunnelHub } from './tunnels/hub.js';
import { tunnelRoutes } from './tunnels/routes.js';
import { type Store, openStore } from './store/open.js';
import { EventEmitter } from 'node:events';
import { type PlatformTls, setUpTls } from './tls/setup.js';
import { FrontProxy, requireHaproxy } from './front/front.js';
import { Cluster } from './cluster/cluster.js';
import { NodeForwarder } from './cluster/forward.js';
import { HopSigner } from './cluster/hop.js';
import { TunnelHolders } from './cluster/tunnels.js';
import { ClusterStreams } from './cluster/streams.js';
import { accountLimits } from './limits.js';
import { notRunningPage, sendPage } from './edge/pages.js';
import { isPostgresUrl } from './store/location.js';

export const API_PREFIX = '/api/v1';

export interface Platform {
  app: FastifyInstance;
  config: PlatformConfig;
  db: Store;
  /** Project logs: the runtime appends, GET /projects/:id/logs reads and follows. */
  logs: LogStore;
  /** Builds and runs deployed apps. */
  runtime: Runtime;
  /** What the operator should know about how apps run here (no sandbox, no resource limits…). */
  runtimeNotes: string[];
  /** The app and tunnel edge's HTTP server, not yet listening (servePlatform starts it on the edge port). */
  edge: Edge;
  /** Tunnel clients, the relays to them and their captured traffic. */
  tunnels: TunnelHub;
  /** Allowance, top-ups and usage of each account (integer micro-dollars). */
  ledger: Ledger;
  /** The AI engines (included and own key): resolution, rate limit, metering; and the own keys. */
  engines: AiEngines;
  /** The AI builder: generate, deploy with self-repair, edit; its deploy loops run in the background. */
  aiBuilder: AiBuilder;
  /** The PostgreSQL databases made for apps, dropped when their project is deleted. */
  databases: AppDatabases;
  /** Email verifications per account per UTC day. */
  dailyCap: DailyCap;
  /** Custom domains, and their background re-check (started here, stopped on close). */
  domains: DomainService;
  domainChecker: DomainChecker;
  /** Where the local account's key was written, when this start created it. */
  localAccountFile: string | null;
  /** HTTPS at the edge (certificates over ACME), when the config names an HTTPS port. */
  tls: PlatformTls | null;
  /** HAProxy in front of the edge (`front: 'haproxy'`), started by servePlatform on the public ports. */
  front: FrontProxy | null;
  /** The other nodes sharing the database (`--node-url`), or this one alone. */
  cluster: Cluster;
  /** What the operator should see as it happens (`event`: { level, message }), e.g. certificates issued. */
  events: EventEmitter<{ event: [PlatformEvent] }>;
}

export interface PlatformEvent {
  level: 'info' | 'warn';
  message: string;
  /** What it is about: certificates (the default) or the front proxy. */
  source?: 'tls' | 'front';
}

declare module 'fastify' {
  interface FastifyInstance {
    platform: { config: PlatformConfig; db: Store; ledger: Ledger; dailyCap: DailyCap };
  }
}

export async function buildPlatform(partial: PlatformConfigInput = {}): Promise<Platform> {
  const config = resolveConfig(partial);
  // Before anything is opened: a cluster or a front that cannot run is said at once.
  const refused = refusedCluster(config);
  if (refused) throw new Error(refused);
  const haproxy = config.front === 'haproxy' ? requireHaproxy() : null;
  const db = await openStore(config.databaseUrl ?? join(config.dataDir, 'platform.db'));
  const opened: { app: FastifyInstance | null } = { app: null };
  try {
    return await assemble(config, db, haproxy, opened);
  } catch (error) {
    // What started before the failure stops: a platform that could not start does not stay alive.
    await opened.app?.close().catch(() => undefined);
    await db.destroy().catch(() => undefined);
    throw error;
  }
}

async function assemble(
  config: PlatformConfig,
  db: Store,
  haproxy: ReturnType<typeof requireHaproxy> | null,
  opened: { app: FastifyInstance | null },
): Promise<Platform> {
  const secret = loadOrCreateSecret(config.dataDir, config.secret);
  const auth = new Authenticator(db, secret, config.tokenTtlSeconds);
  const created = config.localAccount ? await ensureLocalAccount(db, config) : null;
  const projects = new ProjectService(db, config, secret);
  await projects.sealStoredRepoCredentials();
  const logs = new LogStore(db);
  const chosen = await chooseDriver(config, db);
  const runtimeNotes = chosen.notes;
  const cluster = new Cluster(db, config, (error, what) => app.log.error({ err: error }, `${what} failed`));
  if (cluster.clustered)
    auth.announceRevoked = (keyId) => cluster.publish({ kind: 'key-revoked', keyId, node: cluster.nodeId });
  // An account's streams count against its limit on every node together.
  if (cluster.clustered) {
    accountLimits(config).streams.share(
      new ClusterStreams(db, cluster, (error) => app.log.error({ err: error }, 'counting a stream failed')),
    );
  }
  const signer = new HopSigner(secret, cluster.nodeId);
  const forwarder = new NodeForwarder(signer, `api.${config.baseDomain}`, (res) =>
    sendPage(res, notRunningPage(502)),
  );
  const sharedRepos = cluster.clustered ? new SharedRepos(db, config.dataDir) : null;
  const runtime = new Runtime(db, config, projects, logs, chosen, cluster, sharedRepos, (message) =>
    app.log.warn(message),
  );
  const tunnels = new TunnelHub(config, db, auth, {
    cluster,
    holders: new TunnelHolders(db, cluster),
    signer,
    forwarder,
  });
  const edge = new Edge(config, db, runtime, tunnels);
  const ledger = new Ledger(db, config);
  const dailyCap = new DailyCap(db, config);
  const engines = new AiEngines(db, config, ledger, secret);
  const databases = new AppDatabases(db, config, {
    onError: (error) => app.log.error({ err: error }, 'dropping the database of a deleted project failed'),
  });
  const aiBuilder = new AiBuilder({
    db,
    config,
    projects,
    runtime,
    logs,
    engines,
    ledger,
    databases,
    sharedRepos,
  });
  const emailVerifier = new EmailVerifier({
    dnsServers: config.dnsServers,
    dnsTimeoutMs: config.dnsTimeoutMs,
    email: config.email,
  });
  const events = new EventEmitter<{ event: [PlatformEvent] }>();
  const front = haproxy
    ? new FrontProxy({
        config,
        db,
        runtime,
        edge,
        secret,
        install: haproxy,
        event: (level, message) => {
          events.emit('event', { level, message, source: 'front' });
          app.log[level]({ front: true }, message);
        },
      })
    : null;
  const tls = setUpTls({
    config,
    db,
    secret,
    edge,
    cluster: cluster.clustered
      ? { announce: (name) => cluster.publish({ kind: 'certificate', name, node: cluster.nodeId }) }
      : null,
    event: (level, message) => {
      events.emit('event', { level, message });
      app.log[level]({ tls: true }, message);
      // A certificate issued or renewed: the front serves it once its files are rewritten.
      front?.schedule();
    },
  });
  if (tls || front) {
    projects.onHostsChanged = () => {
      tls?.certificates.nudge();
      front?.schedule();
    };
  }
  // A domain's route changed, here or on another node.
  cluster.on((event) => {
    if (event.kind === 'route' && event.host !== null) {
      edge.forgetDomain(event.host);
      tls?.certificates.nudge();
      front?.schedule();
    }
    if (event.kind === 'domains') domainChecker.wake();
    if (event.kind === 'key-revoked' && event.node !== cluster.nodeId) auth.forgetKey(event.keyId);
    if (event.kind === 'certificate' && event.node !== cluster.nodeId) {
      void tls?.certificates.reload(event.name).then(() => front?.schedule());
    }
    if (event.kind === 'project-deleted' && event.node !== cluster.nodeId)
      aiBuilder.dropCopy(event.projectId);
  });
  const domains = new DomainService(db, config, dnsLookup(config), {
    onRouteChange: (domain) => cluster.publish({ kind: 'route', host: domain }),
    ...(tls ? { certificateOf: (domain: string) => tls.certificates.statusOfHost(domain) } : {}),
  });

  const app = Fastify({
    logger: {
      level: config.logger ? (process.env.WHARF_LOG_LEVEL ?? 'info') : 'error',
      // A `?token=` (or a key sent there by mistake) never reaches the log.
      serializers: { req: logRequest },
    },
    bodyLimit: LIMITS.jsonBodyBytes,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true },
    // Errors raised while routing (a malformed URL) bypass the error handler: answer them the same way.
    frameworkErrors: (error, request, reply) => {
      problemHandler(error, request, reply);
    },
  }).withTypeProvider<ZodTypeProvider>();

  const domainChecker = new DomainChecker(domains, {
    onError: (error) => app.log.error({ err: error }, 'a background domain check failed'),
  });
  opened.app = app;
  app.decorate('platform', { config, db, ledger, dailyCap });
  app.decorateRequest('caller', null as never);
  app.setValidatorCompiler(zodValidatorCompiler);
  // Responses are plain JSON: the schemas document them (and the tests check them against the
  // schemas) without paying for validation on every reply.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.setErrorHandler(problemHandler);
  // Only JSON (and, on the upload route, archives) is accepted: text bodies get a clear 400. An empty
  // body with a JSON content type is no body at all, as generic clients send it on bodiless POSTs.
  app.removeContentTypeParser(['text/plain', 'application/json']);
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') done(null, undefined);
    else parseJson(request, body as string, done);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      reply,
      new ApiError('not_found', `no route for ${request.method} ${request.url.split('?')[0]}`),
    ),
  );
  // The API is also served by the edge at api.<base_domain> (its public address over HTTPS).
  edge.serveApi(app.server);
  // Upgrades on the API port: tunnel clients connecting, and the live traffic feed.
  app.server.on('upgrade', (req, socket, head) => {
    tunnels.upgrade(req, socket, head, API_PREFIX).then(
      (handled) => {
        if (!handled) socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      },
      () => socket.destroy(),
    );
  });
  app.addHook('preClose', async () => tunnels.close());
  app.addHook('onClose', async () => {
    // What this node copied of its services' output is stored before the others take the copying over.
    await runtime.stopOutput();
    await cluster.close();
    await domainChecker.stop();
    // The builder's loops deploy through the runtime: they end first.
    await aiBuilder.close();
    emailVerifier.close();
    await front?.close();
    await tls?.close();
    await edge.close();
    await runtime.close();
    await db.destroy();
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Wharf platform API',
        version: '1.0.0',
        description:
          'Projects, deploys, tunnels, domains, email verification and the AI builder. See API.md.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        },
      },
      security: [{ apiKey: [] }, { bearer: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });

  await app.register(
    async (api) => {
      api.addHook('onRequest', async (request) => {
        if (urlHoldsNul(request.url)) throw nulRefused('the URL');
        const scope = request.routeOptions.config.scope ?? 'full';
        if (scope === 'public') return;
        request.caller = await auth.authenticate(request);
        assertScope(request.caller, scope);
      });
      api.addHook('preValidation', async (request) => {
        if (holdsNul(request.body)) throw nulRefused('the body');
      });

      api.get('/openapi.json', {
        config: { scope: 'public' },
        schema: { hide: true },
        handler: async () => app.swagger(),
      });
      api.get('/health', {
        config: { scope: 'public' },
        schema: { summary: 'Liveness probe', tags: ['platform'] },
        handler: async () => ({ ok: true }),
      });

      api.get('/platform', {
        config: { scope: 'any' },
        schema: {
          summary:
            'How this platform runs apps (its runtime and what the operator should know about it) and which AI engines it offers',
          tags: ['platform'],
          response: { 200: PlatformInfo },
        },
        handler: async () => ({
          runtime: runtime.kind,
          runtime_notes: runtimeNotes,
          keep_releases: config.keepReleases,
          ...engines.offered(),
        }),
      });

      await api.register(accountRoutes, { db, config, auth, ledger, dailyCap, aiKeys: engines.keys });
      await api.register(projectRoutes, { db, config, projects, logs, runtime });
      await api.register(tunnelRoutes, { hub: tunnels });
      await api.register(domainRoutes, {
        domains,
        // The node that runs the checks (it may be another) looks at the new domain's schedule.
        checker: { wake: () => cluster.publish({ kind: 'domains' }) },
      });
      await api.register(emailRoutes, { config, verifier: emailVerifier, ledger, dailyCap, nodes: cluster });
      await api.register(aiBuildRoutes, { builder: aiBuilder, engines });
      await api.register(aiAgentRoutes, {
        db,
        config,
        engines,
        builder: aiBuilder,
        projects,
        runtime,
        logs,
        ledger,
      });
    },
    { prefix: API_PREFIX },
  );

  // Repositories of AI projects deleted since the last start go (before any build can start one).
  await aiBuilder.sweep();
  // The AI repositories only this node has (built before it ran as a cluster) go to the database.
  const sharedNow = await sharedRepos?.shareLocal();
  if (sharedNow) app.log.info(`shared ${sharedNow} AI project repositories with the other nodes`);
  // So do the databases of projects deleted while their PostgreSQL server could not be reached.
  void databases.sweep();

  // What was running when the platform last stopped runs again (in the background); AI projects whose
  // deploy was cut short go through their deploy loop again, self-repair included. In a cluster, every
  // node first routes to the services that run, and one node (the job's leader) does the rest.
  // The projects to look at are read before this returns: a deploy started right after is not taken
  // for one the last stop interrupted.
  if (cluster.clustered) await runtime.viewAll();
  // In a cluster a project `building` may be deployed by another node right now: none is taken for
  // interrupted (those of a node that died end through reapOrphanedDeploys).
  const interrupted = cluster.clustered ? [] : await aiBuilder.interrupted();
  const restoring = await runtime.prepareRestore();
  let restored = false;
  cluster.singleton('restore', {
    start: () => {
      if (restored) return;
      restored = true;
      void runtime
        // In a cluster this node may lead long after it started: what runs then is read then.
        .restore({
          except: new Set(interrupted.map((p) => p.projectId)),
          rows: cluster.clustered ? undefined : restoring,
        })
        .catch((error: unknown) => {
          app.log.error({ err: error }, 'restoring the running projects failed');
        });
      void aiBuilder.resume(interrupted).catch((error: unknown) => {
        app.log.error({ err: error }, 'resuming the interrupted AI deploys failed');
      });
    },
    stop: async () => {},
  });

  // Unverified domains are looked at again in the background, on the schedule kept in the store (by
  // one node of a cluster).
  cluster.singleton('domain-checks', {
    start: () => domainChecker.start(),
    stop: () => domainChecker.stop(),
  });
  // Deploys a node that died was running end (their projects would stay `building`), and the output
  // of the services it copied into the project logs is copied by this node from there: on one node.
  if (cluster.clustered) {
    let reaping: NodeJS.Timeout | null = null;
    cluster.singleton('dead-nodes', {
      start: () => {
        reaping = setInterval(() => {
          runtime.reapOrphanedDeploys().catch((error: unknown) => {
            app.log.error({ err: error }, 'ending the deploys of nodes that stopped failed');
          });
          runtime.takeOverOutputs().catch((error: unknown) => {
            app.log.error({ err: error }, 'taking over the output copying of nodes that stopped failed');
          });
        }, DEAD_NODES_CHECK_MS);
        reaping.unref();
      },
      stop: async () => {
        if (reaping) clearInterval(reaping);
        reaping = null;
      },
    });
  }
  await cluster.start();

  return {
    app,
    config,
    db,
    logs,
    runtime,
    runtimeNotes,
    edge,
    tunnels,
    ledger,
    engines,
    aiBuilder,
    databases,
    dailyCap,
    domains,
    domainChecker,
    localAccountFile: created ? join(config.dataDir, LOCAL_ACCOUNT_FILE) : null,
    tls,
    front,
    events,
    cluster,
  };
}

/** How often one node of a cluster looks for the deploys and output copying of nodes that stopped. */
const DEAD_NODES_CHECK_MS = 5_000;

/**
 * Why this config cannot run, or null: a registry the swarm runtime could not use, or what a node of a
 * cluster (`nodeUrl` set) lacks. The nodes share a PostgreSQL database and a secret, and run apps where
 * every node reaches them (Swarm services).
 */
function refusedCluster(config: PlatformConfig): string | null {
  if (config.registry !== null) {
    if (config.runtime !== 'swarm')
      return '--registry is for --runtime swarm: the other runtimes run images on the engine that built them';
    if (!REGISTRY_HOST.test(config.registry.host))
      return '--registry must be a registry host with its port if not 443, such as registry.example.com:5000 (no scheme, no path)';
    if ((config.registry.username === null) !== (config.registry.password === null))
      return 'WHARF_REGISTRY_USER and WHARF_REGISTRY_PASSWORD go together: set both or neither';
  }
  if (config.nodeUrl === null) return null;
  if (!/^https?:\/\/[^/]+\/?$/.test(config.nodeUrl))
    return `--node-url must be this node's edge as the other nodes reach it, such as http://10.0.0.5:8788 (no path)`;
  if (config.databaseUrl === null || !isPostgresUrl(config.databaseUrl))
    return '--node-url needs --database-url: the nodes of a cluster share one PostgreSQL database';
  if (config.secret === undefined)
    return '--node-url needs WHARF_SECRET: every node of a cluster signs tokens and seals secrets with the same one, which is never stored in the database';
  if (config.runtime !== 'swarm')
    return '--node-url needs --runtime swarm: the apps of a cluster run as Swarm services, which every node reaches';
  return null;
}
