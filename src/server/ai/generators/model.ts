// Generation with a model: one system prompt per generator stating the runtime's rules, and answers
// asked as a single fenced JSON block validated with zod (rather than the providers' structured output,
// which some OpenAI-compatible gateways lack). An answer that does not parse or validate is sent back
// once with the reason; a second bad answer is an Error. Every call reports its token usage.
import type { ModelMessage } from 'ai';
import { z } from 'zod';
import type { Generator } from '../../../shared/api/ai.js';
import type { ResolvedEngine } from '../engines.js';
import { aiSdk } from '../sdk.js';
import { fileSetFromList, filesForPrompt, validateFileSet } from './files.js';
import { SiteContent } from './site/content.js';
import type { AppNeeds, BaseImages, FileSet, UsageReporter } from './types.js';

const CALL_TIMEOUT_MS = 5 * 60_000;

const FileEntry = z.object({ path: z.string().min(1).max(300), content: z.string() });

const Needs = z
  .object({
    env: z
      .array(
        z.object({
          name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name'),
          description: z.string().max(500).default(''),
        }),
      )
      .max(30)
      .default([]),
    database: z.enum(['postgres']).nullable().default(null),
  })
  .default({ env: [], database: null });

export const GeneratedFilesAnswer = z.object({
  files: z.array(FileEntry).min(1, 'must list at least one file').max(200, 'must list at most 200 files'),
  needs: Needs,
  summary: z.string().max(500).default(''),
});

export const EditAnswer = z
  .object({
    files: z.array(FileEntry).max(200).default([]),
    deleted: z.array(z.string().min(1).max(300)).max(200).default([]),
    summary: z.string().max(500).default(''),
  })
  .refine((a) => a.files.length > 0 || a.deleted.length > 0, 'must change, add or delete at least one file');

/**
 * What every generated or changed app must follow. The Dockerfile is what the container runtime builds
 * as it is, so it names the platform's own base images (the only ones it is sure to build from) and its
 * CMD starts the app; the host runtimes read the Procfile or package.json instead.
 */
export function runtimeRules(images: BaseImages): string {
  return `The app runs on Wharf, a platform that builds and runs it from its files:
- Use Python 3 or TypeScript/JavaScript on Node.js, as the base images below have them. Keep dependencies few.
- The start command: a \`Procfile\` with \`web: <command>\` (or \`worker: <command>\` for a process without a port), or for Node a package.json "start" script.
- Python: dependencies in requirements.txt (installed into a virtualenv), e.g. Procfile \`web: python3 app.py\`.
- TypeScript: package.json has a "build" script that compiles to JavaScript (tsc, with typescript in devDependencies) and "start" runs the compiled JavaScript (e.g. node dist/index.js).
- A web service listens on the port in the PORT environment variable, on 0.0.0.0, answers GET / and GET /health with 200, and prints one line when it starts. Never hard-code a port.
- Secrets and settings come from environment variables; list every one the user must provide in needs.env (not PORT or DATABASE_URL, which the platform sets).
- Data that must survive a restart goes in PostgreSQL through DATABASE_URL, with needs.database "postgres" (create the tables at start). Otherwise needs.database is null.
- Include a Dockerfile that builds and runs the app on its own; the platform builds it as it is when it runs apps in containers:
  - Every FROM line is exactly \`FROM ${images.node}\` for a Node app, or exactly \`FROM ${images.python}\` for a Python app (with \` AS <name>\` for a build stage): no other base image, since no other can be pulled.
  - It copies the app into the image and installs its dependencies (Python: into a virtualenv, \`RUN python3 -m venv /app/.venv && /app/.venv/bin/pip install -r requirements.txt\` with \`ENV PATH=/app/.venv/bin:$PATH\`, since the image's Python may refuse packages installed system-wide), then runs the build if there is one.
  - Its CMD starts the app (e.g. \`CMD ["node", "server.js"]\` or \`CMD ["python3", "app.py"]\`; the command is \`python3\`, never \`python\`), and a web service EXPOSEs its default port. The app still listens on the port in $PORT, which the platform sets when it starts the container.
  - No secrets or env values in it: they reach the app as environment variables at run time.
- Include a README.md. Text files only; no lockfiles, no node_modules, no binaries; at most 200 files.`;
}

