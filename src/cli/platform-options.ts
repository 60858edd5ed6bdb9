// `wharf platform`'s options (each with its WHARF_* variable) and the platform configuration they make.
import { join, resolve } from 'node:path';
import { type Command, Option } from 'commander';
import {
  DEFAULT_API_PORT,
  DEFAULT_EDGE_PORT,
  DEFAULT_IMAGES,
  FRONT_KINDS,
  type FrontKind,
  LETS_ENCRYPT_DIRECTORY,
  REGISTRY_HOST,
  type PlatformConfig,
  RUNTIME_KINDS,
  type RuntimeKind,
  resolveConfig,
  wharfHome,
} from '../server/config.js';
import { type PlansSetting, loadPlans, PLANS_FILE } from '../server/plans.js';
import { AI_PROVIDERS, type AiProvider } from '../shared/api/account.js';
import {
  parseCount,
  parseDatabaseUrl,
  parseDnsServer,
  parseDomain,
  parseMailbox,
  parsePort,
  parseCeiling,
  parseHttpsUrl,
  parseListen,
  parsePositiveSeconds,
  parseUrl,
} from './options.js';
import { UsageError } from './io.js';

export interface PlatformOptions {
  dataDir?: string;
  databaseUrl?: string;
  nodeUrl?: string;
  plans?: string;
  host: string;
  port: number;
  edgePort: number;
  front: FrontKind;
  baseDomain: string;
  tunnelDomain: string;
  log: boolean;
  runtime: RuntimeKind;
  gitHostUrl: string;
  localRepos: boolean;
  healthTimeout: number;
  dnsServer?: string[];
  smtpPort: number;
  heloName: string;
  mailFrom: string;
  smtpTimeout: number;
  smtpConcurrency: number;
  smtpAllowPrivate: boolean;
  aiProvider?: AiProvider;
  aiModel?: string;
  aiBaseUrl?: string;
  sandboxUidBase: number;
  sandboxMemoryMib: number;
  sandboxPids: number;
  sandboxCpus: number;
  keepReleases: number;
  nodeImage: string;
  pythonImage: string;
  registry?: string;
  limitTunnels: number;
  limitProjects: number;
  limitBuilds: number;
  limitStreams: number;
  limitCaptureMib: number;
  limitAccountCaptureMib: number;
  maxBodyMib: number;
  httpsPort?: number;
  acmeDirectory: string;
  acmeEmail?: string;
  acmeCaFile?: string;
  acmeDnsHook?: string;
  acmeDnsListen?: string;
}

const MiB = 1024 * 1024;

