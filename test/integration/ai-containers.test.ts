// The AI builder on the container runtime, against a real engine and the local base images: offline
// template apps come with a Dockerfile FROM the configured images and deploy as one container per
// project, served through the edge; a model's app whose Dockerfile fails a RUN step is repaired by the
// model from the image build's log (the failing step and its output in the repair prompt); a Dockerfile
// FROM an image the engine cannot pull, running `python` where the image has `python3`, is fixed by the
// deterministic fixes without a model call. The offline database app is not here: its `npm install`
// needs the npm registry from inside the image build, which this machine's engine does not reach.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AiBuildResponse } from '../../src/shared/api/ai.js';
import type { Project, ProjectStatus, Release } from '../../src/shared/api/projects.js';
import { PLATFORM_LABEL, PROJECT_LABEL } from '../../src/server/runtime/drivers/docker.js';
import { logLines, viaEdge } from '../helpers/deploy.js';
import { dockerClient, requireEngine, testImages } from '../helpers/engine.js';
import { type FakeAi, type ScriptedTurn, startFakeOpenAI } from '../helpers/fake-ai.js';
import { type TestPlatform, call, startPlatform } from '../helpers/platform.js';

const reason = await requireEngine();
const images = testImages() ?? { node: 'unset', python: 'unset' };
const docker = dockerClient();

/** A deploy loop's bound: an image build, a start, and two repairs each with their own build. */
const OUTCOME_MS = 150_000;

async function build(tp: TestPlatform, body: Record<string, unknown>): Promise<AiBuildResponse> {
  const result = await call<AiBuildResponse>(`${tp.api}/ai/build`, { key: tp.key, body });
  expect(result.status, JSON.stringify(result.body)).toBe(202);
  return result.body;
}

