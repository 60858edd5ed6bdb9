// The generators without a model: every offline template gives a valid file set with the needs its
// app has and a Dockerfile FROM the configured base images, the model's prompt names those images,
// prompts are read predictably, paths that could leave the project are refused, offline site edits do
// what they say (and refuse what they cannot do), and each deterministic fix changes exactly what its
// symptom calls for — or returns null.
import { describe, expect, it } from 'vitest';
import { GENERATORS, type Generator } from '../../../../src/shared/api/ai.js';
import { ApiError } from '../../../../src/server/errors.js';
import {
  type FileSet,
  SiteContent,
  assertSafePath,
  buildStepOf,
  deterministicFixes,
  editApp,
  generateApp,
  readSiteContent,
  validateFileSet,
} from '../../../../src/server/ai/generators/index.js';
import { codeSystemPrompt } from '../../../../src/server/ai/generators/model.js';
import { readPrompt } from '../../../../src/server/ai/generators/prompt.js';
import { nodeDockerfile } from '../../../../src/server/ai/generators/templates/common.js';

/** Base images no default names: what a Dockerfile starts FROM can only come from the platform's config. */
const IMAGES = { node: 'registry.test/base/node:7', python: 'registry.test/base/python:7' };

const offline = (generator: Generator, prompt: string) =>
  generateApp({ generator, prompt, subdomain: 'demo', model: null, images: IMAGES });

const pkg = (value: Record<string, unknown>) =>
  JSON.stringify({ name: 'x', private: true, ...value }, null, 2);

