// `wharf http <port>`: puts a local port on a public URL through the platform's tunnel edge, prints one
// line per request, records every exchange in the Mirror (WHARF_HOME/mirror.db) and serves the
// inspector (the app UI and the /api traffic API, both behind the printed token, which local scripts
// also find in WHARF_HOME/inspector.json) on 127.0.0.1:4040 unless --no-inspect. The platform
// is the one given with --platform/--api-key, else the saved one (`wharf login`), else the local one,
// which is started in this process when none runs (a tunnel to it needs it up).
import { join } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { CapturedRequest } from '../shared/api/tunnels.js';
import { BridgeError, type LocalTunnel } from '../shared/bridge.js';
import { DNS_LABEL_PATTERN, RESERVED_SUBDOMAINS, isHostHeaderMode } from '../shared/dns-label.js';
import { apiKeyOption, caOption, localPort, platformOption, secretStore, wharfHomeDir } from './connect.js';
import { CommandExit, type Io } from './io.js';
import { wharfPackage } from '../core/package-root.js';

export const DEFAULT_INSPECT = '127.0.0.1:4040';

interface HttpOptions {
  subdomain?: string;
  /** The traffic history's bound, in MiB. */
  historySize: number;
  hostHeader: string;
  /** An address, or false with --no-inspect. */
  inspect: string | false;
  platform?: string;
  apiKey?: string;
}

export function parseLocalPort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value.trim()) || port < 1 || port > 65535) {
    throw new InvalidArgumentError('must be the port your app listens on, from 1 to 65535');
  }
  return port;
}

export function parseSubdomain(value: string): string {
  const label = value.trim();
  if (!DNS_LABEL_PATTERN.test(label)) {
    throw new InvalidArgumentError(
      'must be a lowercase DNS label: letters, digits and hyphens, such as my-app',
    );
  }
  if (RESERVED_SUBDOMAINS.has(label))
    throw new InvalidArgumentError(`"${label}" is reserved for the platform`);
  return label;
}

export function parseHostHeader(value: string): string {
  const mode = value.trim();
  if (isHostHeaderMode(mode)) return mode;
  throw new InvalidArgumentError('must be preserve, rewrite, or a host name such as myapp.test');
}

export function parseHistorySize(value: string): number {
  const size = Number(value);
  if (!/^\d+$/.test(value.trim()) || size < 1 || size > 1024 * 1024) {
    throw new InvalidArgumentError('must be a number of MiB, such as 256');
  }
  return size;
}

