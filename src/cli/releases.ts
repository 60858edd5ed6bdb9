// `wharf releases <project>`: the project's releases, newest first, as a table (or the API's JSON array
// with --json): which one serves now, how each deploy ended, when, from what, and which ones a rollback
// can still bring back.
import { Command } from 'commander';
import type { Release } from '../shared/api/index.js';
import { type ConnectionOptions, withConnectionOptions, withPlatform } from './connect.js';
import { describe, resolveProject } from './find-project.js';
import { localTime, table } from './format.js';
import type { Io } from './io.js';

interface ReleasesOptions extends ConnectionOptions {
  json: boolean;
}

/** The marker of the release serving the project now. */
export const CURRENT_MARKER = '*';

/** `running`, `failed`…; a retired release whose files are gone says so (no rollback can reach it). */
export function releaseStatus(release: Release): string {
  if (release.status === 'retired' && !release.rollback_available) return 'retired (not kept)';
  return release.status;
}

/** `git https://…/demo.git main @ 1a2b3c4`: where the code came from, and its commit when known. */
export function releaseSource(release: Release): string {
  return release.commit ? `${release.source} @ ${release.commit.slice(0, 7)}` : release.source;
}

/** The table's lines: the IMAGE column only when a release has one (host runtimes have none). */
export function releaseTable(releases: Release[]): string[] {
  const images = releases.some((r) => r.image !== null);
  const header = ['', 'RELEASE', 'STATUS', 'CREATED', 'SOURCE', ...(images ? ['IMAGE'] : [])];
  const rows = releases.map((r) => [
    r.current ? CURRENT_MARKER : '',
    r.id,
    releaseStatus(r),
    localTime(r.created_at),
    releaseSource(r),
    ...(images ? [r.image ?? ''] : []),
  ]);
  return table([header, ...rows]);
}

export function releasesCommand(io: Io): Command {
  return withConnectionOptions(
    new Command('releases')
      .description(
        "list a project's releases, newest first: the one serving now (*), how each deploy ended, and which a rollback can bring back",
      )
      .argument('<project>', 'the project: its subdomain, name or id')
      .option('--json', 'print the releases as the API returns them (a JSON array)', false),
  ).action(async (query: string, options: ReleasesOptions) => {
    const { project, releases } = await withPlatform(options, async ({ client }) => {
      const project = await resolveProject(client, query);
      return { project, releases: await client.releases(project.id) };
    });
    if (options.json) {
      io.out(JSON.stringify(releases, null, 2));
      return;
    }
    if (releases.length === 0) {
      io.out(
        `${describe(project)} has no releases yet: each deploy makes one (wharf deploy ${project.subdomain}).`,
      );
      return;
    }
    for (const line of releaseTable(releases)) io.out(line);
  });
}
