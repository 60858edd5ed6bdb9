// `wharf projects`: the account's projects as a table (or the API's JSON array with --json).
import { Command } from 'commander';
import { type ConnectionOptions, withConnectionOptions, withPlatform } from './connect.js';
import { table } from './format.js';
import type { Io } from './io.js';

interface ProjectsOptions extends ConnectionOptions {
  json: boolean;
}

export function projectsCommand(io: Io): Command {
  return withConnectionOptions(
    new Command('projects')
      .description("list the account's projects: name, subdomain, status and URL")
      .option('--json', 'print the projects as the API returns them (a JSON array)', false),
  ).action(async (options: ProjectsOptions) => {
    const { projects } = await withPlatform(options, ({ client }) => client.listProjects());
    if (options.json) {
      io.out(JSON.stringify(projects, null, 2));
      return;
    }
    if (projects.length === 0) {
      io.out('No projects yet.');
      return;
    }
    const rows = projects.map((p) => [
      p.name,
      p.subdomain,
      p.status === 'running' && p.last_deploy_error !== null ? 'running (last deploy failed)' : p.status,
      p.url,
    ]);
    for (const line of table([['NAME', 'SUBDOMAIN', 'STATUS', 'URL'], ...rows])) io.out(line);
  });
}
