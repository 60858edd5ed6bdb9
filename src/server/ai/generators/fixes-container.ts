// Deterministic fixes of a Dockerfile, from what the container runtime's image build and container
// start show: a base image the engine cannot pull, `python` where Debian's images have only `python3`,
// pip refusing a system-wide install, no CMD.
import { PYTHON_ENTRY_GUESSES, asRecord, nodeEntry, parseJson } from './fixes-app.js';
import type { FixResult } from './fixes.js';
import type { BaseImages, FileSet } from './types.js';

const DOCKERFILE = 'Dockerfile';

/** How the runtime's deploy error starts when the container runtime could not build the app's image. */
export const IMAGE_BUILD_FAILED = 'image build failed';

/**
 * The instruction of an image build's step line, null for any other line: Docker's builder writes
 * `Step 1/5 : FROM node:20`, Podman's `STEP 1/5: FROM …`, either one after the colour reset that may
 * end the previous step's error output.
 */
export function buildStepOf(line: string): string | null {
  // eslint-disable-next-line no-control-regex
  const step = /^(?:\u001b\[[\d;]*m)*step \d+\/\d+ ?: ?(.*)$/i.exec(line);
  return step ? step[1]!.trim() : null;
}

const FROM_LINE = /^(\s*FROM\s+)(?:--platform=\S+\s+)?(\S+)(.*)$/i;

/**
 * The image build failed at a FROM step, pulling a Node or Python image the engine cannot reach: every
 * such FROM moves to the platform's image of the same language (build stages named by `AS` stay; a
 * `--platform` goes, the platform's images being the engine's own).
 */
export function unavailableBaseImage(files: FileSet, log: string, images: BaseImages): FixResult | null {
  const dockerfile = files[DOCKERFILE];
  if (dockerfile === undefined || !log.includes(IMAGE_BUILD_FAILED)) return null;
  const failing =
    log
      .split('\n')
      .map(buildStepOf)
      .findLast((step) => step !== null) ?? '';
  const image = /^FROM\s+(?:--platform=\S+\s+)?(\S+)/i.exec(failing)?.[1];
  if (!image || !platformImageFor(image, images)) return null;
  const stages = new Set<string>();
  const fixes: string[] = [];
  const lines = dockerfile.split('\n').map((line) => {
    const from = FROM_LINE.exec(line);
    if (!from) return line;
    const head = from[1]!;
    const base = from[2]!;
    const rest = from[3]!;
    const replacement = stages.has(base.toLowerCase()) ? null : platformImageFor(base, images);
    const stage = /\bAS\s+(\S+)/i.exec(rest)?.[1];
    if (stage) stages.add(stage.toLowerCase());
    if (!replacement || replacement === base) return line;
    fixes.push(`Dockerfile: FROM ${replacement} instead of ${base}, which the engine could not pull`);
    return `${head}${replacement}${rest}`;
  });
  return fixes.length ? { files: { ...files, [DOCKERFILE]: lines.join('\n') }, fixes } : null;
}

/** The platform's image for a Node or Python one (`node:20-slim`, `docker.io/library/python:3.12`…). */
function platformImageFor(image: string, images: BaseImages): string | null {
  if (image === images.node || image === images.python) return image;
  const name = image.split('@')[0]!.split('/').at(-1)!.split(':')[0]!.toLowerCase();
  if (name === 'node') return images.node;
  if (name === 'python') return images.python;
  return null;
}

const PYTHON_MISSING =
  /\bpython: (?:not found|command not found)|"python": executable file not found|exec python failed|No such file or directory: '?python'?\b/;
/** `python` as a command (or /usr/bin/python), not `python3`, `python:3.12` or a folder named python. */
const PYTHON_WORD = /(^|[\s"'[;&|(=])((?:\/usr(?:\/local)?\/bin\/)?)python(?=$|[\s"',\];&|)])/g;
const NOT_COMMANDS = /^\s*(?:FROM|COPY|ADD|ENV|ARG|LABEL|WORKDIR|EXPOSE|USER|VOLUME)\b/i;

/** Debian's images (and many others) have `python3` only: the Dockerfile's and Procfile's commands use it. */
export function pythonCommand(files: FileSet, log: string): FixResult | null {
  if (!PYTHON_MISSING.test(log)) return null;
  const next: FileSet = { ...files };
  const fixes: string[] = [];
  for (const path of [DOCKERFILE, 'Procfile']) {
    const content = files[path];
    if (content === undefined) continue;
    const changed = content
      .split('\n')
      .map((line) =>
        path === DOCKERFILE && NOT_COMMANDS.test(line) ? line : line.replace(PYTHON_WORD, '$1$2python3'),
      )
      .join('\n');
    if (changed !== content) {
      next[path] = changed;
      fixes.push(`${path}: run python3 instead of python, which the image does not have`);
    }
  }
  return fixes.length ? { files: next, fixes } : null;
}

const PIP_REFUSED = /externally-managed-environment|\bpip3?: (?:not found|command not found)/;
const PIP_INSTALL = /\bpip3?\s+install\b|\bpython3?\s+-m\s+pip\s+install\b/;

/**
 * pip refused to install into the image's system Python (Debian's), or the image has no `pip`
 * command: the packages go into a virtualenv first on PATH, where `pip` and `python3` then resolve.
 */
export function systemWidePip(files: FileSet, log: string): FixResult | null {
  const dockerfile = files[DOCKERFILE];
  if (dockerfile === undefined || !PIP_REFUSED.test(log) || /\bvenv\b/.test(dockerfile)) return null;
  const lines = dockerfile.split('\n');
  let at = lines.findIndex((line) => PIP_INSTALL.test(line));
  if (at === -1) return null;
  // The start of the RUN instruction this line belongs to (it may continue one with `\`).
  while (at > 0 && !/^\s*RUN\b/i.test(lines[at]!)) at -= 1;
  lines.splice(at, 0, 'RUN python3 -m venv /opt/venv', 'ENV PATH="/opt/venv/bin:$PATH"');
  return {
    files: { ...files, [DOCKERFILE]: lines.join('\n') },
    fixes: ['Dockerfile: install the Python packages into a virtualenv (/opt/venv), not the system Python'],
  };
}

/**
 * The container exited at once and the Dockerfile has no CMD: the image ran its base image's command
 * (a shell, a REPL), which ends without a terminal. The CMD starts what the Procfile or package.json says.
 */
export function missingCmd(files: FileSet, log: string): FixResult | null {
  const dockerfile = files[DOCKERFILE];
  if (dockerfile === undefined || !/container exited before its app answered/.test(log)) return null;
  if (/^\s*(?:CMD|ENTRYPOINT)\b/im.test(dockerfile)) return null;
  const cmd = startCommand(files);
  if (!cmd) return null;
  const text = dockerfile.endsWith('\n') || dockerfile === '' ? dockerfile : `${dockerfile}\n`;
  return {
    files: { ...files, [DOCKERFILE]: `${text}CMD ${JSON.stringify(cmd)}\n` },
    fixes: [`Dockerfile: added CMD ${JSON.stringify(cmd)}, which starts the app`],
  };
}

/** How the app starts, as a CMD: its Procfile's process, else package.json's start, else its entry file. */
function startCommand(files: FileSet): string[] | null {
  const procfile = files.Procfile?.split('\n').map((line) => /^(web|worker):\s*(.+)$/.exec(line.trim()));
  const declared = procfile?.find((m) => m?.[1] === 'web') ?? procfile?.find((m) => m?.[1] === 'worker');
  if (declared) return ['sh', '-c', `exec ${declared[2]!.trim()}`];
  const pkg = files['package.json'] === undefined ? null : parseJson(files['package.json']);
  if (pkg) {
    if (typeof asRecord(pkg.scripts)?.start === 'string') return ['npm', 'start'];
    const entry = nodeEntry(files, pkg);
    return entry ? ['node', entry] : null;
  }
  const entry = PYTHON_ENTRY_GUESSES.find(
    (f) => f in files && /__name__\s*==\s*["']__main__["']/.test(files[f]!),
  );
  return entry ? ['python3', entry] : null;
}
