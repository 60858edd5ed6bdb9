// `wharf stop <project>`: stops the project's processes (and any deploy in progress).
import { Command } from 'commander';
import { type ConnectionOptions, withConnectionOptions, withPlatform } from './connect.js';
import { resolveProject } from './find-project.js';
import type { Io } from './io.js';

export function stopCommand(io: Io): Command {
  return withConnectionOptions(
    new Command('stop')
      .description('stop a project: its app and any deploy in progress')
      .argument('<project>', 'the project: its subdomain, name or id'),
  ).action(async (query: string, options: ConnectionOptions) => {
    const stopped = await withPlatform(options, async ({ client }) => {
      const project = await resolveProject(client, query);
      return client.stop(project.id);
    });
    io.out(`${stopped.name}: ${stopped.status}`);
  });
}
