// `wharf platform`: runs the platform server in the foreground until SIGINT or SIGTERM.
import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import {
  DEFAULT_API_PORT,
  DEFAULT_EDGE_PORT,
  DEFAULT_IMAGES,
  FRONT_KINDS,
  type FrontKind,
  LETS_ENCRYPT_DIRECTORY,
  edgeUrl,
  RUNTIME_KINDS,
  type RuntimeKind,
  resolveConfig,
  wharfHome,
} from '../server/config.js';
import { join } from 'node:path';
import { loadPlans, PLANS_FILE } from '../server/plans.js';
import type { PlatformEvent } from '../server/app.js';
import { describeLimits, planLimits } from '../server/runtime/resources.js';
import { AI_PROVIDERS, type AiProvider } from '../shared/api/account.js';
import {
  parseCount,
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
import { type Io, UsageError } from './io.js';

interface PlatformOptions {
  dataDir?: string;
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

export function platformCommand(io: Io): Command {
  return new Command('platform')
    .description('run the Wharf platform (the /api/v1 server) in the foreground')
    .addOption(
      new Option(
        '--data-dir <dir>',
        `where its database, uploads and secret live (default: ${join(wharfHome(), 'platform')})`,
      ).env('WHARF_DATA_DIR'),
    )
    .addOption(
      new Option(
        '--plans <file>',
        `the plans accounts can be on, a JSON file: { "default_plan", "plans": { name: { allowance_usd, memory_mib, cpus, pids } } } (default: <data-dir>/${PLANS_FILE} when it exists, else free and pro)`,
      ).env('WHARF_PLANS'),
    )
    .addOption(new Option('--host <host>', 'address to listen on').default('127.0.0.1').env('WHARF_HOST'))
    .addOption(
      new Option('--port <port>', 'API port')
        .default(DEFAULT_API_PORT)
        .argParser(parsePort)
        .env('WHARF_PORT'),
    )
    .addOption(
      new Option('--edge-port <port>', 'public port of the app and tunnel edge')
        .default(DEFAULT_EDGE_PORT)
        .argParser(parsePort)
        .env('WHARF_EDGE_PORT'),
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
      new Option(
        '--https-port <port>',
        'serve apps, services, custom domains and tunnels over HTTPS on this port, with certificates over ACME (the edge port then answers ACME HTTP-01 checks and redirects to HTTPS)',
      )
        .argParser(parsePort)
        .env('WHARF_HTTPS_PORT'),
    )
    .addOption(
      new Option(
        '--acme-directory <url>',
        "the ACME CA's directory URL (Let's Encrypt; its staging; any RFC 8555 CA)",
      )
        .default(LETS_ENCRYPT_DIRECTORY)
        .argParser(parseHttpsUrl)
        .env('WHARF_ACME_DIRECTORY'),
    )
    .addOption(
      new Option(
        '--acme-email <address>',
        'the ACME account contact: the CA writes there about expiring certificates',
      )
        .argParser(parseMailbox)
        .env('WHARF_ACME_EMAIL'),
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
      new Option(
        '--acme-dns-listen <host:port>',
        'wildcard certificates over DNS-01 with the built-in responder: an authoritative DNS server for the _acme-challenge names you delegate to this machine (NS records)',
      )
        .argParser(parseListen)
        .env('WHARF_ACME_DNS_LISTEN'),
    )
    .addOption(
      new Option('--base-domain <domain>', 'apps are served at <subdomain>.<domain>')
        .default('localhost')
        .argParser(parseDomain)
        .env('WHARF_BASE_DOMAIN'),
    )
    .addOption(
      new Option('--tunnel-domain <domain>', 'tunnels are served at <subdomain>.<domain>')
        .default('tunnel.localhost')
        .argParser(parseDomain)
        .env('WHARF_TUNNEL_DOMAIN'),
    )
    .addOption(
      new Option(
        '--runtime <kind>',
        'how deployed apps run: container (an image per release on Docker or Podman at DOCKER_HOST or the default socket), sandbox (bwrap, a user per project when run as root), process (as this user: one account only), or auto, the strongest available',
      )
        .choices(RUNTIME_KINDS)
        .default('auto')
        .env('WHARF_RUNTIME'),
    )
    .addOption(
      new Option('--sandbox-uid-base <uid>', 'run as root, the sandbox gives project N the uid <uid>+N')
        .default(200_000)
        .argParser(parseCount(4_000_000_000))
        .env('WHARF_SANDBOX_UID_BASE'),
    )
    .addOption(
      new Option('--sandbox-memory-mib <mib>', "memory of one project's processes together (0: no limit)")
        .default(2048)
        .argParser(parseCeiling(1_048_576))
        .env('WHARF_SANDBOX_MEMORY_MIB'),
    )
    .addOption(
      new Option('--sandbox-pids <n>', 'processes and threads of one project at once (0: no limit)')
        .default(1024)
        .argParser(parseCeiling(1_000_000))
        .env('WHARF_SANDBOX_PIDS'),
    )
    .addOption(
      new Option('--sandbox-cpus <cores>', 'CPU cores one project may use, e.g. 0.5 (0: no limit)')
        .default(1)
        .argParser(parseCeiling(1_024, true))
        .env('WHARF_SANDBOX_CPUS'),
    )
    .addOption(
      new Option(
        '--node-image <ref>',
        'the base image of Dockerfiles written for Node apps (container runtime)',
      )
        .default(DEFAULT_IMAGES.node)
        .env('WHARF_NODE_IMAGE'),
    )
    .addOption(
      new Option(
        '--python-image <ref>',
        'the base image of Dockerfiles written for Python apps (container runtime)',
      )
        .default(DEFAULT_IMAGES.python)
        .env('WHARF_PYTHON_IMAGE'),
    )
    .addOption(
      new Option(
        '--keep-releases <n>',
        "how many of a project's releases that served keep their image or files for a rollback",
      )
        .default(5)
        .argParser(parseCount(1_000))
        .env('WHARF_KEEP_RELEASES'),
    )
    .addOption(
      new Option('--git-host-url <url>', 'where git_host_repo "owner/repo" is cloned from')
        .default('https://github.com')
        .argParser(parseUrl)
        .env('WHARF_GIT_HOST_URL'),
    )
    .addOption(
      new Option(
        '--no-local-repos',
        'refuse file:// repository URLs (for a platform several accounts share: they could deploy any repository the server can read)',
      ),
    )
    .addOption(
      new Option('--health-timeout <seconds>', 'how long a started app has to accept connections')
        .default(60)
        .argParser(parsePositiveSeconds)
        .env('WHARF_HEALTH_TIMEOUT'),
    )
    .addOption(
      new Option(
        '--dns-server <host:port>',
        'DNS server for domain verification and email checks (repeatable; default: the system resolvers)',
      )
        .argParser(parseDnsServer)
        .env('WHARF_DNS_SERVER'),
    )
    .addOption(
      new Option('--smtp-port <port>', 'the port MX hosts are probed on by email checks')
        .default(25)
        .argParser(parsePort)
        .env('WHARF_SMTP_PORT'),
    )
    .addOption(
      new Option('--helo-name <name>', 'the name email probes give in EHLO')
        .default('verify.wharf.localhost')
        .argParser(parseDomain)
        .env('WHARF_HELO_NAME'),
    )
    .addOption(
      new Option('--mail-from <address>', "the email probe's MAIL FROM")
        .default('verify@wharf.localhost')
        .argParser(parseMailbox)
        .env('WHARF_MAIL_FROM'),
    )
    .addOption(
      new Option('--smtp-timeout <seconds>', 'how long an MX host has to connect and to send each reply')
        .default(15)
        .argParser(parsePositiveSeconds)
        .env('WHARF_SMTP_TIMEOUT'),
    )
    .addOption(
      new Option('--smtp-concurrency <n>', 'email probes at once per mail domain')
        .default(2)
        .argParser(parseCount(32))
        .env('WHARF_SMTP_CONCURRENCY'),
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
      new Option('--ai-base-url <url>', "the included provider's API base URL (an OpenAI-compatible gateway)")
        .argParser(parseUrl)
        .env('WHARF_AI_BASE_URL'),
    )
    .addOption(
      new Option('--limit-tunnels <n>', 'tunnels one account may have connected at once')
        .default(10)
        .argParser(parseCount(10_000))
        .env('WHARF_LIMIT_TUNNELS'),
    )
    .addOption(
      new Option('--limit-projects <n>', 'projects one account may have')
        .default(100)
        .argParser(parseCount(100_000))
        .env('WHARF_LIMIT_PROJECTS'),
    )
    .addOption(
      new Option('--limit-builds <n>', "deploys of one account's projects running at once")
        .default(3)
        .argParser(parseCount(1_000))
        .env('WHARF_LIMIT_BUILDS'),
    )
    .addOption(
      new Option(
        '--limit-streams <n>',
        'event streams and WebSockets one account may have open at once (log follows, agent streams, traffic feeds, tunnels)',
      )
        .default(20)
        .argParser(parseCount(100_000))
        .env('WHARF_LIMIT_STREAMS'),
    )
    .addOption(
      new Option('--limit-capture-mib <mib>', "memory for one tunnel's captured bodies, in MiB")
        .default(64)
        .argParser(parseCount(4_096))
        .env('WHARF_LIMIT_CAPTURE_MIB'),
    )
    .addOption(
      new Option(
        '--limit-account-capture-mib <mib>',
        "memory for the captured bodies of all of one account's tunnels (offline ones kept for an hour included), in MiB",
      )
        .default(256)
        .argParser(parseCount(65_536))
        .env('WHARF_LIMIT_ACCOUNT_CAPTURE_MIB'),
    )
    .addOption(
      new Option('--max-body-mib <mib>', 'the largest request body the app and tunnel edge pass on, in MiB')
        .default(100)
        .argParser(parseCount(1_048_576))
        .env('WHARF_MAX_BODY_MIB'),
    )
    .addOption(new Option('--log', 'log every request').default(false))
    .action(async (options: PlatformOptions) => {
      const dataDir = resolveConfig(options.dataDir ? { dataDir: resolve(options.dataDir) } : {}).dataDir;
      const plans = loadPlans(dataDir, options.plans === undefined ? undefined : resolve(options.plans));
      const config = resolveConfig({
        dataDir,
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
          baseUrls:
            options.aiProvider && options.aiBaseUrl ? { [options.aiProvider]: options.aiBaseUrl } : {},
          postgresUrl: process.env.WHARF_POSTGRES_URL || null,
        },
        keepReleases: options.keepReleases,
        images: { node: options.nodeImage, python: options.pythonImage },
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
      if (options.front === 'haproxy') {
        const { requireHaproxy } = await import('../server/front/front.js');
        try {
          requireHaproxy();
        } catch (error) {
          throw new UsageError((error as Error).message);
        }
      }
      // Loaded on use, so that `wharf --help` and other commands start fast.
      const { PortInUseError, servePlatform } = await import('../server/serve.js');
      let running;
      // Certificates may be issued while it starts: their events wait until the banner is out.
      let early: string[] | null = [];
      const say = (event: PlatformEvent) => {
        const line = `[${event.source ?? 'tls'}] ${event.level === 'warn' ? 'warning: ' : ''}${event.message}`;
        if (early) early.push(line);
        else (event.level === 'warn' ? io.err : io.out)(line);
      };
      try {
        running = await servePlatform(config, { host: options.host, port: options.port }, {}, (platform) =>
          platform.events.on('event', say),
        );
      } catch (error) {
        if (error instanceof PortInUseError) {
          const flag =
            error.port === options.port
              ? '--port'
              : error.port === options.httpsPort
                ? '--https-port'
                : '--edge-port';
          throw new Error(`${error.message}: is another platform running? Choose another with ${flag}`);
        }
        throw error;
      }
      const edgePort = running.config.edgePort;
      const edge = (label: string) => edgeUrl(running.config, label);
      io.out(`Wharf platform listening on ${running.origin}`);
      io.out(`  API        ${running.apiUrl}  (OpenAPI: ${running.apiUrl}/openapi.json)`);
      if (running.tls) io.out(`             public: ${edge(`api.${config.baseDomain}`)}/api/v1`);
      io.out(`  Apps       ${edge(`<subdomain>.${config.baseDomain}`)}`);
      io.out(`  Tunnels    ${edge(`<subdomain>.${config.tunnelDomain}`)}`);
      io.out(
        running.front
          ? `  Front      HAProxy ${running.front.version} on the edge port${running.tls ? 's' : ''} (config in ${running.front.dir}); apps straight to their ports, the Node edge behind it`
          : '  Front      none: the Node edge serves the edge port itself (--front haproxy puts HAProxy in front)',
      );
      if (running.tls) {
        const wildcards =
          running.tls.dns === 'hook'
            ? `; wildcards *.${config.baseDomain} and *.${config.tunnelDomain} over DNS-01 (hook)`
            : running.tls.dns === 'responder'
              ? `; wildcards *.${config.baseDomain} and *.${config.tunnelDomain} over DNS-01 (responder on ${running.tls.responder?.address ?? config.tls.acme.dnsListen})`
              : '; no wildcards (each host on its own; --acme-dns-hook or --acme-dns-listen for wildcards)';
        io.out(
          `  HTTPS      port ${running.config.tls.httpsPort}; plain port ${edgePort} answers ACME HTTP-01 and redirects`,
        );
        io.out(`  ACME       ${running.tls.directoryUrl}${wildcards}`);
      }
      io.out(`  Data       ${config.dataDir}`);
      io.out(
        `  Runtime    ${running.runtime.kind}${running.runtime.kind === 'sandbox' ? ' (bwrap)' : ''}${config.runtime === 'auto' ? ', picked by --runtime auto' : ''}${running.runtime.kind === 'container' ? `; generated Dockerfiles FROM ${config.images.node} or ${config.images.python}` : ''}`,
      );
      for (const note of running.runtimeNotes) io.out(`             ${note}`);
      io.out(
        `  Plans      ${plans ? `from ${plans.file}` : 'built in (free, pro)'}; new accounts: ${config.defaultPlan}`,
      );
      for (const [name, plan] of Object.entries(config.plans)) {
        io.out(
          `             ${name}: $${plan.allowance_usd} a month; each project ${describeLimits(planLimits(config, name))}`,
        );
      }
      io.out(
        `  AI         ${config.ai.provider ? `${config.ai.provider}${config.ai.model ? ` ${config.ai.model}` : ''}${config.ai.key ? '' : ' (WHARF_AI_KEY is not set)'}` : 'no included engine: own keys, else offline templates'}`,
      );
      io.out(
        `  DNS        ${config.dnsServers?.join(', ') ?? 'system resolvers'}; email probes on port ${config.email.smtpPort}` +
          (config.email.allowPrivate ? ' (private MX hosts allowed)' : ''),
      );
      if (running.localAccountFile)
        io.out(`  Local account created; its API key is in ${running.localAccountFile}`);
      else io.out(`  Local account key: ${join(config.dataDir, 'local-account.json')}`);
      io.out('Press Ctrl+C to stop.');
      for (const line of early) io.out(line);
      early = null;

      await new Promise<void>((done) => {
        let stopping = false;
        const stop = (signal: NodeJS.Signals) => {
          if (stopping) {
            io.err(`${signal} again: exiting now`);
            process.exit(1);
          }
          stopping = true;
          io.out(`${signal}: shutting down`);
          running.close().then(done, (error: unknown) => {
            io.err(`error while shutting down: ${(error as Error).message}`);
            done();
          });
        };
        process.once('SIGINT', () => stop('SIGINT'));
        process.once('SIGTERM', () => stop('SIGTERM'));
      });
      io.out('Stopped.');
    });
}
