// The Agent screen (browser mode) against a platform whose included engine is a local fake OpenAI
// server, scripted turn by turn: a tool call shows as a live step card and the reply streams in under
// it; a build the agent starts streams its logs inside its step; the own AI key is saved, shown
// masked, used (and not billed), and deleted after a confirmation; Stop ends a run mid-build; the
// composer's footer lays out cleanly at 1280, 900 and 800 px. Then against a second platform with no
// AI engine at all: the screen says so up front, and "Add your AI key" lands on the focused key field.
import type { BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Project } from '../../src/shared/api/projects.js';
import { startFakeOpenAI, type FakeAi } from '../helpers/fake-ai.js';
import { viaEdge } from '../helpers/deploy.js';
import { errorNextTo, platformApi, screenshot, useAppStack } from './stack.js';

// The page's globals the evaluated functions below use (this file is type-checked without the DOM).
declare const document: { activeElement: unknown };
declare const window: { innerHeight: number };
declare function getComputedStyle(element: unknown): { lineHeight: string };

const INCLUDED_KEY = 'sk-included-e2e-0000000000000000';
const OWN_KEY = 'sk-own-e2e-key-1234567890abcdef';

let fake: FakeAi;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake?.close();
});

const ui = useAppStack({
  platformArgs: () => ['--ai-provider', 'openai', '--ai-base-url', fake.baseUrl],
  platformEnv: () => ({ WHARF_AI_KEY: INCLUDED_KEY }),
});

/** Builds and their health checks take a few seconds. */
const BUILD_MS = 120_000;

async function openAgent(): Promise<Page> {
  const page = await ui.open({ viewport: { width: 1280, height: 900 } });
  await page.getByTestId('nav-agent').click();
  await page.getByTestId('agent-view').waitFor();
  return page;
}

async function ask(page: Page, question: string): Promise<void> {
  await page.getByTestId('agent-input').fill(question);
  await page.getByTestId('agent-input').press('Enter');
}

const lastReply = (page: Page) => page.getByTestId('agent-reply').last();

/** The window sizes the screen must lay out cleanly at. */
const SIZES = [
  { width: 1280, height: 800 },
  { width: 900, height: 700 },
  { width: 800, height: 600 },
] as const;
const SCHEMES = ['light', 'dark'] as const;

/**
 * Where the composer footer's parts are: the engine select, what it runs on, the Enter hint and Send,
 * with any two that overlap, and the text lines of the hint and the description (a word per line
 * shows as many lines in a narrow box).
 */
async function footerLayout(page: Page) {
  return page.getByTestId('agent-view').evaluate((view) => {
    const parts = {
      select: view.querySelector('[data-testid="agent-engine"]'),
      description: view.querySelector('[data-testid="agent-engine-hint"]'),
      hint: view.querySelector('.agent-hint'),
      send: view.querySelector('[data-testid="agent-send"]'),
    };
    const boxes = Object.entries(parts).map(([name, element]) => {
      if (!element) throw new Error(`no ${name} in the composer`);
      return { name, box: element.getBoundingClientRect() };
    });
    const overlaps: string[] = [];
    for (const [i, a] of boxes.entries()) {
      for (const b of boxes.slice(i + 1)) {
        const apart =
          a.box.right <= b.box.left ||
          b.box.right <= a.box.left ||
          a.box.bottom <= b.box.top ||
          b.box.bottom <= a.box.top;
        if (!apart) overlaps.push(`${a.name}/${b.name}`);
      }
    }
    const lines = (element: { getBoundingClientRect(): { height: number } }) =>
      Math.round(element.getBoundingClientRect().height / parseFloat(getComputedStyle(element).lineHeight));
    const composer = view.querySelector('.agent-composer')!.getBoundingClientRect();
    return {
      overlaps,
      hintLines: lines(parts.hint!),
      descriptionLines: lines(parts.description!),
      descriptionWidth: parts.description!.getBoundingClientRect().width,
      outside: boxes.filter(({ box }) => box.right > composer.right + 1).map(({ name }) => name),
    };
  });
}
const authorizationOf = (index: number) => fake.requests[index]?.headers.authorization;

