// Deterministic fixes, tried before a model sees a failed build: a missing dependency, a missing start
// script, an app that does not listen on $PORT, and what the container runtime's image build and
// container start show of a Dockerfile: a base image the engine cannot pull, `python` where Debian's
// images have only `python3`, pip refusing a system-wide install, no CMD. Each reads the log for the
// symptom and changes the files only where the cause is unambiguous; null when nothing applies, so the
// caller moves on to the model (or gives up) instead of retrying the same thing.
//
// The fixes of the app's own files are fixes-app.ts, the Dockerfile's fixes-container.ts; this entry
// tries them in order.
import { missingNodeModules, missingPythonModules, missingStartScript, notBindingPort } from './fixes-app.js';
import { missingCmd, pythonCommand, systemWidePip, unavailableBaseImage } from './fixes-container.js';
import type { BaseImages, FileSet } from './types.js';

export { fixJsPort, fixPythonPort } from './fixes-app.js';
export { IMAGE_BUILD_FAILED, buildStepOf } from './fixes-container.js';

export interface FixResult {
  files: FileSet;
  /** One line per fix, for the build log. */
  fixes: string[];
}

/** `images`: the platform's base images, the ones a Dockerfile's FROM is moved to. */
export function deterministicFixes(files: FileSet, logTail: string[], images: BaseImages): FixResult | null {
  const log = logTail.join('\n');
  let current = files;
  const fixes: string[] = [];
  for (const fix of [
    missingNodeModules,
    missingPythonModules,
    missingStartScript,
    notBindingPort,
    unavailableBaseImage,
    pythonCommand,
    systemWidePip,
    missingCmd,
  ]) {
    const result = fix(current, log, images);
    if (result) {
      current = result.files;
      fixes.push(...result.fixes);
    }
  }
  return fixes.length ? { files: current, fixes } : null;
}
