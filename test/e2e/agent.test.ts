// The Agent screen (browser mode) against a platform whose included engine is a local fake OpenAI
// server, scripted turn by turn: a tool call shows as a live step card and the reply streams in under
// it; a build the agent starts streams its logs inside its step; the own AI key is saved, shown
// masked, used (and not billed), and deleted after a confirmation; Stop ends a run mid-build.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Project } from '../../src/shared/api/projects.js';
import { startFakeOpenAI, type FakeAi } from '../helpers/fake-ai.js';
import { viaEdge } from '../helpers/deploy.js';
import { errorNextTo, platformApi, screenshot, useAppStack } from './stack.js';

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
