// `wharf admin …`: operator commands that work on a platform's data dir directly, also while it runs:
// create an account, credit one, move one to another plan.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { SCOPES, type Scope } from '../shared/api/account.js';
import { type PlatformConfig, resolveConfig, wharfHome } from '../server/config.js';
import { loadPlans, PLANS_FILE } from '../server/plans.js';
import { UsageError, type Io } from './io.js';
import type { Store } from '../server/store/open.js';
import { describeLocation } from '../server/store/location.js';
import { parseDatabaseUrl } from './options.js';

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

const MAX_CREDIT_USD = 1_000_000;

/** A positive amount of US dollars with at most 2 decimals (cents), at most MAX_CREDIT_USD. */
export function parseUsd(value: string): number {
  const text = value.trim();
  if (!/^\d+(\.\d{1,2})?$/.test(text)) {
    throw new InvalidArgumentError(
      'must be an amount of US dollars such as 10 or 12.50 (at most 2 decimals)',
    );
  }
  const usd = Number(text);
  if (usd <= 0) throw new InvalidArgumentError('must be more than 0');
  if (usd > MAX_CREDIT_USD) throw new InvalidArgumentError(`must be at most ${MAX_CREDIT_USD}`);
  return usd;
}

function parseAccountId(value: string): string {
  const id = value.trim();
  if (!/^acc_[A-Za-z0-9]{1,64}$/.test(id)) throw new InvalidArgumentError('must be an account id (acc_…)');
  return id;
}

function plansOption(): Option {
  return new Option(
    '--plans <file>',
    `the operator's plans, a JSON file (default: <data-dir>/${PLANS_FILE} when it exists, else the built-in free and pro)`,
  ).env('WHARF_PLANS');
}

/** The platform's config as `wharf platform` would resolve it for this data dir and plans file. */
function adminConfig(options: { dataDir?: string; databaseUrl?: string; plans?: string }): PlatformConfig {
  const dataDir = resolveConfig(options.dataDir ? { dataDir: resolve(options.dataDir) } : {}).dataDir;
  const plans = loadPlans(dataDir, options.plans === undefined ? undefined : resolve(options.plans));
  return resolveConfig({
    dataDir,
    databaseUrl: options.databaseUrl ?? null,
    ...(plans ? { plans: plans.plans, defaultPlan: plans.defaultPlan } : {}),
  });
}

/** Where the platform's store is: its PostgreSQL database, or the SQLite file in its data dir. */
function storeOf(config: PlatformConfig): { location: string; name: string } {
  if (config.databaseUrl) return { location: config.databaseUrl, name: describeLocation(config.databaseUrl) };
  return { location: join(config.dataDir, 'platform.db'), name: config.dataDir };
}

/** The store of a platform that ran already: opening a SQLite file that is not there would create it. */
function existingStore(config: PlatformConfig): { location: string; name: string } {
  const store = storeOf(config);
  if (!config.databaseUrl && !existsSync(store.location))
    throw new Error(`there is no platform database in ${config.dataDir}`);
  return store;
}

function databaseUrlOption(): Option {
  return new Option(
    '--database-url <url>',
    "the platform's PostgreSQL database, when it runs on one (wharf platform --database-url)",
  )
    .env('WHARF_DATABASE_URL')
    .argParser(parseDatabaseUrl);
}

function unknownPlan(plan: string, config: PlatformConfig): UsageError {
  return new UsageError(`unknown plan "${plan}"; plans: ${Object.keys(config.plans).join(', ')}`);
}

function dataDirOption(): Option {
  return new Option(
    '--data-dir <dir>',
    `the platform's data dir (default: ${join(wharfHome(), 'platform')})`,
  ).env('WHARF_DATA_DIR');
}

interface SetPlanOptions {
  dataDir?: string;
  databaseUrl?: string;
  plans?: string;
  account: string;
  plan: string;
  json: boolean;
}

interface CreditOptions {
  dataDir?: string;
  databaseUrl?: string;
  plans?: string;
  account: string;
  usd: number;
  json: boolean;
}

interface CreateAccountOptions {
  dataDir?: string;
  databaseUrl?: string;
  plans?: string;
  email: string;
  unverified: boolean;
  scopes: Scope[];
  plan?: string;
  json: boolean;
}