describe('offline generators', () => {
  const prompts: Record<Generator, string> = {
    web: 'Build me a website for a bakery in Lyon with cakes, breads and pastries',
    api: 'A REST API to track books I have read',
    'messaging-bot': 'A Telegram bot for my yoga studio that answers questions about classes and prices',
    'community-bot': 'A Discord bot for our gaming community with events, rules and roles',
    worker: 'A job that checks https://example.com every 5 minutes',
    portfolio:
      'A portfolio for Jane Doe, a wedding photographer, showing weddings, portraits and travel. Contact jane@example.com',
    landing:
      'A landing page for a dark green coffee subscription service called "Bean Box" with free shipping, fresh roasts and no commitment',
  };

  it.each(GENERATORS.map((g) => [g]))(
    '%s gives a valid file set with a README and a one-line summary',
    async (generator) => {
      const app = await offline(generator, prompts[generator]);
      expect(() => validateFileSet(app.files)).not.toThrow();
      expect(app.files['README.md']).toMatch(/^# /);
      expect(app.files.Dockerfile).toMatch(/^FROM /);
      expect(app.summary).toMatch(new RegExp(`^${generator}: `));
      expect(app.summary).not.toContain('\n');
    },
  );

  it('web: a Python site on $PORT with its data in data.json, no needs', async () => {
    const app = await offline('web', prompts.web);
    expect(app.files.Procfile).toBe('web: python3 app.py\n');
    expect(app.files['app.py']).toContain('os.environ.get("PORT"');
    expect(app.files.Dockerfile).toMatch(/^FROM registry\.test\/base\/python:7\n/);
    const data = JSON.parse(app.files['data.json']!);
    expect(data.items.map((i: { name: string }) => i.name)).toEqual(['Cakes', 'Breads', 'Pastries']);
    expect(app.needs).toEqual({ env: [], database: null });
  });

  it('api: routes named after the resource the prompt manages', async () => {
    const app = await offline('api', prompts.api);
    expect(app.files['app.py']).toContain('RESOURCE = "books"');
    expect(app.files['README.md']).toContain('POST /books');
    expect(app.needs).toEqual({ env: [], database: null });
  });

  it.each([
    ['web', 'A website where customers can sign up and save their orders'],
    ['api', 'An API that stores users and their reservations in a database'],
  ] as const)(
    '%s that keeps data: a Node app on PostgreSQL through DATABASE_URL',
    async (generator, prompt) => {
      const app = await offline(generator, prompt);
      expect(app.needs).toEqual({ env: [], database: 'postgres' });
      const manifest = JSON.parse(app.files['package.json']!);
      expect(manifest.dependencies).toEqual({ pg: expect.any(String) });
      expect(manifest.scripts.start).toBe('node server.js');
      expect(app.files['server.js']).toContain('process.env.DATABASE_URL');
      expect(app.files['server.js']).toContain('process.env.PORT');
      expect(app.files['server.js']).toMatch(/standard library has no driver/);
      expect(app.files.Procfile).toBeUndefined();
    },
  );

  it('messaging-bot needs BOT_TOKEN and replies through TELEGRAM_API_URL', async () => {
    const app = await offline('messaging-bot', prompts['messaging-bot']);
    expect(app.needs.env.map((e) => e.name)).toEqual(['BOT_TOKEN']);
    expect(app.needs.database).toBeNull();
    expect(app.files['app.py']).toContain('TELEGRAM_API_URL');
    expect(app.files['app.py']).toContain('"/webhook"');
  });

  it('community-bot needs the Discord public key and bot token and verifies signatures itself', async () => {
    const app = await offline('community-bot', prompts['community-bot']);
    expect(app.needs.env.map((e) => e.name)).toEqual(['DISCORD_PUBLIC_KEY', 'DISCORD_BOT_TOKEN']);
    expect(app.files['ed25519.py']).toContain('def verify(public_key, message, signature)');
    expect(JSON.parse(app.files['topics.json']!)).toHaveProperty('events');
  });

  it('worker: a worker process only, on the interval the prompt says', async () => {
    const app = await offline('worker', prompts.worker);
    expect(app.files.Procfile).toBe('worker: python3 worker.py\n');
    expect(app.files['worker.py']).toContain('"300"');
    expect(app.files['worker.py']).toContain('https://example.com');
    expect(app.needs).toEqual({ env: [], database: null });
  });

  it('portfolio: content.json follows the schema and the page shows it, escaped', async () => {
    const app = await offline('portfolio', prompts.portfolio);
    const content = readSiteContent(app.files)!;
    expect(SiteContent.parse(content)).toEqual(content);
    expect(content.title).toBe('Jane Doe');
    expect(content.tagline).toBe('Wedding photographer');
    expect(content.contact.email).toBe('jane@example.com');
    expect(content.sections.find((s) => s.id === 'work')!.items.map((i) => i.title)).toEqual([
      'Weddings',
      'Portraits',
      'Travel',
    ]);
    expect(app.files['index.html']).toContain('<h1>Jane Doe</h1>');
    expect(app.files['index.html']).toContain('href="mailto:jane@example.com"');
    expect(Object.keys(app.files).sort()).toEqual([
      'Dockerfile',
      'README.md',
      'content.json',
      'index.html',
      'styles.css',
    ]);
  });

  it('landing: the name in quotes, the colours asked for, the features listed', async () => {
    const app = await offline('landing', prompts.landing);
    const content = readSiteContent(app.files)!;
    expect(content.title).toBe('Bean Box');
    expect(content.colours.background).toBe('#0b1120');
    expect(content.sections[0]!.items.map((i) => i.title)).toEqual([
      'Free shipping',
      'Fresh roasts',
      'No commitment',
    ]);
    expect(app.files['styles.css']).toContain('--bg: #0b1120;');
  });

  it('escapes markup from the prompt in the rendered page', async () => {
    const app = await offline('landing', 'A landing page called "<script>alert(1)</script>"');
    expect(app.files['index.html']).not.toContain('<script>');
    expect(app.files['index.html']).toContain('&lt;script&gt;');
  });

  it('makes a working app from the vaguest prompt', async () => {
    for (const generator of GENERATORS) {
      const app = await offline(generator, 'x');
      expect(Object.keys(app.files).length).toBeGreaterThan(2);
    }
  });
});

describe('reading a prompt', () => {
  it('takes the subject after the kind of app, title-cased', () => {
    const facts = readPrompt(
      'Please build me a simple landing page for a coffee shop in Lyon, with opening hours',
    );
    expect(facts.title).toBe('Coffee Shop in Lyon');
    expect(facts.features).toEqual(['opening hours']);
  });

  it('finds the resource an API manages, and its singular', () => {
    expect(readPrompt('an API to manage recipes').resource).toBe('recipes');
    expect(readPrompt('an API to manage recipes').singular).toBe('recipe');
    expect(readPrompt('an API for tracking deliveries and status').singular).toBe('delivery');
    expect(readPrompt('a simple api').resource).toBe('items');
  });

  it('reads intervals', () => {
    expect(readPrompt('every 10 seconds ping it').intervalSeconds).toBe(10);
    expect(readPrompt('runs hourly').intervalSeconds).toBe(3600);
    expect(readPrompt('a daily report').intervalSeconds).toBe(86_400);
    expect(readPrompt('no time given').intervalSeconds).toBe(60);
  });
});

describe('path validation', () => {
  it.each([
    '../x',
    'a/../../x',
    '/etc/x',
    'C:/x',
    'a//b',
    './',
    '.git/config',
    'node_modules/x/index.js',
    'a\\b',
    '',
  ])('refuses %j', (path) => {
    expect(() => assertSafePath(path)).toThrow(Error);
    expect(() => validateFileSet({ [path]: 'x' })).toThrow();
  });

  it('accepts nested relative paths and dotfiles', () => {
    expect(validateFileSet({ 'src/index.ts': '', '.gitignore': '', 'a/b/c.txt': 'x' })).toBeTruthy();
  });

  it('refuses more than 200 files or more than 1 MiB', () => {
    const many = Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`f${i}.txt`, '']));
    expect(() => validateFileSet(many)).toThrow(/201 files: at most 200/);
    expect(() => validateFileSet({ 'big.txt': 'x'.repeat(1024 * 1024 + 1) })).toThrow(/1 MiB/);
    expect(() => validateFileSet({})).toThrow(/no files/);
  });
});

