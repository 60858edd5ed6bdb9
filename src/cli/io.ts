// Where the CLI writes: stdout for results, stderr for messages. Commands take it as a parameter so
// that nothing prints from deep inside the platform.
export interface Io {
  out(line: string): void;
  err(line: string): void;
}

export const processIo: Io = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
};

/** A mistake in how the command was called, found after parsing: exit code 2. */
export class UsageError extends Error {}

/** Ends the command with this exit code, after it has said what there was to say. */
export class CommandExit extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
  }
}
