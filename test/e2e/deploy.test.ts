// Deploys in the desktop UI (browser mode), clicked through as a user would: an upload project refused
// until it has an archive, the upload, Deploy, the status going building → running, the logs arriving
// live and their search, filters, pause and copy, the app answering at its URL through the edge, the
// toast; then a failing app (failed, its error and its logs) and a failing redeploy that keeps the
// previous version serving.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { Project } from '../../src/shared/api/projects.js';
import { tarball } from '../fixtures/tarball.js';
import { viaEdge } from '../helpers/deploy.js';
import { platformApi, screenshot, useAppStack } from './stack.js';

const ui = useAppStack();

// The browser globals used inside page.evaluate (test files are type-checked without the DOM library).
declare const document: { activeElement: { getAttribute(name: string): string | null } | null };
declare const navigator: { clipboard: { readText(): Promise<string> } };

const BOOT_MS = 2_500;

/** A Node app that logs while it boots, takes BOOT_MS to listen, and logs each request. */
const demoApp = () =>
  tarball([
    { path: 'package.json', content: JSON.stringify({ name: 'x', scripts: { start: 'node server.js' } }) },
    {
      path: 'server.js',
      content: `
const http = require('node:http');
console.log('booting the demo app');
console.log('loading configuration from the environment');
setTimeout(() => {
  const server = http.createServer((req, res) => {
    console.log(req.method + ' ' + req.url);
    res.end('hello from the demo app ' + req.url);
  });
  server.listen(Number(process.env.PORT), () => console.log('demo app listening on ' + process.env.PORT));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}, ${BOOT_MS});
`,
    },
  ]);

/** A Node app that cannot start. */
const brokenApp = () =>
  tarball([
    { path: 'package.json', content: JSON.stringify({ name: 'x', scripts: { start: 'node server.js' } }) },
    {
      path: 'server.js',
      content:
        "console.log('booting the broken app');\n" +
        "console.error('missing DATABASE_URL: set it in the environment variables');\n" +
        'process.exit(3);\n',
    },
  ]);

async function seedUploadProject(name: string, subdomain: string): Promise<Project> {
  const { status, body } = await platformApi<Project>(ui.stack, '/projects', {
    method: 'POST',
    body: JSON.stringify({ name, subdomain, deploy_source: 'upload' }),
  });
  expect(status).toBe(201);
  return body;
}

async function uploadThroughApi(project: Project, data: Buffer): Promise<void> {
  const { status } = await platformApi(ui.stack, `/projects/${project.id}/upload`, {
    method: 'POST',
    body: new Uint8Array(data),
    headers: { 'content-type': 'application/gzip' },
  });
  expect(status).toBe(200);
}

async function openProject(page: Page, project: Project): Promise<void> {
  await page.getByTestId('nav-projects').click();
  await page
    .getByTestId(`project-row-${project.subdomain}`)
    .getByRole('link', { name: project.name, exact: true })
    .click();
  await page.getByTestId('project-detail').waitFor();
  // The Logs panel follows once the page shows.
  await expect
    .poll(() => page.getByTestId('logs-state').getAttribute('data-state'), { timeout: 10_000 })
    .toBe('live');
}

const badge = (page: Page) => page.getByTestId('project-detail').getByTestId('status-badge').first();
const logTexts = (page: Page) => page.getByTestId('log-line').locator('.log-text').allInnerTexts();

/** Waits for running animations (a toast sliding in) to finish, for a clean screenshot. */
async function settle(page: Page): Promise<void> {
  await page
    .getByTestId('toast')
    .evaluateAll((toasts) =>
      Promise.all(
        toasts.flatMap((toast) =>
          toast.getAnimations().map((animation: { finished: Promise<unknown> }) => animation.finished),
        ),
      ),
    );
}

async function scrollState(page: Page) {
  return page.getByTestId('logs-lines').evaluate((element) => ({
    atBottom: element.scrollHeight - element.scrollTop - element.clientHeight <= 24,
    scrollTop: element.scrollTop,
    scrollable: element.scrollHeight > element.clientHeight,
  }));
}