describe('offline edits', () => {
  it('changes a landing page title and colour and renders it again', async () => {
    const app = await offline('landing', 'A landing page for a bike repair shop');
    const edited = await editApp({
      files: app.files,
      instruction: 'Change the title to "Fix My Bike". Make it purple',
      model: null,
      images: IMAGES,
    });
    expect(edited.changed).toEqual(['content.json', 'index.html', 'styles.css']);
    expect(readSiteContent(edited.files)!.title).toBe('Fix My Bike');
    expect(edited.files['index.html']).toContain('<h1>Fix My Bike</h1>');
    expect(edited.files['styles.css']).toContain('--primary: #7e22ce;');
  });

  it('adds and removes sections of a portfolio', async () => {
    const app = await offline('portfolio', 'A portfolio for Sam, a designer');
    const edited = await editApp({
      files: app.files,
      instruction: 'add a section called Awards saying Best poster 2023; remove the about section',
      model: null,
      images: IMAGES,
    });
    const content = readSiteContent(edited.files)!;
    expect(content.sections.map((s) => s.id)).toEqual(['work', 'awards', 'contact']);
    expect(content.sections[1]!.body).toBe('Best poster 2023');
  });

  it('refuses an instruction it cannot do honestly, with 503 unavailable', async () => {
    const app = await offline('landing', 'A landing page for a bike repair shop');
    const attempt = editApp({
      files: app.files,
      instruction: 'add a booking calendar',
      model: null,
      images: IMAGES,
    });
    await expect(attempt).rejects.toBeInstanceOf(ApiError);
    await expect(attempt).rejects.toMatchObject({ code: 'unavailable', status: 503 });
    await expect(attempt).rejects.toThrow(/^editing needs an AI engine/);
  });

  it('refuses to edit a code app without a model', async () => {
    const app = await offline('api', 'An API for notes');
    await expect(
      editApp({ files: app.files, instruction: 'add PATCH', model: null, images: IMAGES }),
    ).rejects.toMatchObject({
      code: 'unavailable',
    });
  });
});