/** Waits for the builder's deploy loop (repairs included) and fails with the log unless it runs. */
async function expectRunning(tp: TestPlatform, projectId: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no outcome for ${projectId} in ${OUTCOME_MS} ms`)),
      OUTCOME_MS,
    );
  });
  let status: ProjectStatus;
  try {
    status = await Promise.race([tp.platform.aiBuilder.waitForOutcome(projectId), timeout]);
  } finally {
    clearTimeout(timer);
  }
  if (status !== 'running') {
    throw new Error(`project ${projectId} is ${status}; log:\n${(await logLines(tp, projectId)).join('\n')}`);
  }
}

/** The running containers the platform started for a project. */
function containersOf(tp: TestPlatform, projectId: string) {
  return docker.listContainers({
    filters: {
      label: [`${PLATFORM_LABEL}=${tp.platform.runtime.platformId}`, `${PROJECT_LABEL}=${projectId}`],
    },
  });
}

/** A file of the AI project's repository, as its last commit has it. */
function committed(tp: TestPlatform, projectId: string, path: string): string {
  return execFileSync('git', ['-C', join(tp.dataDir, 'ai-repos', projectId), 'show', `HEAD:${path}`], {
    encoding: 'utf8',
  });
}

function commits(tp: TestPlatform, projectId: string): string[] {
  const out = execFileSync('git', ['-C', join(tp.dataDir, 'ai-repos', projectId), 'log', '--format=%s'], {
    encoding: 'utf8',
  });
  return out.split('\n').filter(Boolean);
}

async function releasesOf(tp: TestPlatform, projectId: string): Promise<Release[]> {
  const answer = await call<Release[]>(`${tp.api}/projects/${projectId}/releases`, { key: tp.key });
  expect(answer.status).toBe(200);
  return answer.body;
}

const hostOf = (project: Project) => `${project.subdomain}.localhost`;

describe.skipIf(reason !== null)('AI builds on the container runtime', () => {
  let offline: TestPlatform;
  let modelled: TestPlatform;
  let fake: FakeAi;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    const config = {
      runtime: 'container' as const,
      images,
      stopContainersOnExit: true,
      healthTimeoutMs: 30_000,
    };
    offline = await startPlatform(config);
    modelled = await startPlatform({
      ...config,
      ai: { provider: 'openai', key: 'sk-test', baseUrls: { openai: fake.baseUrl } },
    });
  }, 60_000);
  afterAll(async () => {
    await offline?.close();
    await modelled?.close();
    await fake?.close();
  }, 60_000);

  it.each([
    ['web', 'A small web app for a book club with a reading list', '/', 'book'],
    ['api', 'A REST API to manage books', '/books', 'books'],
    ['landing', 'A landing page for a coffee shop in Lyon with opening hours and menu', '/', 'coffee'],
    ['portfolio', 'A portfolio for Jane Doe, a wedding photographer', '/', 'jane doe'],
  ])(
    'builds the %s template offline, FROM the configured image, and runs it as a container',
    async (generator, prompt, path, word) => {
      const subdomain = `ct-${generator}`;
      const built = await build(offline, { generator, prompt, subdomain });
      expect(built.status).toBe('building');
      const { project } = built;
      await expectRunning(offline, project.id);

      const dockerfile = committed(offline, project.id, 'Dockerfile');
      expect(dockerfile.split('\n')[0]).toBe(`FROM ${images.python}`);
      const lines = await logLines(offline, project.id);
      expect(lines).toContain('building the image from the source’s own Dockerfile');
      expect(lines).toContainEqual(
        expect.stringMatching(new RegExp(`^Step 1/\\d+ : FROM ${images.python}$`)),
      );

      const [container, ...others] = await containersOf(offline, project.id);
      expect(others).toEqual([]);
      expect(container).toMatchObject({ State: 'running' });
      expect(container!.Image).toMatch(new RegExp(`^wharf/${project.id.toLowerCase()}:rel_`));
      const answer = await viaEdge(offline.edgePort, hostOf(project), path);
      expect(answer.status, answer.body).toBe(200);
      expect(answer.body.toLowerCase()).toContain(word);
    },
    120_000,
  );

  it('builds the worker template offline and runs its image as a worker: alive, no port, no web page', async () => {
    const built = await build(offline, {
      generator: 'worker',
      prompt: 'A job that tidies the reading list every 5 minutes',
      subdomain: 'ct-worker',
    });
    expect(built.status).toBe('building');
    await expectRunning(offline, built.project.id);
    expect(committed(offline, built.project.id, 'Dockerfile').split('\n')[0]).toBe(`FROM ${images.python}`);
    const lines = await logLines(offline, built.project.id);
    expect(lines).toContain(
      'the Procfile names a worker and no web process: the image’s command runs as a worker',
    );
    expect(lines).toContainEqual(expect.stringMatching(/^the container is up \(a worker, alive after/));
    const [container, ...others] = await containersOf(offline, built.project.id);
    expect(others).toEqual([]);
    expect(container).toMatchObject({ State: 'running', Ports: [] });
    expect((await viaEdge(offline.edgePort, hostOf(built.project), '/health')).status).not.toBe(200);
  }, 120_000);

  it.each([
    [
      'messaging-bot',
      'A Telegram bot that answers questions about our opening hours',
      { BOT_TOKEN: '123:abc' },
    ],
    [
      'community-bot',
      'A Discord bot for our gaming community with events and rules',
      { DISCORD_PUBLIC_KEY: '0'.repeat(64), DISCORD_BOT_TOKEN: 'token' },
    ],
  ])(
    'builds the %s template offline, then runs it as a container once /ai/deploy supplies its secrets',
    async (generator, prompt, env) => {
      const built = await build(offline, { generator, prompt, subdomain: `ct-${generator}` });
      expect(built.status).toBe('needs_setup');
      // The bots reach their chat service only when asked to; an address nothing answers keeps it so.
      const deployed = await call(`${offline.api}/ai/deploy`, {
        key: offline.key,
        body: {
          project_id: built.project.id,
          env: { ...env, TELEGRAM_API_URL: 'http://127.0.0.1:9', DISCORD_API_URL: 'http://127.0.0.1:9' },
        },
      });
      expect(deployed.status, JSON.stringify(deployed.body)).toBe(202);
      await expectRunning(offline, built.project.id);
      expect(committed(offline, built.project.id, 'Dockerfile').split('\n')[0]).toBe(`FROM ${images.python}`);
      expect(await containersOf(offline, built.project.id)).toHaveLength(1);
      const health = await viaEdge(offline.edgePort, hostOf(built.project), '/health');
      expect(health.status, health.body).toBe(200);
    },
    120_000,
  );

  it('repairs a model’s app whose Dockerfile fails a RUN step: the model reads that step’s output, its fix runs', async () => {
    const requestsBefore = fake.requests.length;
    const dockerfile = (extra: string[]) =>
      [
        `FROM ${images.node}`,
        'WORKDIR /app',
        'COPY . .',
        ...extra,
        'RUN node prepare.js',
        'EXPOSE 8080',
        'CMD ["node", "server.js"]',
        '',
      ].join('\n');
    const app = {
      'package.json': JSON.stringify({
        name: 'greeter',
        private: true,
        scripts: { start: 'node server.js' },
      }),
      'prepare.js': [
        "const fs = require('node:fs');",
        "if (!fs.existsSync('greeting.txt')) {",
        "  console.error('prepare.js: greeting.txt is missing, the image cannot be prepared without it');",
        '  process.exit(3);',
        '}',
        "console.log('prepared');",
        '',
      ].join('\n'),
      'server.js': [
        "const http = require('node:http');",
        "const greeting = require('node:fs').readFileSync('greeting.txt', 'utf8').trim();",
        'http.createServer((req, res) => res.end(greeting)).listen(Number(process.env.PORT), () => console.log("listening"));',
        '',
      ].join('\n'),
      Dockerfile: dockerfile([]),
    };
    let repairPrompt = '';
    fake.push(generated(app, 'a greeter whose image build fails'), (body) => {
      repairPrompt = String(body.messages.at(-1).content);
      return changed(
        { Dockerfile: dockerfile(['RUN echo "hello from a repaired image" > greeting.txt']) },
        'write greeting.txt before prepare.js checks it',
      );
    });
    const built = await build(modelled, {
      generator: 'web',
      prompt: 'A greeting page',
      subdomain: 'ct-repair',
    });
    await expectRunning(modelled, built.project.id);

    // The first deploy failed in the image build, at the RUN step…
    const [latest, first] = await releasesOf(modelled, built.project.id);
    expect(first).toMatchObject({ status: 'failed' });
    expect(first!.error).toMatch(/^image build failed: .*node prepare\.js.* returned a non-zero code: 3/);
    // …and the model was asked to repair it with that step and what it printed.
    expect(fake.requests.length - requestsBefore).toBe(2);
    // (Docker's builder counts the platform's labels as steps of their own: 4/9.)
    expect(repairPrompt).toMatch(/^Step 4\/\d+ : RUN node prepare\.js$/m);
    // What the step printed, without the colour codes the builder wraps its error output in.
    expect(repairPrompt).toMatch(
      /^prepare\.js: greeting\.txt is missing, the image cannot be prepared without it$/m,
    );
    expect(repairPrompt).toContain('The image build failed');
    // The system prompts of the generation and of the repair name the configured images.
    for (const request of fake.requests.slice(requestsBefore)) {
      const system = String(request.body.messages[0].content);
      expect(system).toContain(`FROM ${images.node}\``);
      expect(system).toContain(`FROM ${images.python}\``);
    }

    expect(latest).toMatchObject({ status: 'running' });
    expect(commits(modelled, built.project.id)).toEqual([
      'Repair attempt 2: the model changed Dockerfile',
      'Generate web app: a greeter whose image build fails',
    ]);
    expect(await containersOf(modelled, built.project.id)).toHaveLength(1);
    expect((await viaEdge(modelled.edgePort, hostOf(built.project), '/')).body).toBe(
      'hello from a repaired image',
    );
  }, 240_000);

  it('fixes a Dockerfile FROM an image the engine cannot pull, then `python` → `python3`, without the model', async () => {
    const requestsBefore = fake.requests.length;
    fake.push(
      generated(
        {
          'app.py': [
            'import http.server, os',
            'class Handler(http.server.BaseHTTPRequestHandler):',
            '    def do_GET(self):',
            '        self.send_response(200); self.end_headers(); self.wfile.write(b"fixed without a model")',
            'http.server.ThreadingHTTPServer(("0.0.0.0", int(os.environ["PORT"])), Handler).serve_forever()',
            '',
          ].join('\n'),
          // A tag no registry has: the build fails at FROM wherever it runs.
          Dockerfile:
            'FROM python:0-wharf-unavailable\nWORKDIR /app\nCOPY app.py .\nEXPOSE 8000\nCMD ["python", "app.py"]\n',
        },
        'a page on an image the engine cannot pull',
      ),
    );
    const built = await build(modelled, { generator: 'web', prompt: 'A page', subdomain: 'ct-fixes' });
    await expectRunning(modelled, built.project.id);

    expect(fake.requests.length - requestsBefore).toBe(1);
    expect(commits(modelled, built.project.id)).toEqual([
      'Repair attempt 3: Dockerfile: run python3 instead of python, which the image does not have',
      `Repair attempt 2: Dockerfile: FROM ${images.python} instead of python:0-wharf-unavailable, which the engine could not pull`,
      'Generate web app: a page on an image the engine cannot pull',
    ]);
    expect(committed(modelled, built.project.id, 'Dockerfile')).toBe(
      `FROM ${images.python}\nWORKDIR /app\nCOPY app.py .\nEXPOSE 8000\nCMD ["python3", "app.py"]\n`,
    );
    expect((await viaEdge(modelled.edgePort, hostOf(built.project), '/')).body).toBe('fixed without a model');
  }, 240_000);
});

type Files = Record<string, string>;

/** The model's answer to a generation: one fenced JSON block with the files, needs and summary. */
function generated(files: Files, summary: string): ScriptedTurn {
  const answer = {
    files: Object.entries(files).map(([path, content]) => ({ path, content })),
    needs: { env: [], database: null },
    summary,
  };
  return { text: `\`\`\`json\n${JSON.stringify(answer)}\n\`\`\`` };
}

/** The model's answer to an edit or repair: the files it changes. */
function changed(files: Files, summary: string): ScriptedTurn {
  const answer = { files: Object.entries(files).map(([path, content]) => ({ path, content })), summary };
  return { text: `\`\`\`json\n${JSON.stringify(answer)}\n\`\`\`` };
}
