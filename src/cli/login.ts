// `wharf login`: makes a platform the one every client on this machine uses (the Engine, the app, the
// other commands), after checking the key against it. The key goes to the secret store under the
// platform's origin, the platform to settings.json; `--platform local` switches back to the local one.
import { Command } from 'commander';
import { PlatformClient } from '../core/api-client/platform-client.js';
import { localAccountFile, localPlatformOrigin } from '../core/platform-target.js';
import { apiKeySecretName, settingsFile, writeSettings } from '../core/settings.js';
import { BridgeError } from '../shared/bridge.js';
import {
  apiKeyOption,
  caOption,
  localPort,
  platformOption,
  secretStore,
  secretsFile,
  wharfHomeDir,
} from './connect.js';
import { UsageError, type Io } from './io.js';

interface LoginOptions {
  platform: string;
  apiKey?: string;
}

export function loginCommand(io: Io): Command {
  return new Command('login')
    .description('check an API key against a platform and make that platform the default')
    .addOption(
      platformOption(
        'the platform: its http(s) URL, or "local" for the one on this machine',
      ).makeOptionMandatory(),
    )
    .addOption(apiKeyOption('an API key of the account (wk_…), needed for a remote platform'))
    .addOption(caOption())
    .action(async (options: LoginOptions, command: Command) => {
      const home = wharfHomeDir();
      if (options.platform === 'local') {
        if (command.getOptionValueSource('apiKey') === 'cli') {
          throw new UsageError(
            `--api-key is not used with --platform local: the local platform's key is in ${localAccountFile(home)}`,
          );
        }
        const origin = localPlatformOrigin(localPort());
        writeSettings(home, { platform: 'local' });
        const running = await new PlatformClient({ baseUrl: origin, apiKey: null }).health();
        io.out(`Using the local platform (${origin}) from now on.`);
        if (!running) io.out('It is not running now: start it with `wharf platform` (or open the app).');
        return;
      }

      const origin = options.platform;
      if (options.apiKey === undefined) {
        throw new UsageError(`--api-key is required to log in to ${origin} (or set WHARF_API_KEY)`);
      }
      const client = new PlatformClient({ baseUrl: origin, apiKey: options.apiKey });
      let account;
      try {
        account = await client.account();
      } catch (error) {
        if (error instanceof BridgeError && error.code === 'unauthorized') {
          throw new Error(`the platform at ${origin} refused the API key: ${error.detail}`);
        }
        throw error;
      }
      const secrets = secretStore(home);
      secrets.set(apiKeySecretName(origin), options.apiKey);
      writeSettings(home, { platform: origin });
      io.out(`Logged in to ${origin} as ${account.email} (${account.id}).`);
      io.out(`The key is saved in ${secretsFile(home)}; ${settingsFile(home)} now points at ${origin}.`);
    });
}
