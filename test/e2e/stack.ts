// What the end-to-end tests run against, as a user would: `wharf platform` and `wharf app` as child
// processes on loopback (the app reusing that platform as its local one), and Debian's Chromium
// driven by playwright-core. The platform can be stopped and started again to test offline spells.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContextOptions, type Locator, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { freePort } from '../../src/server/runtime/process.js';

const root = join(import.meta.dirname, '..', '..');
const bin = join(root, 'bin', 'wharf.js');
export const resultsDir = join(root, 'test-results');

const CHROMIUM_CANDIDATES = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
  '/usr/bin/google-chrome-stable',
];

export function findChromium(): string {
  const candidates = process.env.CHROMIUM_PATH ? [process.env.CHROMIUM_PATH] : CHROMIUM_CANDIDATES;
  const found = candidates.find((path) => existsSync(path));
  if (!found) {
    throw new Error(
      `no Chromium found (looked at ${candidates.join(', ')}): install it with \`apt-get install -y chromium\` or set CHROMIUM_PATH`,
    );
  }
  return found;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: findChromium(),
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

interface Child {
  process: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function startChild(
  args: string[],
  ready: RegExp,
  env: Record<string, string> = {},
): Promise<Child & { match: RegExpExecArray }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let output = '';
    const exited = new Promise<number | null>((done) => child.on('close', done));
    const timer = setTimeout(() => reject(new Error(`wharf ${args[0]} did not start:\n${output}`)), 20_000);
    const onData = (data: Buffer) => {
      output += data.toString();
      const match = ready.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ process: child, output: () => output, exited, match });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`wharf ${args[0]} exited with ${code}:\n${output}`));
    });
  });
}

async function stopChild(child: Child | null): Promise<void> {
  if (!child || child.process.exitCode !== null) return;
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), 5_000);
  await child.exited;
  clearTimeout(timer);
}

export interface Stack {
  home: string;
  platformPort: number;
  pageUrl: string;
  /** `http://127.0.0.1:<port>/api/v1` of the platform. */
  api: string;
  /** The app edge's port, as the platform printed it (a new one each time it starts). */
  readonly edgePort: number;
  /** The local account's API key (`<home>/platform/local-account.json`), for direct API calls. */
  apiKey: string;
  stopPlatform(): Promise<void>;
  startPlatform(): Promise<void>;
  close(): Promise<void>;
}

export interface StackOptions {
  /**
   * More arguments for `wharf platform`, e.g. `--dns-server 127.0.0.1:5353`, `--smtp-port 2525` and
   * `--smtp-allow-private` to aim domain and email checks at local fakes. Kept on restarts.
   */
  platformArgs?: string[];
  /** More environment for `wharf platform`, e.g. `WHARF_AI_KEY` for the included AI engine. Kept on restarts. */
  platformEnv?: Record<string, string>;
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const home = mkdtempSync(join(tmpdir(), 'wharf-e2e-'));
  mkdirSync(join(home, 'platform'), { recursive: true });
  const platformPort = await freePort();
  let platform: Child | null = null;
  let edgePort = 0;
  const startPlatform = async () => {
    platform = await startChild(
      [
        'platform',
        '--data-dir',
        join(home, 'platform'),
        '--port',
        String(platformPort),
        '--edge-port',
        '0',
        // Host processes in a sandbox unless a test asks otherwise: `auto` would pick containers
        // wherever an engine answers, and the screens do not depend on the runtime.
        ...(options.platformArgs?.includes('--runtime') || options.platformEnv?.WHARF_RUNTIME
          ? []
          : ['--runtime', 'sandbox']),
        ...(options.platformArgs ?? []),
      ],
      /Press Ctrl\+C/,
      options.platformEnv,
    );
    edgePort = Number(/Apps +http:\/\/\S+:(\d+)/.exec(platform.output())?.[1] ?? 0);
  };
  await startPlatform();
  const app = await startChild(
    ['app', '--port', '0', '--data-dir', home],
    /Wharf app: (http:\/\/127\.0\.0\.1:\d+\/#token=\S+)[\s\S]*Ctrl\+C/,
    {
      WHARF_PORT: String(platformPort),
    },
  );
  if (!/already running/.test(app.output())) {
    throw new Error(`wharf app did not reuse the running platform:\n${app.output()}`);
  }
  return {
    home,
    platformPort,
    pageUrl: app.match[1]!,
    api: `http://127.0.0.1:${platformPort}/api/v1`,
    get edgePort() {
      return edgePort;
    },
    apiKey: (
      JSON.parse(readFileSync(join(home, 'platform', 'local-account.json'), 'utf8')) as { api_key: string }
    ).api_key,
    stopPlatform: async () => {
      await stopChild(platform);
      platform = null;
    },
    startPlatform,
    async close() {
      await stopChild(app);
      await stopChild(platform);
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/**
 * Writes `test-results/<name>.png`. The app scrolls inside its content pane, which a full-page capture
 * does not unroll: `show` scrolls that element into view first.
 */
export async function screenshot(page: Page, name: string, options: { show?: Locator } = {}): Promise<void> {
  mkdirSync(resultsDir, { recursive: true });
  await options.show?.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(resultsDir, `${name}.png`), fullPage: true });
}

/** Calls the platform's API directly as the local account; the JSON body with the status. */
export async function platformApi<T = unknown>(
  stack: Pick<Stack, 'api' | 'apiKey'>,
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; body: T }> {
  const headers = new Headers(init.headers);
  headers.set('x-api-key', stack.apiKey);
  if (typeof init.body === 'string') headers.set('content-type', 'application/json');
  const response = await fetch(`${stack.api}${path}`, { ...init, headers });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as T };
}

/** A fresh browser context with the app opened from its printed URL, once its frame is shown. */
export async function openApp(
  browser: Browser,
  stack: Pick<Stack, 'pageUrl'>,
  options: BrowserContextOptions = {},
): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
  // Shorter than a test's own limit, so a missing element is named in the failure.
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  await page.goto(stack.pageUrl);
  await page.getByTestId('nav-projects').waitFor();
  return page;
}

