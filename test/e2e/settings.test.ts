// Settings in the desktop UI (browser mode): the local platform with its account and balance, the
// connection test, a remote platform with a wrong key, a URL that is not http(s), and switching back.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { Account } from '../../src/shared/api/account.js';
import { errorNextTo, platformApi, screenshot, useAppStack } from './stack.js';

let account: Account;

/** Well formed (wk_ and 32 letters and digits), but no platform knows it. */
const WRONG_KEY = `wk_${'0123456789abcdefghijklmnopqrstuv'}`;

const ui = useAppStack({
  setup: async (stack) => {
    const response = await platformApi<Account>(stack, '/account');
    expect(response.status).toBe(200);
    account = response.body;
  },
});

/** Opens the app on its Settings screen, in en-US so amounts read as in Node. */
async function openSettings(): Promise<Page> {
  const page = await ui.open({ locale: 'en-US' });
  await page.getByTestId('nav-settings').click();
  await page.getByTestId('settings-form').waitFor();
  return page;
}

const usd = (amount: number) =>
  new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(amount);
const platformOrigin = () => `http://127.0.0.1:${ui.stack.platformPort}`;

describe('settings', () => {
  it('shows the local platform’s account with its email and balance', async () => {
    const app = await openSettings();
    expect(await app.getByTestId('platform-local').isChecked()).toBe(true);
    expect(await app.getByTestId('platform-url').count()).toBe(0);

    await expect
      .poll(() => app.getByTestId('account-email').innerText(), { timeout: 5_000 })
      .toBe(account.email);
    expect(await app.getByTestId('balance-available').innerText()).toBe(usd(account.balance.available_usd));
    expect(await app.getByTestId('account-balance').innerText()).toContain(
      usd(account.balance.allowance_usd),
    );
    await screenshot(app, 'settings');
  });

  it('tests the local connection successfully, naming the account', async () => {
    const app = await openSettings();
    await app.getByTestId('test-connection').click();
    const result = app.getByTestId('connection-result');
    await result.waitFor();
    expect(await result.getAttribute('data-ok')).toBe('true');
    expect(await result.innerText()).toMatch(new RegExp(`Connected in \\d+ ms as ${account.email}`));
    await screenshot(app, 'settings-connection-ok');
  });

  it('shows the platform’s refusal when testing a remote URL with a wrong key', async () => {
    const app = await openSettings();
    await app.getByTestId('platform-remote').check();
    await app.getByTestId('platform-url').fill(platformOrigin());
    await app.getByTestId('api-key').fill(WRONG_KEY);
    await app.getByTestId('test-connection').click();

    const result = app.getByTestId('connection-result');
    await result.waitFor();
    expect(await result.getAttribute('data-ok')).toBe('false');
    expect(await result.innerText()).toMatch(/API key is not valid/i);
    await screenshot(app, 'settings-remote-wrong-key');
    // Nothing was saved by a test: the Engine still uses the local platform.
    expect(await app.getByTestId('platform-indicator').innerText()).toContain('Local platform');
  });

  it('refuses a platform URL that is not http(s), next to the field, saving nothing', async () => {
    const app = await openSettings();
    await app.getByTestId('platform-remote').check();
    const url = app.getByTestId('platform-url');
    await url.fill('ftp://files.example.com');
    await app.getByTestId('save-settings').click();

    await expect.poll(() => errorNextTo(url), { timeout: 5_000 }).toMatch(/http:\/\/ or https:\/\//);
    expect(await url.getAttribute('aria-invalid')).toBe('true');
    expect(await url.inputValue()).toBe('ftp://files.example.com');
    expect(await app.getByTestId('settings-saved').count()).toBe(0);
    await screenshot(app, 'settings-url-refused');

    await app.reload();
    await app.getByTestId('settings-form').waitFor();
    expect(await app.getByTestId('platform-local').isChecked()).toBe(true);
  });

  it('switches to a remote platform (the account then fails to load) and back to local', async () => {
    const app = await openSettings();
    await app.getByTestId('platform-remote').check();
    await app.getByTestId('platform-url').fill(platformOrigin());
    await app.getByTestId('api-key').fill(WRONG_KEY);
    await app.getByTestId('save-settings').click();
    await app.getByTestId('settings-saved').waitFor();

    await app.getByTestId('key-saved').waitFor();
    expect(await app.getByTestId('api-key').inputValue()).toBe('');
    await expect
      .poll(() => app.getByTestId('platform-indicator').innerText(), { timeout: 5_000 })
      .toContain(`127.0.0.1:${ui.stack.platformPort}`);
    await expect
      .poll(() => app.getByTestId('account').innerText(), { timeout: 5_000 })
      .toMatch(/could not be loaded/);
    expect(await app.getByTestId('account-email').count()).toBe(0);
    await screenshot(app, 'settings-remote-saved');

    await app.getByTestId('platform-local').check();
    await app.getByTestId('save-settings').click();
    await app.getByTestId('settings-saved').waitFor();
    await expect
      .poll(() => app.getByTestId('account-email').innerText(), { timeout: 5_000 })
      .toBe(account.email);
    await expect
      .poll(() => app.getByTestId('platform-indicator').getAttribute('data-state'), { timeout: 5_000 })
      .toBe('online');
    expect(await app.getByTestId('platform-indicator').innerText()).toContain('Local platform');
    expect(await app.getByTestId('problem-banner').count()).toBe(0);
    await screenshot(app, 'settings-back-to-local');
  });
});
