// `wharf app`: runs the Engine and serves the Wharf UI for a browser at 127.0.0.1:4040. With the
// local platform (the default until another is configured) it also runs the embedded platform in this
// process, so the UI works out of the box, offline.
import { join, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { wharfHome } from '../server/config.js';
import { parsePort } from './options.js';
import { wharfPackage } from '../core/package-root.js';
import { UsageError, type Io } from './io.js';

interface AppOptions {
  port: number;
  apiPort?: number;
  edgePort?: number;
  dataDir?: string;
  platform?: string;
}

export function appCommand(io: Io): Command {
  return new Command('app')
    .description('serve the Wharf app in a browser (the desktop UI without Electron)')
    .addOption(
      new Option('--port <port>', 'inspector port (the next free one if taken)')
        .default(4040)
        .argParser(parsePort)
        .env('WHARF_INSPECTOR_PORT'),
    )
    .addOption(
      new Option(
        '--api-port <port>',
        "the embedded platform's API port (default: 8787, or a free one if taken)",
      )
        .argParser(parsePort)
        .env('WHARF_PORT'),
    )
    .addOption(
      new Option(
        '--edge-port <port>',
        "the embedded platform's app edge port, where apps and tunnels answer (default: 8788, or a free one if taken)",
      )
        .argParser(parsePort)
        .env('WHARF_EDGE_PORT'),
    )
    .addOption(
      new Option(
        '--data-dir <dir>',
        `the Wharf home: settings, history, local platform (default: ${wharfHome()})`,
      ).env('WHARF_HOME'),
    )
    .addOption(
      new Option(
        '--platform <url|local>',
        'the platform to use, saved in settings (default: the saved one, else local)',
      ),
    )
    .action(async (options: AppOptions) => {
      const home = options.dataDir ? resolve(options.dataDir) : wharfHome();
      const [
        { Engine },
        { FileSecretStore },
        { startInspector },
        { ensureLocalPlatform },
        { normalizePlatformUrl },
      ] = await Promise.all([
        import('../core/engine.js'),
        import('../core/secret-store.js'),
        import('../core/inspector/server.js'),
        import('../server/local.js'),
        import('../core/settings.js'),
      ]);
      if (
        options.platform !== undefined &&
        options.platform !== 'local' &&
        !normalizePlatformUrl(options.platform)
      ) {
        throw new UsageError(`--platform must be "local" or an http(s) URL, not "${options.platform}"`);
      }

      let local: Awaited<ReturnType<typeof ensureLocalPlatform>> | null = null;
      const engine = new Engine({
        home,
        secrets: new FileSecretStore(resolve(home, 'secrets.json')),
        localPlatform: async () => {
          local ??= await ensureLocalPlatform(home, {
            ...(options.apiPort === undefined ? {} : { port: options.apiPort }),
            ...(options.edgePort === undefined ? {} : { config: { edgePort: options.edgePort } }),
          });
          return { url: local.url, apiKey: local.apiKey };
        },
      });
      if (options.platform !== undefined)
        await engine.invoke('settings.update', { platform: options.platform });
      const settings = await engine.invoke('settings.get', undefined);
      // Learn the account and fetch the list now, while the user opens the page: its first call is then
      // answered at once. Failures (offline, no key) are for the page to show, not for start-up.
      const warmUp = engine.invoke('projects.list', undefined).catch(() => undefined);

      const staticDir = join(wharfPackage().root, 'out', 'renderer');
      const infoFile = join(home, 'inspector.json');
      const inspector = await startInspector({ bridge: engine, port: options.port, staticDir, infoFile });
      if (inspector.movedFromPort !== null)
        io.out(`Port ${inspector.movedFromPort} is in use; using ${inspector.port} instead.`);
      const localLine = local as Awaited<ReturnType<typeof ensureLocalPlatform>> | null;
      io.out(`Wharf app: ${inspector.pageUrl}`);
      if (settings.mode === 'local' && localLine) {
        io.out(
          `  Platform   ${localLine.url} (local, ${localLine.reused ? 'already running' : 'embedded in this process'})`,
        );
        io.out(
          `  Edge       ${localLine.edgeUrl} (apps and tunnels: http://<name>.localhost:${new URL(localLine.edgeUrl).port})`,
        );
        if (localLine.movedPorts)
          io.out(
            '  The default ports were taken, so the platform took free ones; `wharf` commands find it (in the home below).',
          );
      } else io.out(`  Platform   ${settings.platformUrl} (${settings.mode})`);
      io.out(`  Home       ${home}`);
      io.out(`  API        ${inspector.origin}/api with X-Wharf-Token (also in ${infoFile})`);
      io.out('Open the URL above in a browser. Press Ctrl+C to stop.');

      await warmUp;
      await new Promise<void>((done) => {
        const stop = (signal: NodeJS.Signals) => {
          io.out(`${signal}: shutting down`);
          void (async () => {
            await inspector.close().catch(() => undefined);
            await engine.close().catch(() => undefined);
            await (local as { close(): Promise<void> } | null)?.close().catch(() => undefined);
            done();
          })();
        };
        process.once('SIGINT', () => stop('SIGINT'));
        process.once('SIGTERM', () => stop('SIGTERM'));
      });
      io.out('Stopped.');
    });
}
