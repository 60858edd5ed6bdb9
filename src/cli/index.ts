// The `wharf` command: parsing and printing only; the work is done by src/server (and, later, src/core).
// Exit codes: 0 success, 1 failure, 2 usage error. Every error is one readable line on stderr.
import { Command, CommanderError } from 'commander';
import { adminCommand } from './admin.js';
import { appCommand } from './app.js';
import { UsageError, processIo, type Io } from './io.js';
import { platformCommand } from './platform.js';
import { wharfPackage } from './package-root.js';

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
  program.addCommand(platformCommand(io));
  program.addCommand(appCommand(io));
  program.addCommand(adminCommand(io));
  // Every (sub)command throws instead of exiting, so main() decides the exit code.
  const exitOverride = (command: Command) => {
    command.exitOverride();
    command.commands.forEach(exitOverride);
  };
  exitOverride(program);
  return program;
}

export async function main(argv: string[], io: Io = processIo): Promise<number> {
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
    io.err(`wharf: ${(error as Error).message}`);
    return EXIT_FAILURE;
  }
}