describe('the Agent screen', () => {
  it('shows a tool call as a live step card, then the reply streamed under it', async () => {
    const seeded = await platformApi<Project>(ui.stack, '/projects', {
      method: 'POST',
      body: JSON.stringify({ name: 'Demo Shop', subdomain: 'demo-shop', deploy_source: 'upload' }),
    });
    expect(seeded.status).toBe(201);
    fake.push(
      { toolCalls: [{ name: 'list_projects', args: {} }] },
      { text: 'You have one project: Demo Shop, at demo-shop. It has not been deployed yet.' },
    );
    const before = fake.requests.length;

    const page = await openAgent();
    await page.getByTestId('agent-empty').waitFor();
    expect(await page.getByTestId('agent-example').count()).toBe(3);
    // Shift+Enter is a new line, not a send.
    await page.getByTestId('agent-input').fill('Which projects do I have?');
    await page.getByTestId('agent-input').press('Shift+Enter');
    expect(await page.getByTestId('agent-input').inputValue()).toBe('Which projects do I have?\n');
    expect(await page.getByTestId('agent-user-message').count()).toBe(0);
    await page.getByTestId('agent-input').press('Enter');

    const step = page.getByTestId('agent-step');
    await step.waitFor();
    expect(await step.getAttribute('data-tool')).toBe('list_projects');
    await expect.poll(() => step.getAttribute('data-status'), { timeout: 15_000 }).toBe('ok');
    expect(await step.getByTestId('agent-step-status').innerText()).toMatch(/Done · \d+(\.\d+)? (ms|s)/);
    await step.getByText('Result').click();
    expect(await step.getByTestId('agent-step-output').innerText()).toMatch(/demo-shop/);

    const reply = lastReply(page);
    await expect.poll(() => reply.getAttribute('data-state'), { timeout: 15_000 }).toBe('done');
    expect(await reply.getByTestId('agent-text').last().innerText()).toBe(
      'You have one project: Demo Shop, at demo-shop. It has not been deployed yet.',
    );
    // The reply comes after the step, in the order things happened.
    const order = await reply.evaluate((element) =>
      [...element.children].map((child) => child.getAttribute('data-testid')),
    );
    expect(order.indexOf('agent-step')).toBeLessThan(order.lastIndexOf('agent-text'));
    expect(await reply.getByTestId('agent-usage').innerText()).toMatch(/Included engine/);
    expect(await page.getByTestId('agent-send').isVisible()).toBe(true);

    // Both model calls went to the included engine with the server's key, the second with the result.
    expect(fake.requests.length - before).toBe(2);
    expect(authorizationOf(before)).toBe(`Bearer ${INCLUDED_KEY}`);
    expect(JSON.stringify(fake.requests[before + 1]!.body)).toMatch(/demo-shop/);
    await screenshot(page, 'agent-list-projects');
  }, 60_000);

  it(
    'streams the build logs of an app the agent builds inside its step',
    async () => {
      fake.push(
        {
          toolCalls: [
            {
              name: 'build_app',
              args: {
                generator: 'landing',
                prompt: 'A landing page for Crumb & Co, a weekend bakery pop-up in Lisbon.',
                subdomain: 'crumb-agent',
                use_template: true,
              },
            },
          ],
        },
        { text: 'Crumb & Co is live at crumb-agent. Tell me if you want changes to the page.' },
      );
      const page = await openAgent();
      await ask(
        page,
        'Build a landing page for Crumb & Co, a weekend bakery pop-up in Lisbon, at crumb-agent.',
      );

      const step = page.getByTestId('agent-step').last();
      await step.waitFor();
      expect(await step.getAttribute('data-tool')).toBe('build_app');
      const build = step.getByTestId('agent-build');
      await build.waitFor({ timeout: 30_000 });
      await expect.poll(() => step.getAttribute('data-status'), { timeout: BUILD_MS }).toBe('ok');
      expect(await build.getByTestId('status-badge').innerText()).toBe('Running');
      expect((await build.getByTestId('agent-build-log').innerText()).split('\n').length).toBeGreaterThan(1);

      const reply = lastReply(page);
      await expect.poll(() => reply.getAttribute('data-state'), { timeout: 15_000 }).toBe('done');
      expect(await reply.innerText()).toMatch(/Crumb & Co is live/);
      const app = await viaEdge(ui.stack.edgePort, 'crumb-agent.localhost', '/');
      expect(app.status).toBe(200);

      await step.getByText('Input').click();
      await screenshot(page, 'agent');
    },
    BUILD_MS + 30_000,
  );

  it('saves an own key shown masked, runs on it unbilled, and deletes it after asking', async () => {
    const page = await ui.open({ viewport: { width: 1280, height: 900 } });
    await page.getByTestId('nav-settings').click();
    const card = page.getByTestId('ai-key-card');
    await card.getByTestId('ai-key-none').waitFor();
    expect(await card.getByTestId('ai-key-provider').locator('option').count()).toBe(8);

    // Errors at the field: nothing typed, then a key the platform refuses.
    const input = card.getByTestId('ai-key-input');
    expect(await input.getAttribute('type')).toBe('password');
    await card.getByTestId('ai-key-save').click();
    expect(await errorNextTo(input)).toMatch(/Paste your OpenAI API key/);
    await input.fill('short');
    await card.getByTestId('ai-key-save').click();
    await expect.poll(() => errorNextTo(input), { timeout: 10_000 }).toMatch(/at least 8 characters/);

    await card.getByTestId('ai-key-provider').selectOption('openai');
    await input.fill(OWN_KEY);
    await card.getByTestId('ai-key-save').click();
    await card.getByTestId('ai-key-saved').waitFor();
    expect(await card.getByTestId('ai-key-masked').innerText()).toBe(
      `${OWN_KEY.slice(0, 3)}…${OWN_KEY.slice(-4)}`,
    );
    expect(await input.inputValue()).toBe('');
    expect(await page.content()).not.toContain(OWN_KEY);
    await card.scrollIntoViewIfNeeded();
    await screenshot(page, 'settings-ai-key', { show: card });

    // The agent can now run on it: not billed, and sent with the own key.
    fake.push({ text: 'Hello from your own key.' });
    const before = fake.requests.length;
    await page.getByTestId('nav-agent').click();
    const engine = page.getByTestId('agent-engine');
    await expect.poll(() => engine.locator('option[value="own_key"]').isDisabled()).toBe(false);
    await engine.selectOption('own_key');
    await ask(page, 'Say hello.');
    const reply = lastReply(page);
    await expect.poll(() => reply.getAttribute('data-state'), { timeout: 15_000 }).toBe('done');
    expect(await reply.getByTestId('agent-usage').innerText()).toBe('Your own key · not billed');
    expect(authorizationOf(before)).toBe(`Bearer ${OWN_KEY}`);

    // Delete, after a confirmation; Cancel keeps it.
    await page.getByTestId('nav-settings').click();
    await card.getByTestId('ai-key-delete').click();
    await page.getByTestId('ai-key-delete-dialog').getByRole('button', { name: 'Cancel' }).click();
    expect(await card.getByTestId('ai-key-saved').isVisible()).toBe(true);
    await card.getByTestId('ai-key-delete').click();
    await page.getByTestId('ai-key-confirm-delete').click();
    await card.getByTestId('ai-key-none').waitFor();
    const account = await platformApi<{ ai_key: unknown }>(ui.stack, '/account');
    expect(account.body.ai_key).toBeNull();
  }, 60_000);

  it('lays the composer footer out cleanly at 1280, 900 and 800 px, light and dark', async () => {
    for (const viewport of SIZES) {
      for (const colorScheme of SCHEMES) {
        const page = await ui.open({ viewport, colorScheme });
        await page.getByTestId('nav-agent').click();
        await page.getByTestId('agent-empty').waitFor();
        // The picker names the included engine with its provider and model; no notice: it can run.
        const select = page.getByTestId('agent-engine');
        await expect
          .poll(() => select.locator('option[value="included"]').innerText())
          .toBe('Included · OpenAI gpt-4o-mini');
        expect(await page.getByTestId('agent-no-engine').count()).toBe(0);
        await page.getByTestId('agent-input').fill('Which of my projects are running?');
        const layout = await footerLayout(page);
        const where = `${viewport.width}×${viewport.height} ${colorScheme}`;
        expect(layout.overlaps, where).toEqual([]);
        expect(layout.outside, where).toEqual([]);
        expect(layout.hintLines, where).toBe(1);
        expect(layout.descriptionLines, where).toBeLessThanOrEqual(2);
        expect(layout.descriptionWidth, where).toBeGreaterThan(160);
        await screenshot(page, `agent-composer-${viewport.width}-${colorScheme}`);
        await page.context().close();
      }
    }
  }, 90_000);

  it('stops a run in the middle of a build', async () => {
    // A spare reply, in case the platform asks the model again before it notices the stop.
    fake.push(
      {
        toolCalls: [
          {
            name: 'build_app',
            args: { generator: 'web', prompt: 'A guestbook.', subdomain: 'stop-me', use_template: true },
          },
        ],
      },
      { text: 'Built.' },
    );
    const page = await openAgent();
    await ask(page, 'Build a guestbook at stop-me.');
    const step = page.getByTestId('agent-step').last();
    await step.waitFor({ timeout: 15_000 });
    await page.getByTestId('agent-stop').click();
    const reply = lastReply(page);
    await expect.poll(() => reply.getAttribute('data-state'), { timeout: 10_000 }).toBe('stopped');
    await reply.getByTestId('agent-stopped').waitFor();
    expect(await step.getAttribute('data-status')).not.toBe('running');
    expect(await page.getByTestId('agent-send').isVisible()).toBe(true);
    expect(await page.getByTestId('agent-stop').count()).toBe(0);
  }, 60_000);
});