/** The error text shown next to an input (the element its aria-describedby names `…-error`). */
export async function errorNextTo(input: Locator): Promise<string> {
  const describedBy = (await input.getAttribute('aria-describedby')) ?? '';
  const errorId = describedBy.split(/\s+/).find((id) => id.endsWith('-error'));
  if (!errorId) return '';
  return input.page().locator(`[id="${errorId}"]`).innerText();
}

export interface AppHarness {
  /** The running stack (set once beforeAll has run). */
  readonly stack: Stack;
  /** The app in a fresh browser context, closed after the test. */
  open(options?: BrowserContextOptions): Promise<Page>;
  /** A blank page in a fresh context, closed after the test. */
  blankPage(): Promise<Page>;
}

/**
 * The hooks every UI test file needs: one stack and one browser for the file (with the file's own
 * setup and teardown around them), a fresh page per test.
 */
export function useAppStack(
  hooks: {
    setup?: (stack: Stack) => Promise<void>;
    teardown?: () => Promise<void>;
    /** Arguments for `wharf platform`, asked for when the stack starts (after earlier beforeAll hooks). */
    platformArgs?: () => string[];
    /** Environment for `wharf platform`, asked for at the same time. */
    platformEnv?: () => Record<string, string>;
  } = {},
): AppHarness {
  let stack: Stack | undefined;
  let browser: Browser | undefined;
  let page: Page | undefined;
  const started = () => {
    if (!stack || !browser) throw new Error('the stack is not started: use the harness inside tests');
    return { stack, browser };
  };
  beforeAll(async () => {
    stack = await startStack({
      ...(hooks.platformArgs ? { platformArgs: hooks.platformArgs() } : {}),
      ...(hooks.platformEnv ? { platformEnv: hooks.platformEnv() } : {}),
    });
    browser = await launchBrowser();
    await hooks.setup?.(stack);
  }, 45_000);
  afterAll(async () => {
    await browser?.close();
    await hooks.teardown?.();
    await stack?.close();
  });
  afterEach(async () => {
    await page?.context().close();
    page = undefined;
  });
  return {
    get stack() {
      return started().stack;
    },
    async open(options) {
      const running = started();
      page = await openApp(running.browser, running.stack, options);
      return page;
    },
    async blankPage() {
      const context = await started().browser.newContext({ viewport: { width: 1280, height: 800 } });
      context.setDefaultTimeout(10_000);
      page = await context.newPage();
      return page;
    },
  };
}