describe('deterministicFixes', () => {
  const nodeApp: FileSet = {
    'package.json': pkg({ scripts: { start: 'node server.js' }, dependencies: { pg: '^8.0.0' } }),
    'server.js': "require('express');\n",
  };

  it('adds a missing Node dependency to package.json', () => {
    const result = deterministicFixes(
      nodeApp,
      ["Error: Cannot find module 'express'", 'Require stack:\n- /app/server.js'],
      IMAGES,
    )!;
    expect(result.fixes).toEqual(['added the missing dependency "express" to package.json']);
    expect(JSON.parse(result.files['package.json']!).dependencies).toEqual({
      express: 'latest',
      pg: '^8.0.0',
    });
    expect(result.files['server.js']).toBe(nodeApp['server.js']);
  });

  it('reads ESM ERR_MODULE_NOT_FOUND and scoped packages with subpaths', () => {
    const result = deterministicFixes(
      nodeApp,
      [
        "Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@fastify/static' imported from /app/index.js",
        "Error: Cannot find module 'lodash/fp'",
      ],
      IMAGES,
    )!;
    expect(Object.keys(JSON.parse(result.files['package.json']!).dependencies)).toEqual([
      '@fastify/static',
      'lodash',
      'pg',
    ]);
  });

  it('moves a dependency the production install skipped out of devDependencies', () => {
    const files = { 'package.json': pkg({ devDependencies: { dotenv: '^16.0.0' } }) };
    const result = deterministicFixes(files, ["Error: Cannot find module 'dotenv'"], IMAGES)!;
    const manifest = JSON.parse(result.files['package.json']!);
    expect(manifest.dependencies).toEqual({ dotenv: '^16.0.0' });
    expect(manifest.devDependencies).toEqual({});
  });

  it.each([
    ["Error: Cannot find module './routes'"],
    ["Error: Cannot find module '/app/dist/index.js'"],
    ["Error: Cannot find module 'node:fs'"],
    ["Error: Cannot find module 'fs'"],
    ["Error: Cannot find module 'pg'"],
  ])('adds nothing for %s', (line) => {
    expect(deterministicFixes(nodeApp, [line], IMAGES)).toBeNull();
  });

  it('adds a missing Python package to requirements.txt under its PyPI name', () => {
    const files = { 'app.py': 'import yaml\n', 'requirements.txt': 'flask==3.0.0' };
    const result = deterministicFixes(
      files,
      ['Traceback (most recent call last):', "ModuleNotFoundError: No module named 'yaml'"],
      IMAGES,
    )!;
    expect(result.files['requirements.txt']).toBe('flask==3.0.0\nPyYAML\n');
    expect(result.fixes).toEqual(['added the missing package "PyYAML" to requirements.txt']);
  });

  it('creates requirements.txt, and leaves local modules and listed packages alone', () => {
    const files = { 'app.py': 'import requests\nimport helpers\n', 'helpers.py': '' };
    const created = deterministicFixes(
      files,
      ["ModuleNotFoundError: No module named 'requests.adapters'"],
      IMAGES,
    )!;
    expect(created.files['requirements.txt']).toBe('requests\n');
    expect(deterministicFixes(files, ["ModuleNotFoundError: No module named 'helpers'"], IMAGES)).toBeNull();
    expect(
      deterministicFixes(
        { ...files, 'requirements.txt': 'Requests>=2\n' },
        ["No module named 'requests'"].map((l) => `ModuleNotFoundError: ${l}`),
        IMAGES,
      ),
    ).toBeNull();
  });

  it('sets a missing start script from main, else from a usual entry file', () => {
    const withMain = { 'package.json': pkg({ main: 'src/app.js' }), 'src/app.js': '' };
    const log = ['npm error Missing script: "start"'];
    const fromMain = deterministicFixes(withMain, log, IMAGES)!;
    expect(JSON.parse(fromMain.files['package.json']!).scripts).toEqual({ start: 'node src/app.js' });
    const fromEntry = deterministicFixes(
      { 'package.json': pkg({}), 'index.js': '' },
      ['deploy failed: no start command: set start_cmd in the build config, or …'],
      IMAGES,
    )!;
    expect(JSON.parse(fromEntry.files['package.json']!).scripts.start).toBe('node index.js');
    expect(fromEntry.fixes).toEqual(['added the start script "node index.js" to package.json']);
  });

  it('starts a TypeScript build output and a Python entry the runtime does not guess', () => {
    const ts = {
      'package.json': pkg({ scripts: { build: 'tsc' } }),
      'tsconfig.json': '{ "compilerOptions": { "outDir": "dist", "rootDir": "src" } }',
      'src/index.ts': '',
    };
    const built = deterministicFixes(ts, ['Missing script: "start"'], IMAGES)!;
    expect(JSON.parse(built.files['package.json']!).scripts.start).toBe('node dist/index.js');
    const py = { 'bot.py': 'if __name__ == "__main__":\n    main()\n' };
    expect(deterministicFixes(py, ['no start command'], IMAGES)!.files.Procfile).toBe(
      'web: python3 bot.py\n',
    );
  });

  it('makes a Node app listen on $PORT instead of a fixed port', () => {
    const files = {
      'package.json': pkg({ scripts: { start: 'node server.js' } }),
      'server.js':
        "const db = { port: 5432 };\napp.listen(3000, 'localhost', () => console.log('listening on 3000'));\n",
    };
    const result = deterministicFixes(
      files,
      ['listening on 3000', 'deploy failed: nothing listened on port 41234 within 60 s'],
      IMAGES,
    )!;
    expect(result.files['server.js']).toBe(
      "const db = { port: 5432 };\napp.listen(Number(process.env.PORT || 3000), '0.0.0.0', () => console.log('listening on 3000'));\n",
    );
    expect(result.fixes).toEqual(['server.js: listen on $PORT (on all interfaces) instead of a fixed port']);
  });

  it('makes a Python app read PORT on all interfaces, importing os when needed', () => {
    const files = {
      'app.py':
        '"""My app."""\nfrom flask import Flask\napp = Flask(__name__)\napp.run(host="127.0.0.1", port=5000)\n',
      'server.py': 'import http.server\nhttp.server.HTTPServer(("", 8000), Handler).serve_forever()\n',
    };
    const result = deterministicFixes(
      files,
      [' * Running on http://127.0.0.1:5000', 'nothing listened on port 40000 within 60 s'],
      IMAGES,
    )!;
    expect(result.files['app.py']).toBe(
      '"""My app."""\nimport os\nfrom flask import Flask\napp = Flask(__name__)\napp.run(host="0.0.0.0", port=int(os.environ.get("PORT", "5000")))\n',
    );
    expect(result.files['server.py']).toContain(
      'HTTPServer(("0.0.0.0", int(os.environ.get("PORT", "8000"))), Handler)',
    );
    expect(result.files['server.py']!.split('\n')[0]).toBe('import os');
  });

  it('rewrites fixed ports in a Procfile', () => {
    const result = deterministicFixes(
      { Procfile: 'web: uvicorn main:app --host 0.0.0.0 --port 8000\n', 'main.py': '' },
      ['nothing listened on port 40000 within 60 s'],
      IMAGES,
    )!;
    expect(result.files.Procfile).toBe('web: uvicorn main:app --host 0.0.0.0 --port $PORT\n');
  });

  it('returns null when the log shows none of its symptoms, or nothing can be changed', () => {
    expect(deterministicFixes(nodeApp, ['TypeError: x is not a function'], IMAGES)).toBeNull();
    expect(deterministicFixes(nodeApp, [], IMAGES)).toBeNull();
    const fine = {
      'server.js': 'server.listen(Number(process.env.PORT))\n',
      'package.json': pkg({ scripts: { start: 'node server.js' } }),
    };
    expect(deterministicFixes(fine, ['nothing listened on port 40000 within 60 s'], IMAGES)).toBeNull();
    expect(deterministicFixes(fine, ['Missing script: "start"'], IMAGES)).toBeNull();
  });
});