export function adminCommand(io: Io): Command {
  const admin = new Command('admin').description(
    "manage a platform's accounts directly in its store (its data dir, or --database-url)",
  );

  admin
    .command('create-account')
    .description('create an account and print its first API key (shown once)')
    .addOption(dataDirOption())
    .addOption(databaseUrlOption())
    .addOption(plansOption())
    .requiredOption('--email <email>', "the account's email address", parseEmail)
    .option('--unverified', 'leave the email unverified (AI endpoints refuse such accounts)', false)
    .option('--scopes <list>', `scopes of the key: ${SCOPES.join(',')}`, parseScopes, ['full'] as Scope[])
    .option('--plan <plan>', 'billing plan (default: the platform default)')
    .option('--json', 'print { account_id, api_key } as JSON', false)
    .action(async (options: CreateAccountOptions) => {
      const config = adminConfig(options);
      const plan = options.plan ?? config.defaultPlan;
      if (!(plan in config.plans)) throw unknownPlan(plan, config);
      const { createAccount } = await import('../server/accounts/accounts.js');
      await onStore(storeOf(config).location, async (db) => {
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
      });
    });

  admin
    .command('credit')
    .description("add a top-up to an account's balance (it carries over from month to month)")
    .addOption(dataDirOption())
    .addOption(databaseUrlOption())
    .addOption(plansOption())
    .requiredOption('--account <id>', 'the account to credit (acc_…)', parseAccountId)
    .requiredOption('--usd <amount>', 'US dollars to add, e.g. 10 or 12.50', parseUsd)
    .option('--json', 'print { id, account_id, amount_usd, balance } as JSON', false)
    .action(async (options: CreditOptions) => {
      const config = adminConfig(options);
      // Opening would create an empty database: a mistyped data dir should say so instead.
      const store = existingStore(config);
      const { Ledger, formatUsd, usdToMicros } = await import('../server/billing/ledger.js');
      await onStore(store.location, async (db) => {
        const account = await db
          .selectFrom('accounts')
          .select('id')
          .where('id', '=', options.account)
          .executeTakeFirst();
        if (!account) throw new Error(`there is no account ${options.account} in ${store.name}`);
        const ledger = new Ledger(db, config);
        const micros = usdToMicros(options.usd);
        const { id } = await ledger.topUp({
          accountId: options.account,
          micros,
          description: `Credit of ${formatUsd(micros)} by an operator (wharf admin credit)`,
        });
        const balance = await ledger.balance(options.account);
        if (options.json) {
          io.out(JSON.stringify({ id, account_id: options.account, amount_usd: options.usd, balance }));
        } else {
          io.out(`Credited ${formatUsd(micros)} to ${options.account} (entry ${id})`);
          io.out(
            `Top-up now ${formatUsd(usdToMicros(balance.topup_usd))}, available ${formatUsd(usdToMicros(balance.available_usd))}`,
          );
        }
      });
    });

  admin
    .command('set-plan')
    .description(
      "move an account to another plan: its next monthly allowance, and its projects' memory, CPU and processes from their next start",
    )
    .addOption(dataDirOption())
    .addOption(databaseUrlOption())
    .addOption(plansOption())
    .requiredOption('--account <id>', 'the account (acc_…)', parseAccountId)
    .requiredOption('--plan <plan>', 'the plan it moves to')
    .option('--json', 'print { account_id, plan, previous_plan } as JSON', false)
    .action(async (options: SetPlanOptions) => {
      const config = adminConfig(options);
      if (!(options.plan in config.plans)) throw unknownPlan(options.plan, config);
      const store = existingStore(config);
      const { describeLimits, planLimits } = await import('../server/runtime/resources.js');
      await onStore(store.location, async (db) => {
        const account = await db
          .selectFrom('accounts')
          .select('plan')
          .where('id', '=', options.account)
          .executeTakeFirst();
        if (!account) throw new Error(`there is no account ${options.account} in ${store.name}`);
        await db
          .updateTable('accounts')
          .set({ plan: options.plan })
          .where('id', '=', options.account)
          .execute();
        if (options.json) {
          io.out(
            JSON.stringify({ account_id: options.account, plan: options.plan, previous_plan: account.plan }),
          );
        } else {
          io.out(`${options.account} is now on plan ${options.plan} (was ${account.plan})`);
          io.out(
            `  each project: ${describeLimits(planLimits(config, options.plan))}, from its next start (deploy, restart or rollback)`,
          );
        }
      });
    });

  admin
    .command('migrate-store')
    .description(
      "move a single-node platform's data (accounts, keys, projects, ledger, domains, certificates) from its SQLite file into an empty PostgreSQL database; stop the platform first",
    )
    .requiredOption('--from <file>', 'the SQLite store: <data-dir>/platform.db')
    .requiredOption(
      '--to <url>',
      'the PostgreSQL database, empty (postgres://user:password@host:5432/name; it must exist)',
      parseDatabaseUrl,
    )
    .option('--json', 'print { tables: { name: rows } } as JSON', false)
    .action(async (options: { from: string; to: string; json: boolean }) => {
      const from = resolve(options.from);
      // Opening would create an empty database: a mistyped path should say so instead.
      if (!existsSync(from)) throw new Error(`there is no platform database at ${from}`);
      const [{ openStore }, { copyStore }] = await Promise.all([
        import('../server/store/open.js'),
        import('../server/store/copy.js'),
      ]);
      const source = await openStore(from);
      try {
        const target = await openStore(options.to);
        try {
          const counts = await copyStore(source, target, (table, rows) => {
            if (!options.json) io.out(`  ${table.padEnd(20)} ${rows}`);
          });
          if (options.json) io.out(JSON.stringify({ tables: counts }));
          else {
            const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
            io.out(`Copied ${total} rows from ${from} to ${describeLocation(options.to)}.`);
            io.out(
              'Start every node with --database-url and the secret of this data dir (its file "secret", or WHARF_SECRET): keys and credentials are stored sealed with it.',
            );
          }
        } finally {
          await target.destroy();
        }
      } finally {
        await source.destroy();
      }
    });

  return admin;
}

/**
 * Runs `work` on the platform database in `file`, closing it afterwards; a refusal of the platform's
 * own (an ApiError: an email already taken, an unknown account) is said as it is, without its stack.
 */
async function onStore(location: string, work: (db: Store) => Promise<void>): Promise<void> {
  const [{ ApiError }, { openStore }] = await Promise.all([
    import('../server/errors.js'),
    import('../server/store/open.js'),
  ]);
  const db = await openStore(location);
  try {
    await work(db);
  } catch (error) {
    if (error instanceof ApiError) throw new Error(error.detail);
    throw error;
  } finally {
    await db.destroy();
  }
}
