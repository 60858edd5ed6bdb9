// Every screen at the three window sizes (1280×800, 900×700, 800×600), light and dark, against a
// platform seeded through its API as a user's would be: two projects (one deployed twice, with env vars
// and a build configuration, so it has logs and releases), a domain, a tunnel with some traffic, email
// checks (one address and a short list). On each screen and size: the page title starts where it does
// on Projects, nothing makes the window scroll sideways, and no button's label is cut or wrapped.
// Screenshots: test-results/screens-<screen>-<w>x<h>-<light|dark>.png.
import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { Project } from '../../src/shared/api/projects.js';
import { type Files, archiveOf, viaEdge } from '../helpers/deploy.js';
import { type LocalApp, startLocalApp } from '../helpers/local-app.js';
import { useMailWorld } from '../helpers/mail.js';
import { platformApi, screenshot, useAppStack } from './stack.js';

// The browser globals used inside page.evaluate (test files are type-checked without the DOM library).
interface Measured {
  className: string;
  textContent: string | null;
  scrollWidth: number;
  clientWidth: number;
  clientHeight: number;
  getClientRects(): { length: number };
}
declare const document: {
  documentElement: { scrollWidth: number };
  querySelector(selector: string): Measured | null;
  querySelectorAll(selector: string): Iterable<Measured>;
};
declare const innerWidth: number;

const SIZES = [
  { width: 1280, height: 800 },
  { width: 900, height: 700 },
  { width: 800, height: 600 },
] as const;
const SCHEMES = ['light', 'dark'] as const;
type Size = (typeof SIZES)[number];

let app: LocalApp | undefined;
let appPort = 0;

const mail = useMailWorld({ accepts: (address) => address.toLowerCase().startsWith('ada@') });

const ui = useAppStack({
  platformArgs: mail.platformArgs,
  setup: async () => {
    // The local app the tunnel exposes.
    app = await startLocalApp((req, res) => {
      res.setHeader('Content-Type', 'application/json');
      res.statusCode = req.url === '/api/missing' ? 404 : 200;
      res.end(JSON.stringify({ path: req.url, ok: res.statusCode === 200 }));
    });
    appPort = app.port;
  },
  teardown: async () => await app?.close(),
});

async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const { status, body } = await platformApi<T>(ui.stack, path, init);
  expect(status, `${path}: ${JSON.stringify(body)}`).toBeLessThan(300);
  return body;
}

const nodeVersion = (version: string): Files => ({
  'package.json': JSON.stringify({ name: 'shop', scripts: { start: 'node server.js' } }),
  'server.js': `
const http = require('node:http');
const server = http.createServer((req, res) => res.end(${JSON.stringify(version)}));
server.listen(Number(process.env.PORT), () => console.log('shop ${version} listening on ' + process.env.PORT));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`,
});

async function deployVersion(project: Project, version: string, env: Record<string, string>): Promise<void> {
  await api(`/projects/${project.id}/upload`, {
    method: 'POST',
    body: new Uint8Array(archiveOf(nodeVersion(version))),
    headers: { 'content-type': 'application/gzip' },
  });
  await api(`/projects/${project.id}`, { method: 'PUT', body: JSON.stringify({ env_vars: env }) });
  await api(`/projects/${project.id}/deploy`, { method: 'POST' });
  await expect
    .poll(async () => (await api<{ project: Project }>(`/projects/${project.id}`)).project.status, {
      timeout: 30_000,
      interval: 200,
    })
    .toBe('running');
}