const GOALS: Record<Exclude<Generator, 'portfolio' | 'landing'>, string> = {
  web: 'A small web application about the subject: an HTML page (server-rendered or static with a little JavaScript) and a JSON endpoint serving its data.',
  api: 'A JSON REST API for the resources the description implies: list, create, get and delete (more if asked), input validation that answers 400 with a clear JSON error, 404 for unknown ids, and GET /health.',
  'messaging-bot':
    'A Telegram bot in webhook mode: an HTTP server with GET /health and POST /webhook receiving Telegram updates; it replies through the Bot API at TELEGRAM_API_URL (default https://api.telegram.org) with BOT_TOKEN. needs.env includes BOT_TOKEN. It must start and answer /health without network access.',
  'community-bot':
    'A Discord bot on the interactions endpoint: POST /interactions verifies the Ed25519 signature (X-Signature-Ed25519, X-Signature-Timestamp) with DISCORD_PUBLIC_KEY and answers 401 when it is invalid, answers PING with {"type": 1} and handles its slash commands; at start it registers the commands with DISCORD_BOT_TOKEN (a failure is logged, not fatal). needs.env includes DISCORD_PUBLIC_KEY and DISCORD_BOT_TOKEN. It must start and answer /health without network access.',
  worker:
    'A background worker: a long-running process without an HTTP port that does its job periodically (the first run at start) and prints one line to stdout for each thing it does. The Procfile has `worker: <command>`. When PORT is set, it also answers GET / and GET /health with 200 on that port (a platform running its image checks it there).',
};

const FILES_FORMAT = `Answer with exactly one fenced JSON block and nothing else:
\`\`\`json
{"files": [{"path": "relative/path", "content": "the whole file"}], "needs": {"env": [{"name": "NAME", "description": "what it is and where to get it"}], "database": null}, "summary": "one line saying what the app is"}
\`\`\``;

const EDIT_FORMAT = `Answer with exactly one fenced JSON block and nothing else, listing only the files you add or change (each with its whole new content) and the paths you delete:
\`\`\`json
{"files": [{"path": "relative/path", "content": "the whole new file"}], "deleted": ["path/to/remove"], "summary": "one line saying what changed"}
\`\`\``;

export function codeSystemPrompt(
  generator: Exclude<Generator, 'portfolio' | 'landing'>,
  images: BaseImages,
): string {
  return `You write complete, working apps. What to build: ${GOALS[generator]}\n\n${runtimeRules(images)}\n\n${FILES_FORMAT}`;
}

function siteSystemPrompt(kind: 'portfolio' | 'landing'): string {
  const schema = JSON.stringify(z.toJSONSchema(SiteContent, { io: 'input' }));
  return `You write the content of a ${kind === 'portfolio' ? 'personal portfolio site' : 'landing page'}; Wharf's own templates turn it into HTML and CSS. Fill every text from the description: a title, a tagline, 3 to 6 sections (with items where a list fits), a call to action, contact details when given, and colours that suit the subject (readable text on the background). "kind" is "${kind}". Links are https://, mailto: or #section-id.

The content follows this JSON schema:
${schema}

Answer with exactly one fenced JSON block holding the content, and nothing else.`;
}

