// Offline spells: when the platform stops, the UI says so and keeps showing the projects it last saw
// (from the Engine's Mirror, so a reload shows them too); when it is back, the banner goes away.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { Project } from '../../src/shared/api/projects.js';
import { freePort } from '../../src/server/runtime/process.js';
import { platformApi, screenshot, useAppStack } from './stack.js';

const projects: Project[] = [];
const ui = useAppStack({
  setup: async (stack) => {
    for (const request of [
      { name: 'Cached Shop', subdomain: 'cached-shop', image: 'nginx:1.27' },
      { name: 'Cached Blog', subdomain: 'cached-blog', repo_url: 'https://github.com/example/blog.git' },
    ]) {
      const { status, body } = await platformApi<Project>(stack, '/projects', {
        method: 'POST',
        body: JSON.stringify(request),
      });
      expect(status).toBe(201);
      projects.push(body);
    }
  },
});

async function expectProjectsListed(app: Page): Promise<void> {
  for (const project of projects) {
    const row = app.getByTestId(`project-row-${project.subdomain}`);
    await row.waitFor();
    expect(await row.innerText()).toContain(project.name);
  }
}

describe('offline', () => {
  it('keeps showing the cached projects while the platform is down, even after a reload', async () => {
    const app = await ui.open();
    await expectProjectsListed(app);
    await expect
      .poll(() => app.getByTestId('platform-indicator').getAttribute('data-state'), { timeout: 10_000 })
      .toBe('online');
    expect(await app.getByTestId('offline-banner').count()).toBe(0);

    await ui.stack.stopPlatform();
    try {
      const banner = app.getByTestId('offline-banner');
      await banner.waitFor({ timeout: 10_000 });
      expect(await banner.innerText()).toMatch(
        /Offline — showing projects cached (just now|\d+ min ago) \(at /,
      );
      expect(await app.getByTestId('platform-indicator').getAttribute('data-state')).toBe('offline');
      await expectProjectsListed(app);
      await screenshot(app, 'offline-banner');

      // A reload asks the Engine again: the projects come from its Mirror.
      await app.reload();
      await app.getByTestId('offline-banner').waitFor({ timeout: 10_000 });
      await expectProjectsListed(app);
      expect(await app.getByTestId('projects-error').count()).toBe(0);

      // A cached project's page opens too, marked as an offline copy.
      await app
        .getByTestId(`project-row-${projects[0]!.subdomain}`)
        .getByRole('link', { name: projects[0]!.name, exact: true })
        .click();
      await app.getByTestId('project-detail').waitFor();
      // The page opens from the list at once; the Engine's answer (from its Mirror) follows.
      await expect
        .poll(() => app.getByTestId('project-detail').innerText(), { timeout: 10_000 })
        .toMatch(/Offline copy from/);
      await screenshot(app, 'offline-project-detail');

      // A screen with nothing cached says so, not that it shows cached projects.
      await app.getByTestId('nav-domains').click();
      await expect
        .poll(() => app.getByTestId('offline-banner').innerText(), { timeout: 10_000 })
        .toMatch(/Offline — the platform cannot be reached; this screen works again once it is back/);
      await app.getByTestId('nav-projects').click();
      await expect
        .poll(() => app.getByTestId('offline-banner').innerText())
        .toMatch(/Offline — showing projects cached (just now|\d+ min ago) \(at /);
    } finally {
      await ui.stack.startPlatform();
    }

    await app.getByTestId('offline-banner').waitFor({ state: 'detached', timeout: 8_000 });
    await expect
      .poll(() => app.getByTestId('platform-indicator').getAttribute('data-state'), { timeout: 10_000 })
      .toBe('online');
    await expectProjectsListed(app);
    await screenshot(app, 'back-online');
  }, 60_000);

  it('never shows one platform’s cached projects as another’s, and saves an unreachable one only when asked', async () => {
    const app = await ui.open();
    await expectProjectsListed(app);

    // A remote platform nothing answers at (a port just found free on loopback).
    const deadOrigin = `http://127.0.0.1:${await freePort()}`;
    await app.getByTestId('nav-settings').click();
    await app.getByTestId('platform-remote').check();
    await app.getByTestId('platform-url').fill(deadOrigin);
    await app.getByTestId('api-key').fill(`wk_${'a'.repeat(32)}`);
    await app.getByTestId('test-connection').click();
    const result = app.getByTestId('connection-result');
    await expect.poll(() => result.getAttribute('data-ok'), { timeout: 10_000 }).toBe('false');
    expect(await result.innerText()).toMatch(/nothing is listening there/i);
    expect(await result.innerText()).not.toMatch(/fetch failed/i);

    // Save checks the platform first: an unreachable one is saved only after "Save anyway".
    await app.getByTestId('save-settings').click();
    const unreachable = app.getByTestId('save-unreachable');
    await unreachable.waitFor({ timeout: 10_000 });
    expect(await unreachable.innerText()).toContain(deadOrigin);
    expect(await result.innerText()).toMatch(/nothing is listening there/i);
    expect(await app.getByTestId('settings-saved').count()).toBe(0);
    expect(await app.getByTestId('platform-indicator').innerText()).toContain('Local platform');
    await screenshot(app, 'settings-save-unreachable');
    await app.getByTestId('save-anyway').click();
    await app.getByTestId('settings-saved').waitFor();

    // The projects screen shows nothing of the local platform: that platform was never seen.
    await app.getByTestId('nav-projects').click();
    const banner = app.getByTestId('offline-banner');
    await expect
      .poll(() => banner.innerText(), { timeout: 10_000 })
      .toContain(deadOrigin.replace('http://', ''));
    expect(await banner.innerText()).toMatch(/nothing is listening there/i);
    expect(await banner.innerText()).not.toMatch(/fetch failed/i);
    await app.getByTestId('projects-never-seen').waitFor({ timeout: 10_000 });
    for (const project of projects) {
      expect(await app.getByTestId(`project-row-${project.subdomain}`).count()).toBe(0);
    }
    await screenshot(app, 'offline-other-platform');

    // Back to the local platform: its own projects again, live.
    await app.getByTestId('nav-settings').click();
    await app.getByTestId('platform-local').check();
    await app.getByTestId('save-settings').click();
    await app.getByTestId('settings-saved').waitFor();
    await app.getByTestId('nav-projects').click();
    await expectProjectsListed(app);
    await app.getByTestId('offline-banner').waitFor({ state: 'detached', timeout: 10_000 });
  }, 60_000);

  it('marks cached projects with their age and the status as last seen', async () => {
    const app = await ui.open();
    await expectProjectsListed(app);
    await ui.stack.stopPlatform();
    try {
      const banner = app.getByTestId('offline-banner');
      await expect.poll(() => banner.innerText(), { timeout: 10_000 }).toMatch(/cached .*(just now|ago)/);
      const row = app.getByTestId(`project-row-${projects[0]!.subdomain}`);
      await expect.poll(() => row.getAttribute('data-cached'), { timeout: 10_000 }).toBe('true');
      expect(await row.innerText()).toMatch(/last seen/i);
    } finally {
      await ui.stack.startPlatform();
    }
  }, 60_000);
});
