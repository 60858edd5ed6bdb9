// Which runtime runs tenant code: `--runtime auto` (the default) takes the strongest this machine has
// (containers when an engine answers, else the bwrap sandbox, else plain processes with a warning);
// `container`, `swarm`, `sandbox` and `process` are taken as asked, and fail to start when impossible
// (`swarm` only when asked: it needs an engine that manages a Swarm).
import type Docker from 'dockerode';
import { wharfHome, type PlatformConfig } from '../../config.js';
import type { Store } from '../../store/open.js';
import { detectCgroups } from '../cgroups.js';
import { connectDocker, describeEngine } from './docker.js';
import { swarmState } from './swarm.js';
import {
  type CommandDriver,
  ProcessDriver,
  SandboxDriver,
  SandboxUnavailableError,
  type SandboxUsers,
} from './host.js';

export type ChosenKind = 'container' | 'swarm' | 'sandbox' | 'process';

export interface ChosenDriver {
  kind: ChosenKind;
  /** What runs commands on this machine (host runtimes); null for the container runtime. */
  driver: CommandDriver | null;
  /** The engine, for the container runtime. */
  docker: Docker | null;
  /** What the operator should know about the choice (printed by `wharf platform`), one line each. */
  notes: string[];
  /** Whether each project's plan limits (memory, CPU, processes) are enforced. */
  limits: boolean;
}

export async function chooseDriver(config: PlatformConfig, db: Store): Promise<ChosenDriver> {
  if (config.runtime === 'process') {
    return {
      kind: 'process',
      driver: new ProcessDriver(),
      docker: null,
      notes: ['apps run as this platform’s own user: for one person’s machine only'],
      limits: false,
    };
  }
  if (config.runtime === 'swarm') {
    const engine = await connectDocker();
    if ('reason' in engine) throw new Error(`--runtime swarm: ${engine.reason}`);
    const swarm = await swarmState(engine.docker);
    if ('reason' in swarm) throw new Error(`--runtime swarm: ${swarm.reason}`);
    const what = await describeEngine(engine.docker).catch(() => 'a Docker engine');
    return {
      kind: 'swarm',
      driver: null,
      docker: engine.docker,
      notes: [`apps run as Swarm services, managed through ${what} at ${engine.where}`],
      limits: true,
    };
  }
  const notes: string[] = [];
  if (config.runtime === 'container' || config.runtime === 'auto') {
    const engine = await connectDocker();
    if ('docker' in engine) {
      const what = await describeEngine(engine.docker).catch(() => 'a Docker-compatible engine');
      return {
        kind: 'container',
        driver: null,
        docker: engine.docker,
        notes: [
          `apps run in containers on ${what} at ${engine.where}${config.runtime === 'auto' ? ' (an engine answered)' : ''}`,
        ],
        limits: true,
      };
    }
    if (config.runtime === 'container') {
      throw new Error(`--runtime container: ${engine.reason}`);
    }
    notes.push(`no containers: ${engine.reason}`);
  }
  try {
    const chosen = sandboxDriver(config, db);
    return { ...chosen, notes: [...notes, ...chosen.notes] };
  } catch (error) {
    if (config.runtime === 'sandbox' || !(error instanceof SandboxUnavailableError)) throw error;
    return {
      kind: 'process',
      driver: new ProcessDriver(),
      docker: null,
      limits: false,
      notes: [
        ...notes,
        `no sandbox: ${error.message}`,
        'apps run as this platform’s own user, so it serves one account only',
      ],
    };
  }
}

function sandboxDriver(config: PlatformConfig, db: Store): ChosenDriver {
  const notes: string[] = [];
  const root = process.getuid?.() === 0;
  const cgroups = detectCgroups();
  if ('reason' in cgroups) notes.push(`no memory, process or CPU limits per app: ${cgroups.reason}`);
  const driver = new SandboxDriver({
    // The app must not read the platform's database and secret, nor the user's Wharf keys.
    hidden: [config.dataDir, wharfHome()],
    users: root ? new StoredSandboxUsers(db, config.sandbox.uidBase) : null,
    cgroups: 'reason' in cgroups ? null : cgroups,
  });
  if (driver.ownMountsRefused !== null)
    notes.push(
      `mounts made on this machine after an app started show up inside its sandbox: no mount namespace of its own (${driver.ownMountsRefused})`,
    );
  if (!root)
    notes.push(
      'apps run as this platform’s user inside the sandbox (start it as root for a user per project)',
    );
  return { kind: 'sandbox', driver, docker: null, notes, limits: !('reason' in cgroups) };
}

/** One uid per project, allocated in the store (the next after the highest ever given). */
class StoredSandboxUsers implements SandboxUsers {
  constructor(
    private readonly db: Store,
    private readonly base: number,
  ) {}

  async uidFor(projectId: string): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      const known = await this.db
        .selectFrom('sandbox_users')
        .select('uid')
        .where('project_id', '=', projectId)
        .executeTakeFirst();
      if (known) return known.uid;
      const top = await this.db
        .selectFrom('sandbox_users')
        .select((eb) => eb.fn.max('uid').as('uid'))
        .executeTakeFirst();
      const uid = Math.max(this.base, Number(top?.uid ?? this.base - 1) + 1);
      try {
        await this.db
          .insertInto('sandbox_users')
          .values({ uid, project_id: projectId, created_at: new Date().toISOString() })
          .execute();
        return uid;
      } catch (error) {
        // Another project took that uid first: take the next.
        if (attempt >= 5) throw error;
      }
    }
  }
}