/** `127.0.0.1:4040`, `localhost:4040`, `:4040` or `4040`: the inspector listens on 127.0.0.1 only. */
export function parseInspect(value: string): string {
  const match = /^(?:(127\.0\.0\.1|localhost)?:)?(\d{1,5})$/i.exec(value.trim());
  const port = Number(match?.[2]);
  if (!match || port > 65535) {
    throw new InvalidArgumentError('must be 127.0.0.1:PORT (the inspector listens on 127.0.0.1 only)');
  }
  return `127.0.0.1:${port}`;
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/** `14:02:07  GET     /hello?x=1                      200      12 ms`, and why it failed when it did. */
export function requestLine(request: CapturedRequest): string {
  const started = new Date(request.timestamp);
  const time = `${pad2(started.getHours())}:${pad2(started.getMinutes())}:${pad2(started.getSeconds())}`;
  const duration = `${request.duration_ms} ms`;
  const parts = [
    time,
    request.method.padEnd(7),
    request.path.padEnd(32),
    String(request.status_code),
    duration.padStart(10),
  ];
  let line = parts.join('  ');
  if (request.replay_of) line += `  (replay of ${request.replay_of})`;
  if (request.error) line += `  ! ${request.error}`;
  return line;
}

export function httpCommand(io: Io): Command {
  return new Command('http')
    .description('put a local port on a public URL, print each request and record it (inspector on 4040)')
    .argument('<port>', 'the local port your app listens on', parseLocalPort)
    .option('--subdomain <name>', 'the subdomain to ask for (default: a random one)', parseSubdomain)
    .option(
      '--host-header <mode>',
      'the Host your app sees: preserve (the public one), rewrite (localhost:<port>), or a host name',
      parseHostHeader,
      'preserve',
    )
    .option(
      '--inspect <address>',
      'serve the inspector (the app and /api) here; the next free port if taken',
      parseInspect,
      DEFAULT_INSPECT,
    )
    .option('--no-inspect', 'do not serve the inspector')
    .addOption(
      new Option('--history-size <MiB>', 'how much traffic history to keep (oldest dropped first)')
        .default(256)
        .argParser(parseHistorySize)
        .env('WHARF_HISTORY_MB'),
    )
    .addOption(platformOption('the platform (default: the saved one, see `wharf login`; else local)'))
    .addOption(apiKeyOption("its API key (default: the saved one; the local account's for local)"))
    .addOption(caOption())
    .action(async (port: number, options: HttpOptions) => {
      // Ctrl+C from here on stops cleanly, even while connecting: a local platform started here must
      // stop its apps rather than die with them running.
      let signalled: NodeJS.Signals | null = null;
      let onSignal: (signal: NodeJS.Signals) => void = () => undefined;
      const signals = (['SIGINT', 'SIGTERM'] as const).map((name) => {
        const handler = () => {
          signalled ??= name;
          onSignal(name);
        };
        process.once(name, handler);
        return () => process.off(name, handler);
      });
      const resources: Array<() => Promise<void>> = [];
      const release = async () => {
        for (const close of resources.splice(0).reverse()) await close().catch(() => undefined);
        for (const off of signals) off();
      };
      try {
        await serve(port, options, io, {
          signalled: () => signalled,
          onSignal: (listener) => (onSignal = listener),
          resources,
        });
      } finally {
        await release();
      }
      io.out('Stopped.');
    });
}

interface Lifecycle {
  /** The signal received so far, if any. */
  signalled(): NodeJS.Signals | null;
  onSignal(listener: (signal: NodeJS.Signals) => void): void;
  /** Closers, run last first when the command ends. */
  resources: Array<() => Promise<void>>;
}

/** What stopped the command. */
type Outcome = { signal: NodeJS.Signals } | { refused: string } | { stoppedFromInspector: true };

async function serve(port: number, options: HttpOptions, io: Io, life: Lifecycle): Promise<void> {
  const home = wharfHomeDir();
  const [{ Engine }, { startInspector }, { readSettings, apiKeySecretName }] = await Promise.all([
    import('../core/engine.js'),
    import('../core/inspector/server.js'),
    import('../core/settings.js'),
  ]);
  const secrets = secretStore(home);
  const platform = options.platform ?? readSettings(home).platform;
  const common = {
    home,
    secrets,
    version: wharfPackage().version,
    trafficHistoryBytes: options.historySize * 1024 * 1024,
  };
  const stoppedEarly = (): boolean => {
    const signal = life.signalled();
    if (signal) io.err(`${signal}: stopping`);
    return signal !== null;
  };

  let local: { url: string; apiKey: string; reused: boolean; close(): Promise<void> } | null = null;
  let engine: InstanceType<typeof Engine>;
  if (platform === 'local') {
    const { ensureLocalPlatform } = await import('../server/local.js');
    const wanted = localPort();
    const started = await ensureLocalPlatform(home, wanted === undefined ? {} : { port: wanted });
    local = started;
    life.resources.push(() => started.close());
    if (stoppedEarly()) return;
    engine = new Engine({
      ...common,
      platformOverride: { mode: 'local' },
      localPlatform: async () => ({ url: started.url, apiKey: options.apiKey ?? started.apiKey }),
    });
  } else {
    const apiKey = options.apiKey ?? secrets.get(apiKeySecretName(platform));
    if (!apiKey) {
      throw new Error(
        `no API key is saved for ${platform}: run \`wharf login --platform ${platform} --api-key KEY\`, or pass --api-key`,
      );
    }
    engine = new Engine({ ...common, platformOverride: { mode: 'remote', origin: platform, apiKey } });
  }
  // Closing the Engine stops its tunnel and stores what it captured last.
  life.resources.push(() => engine.close());

  let tunnel: LocalTunnel;
  try {
    tunnel = await engine.invoke('tunnels.start', {
      port,
      hostHeader: options.hostHeader,
      ...(options.subdomain === undefined ? {} : { subdomain: options.subdomain }),
    });
  } catch (error) {
    if (error instanceof BridgeError && error.code === 'unauthorized') {
      const whose = options.apiKey
        ? 'the API key given with --api-key or WHARF_API_KEY'
        : local
          ? "the local account's key"
          : 'the saved API key (run `wharf login` with a valid one)';
      throw new Error(`the platform at ${local?.url ?? platform} refused ${whose}: ${error.detail}`);
    }
    throw error;
  }
  if (stoppedEarly()) return;

  let inspector: Awaited<ReturnType<typeof startInspector>> | null = null;
  if (options.inspect !== false) {
    const running = await startInspector({
      bridge: engine,
      port: Number(options.inspect.split(':')[1]),
      staticDir: join(wharfPackage().root, 'out', 'renderer'),
      infoFile: join(home, 'inspector.json'),
    });
    inspector = running;
    life.resources.push(() => running.close());
    if (stoppedEarly()) return;
  }

  io.out(`Forwarding  ${tunnel.url} -> http://localhost:${port}`);
  if (inspector) {
    io.out(`Inspector   ${inspector.pageUrl}`);
    if (inspector.movedFromPort !== null)
      io.out(`            (port ${inspector.movedFromPort} is in use: the inspector took ${inspector.port})`);
    io.out(
      `API         ${inspector.origin}/api with X-Wharf-Token (also in ${join(home, 'inspector.json')})`,
    );
  }
  if (local) {
    io.out(
      `Platform    ${local.url} (local, ${local.reused ? 'already running' : 'started in this process: it stops with it'})`,
    );
  } else io.out(`Platform    ${platform}`);
  io.out(`History     ${join(home, 'mirror.db')}`);
  io.out('Press Ctrl+C to stop.');
  io.out('');
  if (tunnel.listening === false) io.err(noListenerLine(port));

  // A batch's lines in one write: a line each would be a system call for every request.
  engine.on('traffic', ({ requests }) => {
    if (requests.length > 0) io.out(requests.map(requestLine).join('\n'));
  });

  let lastState = tunnel.state;
  let lastListening = tunnel.listening;
  const outcome = await new Promise<Outcome>((done) => {
    const finish = (value: Outcome) => {
      offTunnels();
      done(value);
    };
    life.onSignal((signal) => finish({ signal }));
    // The tunnel keeps its start time whatever ids the platform gives it over reconnects.
    const offTunnels = engine.on('tunnels', (tunnels) => {
      const current = tunnels.find((t) => t.localPort === port && t.startedAt === tunnel.startedAt);
      if (!current) {
        finish({ stoppedFromInspector: true });
        return;
      }
      // The app on the local port stopped or started answering (checked by the Engine's port watch).
      if (current.listening !== null && current.listening !== lastListening) {
        if (current.listening === false) io.err(noListenerLine(port));
        else if (lastListening === false) io.err(`localhost:${port} answers now.`);
      }
      if (current.listening !== null) lastListening = current.listening;
      if (current.state === lastState) return;
      lastState = current.state;
      if (current.state === 'reconnecting') io.err(`Connection lost: ${current.detail ?? 'reconnecting'}`);
      else if (current.state === 'online') io.err(`Reconnected: ${current.url}`);
      else if (current.state === 'stopped') finish({ refused: current.detail ?? 'stopped' });
    });
  });

  if ('signal' in outcome) io.err(`${outcome.signal}: stopping the tunnel`);
  else if ('stoppedFromInspector' in outcome) io.err('The tunnel was stopped from the inspector.');
  if ('refused' in outcome) {
    io.err(`wharf: the platform ended the tunnel: ${outcome.refused}`);
    throw new CommandExit(1);
  }
}

/** What `wharf http` says while nothing listens on the local port, as the app's Traffic bar does. */
function noListenerLine(port: number): string {
  return `Nothing listens on localhost:${port} yet: start your app; requests get 502 until it does.`;
}
