// `wharf admin …`: operator commands that work on a platform's data dir directly, also while it runs.
import { join, resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { SCOPES, type Scope } from '../shared/api/account.js';
import { resolveConfig, wharfHome } from '../server/config.js';
import { UsageError, type Io } from './io.js';

function parseScopes(value: string): Scope[] {
  const scopes = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (scopes.length === 0 || unknown.length > 0) {
    throw new InvalidArgumentError(
      `scopes are a comma-separated list of ${SCOPES.join(', ')}${unknown.length ? `; unknown: ${unknown.join(', ')}` : ''}`,
    );
  }
  return [...new Set(scopes)] as Scope[];
}

function parseEmail(value: string): string {
  const email = value.trim().toLowerCase();
  if (email.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(email))
    throw new InvalidArgumentError('must be an email address');
  return email;
}

interface CreateAccountOptions {
  dataDir?: string;
  email: string;
  unverified: boolean;
  scopes: Scope[];
  plan?: string;
  json: boolean;
}

export function adminCommand(io: Io): Command {
  const admin = new Command('admin').description("manage a platform's accounts directly in its data dir");

  admin
    .command('create-account')
    .description('create an account and print its first API key (shown once)')
    .addOption(
      new Option(
        '--data-dir <dir>',
        `the platform's data dir (default: ${join(wharfHome(), 'platform')})`,
      ).env('WHARF_DATA_DIR'),
    )
    .requiredOption('--email <email>', "the account's email address", parseEmail)
    .option('--unverified', 'leave the email unverified (AI endpoints refuse such accounts)', false)
    .option('--scopes <list>', `scopes of the key: ${SCOPES.join(',')}`, parseScopes, ['full'] as Scope[])
    .option('--plan <plan>', 'billing plan (default: the platform default)')
    .option('--json', 'print { account_id, api_key } as JSON', false)
    .action(async (options: CreateAccountOptions) => {
      const config = resolveConfig(options.dataDir ? { dataDir: resolve(options.dataDir) } : {});
      const plan = options.plan ?? config.defaultPlan;
      if (!(plan in config.plans)) {
        throw new UsageError(`unknown plan "${plan}"; plans: ${Object.keys(config.plans).join(', ')}`);
      }
      const [{ createAccount }, { ApiError }, { openStore }] = await Promise.all([
        import('../server/accounts/accounts.js'),
        import('../server/errors.js'),
        import('../server/store/open.js'),
      ]);
      const db = await openStore(join(config.dataDir, 'platform.db'));
      try {
        const { accountId, key } = await createAccount(db, {
          email: options.email,
          verified: !options.unverified,
          plan,
          scopes: options.scopes,
          keyName: 'created by wharf admin',
        });
        if (options.json) io.out(JSON.stringify({ account_id: accountId, api_key: key.key }));
        else {
          io.out(
            `Created account ${accountId} (${options.email}, ${options.unverified ? 'unverified' : 'verified'}, plan ${plan})`,
          );
          io.out(`API key (${key.scopes.join(',')}), shown once:`);
          io.out(key.key);
        }
      } catch (error) {
        if (error instanceof ApiError) throw new Error(error.detail);
        throw error;
      } finally {
        await db.destroy();
      }
    });

  return admin;
}
