// The Build screen (browser mode) against a platform with no AI engine at all, as a fresh install is:
// the offline templates build a landing page from a sentence to a running app whose URL answers; a
// messaging bot stops at its setup form (the bot token, as a password input) and runs once it is
// given; a taken subdomain is refused next to its field; and the AI-only parts (Edit with AI, the
// Agent) explain that no engine is configured, in the app's words with "Add your AI key". The Build
// screen says so up front, with what works without a key.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { Project } from '../../src/shared/api/projects.js';
import { viaEdge } from '../helpers/deploy.js';
import { errorNextTo, platformApi, screenshot, useAppStack } from './stack.js';

// The page's globals the evaluated functions below use (this file is type-checked without the DOM).
declare const document: { activeElement: { getAttribute(name: string): string | null } | null };

const ui = useAppStack();

/** Builds can install packages and start an app: give them time. */
const RUN_MS = 120_000;

async function openBuild(): Promise<Page> {
  const page = await ui.open({ viewport: { width: 1280, height: 1100 } });
  await page.getByTestId('nav-build').click();
  await page.getByTestId('build-form').waitFor();
  return page;
}

async function fillBuild(page: Page, generator: string, prompt: string, subdomain: string): Promise<void> {
  await page.getByTestId(`generator-${generator}`).check();
  await page.getByTestId('build-prompt').fill(prompt);
  await page.getByTestId('build-subdomain').fill(subdomain);
}

/** The running app's URL as the screen shows it, once it shows. */
async function shownAppUrl(page: Page): Promise<URL> {
  await page.getByTestId('build-app-url').waitFor({ timeout: RUN_MS });
  return new URL((await page.getByTestId('build-app-url').getAttribute('href'))!);
}

const badge = (page: Page) => page.getByTestId('build-progress').getByTestId('status-badge');

