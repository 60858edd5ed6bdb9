// What the container runtime builds and runs for a source without a Dockerfile of its own: a
// Dockerfile written from the build config and detection (Node, Python, a static site built by Node),
// and, for a project of several services, the small supervisor that runs them in one container.
//
// The generated Dockerfile holds commands only, never env vars: an image keeps its build arguments
// and environment in its history, and a project's variables are secrets. They reach the app when its
// container starts.
import { shellQuote } from './detect.js';

export interface BaseImages {
  node: string;
  python: string;
}

export interface BuildStep {
  /** Folder inside the source, `.` for its root. */
  dir: string;
  install: string | null;
  build: string | null;
}

/** The Dockerfile for a source: `FROM base`, the source in /app, each folder's install and build. */
export function generateDockerfile(options: {
  base: string;
  steps: BuildStep[];
  /** Folders whose bin/ goes first on PATH (Python virtualenvs), inside /app. */
  path: string[];
  /**
   * Labels, set right after FROM: in one step, and on every layer after it, so that even a build
   * cancelled halfway leaves nothing the platform cannot find again.
   */
  labels?: Record<string, string>;
}): string {
  const lines = [
    '# Written by Wharf from the build config and what it detected in the source.',
    '# Add a Dockerfile to the source to build it your own way.',
    `FROM ${options.base}`,
  ];
  const labels = Object.entries(options.labels ?? {});
  if (labels.length > 0) lines.push(`LABEL ${labels.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(' ')}`);
  lines.push('WORKDIR /app', 'COPY . /app');
  let workdir = '/app';
  for (const step of options.steps) {
    const where = inApp(step.dir);
    for (const command of [step.install, step.build]) {
      if (!command) continue;
      if (where !== workdir) lines.push(`WORKDIR ${where}`);
      workdir = where;
      lines.push(`RUN ${runLine(command)}`);
    }
  }
  if (options.path.length > 0) {
    lines.push(
      `ENV PATH=${[...options.path, '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'].join(':')}`,
    );
  }
  if (workdir !== '/app') lines.push('WORKDIR /app');
  lines.push('');
  return lines.join('\n');
}

/** A command of the build config as one shell-form RUN line (CI set as hosts set it for builds). */
function runLine(command: string): string {
  // A RUN line ends at the first unescaped newline: run multi-line commands through sh -c.
  const oneLine = command.includes('\n') ? `sh -c ${shellQuote(command)}` : command;
  return `CI=true ${oneLine}`;
}

/** A path in the source as it is inside the image. */
export function inApp(dir: string): string {
  const clean = dir
    .replace(/^(\.\/)+/, '')
    .replace(/^\.$/, '')
    .replace(/\/+$/, '');
  return clean === '' ? '/app' : `/app/${clean}`;
}

export interface SupervisedService {
  /** What marks its lines (serviceLabel). */
  label: string;
  /** Folder inside the container. */
  cwd: string;
  start: string;
  env: Record<string, string>;
  /** PATH entries put first. */
  path: string[];
}

/** Marks a supervised service's line: RS, its name, US, then the line. */
export const SERVICE_MARK = '\u001e';
const NAME_END = '\u001f';

/**
 * A POSIX sh script that starts every service in the background with its own folder, env and PORT,
 * marks each line of its output with its name, and, when one of them exits, stops the rest and exits
 * too, so that the platform restarts the container (with backoff) and sees the crash in the log.
 */
export function supervisorScript(services: SupervisedService[]): string {
  const lines = [
    'set -u',
    "pids=''",
    'stop_all() { trap \'\' TERM INT; kill -TERM 0 2>/dev/null; wait; exit "$1"; }',
    'trap "stop_all 143" TERM INT',
    'start() {',
    '  ( sh -c "$2" 2>&1 ) | while IFS= read -r line || [ -n "$line" ]; do',
    `    printf '${'\\036'}%s${'\\037'}%s\\n' "$1" "$line"`,
    '  done &',
    '  pids="$pids $!"',
    '}',
  ];
  for (const service of services) {
    const exports = Object.entries(service.env).map(([k, v]) => `${k}=${shellQuote(v)}`);
    if (service.path.length > 0) exports.push(`PATH=${shellQuote(service.path.join(':'))}:"$PATH"`);
    const script = [
      `cd ${shellQuote(service.cwd)}`,
      ...(exports.length > 0 ? [`export ${exports.join(' ')}`] : []),
      // Its own shell: a start command may be several commands (`a; b`, `a && b`).
      `exec /bin/sh -c ${shellQuote(service.start)}`,
    ].join(' && ');
    lines.push(`start ${shellQuote(service.label)} ${shellQuote(script)}`);
  }
  lines.push(
    'while :; do',
    '  for pid in $pids; do',
    '    if ! kill -0 "$pid" 2>/dev/null; then',
    `      printf '${'\\036'}${'\\037'}%s\\n' 'a service exited: the container stops so that the platform restarts it'`,
    '      stop_all 1',
    '    fi',
    '  done',
    '  sleep 1',
    'done',
  );
  return lines.join('\n');
}

/**
 * Splits a supervised line into the label of the service that wrote it (null: not marked, the output
 * of a container without a supervisor) and its text; `supervisor`: a line of the supervisor itself.
 */
export function parseSupervisedLine(line: string): {
  label: string | null;
  line: string;
  supervisor: boolean;
} {
  if (!line.startsWith(SERVICE_MARK)) return { label: null, line, supervisor: false };
  const end = line.indexOf(NAME_END);
  if (end < 0) return { label: null, line, supervisor: false };
  const label = line.slice(1, end);
  return { label: label === '' ? null : label, line: line.slice(end + 1), supervisor: label === '' };
}

/** The label of a service in the supervisor's output: its name, `.` for the app itself. */
export function serviceLabel(name: string | null): string {
  return name ?? '.';
}