describe('the Agent screen on a platform without any AI engine', () => {
  // No --ai-provider and no WHARF_AI_KEY: no included engine, and the account has no key of its own.
  const bare = useAppStack();

  async function openBareAgent(options: BrowserContextOptions = {}): Promise<Page> {
    const page = await bare.open({ viewport: { width: 1280, height: 800 }, ...options });
    await page.getByTestId('nav-agent').click();
    await page.getByTestId('agent-view').waitFor();
    return page;
  }

  it('says so up front, and "Add your AI key" lands on the focused key field', async () => {
    const info = await platformApi<{ ai_included: unknown }>(bare.stack, '/platform');
    expect(info.body.ai_included).toBeNull();

    const page = await openBareAgent();
    const notice = page.getByTestId('agent-no-engine');
    await notice.waitFor();
    expect(await notice.innerText()).toMatch(/no included AI engine, and you have not saved your own AI key/);
    // In the app's words: no API paths or command-line flags.
    expect(await page.getByTestId('agent-view').innerText()).not.toMatch(
      /PUT \/account|WHARF_AI_KEY|--ai-provider/,
    );
    // The composer says why it cannot run; the picker offers no engine that is not there.
    expect(await page.getByTestId('agent-input').getAttribute('aria-describedby')).toMatch(/agent-no-engine/);
    const select = page.getByTestId('agent-engine');
    expect(await select.locator('option').allInnerTexts()).toEqual(['Automatic']);
    expect(await page.getByTestId('agent-engine-hint').innerText()).toMatch(/No AI engine yet/);

    await page.getByTestId('agent-add-key').click();
    const field = page.getByTestId('ai-key-input');
    await field.waitFor();
    expect(page.url()).toMatch(/#\/settings\/ai-key$/);
    // Focused, and in view once the cards above it have loaded.
    await expect.poll(() => field.evaluate((element) => element === document.activeElement)).toBe(true);
    await page.getByTestId('ai-key-none').waitFor();
    await expect
      .poll(() =>
        field.evaluate((element) => {
          const box = element.getBoundingClientRect();
          return box.top >= 0 && box.bottom <= window.innerHeight;
        }),
      )
      .toBe(true);
    await page.waitForTimeout(300);
    expect(await field.evaluate((element) => element === document.activeElement)).toBe(true);
    expect(
      await field.evaluate((element) => {
        const box = element.getBoundingClientRect();
        return box.top >= 0 && box.bottom <= window.innerHeight;
      }),
    ).toBe(true);
    // The card claims no included engine: it says what runs use now.
    expect(await page.getByTestId('ai-key-none').innerText()).toMatch(
      /no included AI engine: the agent cannot run/,
    );
    await screenshot(page, 'agent-no-engine-settings');

    // Typed straight in (the field has focus) and saved: the Agent screen is ready, on that key.
    await page.keyboard.type(OWN_KEY);
    await page.getByTestId('ai-key-save').click();
    await page.getByTestId('ai-key-saved').waitFor();
    await page.getByTestId('nav-agent').click();
    await page.getByTestId('agent-empty').waitFor();
    await expect.poll(() => select.locator('option[value="own_key"]').count()).toBe(1);
    expect(await page.getByTestId('agent-no-engine').count()).toBe(0);
    expect(await select.locator('option').allInnerTexts()).toEqual([
      'Automatic',
      'Your key · OpenAI gpt-4o-mini',
    ]);
    expect(await page.getByTestId('agent-engine-hint').innerText()).toMatch(
      /Your OpenAI gpt-4o-mini key sk-…cdef, not billed here/,
    );
    await page.getByTestId('agent-input').fill('Hello?');
    expect(await page.getByTestId('agent-send').isEnabled()).toBe(true);

    // Gone again: the notice is back.
    expect((await platformApi(bare.stack, '/account/ai-key', { method: 'DELETE' })).status).toBe(200);
    await page.getByTestId('nav-projects').click();
    await page.getByTestId('nav-agent').click();
    await notice.waitFor();
  }, 60_000);

  it('shows the notice cleanly at 1280, 900 and 800 px, light and dark', async () => {
    for (const viewport of SIZES) {
      for (const colorScheme of SCHEMES) {
        const page = await openBareAgent({ viewport, colorScheme });
        const notice = page.getByTestId('agent-no-engine');
        await notice.waitFor();
        const where = `${viewport.width}×${viewport.height} ${colorScheme}`;
        // The button keeps its words on one line, next to or under the text, inside the notice.
        const button = await page.getByTestId('agent-add-key').boundingBox();
        const box = await notice.boundingBox();
        expect(button!.height, where).toBeLessThan(40);
        expect(button!.x + button!.width, where).toBeLessThanOrEqual(box!.x + box!.width);
        const layout = await footerLayout(page);
        expect(layout.overlaps, where).toEqual([]);
        expect(layout.hintLines, where).toBe(1);
        await screenshot(page, `agent-no-engine-${viewport.width}-${colorScheme}`);
        // The Build screen says it too, with what works without a key.
        await page.getByTestId('nav-build').click();
        const built = page.getByTestId('build-no-engine');
        await built.waitFor();
        const add = await built.getByTestId('build-add-key').boundingBox();
        expect(add!.height, where).toBeLessThan(40);
        await screenshot(page, `agent-no-engine-build-${viewport.width}-${colorScheme}`);
        await page.context().close();
      }
    }
  }, 90_000);
});
