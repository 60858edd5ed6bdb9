// The drivers that run an app's commands on this machine: `process` runs each command in its own
// process group; `sandbox` runs the same inside bubblewrap, where the whole file system is read-only
// except the release's workspace, /tmp is private, the platform's data is hidden, and the app sees
// only its own processes (pid namespace). The network is shared: the edge reaches the app on
// 127.0.0.1:PORT either way.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import type { RuntimeKind } from '../../config.js';
import { type RunningProcess, startProcess } from '../process.js';

export interface RunSpec {
  /** A shell command line. */
  command: string;
  cwd: string;
  env: Record<string, string>;
  /** The project's folder of releases: the only one the sandbox lets the command write. */
  workspace: string;
  onLine(stream: 'stdout' | 'stderr', line: string): void;
}

export interface CommandDriver {
  readonly kind: RuntimeKind;
  run(spec: RunSpec): RunningProcess;
}

export class ProcessDriver implements CommandDriver {
  readonly kind = 'process';

  run(spec: RunSpec): RunningProcess {
    return startProcess(spec);
  }
}

export class SandboxUnavailableError extends Error {}

export class SandboxDriver implements CommandDriver {
  readonly kind = 'sandbox';

  /** @param hidden folders the app must not see (the platform's data, the user's Wharf home). */
  constructor(
    private readonly hidden: string[],
    private readonly bwrap = 'bwrap',
  ) {
    const probe = spawnSync(bwrap, ['--version'], { encoding: 'utf8' });
    if (probe.error || probe.status !== 0) {
      throw new SandboxUnavailableError(
        `the sandbox runtime needs bubblewrap (bwrap), which ${probe.error ? 'is not installed' : 'does not run'} here: install it (apt-get install bubblewrap) or use --runtime process`,
      );
    }
  }

  run(spec: RunSpec): RunningProcess {
    // prettier-ignore
    const wrap = [
      this.bwrap,
      '--ro-bind', '/', '/',
      '--dev', '/dev',
      '--proc', '/proc',
      '--tmpfs', '/tmp',
      ...this.hiddenDirs().flatMap((dir) => ['--tmpfs', dir]),
      '--bind', spec.workspace, spec.workspace,
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--die-with-parent',
      '--chdir', spec.cwd,
    ];
    return startProcess({ ...spec, wrap });
  }

  /**
   * The hidden folders, each created first when missing: bwrap cannot make a mount point on the
   * read-only root (it fails "Can't mkdir"), and one created later would show through. One that cannot
   * be created (and so does not exist) has nothing to hide.
   */
  private hiddenDirs(): string[] {
    return this.hidden.filter((dir) => {
      try {
        mkdirSync(dir, { recursive: true });
      } catch {
        // not ours to create
      }
      return existsSync(dir);
    });
  }
}
