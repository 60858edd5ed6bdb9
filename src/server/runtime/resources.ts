// What one project may use of the machine: memory, CPU and processes, from its account's plan
// (config.plans), each one the plan does not set taken from the operator's defaults (`--sandbox-memory-mib`,
// `--sandbox-cpus`, `--sandbox-pids`). Read when a project's commands are prepared, when its image
// builds and when its container starts, so a plan change applies at the project's next start.
import type { PlatformConfig } from '../config.js';
import type { Store } from '../store/open.js';
import type { ResourceLimits } from './cgroups.js';

export interface ProjectResources {
  /** The account's plan (a name the config may no longer know: the defaults then apply). */
  plan: string;
  limits: ResourceLimits;
}

/** A plan's limits, the operator's defaults for what it leaves out; 0 in either means no limit. */
export function planLimits(config: Pick<PlatformConfig, 'plans' | 'sandbox'>, plan: string): ResourceLimits {
  const own = config.plans[plan];
  const memoryMiB = own?.memory_mib ?? config.sandbox.memoryMiB;
  const pids = own?.pids ?? config.sandbox.pids;
  const cpus = own?.cpus ?? config.sandbox.cpus;
  return {
    memoryBytes: memoryMiB > 0 ? memoryMiB * 1024 * 1024 : null,
    pids: pids > 0 ? pids : null,
    cpus: cpus > 0 ? cpus : null,
  };
}

/** "512 MiB memory, 0.5 CPU, 256 processes", for the deploy log. */
export function describeLimits(limits: ResourceLimits): string {
  const memory =
    limits.memoryBytes === null ? 'no memory limit' : `${limits.memoryBytes / 1024 / 1024} MiB memory`;
  const cpus = limits.cpus === null ? 'no CPU limit' : `${limits.cpus} CPU`;
  const pids = limits.pids === null ? 'no process limit' : `${limits.pids} processes`;
  return `${memory}, ${cpus}, ${pids}`;
}

export class PlanResources {
  constructor(
    private readonly db: Store,
    private readonly config: Pick<PlatformConfig, 'plans' | 'sandbox'>,
  ) {}

  /** The resources of a project of this account (its plan is read now: a change applies at once). */
  async forAccount(accountId: string): Promise<ProjectResources> {
    const account = await this.db
      .selectFrom('accounts')
      .select('plan')
      .where('id', '=', accountId)
      .executeTakeFirst();
    const plan = account?.plan ?? '';
    return { plan, limits: planLimits(this.config, plan) };
  }

  async forProject(projectId: string): Promise<ProjectResources> {
    const row = await this.db
      .selectFrom('projects')
      .innerJoin('accounts', 'accounts.id', 'projects.account_id')
      .select('accounts.plan')
      .where('projects.id', '=', projectId)
      .executeTakeFirst();
    const plan = row?.plan ?? '';
    return { plan, limits: planLimits(this.config, plan) };
  }
}
