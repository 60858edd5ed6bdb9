// `wharf rollback <project> [release]`: starts a kept release again, without a build, with the env vars
// it was deployed with. Without a release it takes the newest one older than the release serving now
// that can still be brought back, and says so when there is none rather than guessing. With --follow it
// prints the rollback's log lines and waits for the outcome, as `wharf deploy --follow` does.
import { Command } from 'commander';
import type { Project, Release } from '../shared/api/index.js';
import { BridgeError } from '../shared/bridge.js';
import { type ConnectionOptions, withConnectionOptions, withPlatform } from './connect.js';
import { type Terminal, followDeploy, stderrTerminal } from './deploy.js';
import { describe, resolveProject } from './find-project.js';
import { localTime } from './format.js';
import { type Io, UsageError } from './io.js';
import { releaseSource } from './releases.js';

interface RollbackOptions extends ConnectionOptions {
  follow?: boolean;
}

const RELEASE_ID = /^rel_[A-Za-z0-9]{1,64}$/;

/** Why there is nothing to roll back to, naming what to do instead. */
export class NothingToRollBackError extends Error {}

/**
 * The release `wharf rollback` takes when none is named: the newest one older than the current release
 * that a rollback can still bring back. `releases` is newest first, as the API lists them.
 */
export function defaultRollbackTarget(project: Project, releases: Release[]): Release {
  const list = `wharf releases ${project.subdomain} lists them`;
  if (releases.length === 0) {
    throw new NothingToRollBackError(
      `nothing to roll back to: ${describe(project)} has no releases yet (wharf deploy ${project.subdomain} makes one)`,
    );
  }
  const current = releases.findIndex((r) => r.current);
  if (current === -1) {
    throw new NothingToRollBackError(
      `nothing serves ${describe(project)} now, so there is no version to roll back from: name the release to start (${list})`,
    );
  }
  const older = releases.slice(current + 1).find((r) => r.rollback_available);
  if (older) return older;
  const newer = releases.slice(0, current).some((r) => r.rollback_available);
  throw new NothingToRollBackError(
    `nothing to roll back to: no release of ${describe(project)} older than the one serving now (${releases[current]!.id}) is kept` +
      (newer ? `; name a newer one to go forward (${list})` : ''),
  );
}

export function rollbackCommand(io: Io, terminal: Terminal = stderrTerminal): Command {
  return withConnectionOptions(
    new Command('rollback')
      .description(
        'start an earlier release of a project again, without a build, with the env vars it was deployed with',
      )
      .argument('<project>', 'the project: its subdomain, name or id')
      .argument(
        '[release]',
        'the release id (rel_…, see `wharf releases`); default: the newest kept one older than the current one',
      )
      .option('-f, --follow', 'print the log and wait for the outcome (default when stdout is a terminal)')
      .option('--no-follow', 'only start the rollback'),
  ).action(async (query: string, releaseId: string | undefined, options: RollbackOptions) => {
    if (releaseId !== undefined && !RELEASE_ID.test(releaseId)) {
      throw new UsageError(
        `"${releaseId}" is not a release id: they look like rel_0Vc0U6g700MpKQdNXSIx (wharf releases <project> lists them)`,
      );
    }
    const follow = options.follow ?? process.stdout.isTTY === true;
    await withPlatform(options, async ({ client }) => {
      const project = await resolveProject(client, query);
      const releases = await client.releases(project.id);
      let target: Release;
      if (releaseId === undefined) {
        target = defaultRollbackTarget(project, releases);
      } else {
        const named = releases.find((r) => r.id === releaseId);
        if (!named) {
          throw new Error(
            `no release ${releaseId} in ${describe(project)}: wharf releases ${project.subdomain} lists them`,
          );
        }
        target = named;
      }
      const startedAt = Date.now();
      let started: Project;
      try {
        started = await client.rollback(project.id, target.id);
      } catch (error) {
        // The platform's refusals (never served, no longer kept, the current one) say why already.
        if (error instanceof BridgeError && error.code === 'conflict') {
          throw new Error(`cannot roll ${describe(project)} back: ${error.detail}`);
        }
        throw error;
      }
      const what = `${target.id} (deployed ${localTime(target.created_at)}, ${releaseSource(target)})`;
      if (!follow) {
        io.out(`Rolling back ${project.name} to ${what}… (wharf logs ${project.subdomain} -f to follow)`);
        return;
      }
      io.out(`Rolling back ${project.name} to ${what}`);
      await followDeploy(client, project, started, startedAt, io, terminal, {
        noun: 'rollback',
        verb: 'Rolling back',
        phase: 'starting',
      });
    });
  });
}