describe('Dockerfiles of generated apps', () => {
  const fromLines = (dockerfile: string) => dockerfile.split('\n').filter((l) => /^FROM\b/i.test(l));
  const cmdOf = (dockerfile: string) => dockerfile.split('\n').find((l) => l.startsWith('CMD '));

  it.each(GENERATORS.map((g) => [g]))(
    '%s is FROM the configured Python image and starts with python3',
    async (generator) => {
      const app = await offline(generator, 'A small app about books');
      const dockerfile = app.files.Dockerfile!;
      expect(fromLines(dockerfile)).toEqual([`FROM ${IMAGES.python}`]);
      expect(cmdOf(dockerfile)).toMatch(/^CMD \["(python3", "\w+\.py|sh", "-c", "exec python3 )/);
      // Nothing to install: the image builds without a network.
      expect(dockerfile).not.toMatch(/^RUN /m);
    },
  );

  it('a web app and a site EXPOSE their default port; a worker none (the platform sets PORT either way)', async () => {
    expect((await offline('web', 'A site about tea')).files.Dockerfile).toContain('EXPOSE 8000\n');
    const site = (await offline('landing', 'A landing page for tea')).files.Dockerfile!;
    expect(site).toContain('EXPOSE 8000\n');
    expect(site).toContain('COPY index.html styles.css ./\n');
    expect(cmdOf(site)).toBe('CMD ["sh", "-c", "exec python3 -m http.server \\"$PORT\\" --bind 0.0.0.0"]');
    expect((await offline('worker', 'A job that runs hourly')).files.Dockerfile).not.toContain('EXPOSE');
  });

  it('an app that keeps data is FROM the configured Node image and installs its one dependency', async () => {
    const app = await offline('api', 'An API that stores users and their reservations in a database');
    expect(app.files.Dockerfile).toBe(
      [
        `FROM ${IMAGES.node}`,
        'WORKDIR /app',
        'COPY package.json ./',
        'RUN npm install --omit=dev --no-audit --no-fund',
        'COPY . .',
        'ENV PORT=8000',
        'EXPOSE 8000',
        'CMD ["node", "server.js"]',
        '',
      ].join('\n'),
    );
  });

  it('a Node app without dependencies runs no npm', () => {
    expect(nodeDockerfile(IMAGES, 'index.js', { install: false })).toBe(
      `FROM ${IMAGES.node}\nWORKDIR /app\nCOPY . .\nENV PORT=8000\nEXPOSE 8000\nCMD ["node", "index.js"]\n`,
    );
  });
});

describe('the model’s prompt', () => {
  it.each(['web', 'api', 'messaging-bot', 'community-bot', 'worker'] as const)(
    '%s: names the configured images as the only FROM lines, $PORT and the CMD that starts the app',
    (generator) => {
      const prompt = codeSystemPrompt(generator, IMAGES);
      expect(prompt).toContain(
        'Every FROM line is exactly `FROM registry.test/base/node:7` for a Node app, or exactly `FROM registry.test/base/python:7` for a Python app',
      );
      expect(prompt).toContain('Its CMD starts the app');
      expect(prompt).toContain('the command is `python3`, never `python`');
      expect(prompt).toContain('The app still listens on the port in $PORT');
      const named = new Set([...prompt.matchAll(/`FROM ([^`\s]+)/g)].map((m) => m[1]));
      expect([...named]).toEqual([IMAGES.node, IMAGES.python]);
    },
  );
});

