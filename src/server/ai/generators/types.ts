// The shapes the generators hand to the builder and the agent (see the issue-7 contract): a generated
// app is a set of text files plus what it needs before it can run (secrets, a database).
import type { Generator } from '../../../shared/api/ai.js';
import type { ResolvedEngine, TokenUsage } from '../engines.js';

/** path → content; paths are relative, with `/` separators, text files only. */
export type FileSet = Record<string, string>;

export interface NeededEnvVar {
  name: string;
  description: string;
}

export interface AppNeeds {
  env: NeededEnvVar[];
  database: 'postgres' | null;
}

export interface GeneratedApp {
  files: FileSet;
  needs: AppNeeds;
  /** One line for the build log and the agent. */
  summary: string;
  /** The app's own name (a site's title, the subject the prompt names): the project is called so. */
  title?: string;
}

/**
 * The base images of the Dockerfiles generated apps come with: the platform's `--node-image` and
 * `--python-image`, the ones the container runtime can build FROM.
 */
export interface BaseImages {
  node: string;
  python: string;
}

/** Called after each model call with its token counts, so the caller can meter it. */
export type UsageReporter = (usage: TokenUsage) => Promise<void>;

export interface GenerateContext {
  generator: Generator;
  prompt: string;
  subdomain: string;
  /** null: offline mode, our own templates filled from the prompt. */
  model: ResolvedEngine | null;
  images: BaseImages;
  onUsage?: UsageReporter;
}

export interface EditContext {
  files: FileSet;
  instruction: string;
  model: ResolvedEngine | null;
  images: BaseImages;
  onUsage?: UsageReporter;
}

export interface RepairContext {
  files: FileSet;
  /** The last lines of the build and runtime log of the failed attempt. */
  logTail: string[];
  model: ResolvedEngine;
  images: BaseImages;
  onUsage?: UsageReporter;
}

export interface ChangedApp {
  files: FileSet;
  /** Paths added, modified or deleted, sorted. */
  changed: string[];
}