/** What a screen looks like at one size; what is wrong with it, in words. */
async function problemsOn(page: Page, screen: string, size: Size, reference: Box | undefined) {
  const problems: string[] = [];
  const title = await page.locator('.page-title').first().boundingBox();
  if (!title) problems.push(`${screen}: no page title`);
  else if (reference && (Math.abs(title.x - reference.x) > 1 || Math.abs(title.y - reference.y) > 1)) {
    problems.push(
      `${screen}: title at ${Math.round(title.x)},${Math.round(title.y)}, on Projects at ${Math.round(reference.x)},${Math.round(reference.y)}`,
    );
  }
  const measured = await page.evaluate(() => {
    const content = document.querySelector('#content')!;
    const cut: string[] = [];
    for (const el of document.querySelectorAll('.btn, .nav-link, .tab, .badge, .tag')) {
      if (el.getClientRects().length === 0) continue;
      const label = (el.textContent ?? '').trim().replace(/\s+/g, ' ');
      if (el.scrollWidth > el.clientWidth + 1) cut.push(`"${label}" is cut`);
      // A one-line control taller than two lines of its text has wrapped.
      else if (el.className.includes('btn') && el.clientHeight > 44) cut.push(`"${label}" wraps`);
    }
    return {
      window: document.documentElement.scrollWidth - innerWidth,
      content: content.scrollWidth - content.clientWidth,
      cut,
    };
  });
  if (measured.window > 0) problems.push(`${screen}: the window scrolls sideways by ${measured.window}px`);
  if (measured.content > 0) problems.push(`${screen}: the content scrolls sideways by ${measured.content}px`);
  for (const cut of measured.cut) problems.push(`${screen} at ${size.width}×${size.height}: ${cut}`);
  return problems;
}

interface Box {
  x: number;
  y: number;
}

async function go(page: Page, nav: string, title: string | RegExp): Promise<void> {
  await page.getByTestId(`nav-${nav}`).click();
  await page.getByRole('heading', { level: 1, name: title }).waitFor();
}

/** One screen: checked at the top, then captured as a whole or at each of the parts named. */
async function capture(
  page: Page,
  name: string,
  size: Size,
  scheme: string,
  reference: Box | undefined,
  parts: Record<string, Locator> = {},
): Promise<string[]> {
  // Settle: no hover, no focus ring from the click that led here.
  await page.mouse.move(1, 1);
  const problems = await problemsOn(page, name, size, reference);
  const suffix = `${size.width}x${size.height}-${scheme}`;
  await screenshot(page, `screens-${name}-${suffix}`);
  for (const [part, show] of Object.entries(parts)) {
    await screenshot(page, `screens-${name}-${part}-${suffix}`, { show });
    problems.push(...(await problemsOn(page, `${name} (${part})`, size, undefined)));
  }
  return problems;
}

async function titleBox(page: Page): Promise<Box> {
  const box = await page.locator('.page-title').first().boundingBox();
  expect(box).not.toBeNull();
  return { x: box!.x, y: box!.y };
}

/** Where Projects puts its title, per size (the other screens are measured against it). */
const reference = new Map<string, Box>();
const key = (size: Size) => `${size.width}x${size.height}`;

