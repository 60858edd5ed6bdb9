// How the platform runs apps, as Settings shows it: the runtime's name and what it means, the releases
// kept for a rollback, a warning when apps run as the platform's own user, and why the platform could
// not say, as plain data the Runtime card only renders.
import type { PlatformInfo } from '../../../../shared/api/common.js';
import type { BridgeErrorShape } from '../../../../shared/bridge.js';

export type RuntimeKind = PlatformInfo['runtime'];

export interface RuntimeWarning {
  title: string;
  text: string;
  /** What to install on the platform's machine for a stronger runtime, one item each. */
  install: string[];
  /** What to do once it is installed. */
  then: string;
}

export interface RuntimeSummary {
  kind: RuntimeKind;
  /** `Containers`, `Sandbox (bubblewrap)` or `Processes`. */
  label: string;
  /** One sentence on what the runtime isolates. */
  description: string;
  /** `5 releases per project`. */
  keptReleases: string;
  /** The platform's own notes, one line each, as it wrote them. */
  notes: string[];
  warning: RuntimeWarning | null;
}

export const RUNTIME_LABELS: Record<RuntimeKind, string> = {
  container: 'Containers',
  swarm: 'Docker Swarm',
  sandbox: 'Sandbox (bubblewrap)',
  process: 'Processes',
};

const DESCRIPTIONS: Record<RuntimeKind, string> = {
  container:
    'Every release is an image; each project runs in a container of its own, with memory, process and CPU ceilings.',
  swarm:
    'Every release is an image run as a Swarm service: Swarm places its tasks on its nodes, restarts what crashes and moves what a lost node ran; each with memory, process and CPU ceilings.',
  sandbox:
    'Every install, build and start runs inside bubblewrap: a read-only file system except the project’s releases, a private /tmp, the platform’s data hidden.',
  process:
    'Every install, build and start is a plain process group on the platform’s machine, with nothing around it.',
};

const PROCESS_WARNING: RuntimeWarning = {
  title: 'Apps run as the platform’s own user',
  text: 'An app can read and change whatever that user can, so this platform serves one account only: a second account cannot deploy.',
  install: [
    'Docker or Podman, to run each app in a container',
    'bubblewrap (bwrap), to run apps in a sandbox',
  ],
  then: 'Then restart the platform: it picks the strongest runtime it finds.',
};

export function runtimeSummary(
  info: Pick<PlatformInfo, 'runtime' | 'runtime_notes' | 'keep_releases'>,
): RuntimeSummary {
  return {
    kind: info.runtime,
    label: RUNTIME_LABELS[info.runtime],
    description: DESCRIPTIONS[info.runtime],
    keptReleases: `${info.keep_releases} ${info.keep_releases === 1 ? 'release' : 'releases'} per project`,
    notes: info.runtime_notes.map((note) => note.trim()).filter((note) => note !== ''),
    warning: info.runtime === 'process' ? PROCESS_WARNING : null,
  };
}

export interface RuntimeUnavailable {
  /** `warning` for a platform too old to say, `error` for anything that went wrong. */
  tone: 'warning' | 'error';
  title: string;
  detail: string;
}

/** Why the Runtime card has nothing to show, in words. */
export function runtimeUnavailable(error: BridgeErrorShape): RuntimeUnavailable {
  if (error.code === 'not_found' || error.status === 404) {
    return {
      tone: 'warning',
      title: 'This platform does not say how it runs apps',
      detail:
        'It is older than this app (it has no /api/v1/platform). Once it is updated, its runtime shows here.',
    };
  }
  const detail = capitalizeFirst(error.detail);
  if (error.code === 'offline') return { tone: 'error', title: 'The platform cannot be reached', detail };
  if (error.code === 'not_configured') return { tone: 'error', title: 'No API key is saved', detail };
  if (error.code === 'unauthorized') {
    return { tone: 'error', title: 'The platform refused the API key', detail };
  }
  return { tone: 'error', title: 'The runtime could not be loaded', detail };
}

function capitalizeFirst(text: string): string {
  return text ? text[0]!.toUpperCase() + text.slice(1) : text;
}
