// Releases and rollback in the desktop UI (browser mode), clicked through as a user would against a
// real platform on the sandbox runtime: the Releases section lists each deploy (status, current, time,
// source), Roll back asks first and names the env vars that change, the project goes building →
// running on the old version, and the list follows; a refusal shows in the dialog in words. Screenshots
// at 1280×800 and 900×700.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { Project, Release } from '../../src/shared/api/projects.js';
import { type Files, archiveOf, gitRepo, viaEdge } from '../helpers/deploy.js';
import { platformApi, screenshot, useAppStack } from './stack.js';

let repos = '';
const ui = useAppStack({
  platformArgs: () => ['--runtime', 'sandbox'],
  setup: async () => {
    repos = mkdtempSync(join(tmpdir(), 'wharf-e2e-repos-'));
  },
  teardown: async () => {
    if (repos) rmSync(repos, { recursive: true, force: true });
  },
});

/** How long the first version takes to listen: long enough to see the rollback's `building`. */
const BOOT_MS = 2_000;

/** A Node app answering `<version> <path>`; after `bootMs` only. */
const appVersion = (version: string, bootMs = 0): Files => ({
  'package.json': JSON.stringify({ name: 'x', scripts: { start: 'node server.js' } }),
  'server.js': `
const http = require('node:http');
setTimeout(() => {
  const server = http.createServer((req, res) => res.end(${JSON.stringify(version)} + ' ' + req.url));
  server.listen(Number(process.env.PORT), () => console.log('${version} listening'));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}, ${bootMs});
`,
});

/** Sources whose build fails. */
const brokenBuild = (): Files => ({
  'package.json': JSON.stringify({
    name: 'x',
    scripts: { build: 'echo no && exit 3', start: 'node server.js' },
  }),
  'server.js': '',
});

async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const { status, body } = await platformApi<T>(ui.stack, path, init);
  expect(status, JSON.stringify(body)).toBeLessThan(300);
  return body;
}

async function settledProject(id: string): Promise<Project> {
  let project: Project | null = null;
  await expect
    .poll(
      async () => {
        project = (await api<{ project: Project }>(`/projects/${id}`)).project;
        return project.status;
      },
      { timeout: 30_000, interval: 200 },
    )
    .not.toBe('building');
  return project!;
}

/**
 * Puts `files` where the project deploys from (a new commit of its git repository, or a new upload),
 * sets the env vars and deploys; resolves once the deploy ended.
 */
async function deployVersion(project: Project, files: Files, env: Record<string, string>) {
  if (project.deploy_source === 'git') gitRepo(repos, project.subdomain, files);
  else {
    await api(`/projects/${project.id}/upload`, {
      method: 'POST',
      body: new Uint8Array(archiveOf(files)),
      headers: { 'content-type': 'application/gzip' },
    });
  }
  await api(`/projects/${project.id}`, { method: 'PUT', body: JSON.stringify({ env_vars: env }) });
  await api(`/projects/${project.id}/deploy`, { method: 'POST' });
  return settledProject(project.id);
}

async function openProject(page: Page, project: Project): Promise<void> {
  await page.getByTestId('nav-projects').click();
  await page
    .getByTestId(`project-row-${project.subdomain}`)
    .getByRole('link', { name: project.name, exact: true })
    .click();
  await page.getByTestId('project-detail').waitFor();
  await page.getByTestId('release-list').waitFor();
}

const badge = (page: Page) => page.getByTestId('project-detail').getByTestId('status-badge').first();
const row = (page: Page, release: Release) => page.getByTestId(`release-${release.id}`);