describe('every screen at 1280×800, 900×700 and 800×600, light and dark', () => {
  it('shows Projects empty with the same frame', async () => {
    const problems: string[] = [];
    for (const size of SIZES) {
      for (const scheme of SCHEMES) {
        const page = await ui.open({ viewport: size, colorScheme: scheme });
        await page.getByTestId('projects-empty').waitFor();
        if (!reference.has(key(size))) reference.set(key(size), await titleBox(page));
        problems.push(...(await capture(page, 'projects-empty', size, scheme, reference.get(key(size)))));
        await page.context().close();
      }
    }
    expect(problems).toEqual([]);
  }, 60_000);

  it('lines every screen up with Projects and keeps it within the window', async () => {
    // Seed: a deployed project with two releases, env vars and a build configuration; one not deployed.
    const shop = await api<Project>('/projects', {
      method: 'POST',
      body: JSON.stringify({ name: 'Shop front', subdomain: 'shop', deploy_source: 'upload' }),
    });
    await api(`/projects/${shop.id}/build-config`, {
      method: 'PUT',
      body: JSON.stringify({ install_cmd: 'echo nothing to install', start_cmd: 'node server.js' }),
    });
    await deployVersion(shop, 'v1', { GREETING: 'hello' });
    await deployVersion(shop, 'v2', {
      GREETING: 'hello again',
      DATABASE_URL: 'postgres://shop:secret@db.internal:5432/shop',
      STRIPE_PUBLISHABLE_KEY: 'pk_test_51HxYzExampleKeyThatIsRatherLong',
    });
    await api('/projects', {
      method: 'POST',
      body: JSON.stringify({ name: 'Marketing blog', subdomain: 'blog', image: 'nginx:1.27' }),
    });
    await api('/domains', {
      method: 'POST',
      body: JSON.stringify({ domain: 'shop.example.test', project_id: shop.id }),
    });

    const problems: string[] = [];
    let tunnelStarted = false;
    for (const size of SIZES) {
      for (const scheme of SCHEMES) {
        const at = reference.get(key(size));
        const shot = (page: Page, name: string, parts?: Record<string, Locator>) =>
          capture(page, name, size, scheme, at, parts).then((found) => problems.push(...found));
        const page = await ui.open({ viewport: size, colorScheme: scheme });

        await page.getByTestId('project-row-shop').waitFor();
        await page.getByTestId('project-row-blog').waitFor();
        await shot(page, 'projects');

        await page.getByTestId('new-project').click();
        await page.getByRole('heading', { level: 1, name: 'New project' }).waitFor();
        await shot(page, 'new-project');

        await go(page, 'projects', 'Projects');
        await page
          .getByTestId('project-row-shop')
          .getByRole('link', { name: 'Shop front', exact: true })
          .click();
        await page.getByTestId('project-detail').waitFor();
        await expect.poll(() => page.getByTestId('log-line').count(), { timeout: 15_000 }).toBeGreaterThan(0);
        await expect.poll(() => page.getByTestId('release-list').locator('li').count()).toBe(2);
        await shot(page, 'project', {
          releases: page.getByTestId('releases'),
          env: page.getByTestId('env-vars'),
          build: page.getByTestId('build-config'),
          end: page.locator('.page > :last-child'),
        });

        await go(page, 'build', 'Build with AI');
        await shot(page, 'build');

        await go(page, 'agent', 'Agent');
        await shot(page, 'agent');

        await go(page, 'traffic', 'Traffic');
        if (!tunnelStarted) {
          if ((await page.getByTestId('tunnel-form').count()) === 0)
            await page.getByTestId('tunnel-new').click();
          await page.getByTestId('tunnel-port').fill(String(appPort));
          await page.getByTestId('tunnel-subdomain').fill('shop');
          await page.getByTestId('tunnel-start').click();
          const chip = page.locator('[data-testid="tunnel-row"][data-subdomain="shop"]');
          await expect.poll(() => chip.getAttribute('data-state'), { timeout: 15_000 }).toBe('online');
          for (const path of ['/', '/api/orders?page=2', '/api/missing', '/checkout'])
            await viaEdge(ui.stack.edgePort, 'shop.tunnel.localhost', path);
          tunnelStarted = true;
        }
        await expect.poll(() => page.getByTestId('traffic-row').count(), { timeout: 10_000 }).toBe(4);
        await shot(page, 'traffic');

        await go(page, 'domains', 'Domains');
        await page.getByText('shop.example.test').first().waitFor();
        await shot(page, 'domains');

        await go(page, 'email', 'Email verification');
        await page.getByTestId('email-summary').waitFor();
        await page.getByLabel('Email address').fill('ada@example.test');
        await page
          .getByTestId('single-check')
          .getByRole('checkbox', { name: /SMTP probe/ })
          .setChecked(true);
        await page.getByRole('button', { name: 'Check', exact: true }).click();
        await page.getByTestId('email-result').waitFor({ timeout: 20_000 });
        await shot(page, 'email');
        const list = ['ada@example.test', 'grace@example.test', 'info@example.test', 'not-an-address'];
        await page.getByLabel('Addresses').fill(list.join('\n'));
        await page.getByRole('button', { name: `Check ${list.length} addresses` }).click();
        await expect
          .poll(() => page.getByTestId('batch-progress').getAttribute('data-phase'), { timeout: 20_000 })
          .toBe('done');
        await page.getByTestId('batch-check').scrollIntoViewIfNeeded();
        await capture(page, 'email-batch', size, scheme, undefined, {
          results: page.getByTestId('batch-results'),
        }).then((found) => problems.push(...found));

        await go(page, 'settings', 'Settings');
        await page.getByTestId('account-balance').waitFor();
        await shot(page, 'settings', {
          account: page.getByTestId('account'),
          'ai-key': page.getByTestId('ai-key-card'),
          end: page.locator('.page > :last-child'),
        });

        await page.context().close();
      }
    }
    expect(problems).toEqual([]);
  }, 150_000);
});