/** Adds the options of `wharf platform` to its command. */
export function withPlatformOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--data-dir <dir>',
        `where its database, uploads and secret live (default: ${join(wharfHome(), 'platform')})`,
      ).env('WHARF_DATA_DIR'),
    )
    .addOption(
      envOption(
        '--node-url <url>',
        "run as one node of a cluster: how the other nodes reach this one's edge (http://10.0.0.5:8788); needs --database-url, --runtime swarm and WHARF_SECRET, the same on every node",
        'WHARF_NODE_URL',
        { parse: parseNodeUrl },
      ),
    )
    .addOption(
      envOption(
        '--database-url <url>',
        'keep accounts, projects, the ledger, domains and certificates in this PostgreSQL database (postgres://user:password@host:5432/name; it must exist) instead of <data-dir>/platform.db',
        'WHARF_DATABASE_URL',
        { parse: parseDatabaseUrl },
      ),
    )
    .addOption(
      new Option(
        '--plans <file>',
        `the plans accounts can be on, a JSON file: { "default_plan", "plans": { name: { allowance_usd, memory_mib, cpus, pids } } } (default: <data-dir>/${PLANS_FILE} when it exists, else free and pro)`,
      ).env('WHARF_PLANS'),
    )
    .addOption(envOption('--host <host>', 'address to listen on', 'WHARF_HOST', { default: '127.0.0.1' }))
    .addOption(
      envOption('--port <port>', 'API port', 'WHARF_PORT', { default: DEFAULT_API_PORT, parse: parsePort }),
    )
    .addOption(
      envOption('--edge-port <port>', 'public port of the app and tunnel edge', 'WHARF_EDGE_PORT', {
        default: DEFAULT_EDGE_PORT,
        parse: parsePort,
      }),
    )
    .addOption(
      new Option(
        '--front <kind>',
        'what takes the edge ports: none (the Node edge itself) or haproxy (HAProxy in front, routing apps straight to their ports and reloading without dropping a connection; needs the haproxy package)',
      )
        .choices(FRONT_KINDS)
        .default('none')
        .env('WHARF_FRONT'),
    )
    .addOption(
      envOption(
        '--https-port <port>',
        'serve apps, services, custom domains and tunnels over HTTPS on this port, with certificates over ACME (the edge port then answers ACME HTTP-01 checks and redirects to HTTPS)',
        'WHARF_HTTPS_PORT',
        { parse: parsePort },
      ),
    )
    .addOption(
      envOption(
        '--acme-directory <url>',
        "the ACME CA's directory URL (Let's Encrypt; its staging; any RFC 8555 CA)",
        'WHARF_ACME_DIRECTORY',
        { default: LETS_ENCRYPT_DIRECTORY, parse: parseHttpsUrl },
      ),
    )
    .addOption(
      envOption(
        '--acme-email <address>',
        'the ACME account contact: the CA writes there about expiring certificates',
        'WHARF_ACME_EMAIL',
        { parse: parseMailbox },
      ),
    )
    .addOption(
      new Option(
        '--acme-ca-file <pem>',
        "an extra CA to trust for the ACME directory's own HTTPS (a private CA, Pebble's)",
      ).env('WHARF_ACME_CA_FILE'),
    )
    .addOption(
      new Option(
        '--acme-dns-hook <command>',
        'wildcard certificates for the base and tunnel domains over DNS-01: runs `<command> add|remove <name> <value>` to publish each TXT record',
      ).env('WHARF_ACME_DNS_HOOK'),
    )
    .addOption(
      envOption(
        '--acme-dns-listen <host:port>',
        'wildcard certificates over DNS-01 with the built-in responder: an authoritative DNS server for the _acme-challenge names you delegate to this machine (NS records)',
        'WHARF_ACME_DNS_LISTEN',
        { parse: parseListen },
      ),
    )
    .addOption(
      envOption('--base-domain <domain>', 'apps are served at <subdomain>.<domain>', 'WHARF_BASE_DOMAIN', {
        default: 'localhost',
        parse: parseDomain,
      }),
    )
    .addOption(
      envOption(
        '--tunnel-domain <domain>',
        'tunnels are served at <subdomain>.<domain>',
        'WHARF_TUNNEL_DOMAIN',
        { default: 'tunnel.localhost', parse: parseDomain },
      ),
    )
    .addOption(
      new Option(
        '--runtime <kind>',
        'how deployed apps run: container (an image per release on Docker or Podman at DOCKER_HOST or the default socket), swarm (an image per release run as a Docker Swarm service; the engine must manage a Swarm), sandbox (bwrap, a user per project when run as root), process (as this user: one account only), or auto, the strongest available',
      )
        .choices(RUNTIME_KINDS)
        .default('auto')
        .env('WHARF_RUNTIME'),
    )
    .addOption(
      envOption(
        '--sandbox-uid-base <uid>',
        'run as root, the sandbox gives project N the uid <uid>+N',
        'WHARF_SANDBOX_UID_BASE',
        { default: 200_000, parse: parseCount(4_000_000_000) },
      ),
    )
    .addOption(
      envOption(
        '--sandbox-memory-mib <mib>',
        "memory of one project's processes together (0: no limit)",
        'WHARF_SANDBOX_MEMORY_MIB',
        { default: 2048, parse: parseCeiling(1_048_576) },
      ),
    )
    .addOption(
      envOption(
        '--sandbox-pids <n>',
        'processes and threads of one project at once (0: no limit)',
        'WHARF_SANDBOX_PIDS',
        { default: 1024, parse: parseCeiling(1_000_000) },
      ),
    )
    .addOption(
      envOption(
        '--sandbox-cpus <cores>',
        'CPU cores one project may use, e.g. 0.5 (0: no limit)',
        'WHARF_SANDBOX_CPUS',
        { default: 1, parse: parseCeiling(1_024, true) },
      ),
    )
    .addOption(
      envOption(
        '--node-image <ref>',
        'the base image of Dockerfiles written for Node apps (container runtime)',
        'WHARF_NODE_IMAGE',
        { default: DEFAULT_IMAGES.node },
      ),
    )
    .addOption(
      envOption(
        '--python-image <ref>',
        'the base image of Dockerfiles written for Python apps (container runtime)',
        'WHARF_PYTHON_IMAGE',
        { default: DEFAULT_IMAGES.python },
      ),
    )
    .addOption(
      envOption(
        '--registry <host:port>',
        'the swarm runtime pushes each built image to this registry and runs its services from there, so every machine of the Swarm pulls it (login: WHARF_REGISTRY_USER, WHARF_REGISTRY_PASSWORD)',
        'WHARF_REGISTRY',
        { parse: parseRegistry },
      ),
    )
    .addOption(
      envOption(
        '--keep-releases <n>',
        "how many of a project's releases that served keep their image or files for a rollback",
        'WHARF_KEEP_RELEASES',
        { default: 5, parse: parseCount(1_000) },
      ),
    )
    .addOption(
      envOption(
        '--git-host-url <url>',
        'where git_host_repo "owner/repo" is cloned from',
        'WHARF_GIT_HOST_URL',
        { default: 'https://github.com', parse: parseUrl },
      ),
    )
    .addOption(
      new Option(
        '--no-local-repos',
        'refuse file:// repository URLs (for a platform several accounts share: they could deploy any repository the server can read)',
      ),
    )
    .addOption(
      envOption(
        '--health-timeout <seconds>',
        'how long a started app has to accept connections',
        'WHARF_HEALTH_TIMEOUT',
        { default: 60, parse: parsePositiveSeconds },
      ),
    )
    .addOption(
      envOption(
        '--dns-server <host:port>',
        'DNS server for domain verification and email checks (repeatable; default: the system resolvers)',
        'WHARF_DNS_SERVER',
        { parse: parseDnsServer },
      ),
    )
    .addOption(
      envOption('--smtp-port <port>', 'the port MX hosts are probed on by email checks', 'WHARF_SMTP_PORT', {
        default: 25,
        parse: parsePort,
      }),
    )
    .addOption(
      envOption('--helo-name <name>', 'the name email probes give in EHLO', 'WHARF_HELO_NAME', {
        default: 'verify.wharf.localhost',
        parse: parseDomain,
      }),
    )
    .addOption(
      envOption('--mail-from <address>', "the email probe's MAIL FROM", 'WHARF_MAIL_FROM', {
        default: 'verify@wharf.localhost',
        parse: parseMailbox,
      }),
    )
    .addOption(
      envOption(
        '--smtp-timeout <seconds>',
        'how long an MX host has to connect and to send each reply',
        'WHARF_SMTP_TIMEOUT',
        { default: 15, parse: parsePositiveSeconds },
      ),
    )
    .addOption(
      envOption('--smtp-concurrency <n>', 'email probes at once per mail domain', 'WHARF_SMTP_CONCURRENCY', {
        default: 2,
        parse: parseCount(32),
      }),
    )
    .addOption(
      new Option(
        '--smtp-allow-private',
        'let email probes reach MX hosts on loopback or private addresses (off: the probe cannot be aimed at internal hosts)',
      ).default(false),
    )
    .addOption(
      new Option(
        '--ai-provider <provider>',
        'the included AI engine (its key from WHARF_AI_KEY); without one, the builder works offline from templates',
      )
        .choices(AI_PROVIDERS)
        .env('WHARF_AI_PROVIDER'),
    )
    .addOption(
      new Option('--ai-model <model>', "the included engine's model (default: the provider's)").env(
        'WHARF_AI_MODEL',
      ),
    )
    .addOption(
      envOption(
        '--ai-base-url <url>',
        "the included provider's API base URL (an OpenAI-compatible gateway)",
        'WHARF_AI_BASE_URL',
        { parse: parseUrl },
      ),
    )
    .addOption(
      envOption(
        '--limit-tunnels <n>',
        'tunnels one account may have connected at once',
        'WHARF_LIMIT_TUNNELS',
        { default: 10, parse: parseCount(10_000) },
      ),
    )
    .addOption(
      envOption('--limit-projects <n>', 'projects one account may have', 'WHARF_LIMIT_PROJECTS', {
        default: 100,
        parse: parseCount(100_000),
      }),
    )
    .addOption(
      envOption(
        '--limit-builds <n>',
        "deploys of one account's projects running at once",
        'WHARF_LIMIT_BUILDS',
        { default: 3, parse: parseCount(1_000) },
      ),
    )
    .addOption(
      envOption(
        '--limit-streams <n>',
        'event streams and WebSockets one account may have open at once (log follows, agent streams, traffic feeds, tunnels)',
        'WHARF_LIMIT_STREAMS',
        { default: 20, parse: parseCount(100_000) },
      ),
    )
    .addOption(
      envOption(
        '--limit-capture-mib <mib>',
        "memory for one tunnel's captured bodies, in MiB",
        'WHARF_LIMIT_CAPTURE_MIB',
        { default: 64, parse: parseCount(4_096) },
      ),
    )
    .addOption(
      envOption(
        '--limit-account-capture-mib <mib>',
        "memory for the captured bodies of all of one account's tunnels (offline ones kept for an hour included), in MiB",
        'WHARF_LIMIT_ACCOUNT_CAPTURE_MIB',
        { default: 256, parse: parseCount(65_536) },
      ),
    )
    .addOption(
      envOption(
        '--max-body-mib <mib>',
        'the largest request body the app and tunnel edge pass on, in MiB',
        'WHARF_MAX_BODY_MIB',
        { default: 100, parse: parseCount(1_048_576) },
      ),
    )
    .addOption(new Option('--log', 'log every request').default(false));
}

