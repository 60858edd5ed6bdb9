// Resource limits for a project's processes through Linux control groups: memory, number of
// processes, CPU. One group per project under the platform's own group, so a fork bomb or a leak in
// one tenant's app meets its own ceiling instead of the machine's. Works with cgroup v1 (a hierarchy
// per controller, as in many containers) and v2 (one unified tree, where the platform's own group must
// let controllers down to its children). Where neither can be written (no permission, not Linux),
// `detectCgroups` says why and the runtime runs without these limits; the sandbox's other walls stay.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ResourceLimits {
  /** Memory (RAM and page cache) of all the project's processes together; null: none. */
  memoryBytes: number | null;
  /** Processes and threads at once; null: none. */
  pids: number | null;
  /** CPU time as a number of cores (0.5: half of one); null: none. */
  cpus: number | null;
}

export interface Cgroups {
  readonly version: 1 | 2;
  /** Creates (or updates) the group `name` with `limits`; returns the cgroup.procs files to join. */
  prepare(name: string, limits: ResourceLimits): string[];
  /** Removes the group once its processes are gone (a group still in use stays). */
  remove(name: string): void;
}

const ROOT = '/sys/fs/cgroup';
const CPU_PERIOD_US = 100_000;

export function detectCgroups(): Cgroups | { reason: string } {
  if (process.platform !== 'linux') return { reason: 'control groups exist only on Linux' };
  let own: string;
  try {
    own = readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return { reason: 'no /proc/self/cgroup' };
  }
  try {
    return existsSync(join(ROOT, 'cgroup.controllers')) ? V2.open(own) : V1.open(own);
  } catch (error) {
    return { reason: (error as Error).message };
  }
}

class V1 implements Cgroups {
  readonly version = 1;

  private constructor(private readonly parents: Record<'memory' | 'pids' | 'cpu', string>) {}

  static open(own: string): V1 {
    const paths = new Map<string, string>();
    for (const row of own.split('\n')) {
      const [, controllers, path] = row.split(':');
      if (controllers === undefined || path === undefined) continue;
      for (const controller of controllers.split(',')) paths.set(controller, path);
    }
    const parents = {} as Record<'memory' | 'pids' | 'cpu', string>;
    for (const controller of ['memory', 'pids', 'cpu'] as const) {
      const mount = join(ROOT, controller);
      if (!existsSync(join(mount, 'cgroup.procs'))) {
        throw new Error(`the ${controller} controller is not mounted at ${mount}`);
      }
      parents[controller] = join(mount, paths.get(controller) ?? '/', 'wharf-apps');
      mkdirSync(parents[controller], { recursive: true });
    }
    return new V1(parents);
  }

  prepare(name: string, limits: ResourceLimits): string[] {
    const dirs = {
      memory: join(this.parents.memory, name),
      pids: join(this.parents.pids, name),
      cpu: join(this.parents.cpu, name),
    };
    for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true });
    writeFileSync(join(dirs.memory, 'memory.limit_in_bytes'), String(limits.memoryBytes ?? -1));
    writeFileSync(join(dirs.pids, 'pids.max'), limits.pids === null ? 'max' : String(limits.pids));
    writeFileSync(join(dirs.cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
    writeFileSync(
      join(dirs.cpu, 'cpu.cfs_quota_us'),
      limits.cpus === null ? '-1' : String(Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US))),
    );
    return Object.values(dirs).map((dir) => join(dir, 'cgroup.procs'));
  }

  remove(name: string): void {
    for (const parent of Object.values(this.parents)) removeGroup(join(parent, name));
  }
}

class V2 implements Cgroups {
  readonly version = 2;

  private constructor(private readonly parent: string) {}

  static open(own: string): V2 {
    const path = own
      .split('\n')
      .find((row) => row.startsWith('0::'))
      ?.slice(3);
    if (path === undefined) throw new Error('no cgroup v2 entry in /proc/self/cgroup');
    // Processes may live only in leaves once controllers are enabled below a group: the platform's own
    // group holds the platform, so the apps get a sibling-free subtree of their own under it.
    const parent = join(ROOT, path, 'wharf-apps');
    mkdirSync(parent, { recursive: true });
    const wanted = ['memory', 'pids', 'cpu'];
    const available = readFileSync(join(ROOT, path, 'cgroup.controllers'), 'utf8')
      .trim()
      .split(/\s+/);
    const missing = wanted.filter((c) => !available.includes(c));
    if (missing.length > 0) throw new Error(`the ${missing.join(', ')} controller is not delegated to us`);
    const enable = wanted.map((c) => `+${c}`).join(' ');
    writeFileSync(join(ROOT, path, 'cgroup.subtree_control'), enable);
    writeFileSync(join(parent, 'cgroup.subtree_control'), enable);
    return new V2(parent);
  }

  prepare(name: string, limits: ResourceLimits): string[] {
    const dir = join(this.parent, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'memory.max'), limits.memoryBytes === null ? 'max' : String(limits.memoryBytes));
    writeFileSync(join(dir, 'pids.max'), limits.pids === null ? 'max' : String(limits.pids));
    writeFileSync(
      join(dir, 'cpu.max'),
      limits.cpus === null
        ? `max ${CPU_PERIOD_US}`
        : `${Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US))} ${CPU_PERIOD_US}`,
    );
    return [join(dir, 'cgroup.procs')];
  }

  remove(name: string): void {
    removeGroup(join(this.parent, name));
  }
}

function removeGroup(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // still in use, or gone already
  }
}