describe('the Releases section', () => {
  it('lists the releases and rolls back to the first one, which then serves with its env vars', async () => {
    const repoUrl = gitRepo(repos, 'rollback-demo', appVersion('v1', BOOT_MS));
    const project = await api<Project>('/projects', {
      method: 'POST',
      body: JSON.stringify({ name: 'Rollback Demo', subdomain: 'rollback-demo', repo_url: repoUrl }),
    });
    expect((await deployVersion(project, appVersion('v1', BOOT_MS), { GREETING: 'one' })).status).toBe(
      'running',
    );
    expect(
      (await deployVersion(project, appVersion('v2'), { GREETING: 'two', NEW_IN_V2: 'yes' })).status,
    ).toBe('running');
    const failed = await deployVersion(project, brokenBuild(), { GREETING: 'two', NEW_IN_V2: 'yes' });
    expect(failed.last_deploy_error).toMatch(/build failed/);
    const [v3, v2, v1] = await api<Release[]>(`/projects/${project.id}/releases`);

    const page = await ui.open();
    await openProject(page, project);
    const list = page.getByTestId('release-list');
    expect(await list.locator('> li').count()).toBe(3);

    // Newest first: the failed one with its error and no button, then the current one, then v1.
    expect(await row(page, v3!).getByTestId('release-status').innerText()).toBe('Failed');
    expect(await row(page, v3!).getByTestId('release-error').innerText()).toMatch(/^build failed: /);
    expect(await row(page, v3!).getByTestId('rollback-release').count()).toBe(0);
    expect(await row(page, v2!).getByTestId('release-status').innerText()).toBe('Running');
    expect(await row(page, v2!).getByTestId('release-current').innerText()).toBe('Current');
    expect(await row(page, v2!).getByTestId('rollback-release').count()).toBe(0);
    expect(await row(page, v1!).getByTestId('release-status').innerText()).toBe('Retired');
    expect(await row(page, v1!).getByTestId('release-current').count()).toBe(0);
    expect((await row(page, v1!).getByTestId('release-source').innerText()).split(/\s+/)).toEqual([
      'git',
      repoUrl,
      'main',
      v1!.commit!.slice(0, 7),
    ]);
    expect(await row(page, v1!).getByTestId('release-commit').getAttribute('title')).toBe(
      `Commit ${v1!.commit}`,
    );
    expect(await row(page, v1!).locator('time').innerText()).toBe('just now');
    expect(await page.getByTestId('release-current').count()).toBe(1);
    await screenshot(page, 'releases-list', { show: page.getByTestId('releases') });

    // The dialog names what changes, and Cancel changes nothing.
    await row(page, v1!).getByTestId('rollback-release').click();
    const dialog = page.getByTestId('rollback-dialog');
    await dialog.waitFor();
    expect(await dialog.innerText()).toContain(`Release ${v1!.id}`);
    expect(await dialog.getByTestId('rollback-env').innerText()).toMatch(
      /replace the project’s \(2 changes\):\s*GREETING changes\s*NEW_IN_V2 is removed/,
    );
    await screenshot(page, 'releases-confirm');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect(await badge(page).getAttribute('data-status')).toBe('running');

    // Roll back: building at once (v1 takes BOOT_MS to listen), the current version serving meanwhile.
    await row(page, v1!).getByTestId('rollback-release').click();
    await dialog.getByTestId('confirm-rollback').click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => badge(page).getAttribute('data-status')).toBe('building');
    expect(await page.getByTestId('deploy-status').innerText()).toContain(
      `Rolling Rollback Demo back to release ${v1!.id}`,
    );
    expect(await page.getByTestId('deploy-project').innerText()).toBe('Rolling back…');
    expect((await viaEdge(ui.stack.edgePort, 'rollback-demo.localhost', '/during')).body).toBe('v2 /during');
    await screenshot(page, 'releases-rolling-back', { show: page.getByTestId('deploy-status') });

    await expect.poll(() => badge(page).getAttribute('data-status'), { timeout: 30_000 }).toBe('running');
    // The list follows: v1 is current now and v2 can be brought back.
    await expect
      .poll(() => row(page, v1!).getByTestId('release-current').count(), { timeout: 10_000 })
      .toBe(1);
    expect(await row(page, v1!).getByTestId('release-status').innerText()).toBe('Running');
    expect(await row(page, v2!).getByTestId('release-status').innerText()).toBe('Retired');
    expect(await row(page, v2!).getByTestId('rollback-release').count()).toBe(1);
    expect(await page.getByTestId('deploy-error').count()).toBe(0);
    expect((await viaEdge(ui.stack.edgePort, 'rollback-demo.localhost', '/after')).body).toBe('v1 /after');
    const after = await api<{ project: Project }>(`/projects/${project.id}`);
    expect(after.project.env_vars).toEqual({ GREETING: 'one' });
    await screenshot(page, 'releases-rolled-back', { show: page.getByTestId('releases') });
  }, 120_000);

  it('shows the platform’s refusal in the dialog when the list was out of date', async () => {
    const project = await api<Project>('/projects', {
      method: 'POST',
      body: JSON.stringify({ name: 'Stale List', subdomain: 'stale-list', deploy_source: 'upload' }),
    });
    await deployVersion(project, appVersion('s1'), {});
    await deployVersion(project, appVersion('s2'), {});
    const [, s1] = await api<Release[]>(`/projects/${project.id}/releases`);
    expect(s1!.commit).toBeNull();

    const page = await ui.open({ viewport: { width: 900, height: 700 } });
    await openProject(page, project);
    await screenshot(page, 'releases-narrow', { show: page.getByTestId('releases') });
    expect(await row(page, s1!).getByTestId('release-source').innerText()).toMatch(
      /^Uploaded archive upl_[A-Za-z0-9]+$/,
    );
    await row(page, s1!).getByTestId('rollback-release').click();
    const dialog = page.getByTestId('rollback-dialog');
    await dialog.waitFor();
    expect(await dialog.getByTestId('rollback-env').innerText()).toBe(
      'The environment variables stay as they are.',
    );

    // Meanwhile, someone else rolls back to the same release.
    await api(`/projects/${project.id}/rollback`, {
      method: 'POST',
      body: JSON.stringify({ release_id: s1!.id }),
    });
    expect((await settledProject(project.id)).status).toBe('running');

    await dialog.getByTestId('confirm-rollback').click();
    const refused = dialog.getByTestId('rollback-error');
    await refused.waitFor();
    expect((await refused.innerText()).replace(/\s+/g, ' ')).toBe(
      `The rollback did not start Release ${s1!.id} is the one serving the project already`,
    );
    expect(await dialog.getByTestId('confirm-rollback').isEnabled()).toBe(true);
    await screenshot(page, 'releases-refused');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    // The list was loaded again: s1 is the current one.
    await expect.poll(() => row(page, s1!).getByTestId('release-current').count()).toBe(1);
  }, 90_000);
});