describe('deterministicFixes on the container runtime', () => {
  const failedAt = (step: string, error: string) => [
    'building the image from the source’s own Dockerfile',
    'Step 1/8 : FROM registry.test/base/node:7',
    ' ---> 28644908338a',
    `\u001b[0mStep 2/8 : ${step}`,
    `deploy failed: image build failed: ${error}`,
  ];

  it('reads the step lines of Docker’s and Podman’s builders', () => {
    expect(buildStepOf('Step 4/9 : RUN node prepare.js')).toBe('RUN node prepare.js');
    expect(buildStepOf('STEP 2/3: FROM python:3.12')).toBe('FROM python:3.12');
    expect(buildStepOf('\u001b[0mStep 3/4 : COPY . .')).toBe('COPY . .');
    expect(buildStepOf(' ---> Running in 805fb066e154')).toBeNull();
  });

  it('moves a FROM the engine could not pull to the configured image of its language, stages kept', () => {
    const files = {
      Dockerfile: [
        'FROM node:20-alpine AS build',
        'RUN npm ci',
        'FROM build AS checked',
        'FROM --platform=linux/amd64 docker.io/library/node:20-slim',
        'COPY --from=build /app /app',
        'CMD ["node", "server.js"]',
        '',
      ].join('\n'),
    };
    const result = deterministicFixes(
      files,
      failedAt(
        'FROM node:20-alpine AS build',
        'pull access denied for node, repository does not exist or may require docker login',
      ),
      IMAGES,
    )!;
    expect(result.files.Dockerfile).toBe(
      [
        'FROM registry.test/base/node:7 AS build',
        'RUN npm ci',
        'FROM build AS checked',
        'FROM registry.test/base/node:7',
        'COPY --from=build /app /app',
        'CMD ["node", "server.js"]',
        '',
      ].join('\n'),
    );
    expect(result.fixes).toEqual([
      'Dockerfile: FROM registry.test/base/node:7 instead of node:20-alpine, which the engine could not pull',
      'Dockerfile: FROM registry.test/base/node:7 instead of docker.io/library/node:20-slim, which the engine could not pull',
    ]);
    const python = deterministicFixes(
      { Dockerfile: 'FROM python:3.12-slim\nCMD ["python3", "app.py"]\n' },
      failedAt('FROM python:3.12-slim', 'Get "https://registry-1.docker.io/v2/": dial tcp: no such host'),
      IMAGES,
    )!;
    expect(python.files.Dockerfile).toBe('FROM registry.test/base/python:7\nCMD ["python3", "app.py"]\n');
  });

  it('leaves a FROM alone when the build failed elsewhere, or its image is of no language it knows', () => {
    const files = { Dockerfile: 'FROM nginx:alpine\nCOPY . /usr/share/nginx/html\n' };
    expect(deterministicFixes(files, failedAt('FROM nginx:alpine', 'pull access denied'), IMAGES)).toBeNull();
    const node = { Dockerfile: 'FROM node:20\nRUN npm test\n' };
    expect(
      deterministicFixes(node, failedAt('RUN npm test', 'returned a non-zero code: 1'), IMAGES),
    ).toBeNull();
    expect(
      deterministicFixes(node, ['Step 1/2 : FROM node:20', 'deploy failed: timeout'], IMAGES),
    ).toBeNull();
  });

  it('runs python3 where the image has no python, in the Dockerfile’s commands and the Procfile', () => {
    const files = {
      Dockerfile: [
        `FROM ${IMAGES.python}`,
        'ENV TOOL=python',
        'COPY python/ /app/python/',
        'RUN python -m compileall . && cd /app/python && /usr/bin/python -V',
        'CMD ["python", "app.py"]',
        '',
      ].join('\n'),
      Procfile: 'web: python app.py\n',
    };
    for (const symptom of [
      '[FATAL tini (7)] exec python failed: No such file or directory',
      '/bin/sh: 1: python: not found',
    ]) {
      const result = deterministicFixes(files, [symptom], IMAGES)!;
      expect(result.files.Dockerfile).toBe(
        [
          `FROM ${IMAGES.python}`,
          'ENV TOOL=python',
          'COPY python/ /app/python/',
          'RUN python3 -m compileall . && cd /app/python && /usr/bin/python3 -V',
          'CMD ["python3", "app.py"]',
          '',
        ].join('\n'),
      );
      expect(result.files.Procfile).toBe('web: python3 app.py\n');
    }
  });

  it('installs Python packages into a virtualenv when pip refuses the system Python, once', () => {
    const files = {
      Dockerfile: [
        `FROM ${IMAGES.python}`,
        'COPY . /app',
        'RUN cd /app && \\',
        '    pip install -r requirements.txt',
        'CMD ["python3", "/app/app.py"]',
        '',
      ].join('\n'),
    };
    const log = ['error: externally-managed-environment', '× This environment is externally managed'];
    const result = deterministicFixes(files, log, IMAGES)!;
    expect(result.files.Dockerfile).toBe(
      [
        `FROM ${IMAGES.python}`,
        'COPY . /app',
        'RUN python3 -m venv /opt/venv',
        'ENV PATH="/opt/venv/bin:$PATH"',
        'RUN cd /app && \\',
        '    pip install -r requirements.txt',
        'CMD ["python3", "/app/app.py"]',
        '',
      ].join('\n'),
    );
    expect(deterministicFixes(result.files, log, IMAGES)).toBeNull();
  });

  it('adds the CMD a Dockerfile lacks when the container exits at once', () => {
    const exited = ['deploy failed: the container exited before its app answered (port 3000 inside)'];
    const procfile = deterministicFixes(
      { Dockerfile: `FROM ${IMAGES.python}\nCOPY . .`, Procfile: 'web: python3 app.py --port $PORT\n' },
      exited,
      IMAGES,
    )!;
    expect(procfile.files.Dockerfile).toBe(
      `FROM ${IMAGES.python}\nCOPY . .\nCMD ["sh","-c","exec python3 app.py --port $PORT"]\n`,
    );
    const npm = deterministicFixes(
      { Dockerfile: `FROM ${IMAGES.node}\n`, 'package.json': pkg({ scripts: { start: 'node a.js' } }) },
      exited,
      IMAGES,
    )!;
    expect(npm.files.Dockerfile).toBe(`FROM ${IMAGES.node}\nCMD ["npm","start"]\n`);
    const withCmd = { Dockerfile: `FROM ${IMAGES.node}\nCMD ["node", "a.js"]\n`, 'a.js': '' };
    expect(deterministicFixes(withCmd, exited, IMAGES)).toBeNull();
  });

  it('makes an app listen on $PORT on all interfaces when nothing answered on its container port', () => {
    const result = deterministicFixes(
      { 'server.js': "app.listen(8080, '127.0.0.1');\n" },
      ['deploy failed: nothing answered HTTP on its port within 30 s (port 3000 inside, PORT is set to it)'],
      IMAGES,
    )!;
    expect(result.files['server.js']).toBe("app.listen(Number(process.env.PORT || 8080), '0.0.0.0');\n");
  });
});