/**
 * The platform configuration the options make (with the plans file, when one is read); a UsageError
 * for options that do not go together.
 */
export function platformConfig(options: PlatformOptions): {
  config: PlatformConfig;
  plans: PlansSetting | null;
} {
  const dataDir = resolveConfig(options.dataDir ? { dataDir: resolve(options.dataDir) } : {}).dataDir;
  const plans = loadPlans(dataDir, options.plans === undefined ? undefined : resolve(options.plans));
  const config = resolveConfig({
    dataDir,
    databaseUrl: options.databaseUrl ?? null,
    nodeUrl: options.nodeUrl ?? null,
    ...(plans ? { plans: plans.plans, defaultPlan: plans.defaultPlan } : {}),
    edgePort: options.edgePort,
    front: options.front,
    baseDomain: options.baseDomain,
    tunnelDomain: options.tunnelDomain,
    logger: options.log,
    runtime: options.runtime,
    gitHostUrl: options.gitHostUrl,
    localRepos: options.localRepos,
    healthTimeoutMs: options.healthTimeout * 1000,
    dnsServers: options.dnsServer ?? null,
    email: {
      smtpPort: options.smtpPort,
      heloName: options.heloName,
      mailFrom: options.mailFrom,
      connectTimeoutMs: options.smtpTimeout * 1000,
      replyTimeoutMs: options.smtpTimeout * 1000,
      perDomainConcurrency: options.smtpConcurrency,
      allowPrivate: options.smtpAllowPrivate,
    },
    ai: {
      provider: options.aiProvider ?? null,
      model: options.aiModel ?? null,
      key: process.env.WHARF_AI_KEY || null,
      baseUrls: options.aiProvider && options.aiBaseUrl ? { [options.aiProvider]: options.aiBaseUrl } : {},
      postgresUrl: process.env.WHARF_POSTGRES_URL || null,
    },
    keepReleases: options.keepReleases,
    images: { node: options.nodeImage, python: options.pythonImage },
    registry:
      options.registry === undefined
        ? null
        : {
            host: options.registry,
            username: process.env.WHARF_REGISTRY_USER || null,
            password: process.env.WHARF_REGISTRY_PASSWORD || null,
          },
    sandbox: {
      uidBase: options.sandboxUidBase,
      memoryMiB: options.sandboxMemoryMib,
      pids: options.sandboxPids,
      cpus: options.sandboxCpus,
    },
    limits: {
      tunnels: options.limitTunnels,
      projects: options.limitProjects,
      builds: options.limitBuilds,
      streams: options.limitStreams,
      captureBytesPerTunnel: options.limitCaptureMib * MiB,
      captureBytesPerAccount: options.limitAccountCaptureMib * MiB,
      bodyBytes: options.maxBodyMib * MiB,
    },
    tls: {
      httpsPort: options.httpsPort ?? null,
      acme: {
        directoryUrl: options.acmeDirectory,
        email: options.acmeEmail ?? null,
        caFile: options.acmeCaFile ? resolve(options.acmeCaFile) : null,
        dnsHook: options.acmeDnsHook ?? null,
        dnsListen: options.acmeDnsListen ?? null,
      },
    },
    ...(process.env.WHARF_SECRET ? { secret: process.env.WHARF_SECRET } : {}),
  });
  if (options.acmeDnsHook && options.acmeDnsListen) {
    throw new UsageError('--acme-dns-hook and --acme-dns-listen are two ways to do the same: choose one');
  }
  if (
    options.httpsPort === undefined &&
    (options.acmeDnsHook || options.acmeDnsListen || options.acmeEmail)
  ) {
    throw new UsageError('the --acme-* options take effect with --https-port: add it');
  }
  return { config, plans };
}

/** An option its WHARF_* variable can set too, with its default and its parser when it has them. */
function envOption<T>(
  flags: string,
  description: string,
  env: string,
  value: { default?: T; parse?: (value: string, previous: T) => T },
): Option {
  const option = new Option(flags, description);
  if (value.default !== undefined) option.default(value.default);
  if (value.parse) option.argParser(value.parse);
  return option.env(env);
}

/** `--registry`: `host[:port]` (a URL's scheme and trailing slash are taken off, a path refused). */
function parseRegistry(value: string): string {
  const host = value
    .trim()
    .replace(/^https?:\/\//, '')
    .replace(/\/+$/, '');
  if (!REGISTRY_HOST.test(host)) {
    throw new UsageError(
      `--registry must be a registry's host:port, such as registry.example.com:5000 or 10.0.0.5:5000 (no path), not "${value}"`,
    );
  }
  return host;
}

/** `--node-url`: an http(s) origin without a path (the edge of this node as the others reach it). */
function parseNodeUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--node-url must be a URL such as http://10.0.0.5:8788, not "${value}"`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== '/' || url.search !== '') {
    throw new UsageError(`--node-url must be an http(s) origin without a path, such as http://10.0.0.5:8788`);
  }
  return url.origin;
}