describe('deploying from the project page', () => {
  it('uploads, deploys, follows the logs live and serves the app at its URL', async () => {
    const project = await seedUploadProject('Demo Shop', 'demo-shop');
    const page = await ui.open({
      viewport: { width: 1280, height: 900 },
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    await openProject(page, project);
    expect(await page.getByTestId('deploy-project').innerText()).toBe('Deploy');
    expect(await page.getByTestId('stop-project').isDisabled()).toBe(true);
    expect(await page.getByTestId('logs-empty').innerText()).toMatch(/No log lines yet/);

    // No archive yet: the platform refuses, and the page points to the upload control.
    await page.getByTestId('deploy-project').click();
    const refused = page.getByTestId('deploy-refused');
    await refused.waitFor();
    expect(await refused.innerText()).toMatch(/Upload an archive first[\s\S]*none was sent yet/);
    await page.getByTestId('go-to-upload').click();
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-testid')))
      .toBe('upload-input');

    await page
      .getByTestId('upload-input')
      .setInputFiles({ name: 'demo.tar.gz', mimeType: 'application/gzip', buffer: demoApp() });
    await page.getByTestId('upload-submit').click();
    await page.getByTestId('upload-result').waitFor();
    await refused.waitFor({ state: 'detached' });

    // Deploy: building at once, with a spinner, and the logs arriving while it builds.
    await page.getByTestId('deploy-project').click();
    await expect.poll(() => badge(page).getAttribute('data-status')).toBe('building');
    expect(await page.getByTestId('deploy-project').isDisabled()).toBe(true);
    expect(await page.getByTestId('deploy-project').innerText()).toBe('Deploying…');
    expect(await page.getByTestId('deploy-status').innerText()).toMatch(/Building and starting Demo Shop/);
    await expect.poll(() => logTexts(page), { timeout: 15_000 }).toContain('booting the demo app');
    // The app is still booting: this line came live, not after the fact.
    expect(await badge(page).getAttribute('data-status')).toBe('building');
    await screenshot(page, 'deploy-building');

    await expect.poll(() => badge(page).getAttribute('data-status'), { timeout: 30_000 }).toBe('running');
    await expect.poll(() => page.getByTestId('deploy-project').innerText()).toBe('Redeploy');
    expect(await page.getByTestId('stop-project').isEnabled()).toBe(true);
    await page.getByTestId('deploy-status').waitFor({ state: 'detached' });
    await expect
      .poll(() => logTexts(page), { timeout: 10_000 })
      .toContainEqual(expect.stringMatching(/^demo app listening on \d+$/));

    // On its own page the deploy's end is told by the page (no toast over its logs).
    const url = await page.getByTestId('project-url').getAttribute('href');
    expect(url).toBe(`http://demo-shop.localhost:${ui.stack.edgePort}`);
    expect(await page.getByTestId('deploy-phrase').innerText()).toMatch(/^deployed /);
    expect(await page.getByTestId('toast').count()).toBe(0);
    await screenshot(page, 'deploy-running');

    // The URL link leads to the app, through the edge.
    const target = new URL(url!);
    const answer = await viaEdge(ui.stack.edgePort, target.hostname, '/from-the-link');
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('hello from the demo app /from-the-link');
    await expect.poll(() => logTexts(page), { timeout: 10_000 }).toContain('GET /from-the-link');

    // npm's blank lines around its script are thin gaps, not rows as tall as a line of text.
    const heights = await page
      .getByTestId('log-line')
      .evaluateAll((lines) =>
        lines.map((l) => ({ blank: l.hasAttribute('data-blank'), height: l.getBoundingClientRect().height })),
      );
    const blankRows = heights.filter((row) => row.blank);
    expect(blankRows.length).toBeGreaterThan(0);
    const textHeight = Math.min(...heights.filter((row) => !row.blank).map((row) => row.height));
    for (const row of blankRows) expect(row.height).toBeLessThan(textHeight / 2);

    // Search keeps and highlights the matching lines.
    const all = (await logTexts(page)).length;
    await page.getByTestId('logs-search').fill('DEMO APP');
    await expect
      .poll(() => logTexts(page))
      .toEqual(['booting the demo app', expect.stringMatching(/^demo app listening on \d+$/)]);
    expect(await page.getByTestId('logs-lines').locator('mark').allInnerTexts()).toEqual([
      'demo app',
      'demo app',
    ]);
    expect(await page.getByTestId('logs-count').innerText()).toBe(`Showing 2 of ${all} lines`);
    await page.getByTestId('logs-search').fill('app');
    await screenshot(page, 'deploy-logs-search', { show: page.getByTestId('project-logs') });

    // Streams: only runtime lines once build and system are off.
    await page.getByTestId('logs-search').fill('');
    await page.getByTestId('logs-stream-build').click();
    await page.getByTestId('logs-stream-system').click();
    expect(await page.getByTestId('logs-stream-build').getAttribute('aria-pressed')).toBe('false');
    const streams = await page
      .getByTestId('log-line')
      .evaluateAll((lines) => [...new Set(lines.map((l) => l.getAttribute('data-stream')))]);
    expect(streams).toEqual(['runtime']);
    // A project without services has nothing to choose between.
    expect(await page.getByTestId('logs-service').locator('option').allInnerTexts()).toEqual([
      'All services',
    ]);
    expect(await page.getByTestId('logs-service').isDisabled()).toBe(true);
    await page.getByTestId('logs-stream-build').click();
    await page.getByTestId('logs-stream-system').click();
    await expect.poll(async () => (await logTexts(page)).length).toBe(all);

    // Pause holds new lines back and counts them; Resume shows them.
    await page.getByTestId('logs-pause').click();
    expect(await page.getByTestId('logs-state').getAttribute('data-state')).toBe('paused');
    for (const path of ['/paused-1', '/paused-2', '/paused-3']) {
      await viaEdge(ui.stack.edgePort, target.hostname, path);
    }
    await expect
      .poll(() => page.getByTestId('logs-held').innerText(), { timeout: 10_000 })
      .toMatch(/3 new lines/);
    expect(await logTexts(page)).not.toContain('GET /paused-1');
    await page.getByTestId('logs-pause').click();
    await page.getByTestId('logs-held').waitFor({ state: 'detached' });
    expect((await logTexts(page)).slice(-3)).toEqual(['GET /paused-1', 'GET /paused-2', 'GET /paused-3']);

    // Copy puts the lines shown on the clipboard, as `<time> <stream> <text>`.
    await page.getByTestId('logs-search').fill('GET /paused');
    await page.getByTestId('logs-copy').click();
    await expect.poll(() => page.getByTestId('logs-copy').innerText()).toBe('Copied');
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied.split('\n')).toEqual([
      expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+Z runtime GET \/paused-1$/),
      expect.stringMatching(/ runtime GET \/paused-2$/),
      expect.stringMatching(/ runtime GET \/paused-3$/),
    ]);
    await page.getByTestId('logs-search').fill('');

    // The view follows the newest line until the user scrolls up.
    for (let i = 0; i < 30; i++) await viaEdge(ui.stack.edgePort, target.hostname, `/burst-${i}`);
    await expect.poll(() => logTexts(page), { timeout: 10_000 }).toContain('GET /burst-29');
    const following = await scrollState(page);
    expect(following.scrollable).toBe(true);
    expect(following.atBottom).toBe(true);
    await page.getByTestId('logs-lines').evaluate((element) => element.scrollTo({ top: 0 }));
    await page.getByTestId('logs-jump').waitFor();
    await viaEdge(ui.stack.edgePort, target.hostname, '/while-reading');
    await expect.poll(() => logTexts(page), { timeout: 10_000 }).toContain('GET /while-reading');
    expect((await scrollState(page)).scrollTop).toBe(0);
    await page.getByTestId('logs-jump').click();
    await expect.poll(async () => (await scrollState(page)).atBottom).toBe(true);

    await screenshot(page, 'deploy-logs', { show: page.getByTestId('project-logs') });

    // Stop.
    await page.getByTestId('stop-project').click();
    await expect.poll(() => badge(page).getAttribute('data-status'), { timeout: 15_000 }).toBe('stopped');
    expect(await page.getByTestId('deploy-project').innerText()).toBe('Redeploy');
    const { body } = await platformApi<{ project: Project }>(ui.stack, `/projects/${project.id}`);
    expect(body.project.status).toBe('stopped');
  });

  it('shows a failed deploy with its error and logs, and a failed redeploy that keeps serving', async () => {
    const project = await seedUploadProject('Broken Shop', 'broken-shop');
    await uploadThroughApi(project, brokenApp());
    const page = await ui.open({ viewport: { width: 1280, height: 900 } });
    await openProject(page, project);

    await page.getByTestId('deploy-project').click();
    // Elsewhere in the app, the deploy's end comes as a toast, with a way to its logs.
    await page.getByTestId('nav-projects').click();
    const toast = page.getByTestId('toast');
    await toast.waitFor({ timeout: 30_000 });
    const { body } = await platformApi<{ project: Project }>(ui.stack, `/projects/${project.id}`);
    const error = body.project.last_deploy_error;
    expect(error).toBeTruthy();
    expect(await toast.innerText()).toContain(`Broken Shop failed to deploy: ${error}`);
    expect(await toast.getAttribute('data-tone')).toBe('error');
    await settle(page);
    await screenshot(page, 'deploy-failed-toast');
    await toast.getByRole('link', { name: 'Show logs' }).click();
    await page.getByTestId('project-detail').waitFor();
    await toast.waitFor({ state: 'detached' });
    expect(await badge(page).getAttribute('data-status')).toBe('failed');
    const banner = page.getByTestId('deploy-error');
    await banner.waitFor();
    expect(await banner.innerText()).toContain('The last deploy failed');
    expect(await banner.innerText()).toContain(error!);
    expect(await banner.getAttribute('class')).toContain('notice-error');
    await expect
      .poll(() => logTexts(page), { timeout: 10_000 })
      .toContain('missing DATABASE_URL: set it in the environment variables');
    expect(await page.getByTestId('deploy-project').innerText()).toBe('Redeploy');
    // Never "deployed …" for a deploy that failed.
    expect(await page.getByTestId('deploy-phrase').innerText()).toMatch(/^deploy of .+ failed$/);
    await screenshot(page, 'deploy-failed');

    // A good version runs; the banner goes.
    await uploadThroughApi(project, demoApp());
    await page.getByTestId('deploy-project').click();
    await expect.poll(() => badge(page).getAttribute('data-status'), { timeout: 30_000 }).toBe('running');
    await banner.waitFor({ state: 'detached' });

    // A broken redeploy: the previous version keeps serving, and the banner says so.
    await uploadThroughApi(project, brokenApp());
    await page.getByTestId('deploy-project').click();
    await expect.poll(() => page.getByTestId('deploy-error').count(), { timeout: 30_000 }).toBe(1);
    expect(await badge(page).getAttribute('data-status')).toBe('running');
    expect(await banner.innerText()).toMatch(/previous version is still running/);
    expect(await banner.getAttribute('class')).toContain('notice-warning');
    const answer = await viaEdge(ui.stack.edgePort, 'broken-shop.localhost', '/still');
    expect(answer.body).toBe('hello from the demo app /still');
    await expect
      .poll(() => page.getByTestId('deploy-phrase').innerText(), { timeout: 15_000 })
      .toMatch(/^deploy of .+ failed; the previous version serves$/);
    expect(await page.getByTestId('toast').count()).toBe(0);
    await screenshot(page, 'deploy-redeploy-failed');
    // The list says it too, under the Running badge, not plain "Running".
    await page.getByTestId('nav-projects').click();
    const row = page.getByTestId('project-row-broken-shop');
    await row.getByTestId('redeploy-failed').waitFor({ timeout: 10_000 });
    expect(await row.getByTestId('redeploy-failed').innerText()).toContain('last deploy failed');
    expect(await row.getByTestId('redeploy-failed').getAttribute('title')).toMatch(
      /previous version keeps serving/,
    );
    await settle(page);
    await screenshot(page, 'projects-redeploy-failed');
  });

  it('filters the logs of a project with services by service, and links each service', async () => {
    const server = (name: string) =>
      `require('node:http').createServer((q, s) => s.end('${name} says hi ' + q.url))` +
      `.listen(Number(process.env.PORT), () => console.log('${name} listening'));\n`;
    const { status, body: project } = await platformApi<Project>(ui.stack, '/projects', {
      method: 'POST',
      body: JSON.stringify({
        name: 'Duo',
        subdomain: 'duo',
        deploy_source: 'upload',
        build_config: {
          services: [
            { name: 'web', root_dir: 'web', start_cmd: 'node server.js' },
            { name: 'api', root_dir: 'api', start_cmd: 'node server.js' },
          ],
        },
      }),
    });
    expect(status).toBe(201);
    await uploadThroughApi(
      project,
      tarball([
        { path: 'web/server.js', content: server('web') },
        { path: 'api/server.js', content: server('api') },
      ]),
    );
    const page = await ui.open({ viewport: { width: 1280, height: 900 } });
    await openProject(page, project);
    await page.getByTestId('deploy-project').click();
    await expect.poll(() => badge(page).getAttribute('data-status'), { timeout: 30_000 }).toBe('running');
    await expect
      .poll(() => logTexts(page), { timeout: 10_000 })
      .toEqual(expect.arrayContaining(['web listening', 'api listening']));

    const service = page.getByTestId('logs-service');
    expect(await service.isEnabled()).toBe(true);
    expect(await service.locator('option').allInnerTexts()).toEqual([
      'All services',
      'api',
      'web',
      'Project-wide',
    ]);
    await service.selectOption('api');
    const apiLines = await page
      .getByTestId('log-line')
      .evaluateAll((lines) => lines.map((l) => l.querySelector('.log-stream')?.textContent ?? ''));
    expect(apiLines.length).toBeGreaterThan(0);
    expect(new Set(apiLines.map((source) => source.split(':')[1]))).toEqual(new Set(['api']));
    expect(await logTexts(page)).toContain('api listening');
    expect(await logTexts(page)).not.toContain('web listening');
    await service.selectOption({ label: 'Project-wide' });
    const projectWide = await page
      .getByTestId('log-line')
      .evaluateAll((lines) => lines.map((l) => l.querySelector('.log-stream')?.textContent ?? ''));
    expect(projectWide.length).toBeGreaterThan(0);
    expect(projectWide.every((source) => !source.includes(':'))).toBe(true);

    // Each service's URL is a link that leads to that service through the edge.
    const apiUrl = await page.getByTestId('service-url-api').getAttribute('href');
    expect(apiUrl).toBe(`http://duo-api.localhost:${ui.stack.edgePort}`);
    const answer = await viaEdge(ui.stack.edgePort, new URL(apiUrl!).hostname, '/ping');
    expect(answer.body).toBe('api says hi /ping');
    await screenshot(page, 'deploy-services', { show: page.getByTestId('project-logs') });
  });
});
