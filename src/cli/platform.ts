// `wharf platform`: runs the platform server in the foreground until SIGINT or SIGTERM, after a banner
// that says where everything is. Its options and the configuration they make: platform-options.ts.
import { join } from 'node:path';
import { Command } from 'commander';
import { type PlatformConfig, edgeUrl } from '../server/config.js';
import type { PlansSetting } from '../server/plans.js';
import { describeLocation } from '../server/store/location.js';
import type { PlatformEvent } from '../server/app.js';
import type { RunningPlatform } from '../server/serve.js';
import { describeLimits, planLimits } from '../server/runtime/resources.js';
import { type Io, UsageError } from './io.js';
import { type PlatformOptions, platformConfig, withPlatformOptions } from './platform-options.js';

export function platformCommand(io: Io): Command {
  return withPlatformOptions(
    new Command('platform').description('run the Wharf platform (the /api/v1 server) in the foreground'),
  ).action(async (options: PlatformOptions) => {
    const { config, plans } = platformConfig(options);
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
    printBanner(io, running, config, plans);
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

/** What runs where: the addresses, the front, HTTPS, the runtime, the plans, AI, DNS, the local key. */
function printBanner(
  io: Io,
  running: RunningPlatform,
  config: PlatformConfig,
  plans: PlansSetting | null,
): void {
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
  if (config.databaseUrl) io.out(`  Database   ${describeLocation(config.databaseUrl)} (PostgreSQL)`);
  if (running.cluster.clustered)
    io.out(`  Cluster    node ${running.cluster.nodeId}, reached by the other nodes at ${config.nodeUrl}`);
  io.out(
    `  Runtime    ${running.runtime.kind}${running.runtime.kind === 'sandbox' ? ' (bwrap)' : ''}${config.runtime === 'auto' ? ', picked by --runtime auto' : ''}${running.runtime.kind === 'container' || running.runtime.kind === 'swarm' ? `; generated Dockerfiles FROM ${config.images.node} or ${config.images.python}` : ''}`,
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
}
