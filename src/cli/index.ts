// The `wharf` command: parsing and printing only; the work is done by src/server and src/core.
// Exit codes: 0 success, 1 failure, 2 usage error. Every error is one readable line on stderr.
import { Command, CommanderError } from 'commander';
import { BridgeError } from '../shared/bridge.js';
import { adminCommand } from './admin.js';
import { appCommand } from './app.js';
import { deployCommand } from './deploy.js';
import { emailCommand } from './email.js';
import { httpCommand } from './http.js';
import { CommandExit, UsageError, processIo, type Io } from './io.js';
import { loginCommand } from './login.js';
import { logsCommand } from './logs.js';
import { platformCommand } from './platform.js';
import { projectsCommand } from './projects.js';
import { releasesCommand } from './releases.js';
import { rollbackCommand } from './rollback.js';
import { stopCommand } from './stop.js';
import { wharfPackage } from '../core/package-root.js';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export function buildProgram(io: Io = processIo): Command {
  const program = new Command('wharf')
    .description('Wharf: deploy projects, tunnel local ports and inspect their traffic, from one tool')
    .version(wharfPackage().version, '-v, --version')
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({
      writeErr: (text) => process.stderr.write(text),
      writeOut: (text) => process.stdout.write(text),
    });
  // In the order `wharf --help` lists them.
  const commands = [
    platformCommand,
    appCommand,
    adminCommand,
    loginCommand,
    projectsCommand,
    deployCommand,
    logsCommand,
    stopCommand,
    releasesCommand,
    rollbackCommand,
    httpCommand,
    emailCommand,
  ];
  for (const command of commands) program.addCommand(command(io));
  // --ca (or WHARF_CA_FILE) on any command that talks to a platform: trusted before it runs.
  program.hook('preAction', async (_program, action) => {
    const ca = (action.opts() as { ca?: unknown }).ca;
    if (typeof ca === 'string' && ca !== '') {
      const [{ trustCaFile }, { resolve }] = await Promise.all([
        import('../core/trust.js'),
        import('node:path'),
      ]);
      trustCaFile(resolve(ca));
    }
  });
  // Every (sub)command throws instead of exiting, so main() decides the exit code.
  const exitOverride = (command: Command) => {
    command.exitOverride();
    // Commander's own errors (an unknown option, a bad value) start the way every other error does.
    command.configureOutput({
      ...command.configureOutput(),
      outputError: (text, write) => write(text.replace(/^error: /, 'wharf: ')),
    });
    command.commands.forEach(exitOverride);
  };
  exitOverride(program);
  return program;
}

let stdoutGuarded = false;

/** `wharf logs x | head`: once the reader has gone, stop quietly instead of failing on EPIPE. */
function exitQuietlyWhenStdoutCloses(): void {
  if (stdoutGuarded) return;
  stdoutGuarded = true;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(EXIT_OK);
    throw error;
  });
}

export async function main(argv: string[], io: Io = processIo): Promise<number> {
  if (io === processIo) exitQuietlyWhenStdoutCloses();
  const program = buildProgram(io);
  if (argv.length <= 2) {
    program.outputHelp();
    return EXIT_USAGE;
  }
  try {
    await program.parseAsync(argv);
    return EXIT_OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(error.code))
        return EXIT_OK;
      return EXIT_USAGE;
    }
    if (error instanceof UsageError) {
      io.err(`wharf: ${error.message}`);
      return EXIT_USAGE;
    }
    if (error instanceof CommandExit) return error.exitCode;
    io.err(`wharf: ${(error as Error).message}`);
    // A problem+json answer's field errors, one per line under the detail.
    if (error instanceof BridgeError)
      for (const field of error.errors ?? []) io.err(`  ${field.path}: ${field.message}`);
    return EXIT_FAILURE;
  }
}
