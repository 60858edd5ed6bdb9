// The generators of the AI builder (issue 7): from a prompt to a project's files, edits, repairs and
// the deterministic fixes tried before a model. With a model, code generators write the whole project
// and site generators fill a content document our templates render; without one (offline mode), each
// generator fills our own templates from the prompt — real apps that run with no install and no
// network (Python's standard library, or static files), except apps that keep data, which are Node on
// PostgreSQL (see templates/database.ts).
import { ApiError } from '../../errors.js';
import { changedPaths, validateFileSet } from './files.js';
import { IMAGE_BUILD_FAILED } from './fixes.js';
import { changeFilesWithModel, generateCodeWithModel, generateSiteWithModel } from './model.js';
import { readPrompt, wantsDatabase } from './prompt.js';
import {
  CONTENT_FILE,
  contentFromPrompt,
  editSiteOffline,
  readSiteContent,
  renderSite,
  siteApp,
} from './site/index.js';
import { apiApp } from './templates/api.js';
import { communityBotApp } from './templates/community-bot.js';
import { databaseApp } from './templates/database.js';
import { messagingBotApp } from './templates/messaging-bot.js';
import { webApp } from './templates/web.js';
import { workerApp } from './templates/worker.js';
import type {
  ChangedApp,
  EditContext,
  FileSet,
  GenerateContext,
  GeneratedApp,
  RepairContext,
} from './types.js';

export type {
  AppNeeds,
  BaseImages,
  ChangedApp,
  EditContext,
  FileSet,
  GenerateContext,
  GeneratedApp,
  NeededEnvVar,
  RepairContext,
  UsageReporter,
} from './types.js';
export { IMAGE_BUILD_FAILED, buildStepOf, deterministicFixes, type FixResult } from './fixes.js';
export { assertSafePath, validateFileSet, MAX_FILES, MAX_TOTAL_BYTES } from './files.js';
export { SiteContent, readSiteContent } from './site/index.js';

const OFFLINE_EDIT_HELP =
  'without an AI engine only simple edits of portfolio and landing sites work (change the title, tagline, colour, call to action, email or footer to …; add or remove a section; add an item). Save your own key (PUT /account/ai-key) or start the platform with an included engine (--ai-provider and WHARF_AI_KEY)';

/** A new app's files from a prompt: the model's when one is given, else our templates'. */
export async function generateApp(ctx: GenerateContext): Promise<GeneratedApp> {
  const { generator, prompt, model, images } = ctx;
  if (generator === 'portfolio' || generator === 'landing') {
    if (!model) {
      return siteApp(contentFromPrompt(generator, readPrompt(prompt)), `from: "${oneLine(prompt)}"`, images);
    }
    const content = await generateSiteWithModel(model, generator, prompt, null, ctx.onUsage);
    return siteApp(content, `with ${model.provider}/${model.modelId} from: "${oneLine(prompt)}"`, images);
  }
  if (model) {
    const generated = await generateCodeWithModel(
      model,
      generator,
      prompt,
      ctx.subdomain,
      images,
      ctx.onUsage,
    );
    return { ...generated, files: validateFileSet(generated.files), title: readPrompt(prompt).title };
  }
  const facts = readPrompt(prompt);
  let app: GeneratedApp;
  switch (generator) {
    case 'web':
      app = wantsDatabase(prompt) ? databaseApp(facts, 'web', images) : webApp(facts, images);
      break;
    case 'api':
      app = wantsDatabase(prompt) ? databaseApp(facts, 'api', images) : apiApp(facts, images);
      break;
    case 'messaging-bot':
      app = messagingBotApp(facts, images);
      break;
    case 'community-bot':
      app = communityBotApp(facts, images);
      break;
    case 'worker':
      app = workerApp(facts, images);
      break;
  }
  return { ...app, files: validateFileSet(app.files), title: facts.title };
}

/**
 * An app changed by an instruction. Sites change their content document and are rendered again;
 * other apps need a model. Without one, the simple site edits are done by rule, anything else is a
 * 503 `unavailable` saying how to set an engine up.
 */
export async function editApp(ctx: EditContext): Promise<ChangedApp> {
  const { files, instruction, model } = ctx;
  const site = readSiteContent(files);
  if (site) {
    const content = model
      ? await generateSiteWithModel(model, site.kind, instruction, site, ctx.onUsage)
      : editSiteOffline(site, instruction);
    if (!content) {
      throw new ApiError(
        'unavailable',
        `editing needs an AI engine: "${oneLine(instruction)}" is not one of the simple edits done offline; ${OFFLINE_EDIT_HELP}`,
      );
    }
    return withChanges(files, {
      ...files,
      [CONTENT_FILE]: `${JSON.stringify(content, null, 2)}\n`,
      ...renderSite(content),
    });
  }
  if (!model) {
    throw new ApiError(
      'unavailable',
      `editing needs an AI engine: this app's code can only be changed by a model; ${OFFLINE_EDIT_HELP}`,
    );
  }
  const changed = await changeFilesWithModel(
    model,
    files,
    `Change the app as follows:\n\n${instruction}\n\nKeep it running on the platform's rules; change only what the instruction needs.`,
    ctx.images,
    ctx.onUsage,
  );
  return withChanges(files, changed.files);
}

/** Colour and cursor codes, such as those Docker's builder wraps a step's error output in. */
// eslint-disable-next-line no-control-regex
const TERMINAL_CODES = /\u001b\[[\d;?]*[A-Za-z]/g;

/**
 * A failed app sent back to the model with its last log lines; returns the fixed set. When the image
 * build failed (the container runtime builds the app's Dockerfile as it is), the model is told the
 * failing step is one of the Dockerfile's, with its output in the log.
 */
export async function repairApp(ctx: RepairContext): Promise<ChangedApp> {
  const log = ctx.logTail
    .slice(-200)
    .map((line) => line.replace(TERMINAL_CODES, ''))
    .join('\n');
  const imageBuild = ctx.logTail.some((line) => line.includes(IMAGE_BUILD_FAILED))
    ? `\n\nThe image build failed: the platform builds the app's Dockerfile as it is, and the log shows the failing step (its "Step N/M :" line, then what it printed). Fix the Dockerfile, or what that step runs.`
    : '';
  const changed = await changeFilesWithModel(
    ctx.model,
    ctx.files,
    `This app failed to build or to start on the platform. The last lines of its build and runtime log:\n\n\`\`\`\n${log}\n\`\`\`${imageBuild}\n\nFind the cause and fix it. Change only what the fix needs.`,
    ctx.images,
    ctx.onUsage,
  );
  const result = withChanges(ctx.files, changed.files);
  if (result.changed.length === 0) throw new Error('the model proposed no change to repair the app');
  return result;
}

function withChanges(before: FileSet, after: FileSet): ChangedApp {
  const files = validateFileSet(after);
  return { files, changed: changedPaths(before, files) };
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 160 ? `${line.slice(0, 157)}…` : line;
}