/** Sends the conversation, parses the fenced JSON answer; one retry with the reason on a bad answer. */
async function askForJson<T>(
  engine: ResolvedEngine,
  system: string,
  prompt: string,
  parse: (value: unknown) => T,
  onUsage: UsageReporter | undefined,
  what: string,
): Promise<T> {
  const { generateText } = await aiSdk();
  const messages: ModelMessage[] = [{ role: 'user', content: prompt }];
  let reason = '';
  for (let attempt = 1; attempt <= 2; attempt += 1) {
    const result = await generateText({
      model: engine.model,
      system,
      messages,
      abortSignal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
    await onUsage?.({ inputTokens: result.usage.inputTokens, outputTokens: result.usage.outputTokens });
    try {
      return parse(extractJson(result.text));
    } catch (error) {
      reason = (error as Error).message;
    }
    messages.push(
      { role: 'assistant', content: result.text || '(empty answer)' },
      {
        role: 'user',
        content: `That answer cannot be used: ${reason}. Answer again with exactly one fenced \`\`\`json block in the format asked, and nothing else.`,
      },
    );
  }
  throw new Error(
    `the model (${engine.provider}/${engine.modelId}) did not give a valid ${what} in two tries: ${reason}`,
  );
}

/** The JSON in a ```json fence (else the outermost {…}); Errors say what is wrong. */
export function extractJson(text: string): unknown {
  const fenced = /```(?:json|JSON)?[ \t]*\r?\n([\s\S]*?)\r?\n[ \t]*```/.exec(text);
  let body = fenced?.[1];
  if (body === undefined) {
    const start = text.indexOf('{');
    const end = text.lastIndexOf('}');
    if (start === -1 || end <= start) throw new Error('there is no JSON block in it');
    body = text.slice(start, end + 1);
  }
  try {
    return JSON.parse(body);
  } catch (error) {
    throw new Error(`its JSON does not parse (${(error as Error).message})`);
  }
}

function zodReason(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length ? issue.path.join('.') : 'the answer'}: ${issue.message}`)
    .join('; ');
}

function parseWith<S extends z.ZodType>(schema: S): (value: unknown) => z.infer<S> {
  return (value) => {
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw new Error(zodReason(parsed.error));
    return parsed.data;
  };
}

const PLATFORM_ENV = new Set(['PORT', 'DATABASE_URL']);

export interface ModelFiles {
  files: FileSet;
  needs: AppNeeds;
  summary: string;
}

export async function generateCodeWithModel(
  engine: ResolvedEngine,
  generator: Exclude<Generator, 'portfolio' | 'landing'>,
  prompt: string,
  subdomain: string,
  images: BaseImages,
  onUsage: UsageReporter | undefined,
): Promise<ModelFiles> {
  return askForJson(
    engine,
    codeSystemPrompt(generator, images),
    `The app will be served at the subdomain "${subdomain}". Build this:\n\n${prompt}`,
    (value) => {
      const answer = parseWith(GeneratedFilesAnswer)(value);
      const files = validateFileSet(fileSetFromList(answer.files));
      const env = answer.needs.env.filter(
        (entry, i, all) => !PLATFORM_ENV.has(entry.name) && all.findIndex((e) => e.name === entry.name) === i,
      );
      return {
        files,
        needs: { env, database: answer.needs.database },
        summary: answer.summary.trim() || `${generator}: generated by ${engine.provider}/${engine.modelId}`,
      };
    },
    onUsage,
    'file set',
  );
}

export async function generateSiteWithModel(
  engine: ResolvedEngine,
  kind: 'portfolio' | 'landing',
  prompt: string,
  current: SiteContent | null,
  onUsage: UsageReporter | undefined,
): Promise<SiteContent> {
  const ask = current
    ? `Here is the site's current content:\n\`\`\`json\n${JSON.stringify(current, null, 2)}\n\`\`\`\n\nChange it as follows, keeping everything else:\n\n${prompt}`
    : `Write the content for this:\n\n${prompt}`;
  return askForJson(
    engine,
    siteSystemPrompt(kind),
    ask,
    (value) => ({ ...parseWith(SiteContent)(value), kind }),
    onUsage,
    'site content',
  );
}

function describeFiles(files: FileSet): string {
  const { shown, omitted } = filesForPrompt(files);
  const parts = Object.keys(shown)
    .sort()
    .map((path) => `=== ${path} ===\n${shown[path]}`);
  if (omitted.length) parts.push(`(not shown, too large or generated: ${omitted.join(', ')})`);
  return parts.join('\n\n');
}

/** Asks for changed, added and deleted files; returns the whole new set. */
export async function changeFilesWithModel(
  engine: ResolvedEngine,
  files: FileSet,
  task: string,
  images: BaseImages,
  onUsage: UsageReporter | undefined,
): Promise<{ files: FileSet; summary: string }> {
  return askForJson(
    engine,
    `You change existing apps, precisely and completely: every file you return must be whole and working.\n\n${runtimeRules(images)}\n\n${EDIT_FORMAT}`,
    `The app's files:\n\n${describeFiles(files)}\n\n${task}`,
    (value) => {
      const answer = parseWith(EditAnswer)(value);
      const next: FileSet = { ...files };
      for (const path of answer.deleted) {
        if (!(path in next)) throw new Error(`it deletes "${path}", which does not exist`);
        delete next[path];
      }
      Object.assign(next, fileSetFromList(answer.files));
      return { files: validateFileSet(next), summary: answer.summary };
    },
    onUsage,
    'set of changes',
  );
}