describe('building apps offline from the Build screen', () => {
  it('builds a landing page from a sentence to a running app at its URL', async () => {
    const page = await openBuild();
    // Seven generators, each with its line.
    expect(await page.locator('[data-testid^="generator-"]').count()).toBe(7);
    expect(await page.getByTestId('generator-landing').isChecked()).toBe(true);

    // No engine: said up front, with what still works, and the picker offers only what exists.
    const notice = page.getByTestId('build-no-engine');
    await notice.waitFor();
    expect(await notice.innerText()).toMatch(/no included AI engine/);
    expect(await notice.innerText()).toMatch(
      /Building still works: each kind of app comes from our own templates/,
    );
    expect(await notice.getByTestId('build-add-key').getAttribute('href')).toBe('#/settings/ai-key');
    expect(await page.getByTestId('build-engine').locator('option').allInnerTexts()).toEqual(['Automatic']);
    expect(await page.getByTestId('build-engine-hint').innerText()).toMatch(/our offline templates/);

    // Nothing typed: both fields say what they need, before anything is sent.
    await page.getByTestId('build-submit').click();
    expect(await errorNextTo(page.getByTestId('build-prompt'))).toMatch(/Describe the app/);
    expect(await errorNextTo(page.getByTestId('build-subdomain'))).toMatch(/Choose the subdomain/);
    await fillBuild(
      page,
      'landing',
      'A landing page for Crumb & Co, a weekend bakery pop-up in Lisbon with sourdough and pastel de nata.',
      'Crumb Co',
    );
    await page.getByTestId('build-submit').click();
    expect(await errorNextTo(page.getByTestId('build-subdomain'))).toMatch(/lowercase DNS label/);
    await page.getByTestId('build-subdomain').fill('api');
    await page.getByTestId('build-subdomain').blur();
    expect(await errorNextTo(page.getByTestId('build-subdomain'))).toMatch(/"api" is reserved/);
    await page.getByTestId('build-subdomain').fill('crumb');
    expect(await errorNextTo(page.getByTestId('build-subdomain'))).toBe('');
    await screenshot(page, 'build-form');

    await page.getByTestId('build-submit').click();
    await page.getByTestId('build-progress').waitFor({ timeout: 60_000 });
    const url = await shownAppUrl(page);
    expect(await badge(page).innerText()).toBe('Running');
    expect(url.hostname).toBe('crumb.localhost');

    // The app answers at that URL, with what the sentence said.
    const answer = await viaEdge(Number(url.port), url.hostname, '/');
    expect(answer.status).toBe(200);
    expect(answer.body).toMatch(/Crumb/);

    // Its logs followed along, as on the project page; the project is listed like any other.
    await expect.poll(() => page.getByTestId('log-line').count(), { timeout: 10_000 }).toBeGreaterThan(0);
    const projects = await platformApi<Project[]>(ui.stack, '/projects');
    expect(projects.body.map((project) => project.subdomain)).toContain('crumb');

    // The deploy's toast, closed for a clean picture of the page from its top.
    await page
      .getByTestId('toast')
      .first()
      .waitFor({ timeout: 5_000 })
      .catch(() => undefined);
    for (const close of await page.locator('.toast-close').all()) await close.click();
    await page.locator('#content').evaluate((element) => element.scrollTo({ top: 0 }));
    await screenshot(page, 'build');

    // Edit with AI needs a model: with none configured, it says so instead of failing silently.
    await page.getByTestId('edit-instruction').fill('Make the header dark green.');
    await page.getByTestId('edit-submit').click();
    const refused = page.getByTestId('edit-error');
    await refused.waitFor({ timeout: 15_000 });
    expect(await refused.getAttribute('data-code')).toBe('unavailable');
    expect(await refused.innerText()).toMatch(/No AI engine is available/);
    // In the app's words, with the way to the key field.
    expect(await refused.innerText()).toMatch(
      /Editing needs an AI engine\. This platform has no included AI engine, and you have not saved your own AI key\./,
    );
    expect(await refused.innerText()).not.toMatch(/PUT \/account|WHARF_AI_KEY|--ai-provider/);
    expect(await refused.getByTestId('edit-error-add-key').getAttribute('href')).toBe('#/settings/ai-key');

    await screenshot(page, 'build-edit-refused', { show: refused });

    // The same box is on the project's own page, since the builder made it.
    await page.getByTestId('build-open-project').click();
    await page.getByTestId('project-detail').waitFor();
    await page.getByTestId('edit-with-ai').waitFor();
  }, 200_000);

  it('asks for a messaging bot’s token, then deploys it with the token set', async () => {
    const page = await openBuild();
    await fillBuild(
      page,
      'messaging-bot',
      'A Telegram bot for Crumb & Co that tells people the opening hours and today’s bread.',
      'crumb-bot',
    );
    await page.getByTestId('build-submit').click();
    const setup = page.getByTestId('setup-form');
    await setup.waitFor({ timeout: 60_000 });

    // One input per needed variable, with what it is for; a token is a secret, typed unseen.
    const token = page.getByTestId('setup-env-BOT_TOKEN');
    expect(await token.getAttribute('type')).toBe('password');
    expect(await setup.innerText()).toMatch(/Telegram bot token/);
    await page.getByTestId('setup-deploy').click();
    expect(await errorNextTo(token)).toMatch(/Fill this in/);
    await screenshot(page, 'build-setup');

    await token.fill('123456:TEST-token-for-the-e2e');
    await page.getByTestId('setup-deploy').click();
    const url = await shownAppUrl(page);
    expect(await badge(page).innerText()).toBe('Running');
    const health = await viaEdge(Number(url.port), url.hostname, '/health');
    expect(health.status).toBe(200);

    const projects = await platformApi<Project[]>(ui.stack, '/projects');
    const bot = projects.body.find((project) => project.subdomain === 'crumb-bot');
    expect(bot?.env_vars.BOT_TOKEN).toBeDefined();
  }, 200_000);

  it('refuses a subdomain that is taken, next to the field', async () => {
    const page = await openBuild();
    await fillBuild(page, 'api', 'An API that stores short notes.', 'crumb');
    await page.getByTestId('build-submit').click();
    await expect
      .poll(() => errorNextTo(page.getByTestId('build-subdomain')), { timeout: 15_000 })
      .toMatch(/taken|already|in use|crumb/i);
    expect(await page.getByTestId('build-form').isVisible()).toBe(true);
  });

  it('explains on the Agent screen that no engine is configured', async () => {
    const page = await ui.open();
    await page.getByTestId('nav-agent').click();
    await page.getByTestId('agent-empty').waitFor();
    expect(await page.getByTestId('agent-example').count()).toBe(3);
    await page.getByTestId('agent-input').fill('What is running?');
    await page.getByTestId('agent-input').press('Enter');
    const error = page.getByTestId('agent-error');
    await error.waitFor({ timeout: 15_000 });
    expect(await error.getAttribute('data-code')).toBe('unavailable');
    expect(await error.innerText()).toMatch(/No AI engine is available/);
    expect(await error.innerText()).toMatch(/The agent needs an AI engine to work/);
    expect(await error.innerText()).not.toMatch(/PUT \/account|WHARF_AI_KEY|--ai-provider/);
    // The question stays, and the composer is ready for another.
    expect(await page.getByTestId('agent-user-message').innerText()).toBe('What is running?');
    expect(await page.getByTestId('agent-send').isVisible()).toBe(true);
    await screenshot(page, 'agent-no-engine-refused', { show: error });
    // Its "Add your AI key" lands on the key field, focused.
    await error.getByTestId('agent-error-add-key').click();
    await page.getByTestId('ai-key-input').waitFor();
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-testid')))
      .toBe('ai-key-input');
  });
});
