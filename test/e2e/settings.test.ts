// Settings in the desktop UI (browser mode): the local platform with its account and balance, the
// connection test, a remote platform with a wrong key, a URL that is not http(s), and switching back;
// the Runtime card (how the platform runs apps) against the real platform, one that is down, one older
// than GET /platform, and one running apps as plain processes.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Account } from '../../src/shared/api/account.js';
import type { PlatformInfo } from '../../src/shared/api/common.js';
import { errorNextTo, platformApi, screenshot, useAppStack, type AppHarness } from './stack.js';

// The page's clipboard, read inside the browser (this file is typed for Node).
declare const navigator: { clipboard: { readText(): Promise<string> } };

let account: Account;
let platformInfo: PlatformInfo;

/** Well formed (wk_ and 32 letters and digits), but no platform knows it. */
const WRONG_KEY = `wk_${'0123456789abcdefghijklmnopqrstuv'}`;

const ui = useAppStack({
  setup: async (stack) => {
    const response = await platformApi<Account>(stack, '/account');
    expect(response.status).toBe(200);
    account = response.body;
    const info = await platformApi<PlatformInfo>(stack, '/platform');
    expect(info.status).toBe(200);
    platformInfo = info.body;
  },
});

/** Opens the app on its Settings screen, in en-US so amounts read as in Node. */
async function openSettings(options: BrowserContextOptions = {}, harness: AppHarness = ui): Promise<Page> {
  const page = await harness.open({ locale: 'en-US', ...options });
  await page.getByTestId('nav-settings').click();
  await page.getByTestId('settings-form').waitFor();
  return page;
}

const RUNTIME_LABELS = {
  container: 'Containers',
  swarm: 'Docker Swarm',
  sandbox: 'Sandbox (bubblewrap)',
  process: 'Processes',
};

/** Waits for the Runtime card to name a runtime; its label. */
async function runtimeLabel(app: Page): Promise<string> {
  const label = app.getByTestId('runtime-label');
  await label.waitFor();
  return label.innerText();
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
    // The Runtime card asked the newly saved platform, which refused the key.
    await expect
      .poll(() => app.getByTestId('runtime-unavailable').innerText(), { timeout: 5_000 })
      .toMatch(/The platform refused the API key/);
    expect(await app.getByTestId('runtime-label').count()).toBe(0);
    expect(await app.getByTestId('runtime').innerText()).toContain(`127.0.0.1:${ui.stack.platformPort}`);
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
    expect(await runtimeLabel(app)).toBe(RUNTIME_LABELS[platformInfo.runtime]);
    expect(await app.getByTestId('runtime-unavailable').count()).toBe(0);
    await screenshot(app, 'settings-back-to-local');
  });

  it('shows how the platform runs apps: the runtime, its notes and the releases kept', async () => {
    for (const [name, options] of [
      ['settings-runtime', {}],
      ['settings-runtime-dark', { colorScheme: 'dark' }],
      ['settings-runtime-800', { viewport: { width: 800, height: 600 } }],
    ] as const) {
      const app = await openSettings(options);
      const card = app.getByTestId('runtime');
      expect(await runtimeLabel(app)).toBe(RUNTIME_LABELS[platformInfo.runtime]);
      expect(await app.getByTestId('runtime-label').getAttribute('data-runtime')).toBe(platformInfo.runtime);
      expect(await app.getByTestId('runtime-keep').innerText()).toBe(
        `${platformInfo.keep_releases} releases per project`,
      );
      expect(await app.getByTestId('runtime-note').allInnerTexts()).toEqual(platformInfo.runtime_notes);
      expect(await app.getByTestId('runtime-warning').count()).toBe(
        platformInfo.runtime === 'process' ? 1 : 0,
      );
      expect(await card.innerText()).toContain('How apps run on the local platform.');
      // Nothing in the card runs past its edge, at any width.
      expect(
        await card.evaluate(
          (element) =>
            [...element.querySelectorAll('*')].filter((child) => child.scrollWidth > child.clientWidth + 1)
              .length,
        ),
      ).toBe(0);
      await screenshot(app, name, { show: card });
      await app.context().close();
    }
  });

  it('says when the platform cannot be reached, and shows the runtime again once it is back', async () => {
    const app = await openSettings();
    await runtimeLabel(app);
    await ui.stack.stopPlatform();
    try {
      await app.getByTestId('runtime-refresh').click();
      const unavailable = app.getByTestId('runtime-unavailable');
      await expect
        .poll(() => unavailable.innerText(), { timeout: 15_000 })
        .toMatch(/The platform cannot be reached/);
      expect(await unavailable.getAttribute('data-code')).toBe('offline');
      expect(await app.getByTestId('runtime-loading').count()).toBe(0);
      expect(await app.getByTestId('runtime-refresh').isEnabled()).toBe(true);
      await screenshot(app, 'settings-runtime-offline', { show: unavailable });
    } finally {
      await ui.stack.startPlatform();
    }
    // Back online (the Engine notices by itself): the card asks again without a click.
    await expect.poll(() => app.getByTestId('runtime-label').count(), { timeout: 20_000 }).toBe(1);
    expect(await runtimeLabel(app)).toBe(RUNTIME_LABELS[platformInfo.runtime]);
  });

  describe('a platform older than GET /platform', () => {
    let older: Server;
    beforeAll(async () => {
      // What an older Wharf answers for a route it does not have; it knows no other routes either.
      older = createServer((request, response) => {
        response.writeHead(404, { 'content-type': 'application/problem+json' });
        response.end(
          JSON.stringify({
            type: 'https://wharf.dev/problems/not_found',
            title: 'Not Found',
            status: 404,
            code: 'not_found',
            detail: `no route for ${request.method} ${request.url?.split('?')[0]}`,
          }),
        );
      });
      await new Promise<void>((resolve) => older.listen(0, '127.0.0.1', resolve));
    });
    afterAll(async () => {
      older.closeAllConnections();
      await new Promise<void>((resolve) => older.close(() => resolve()));
    });

    it('says it does not tell how it runs apps, instead of failing', async () => {
      const app = await openSettings();
      await runtimeLabel(app);
      const origin = `http://127.0.0.1:${(older.address() as AddressInfo).port}`;
      await app.getByTestId('platform-remote').check();
      await app.getByTestId('platform-url').fill(origin);
      await app.getByTestId('api-key').fill(WRONG_KEY);
      await app.getByTestId('save-settings').click();
      await app.getByTestId('settings-saved').waitFor();
      try {
        const unavailable = app.getByTestId('runtime-unavailable');
        await expect
          .poll(() => unavailable.innerText(), { timeout: 5_000 })
          .toMatch(/This platform does not say how it runs apps[\s\S]*older than this app/);
        expect(await unavailable.getAttribute('data-code')).toBe('not_found');
        expect(await app.getByTestId('runtime').innerText()).toContain(origin);
        await screenshot(app, 'settings-runtime-older-platform', { show: unavailable });
      } finally {
        await app.getByTestId('platform-local').check();
        await app.getByTestId('save-settings').click();
        await app.getByTestId('settings-saved').waitFor();
      }
      expect(await runtimeLabel(app)).toBe(RUNTIME_LABELS[platformInfo.runtime]);
    });
  });
});

describe('settings: API keys', () => {
  /** The card's row of a key, by the name the test gave it. */
  const rowOf = (app: Page, name: string) =>
    app
      .getByTestId('api-key-row')
      .filter({ has: app.getByTestId('api-key-name').getByText(name, { exact: true }) });

  /** GET /api/v1/account with a key, from Node, as a script using it would. */
  const accountStatus = async (key: string) =>
    (await fetch(`${ui.stack.api}/account`, { headers: { 'x-api-key': key } })).status;

  it('creates a key shown once, copies it, the key works, then revokes it; the app’s own key stays', async () => {
    const app = await openSettings();
    await app.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    const card = app.getByTestId('api-keys');
    await card.getByTestId('api-keys-table').waitFor();

    // The key this app signs in with: marked, and no Revoke on it.
    const own = card.locator('[data-testid="api-key-row"][data-current="true"]');
    expect(await own.count()).toBe(1);
    expect(await own.getByTestId('api-key-name').innerText()).toBe('local');
    expect(await own.getByTestId('api-key-this-app').innerText()).toBe('This app');
    expect(await own.getByTestId('api-key-revoke').count()).toBe(0);
    expect(await own.getByTestId('api-key-in-use').getAttribute('title')).toMatch(/lock the app out/);
    expect(await card.getByTestId('api-keys-own-note').innerText()).toMatch(/cannot be revoked here/);
    expect(await card.getByTestId('api-key-revoke').count()).toBe(
      (await card.getByTestId('api-key-row').count()) - 1,
    );

    // A name is needed; the platform's rules come back next to the field.
    await card.getByTestId('api-key-create').click();
    await expect.poll(() => errorNextTo(card.getByTestId('api-key-name-input'))).toMatch(/Name the key/);

    await card.getByTestId('api-key-name-input').fill('CI runner');
    expect(await card.getByTestId('api-key-scope-deploy').isChecked()).toBe(true);
    await card.getByTestId('api-key-scope-email').check();
    expect(await card.innerText()).toContain('Email verification only.');
    await card.getByTestId('api-key-create').click();

    const shown = card.getByTestId('api-key-new');
    await shown.waitFor();
    expect(await shown.getByTestId('api-key-new-name').innerText()).toBe('CI runner');
    expect(await shown.innerText()).toMatch(/you will not see it again/);
    const secret = await shown.getByTestId('api-key-new-value').inputValue();
    expect(secret).toMatch(/^wk_[A-Za-z0-9]{32}$/);
    await shown.getByTestId('api-key-copy').click();
    await expect.poll(() => shown.getByTestId('api-key-copy').getAttribute('data-state')).toBe('copied');
    expect(await app.evaluate(() => navigator.clipboard.readText())).toBe(secret);

    // Listed, never with its secret, and the platform agrees.
    const row = rowOf(app, 'CI runner');
    await row.waitFor();
    expect(await row.getAttribute('data-current')).toBe('false');
    expect(await row.getByTestId('api-key-scopes').innerText()).toMatch(/deploy\s*email/);
    expect(await row.getByTestId('api-key-last-used').innerText()).toBe('Never');
    expect(await card.getByTestId('api-keys-table').innerText()).not.toContain(secret);
    const listed = await platformApi<Array<{ id: string; name: string; scopes: string[] }>>(
      ui.stack,
      '/keys',
    );
    const onPlatform = listed.body.find((key) => key.name === 'CI runner');
    expect(onPlatform?.scopes).toEqual(['deploy', 'email']);
    expect(await row.getAttribute('data-key-id')).toBe(onPlatform?.id);

    for (const [name, options] of [
      ['settings-api-keys', {}],
      ['settings-api-keys-dark', { colorScheme: 'dark' }],
    ] as const) {
      await app.emulateMedia({ colorScheme: options.colorScheme ?? 'light' });
      await screenshot(app, name, { show: card });
    }
    await app.emulateMedia({ colorScheme: 'light' });

    // The key works against the API, as the account.
    expect(await accountStatus(secret)).toBe(200);
    await card.getByTestId('api-keys-refresh').click();
    await expect.poll(() => row.getByTestId('api-key-last-used').innerText()).toBe('just now');

    // Dismissed: the key is gone from the page for good.
    await shown.getByTestId('api-key-new-dismiss').click();
    expect(await card.getByTestId('api-key-new').count()).toBe(0);
    expect(await app.content()).not.toContain(secret);

    // Revoke, confirmed in a dialog that names the key.
    await row.getByTestId('api-key-revoke').click();
    const dialog = app.getByTestId('api-key-revoke-dialog');
    await dialog.waitFor();
    expect(await dialog.innerText()).toContain('Revoke “CI runner”?');
    await screenshot(app, 'settings-api-keys-revoke');
    await dialog.getByTestId('api-key-confirm-revoke').click();
    await dialog.waitFor({ state: 'detached' });
    await card.getByTestId('api-key-revoked').waitFor();
    expect(await rowOf(app, 'CI runner').count()).toBe(0);
    expect(await accountStatus(secret)).toBe(401);
    const after = await platformApi<Array<{ name: string }>>(ui.stack, '/keys');
    expect(after.body.some((key) => key.name === 'CI runner')).toBe(false);
    // The app still signs in.
    expect(await own.count()).toBe(1);
    await card.getByTestId('api-keys-refresh').click();
    await expect.poll(() => own.getByTestId('api-key-name').innerText()).toBe('local');
  });

  it('fits narrow windows, light and dark, with a new key on show', async () => {
    for (const [name, options] of [
      ['settings-api-keys-900', { viewport: { width: 900, height: 700 } }],
      ['settings-api-keys-900-dark', { viewport: { width: 900, height: 700 }, colorScheme: 'dark' }],
      ['settings-api-keys-800', { viewport: { width: 800, height: 600 } }],
      ['settings-api-keys-800-dark', { viewport: { width: 800, height: 600 }, colorScheme: 'dark' }],
    ] as const) {
      const app = await openSettings(options);
      const card = app.getByTestId('api-keys');
      await card.getByTestId('api-keys-table').waitFor();
      await card.getByTestId('api-key-name-input').fill(`narrow ${name}`);
      await card.getByTestId('api-key-scope-full').check();
      expect(await card.getByTestId('api-key-scope-deploy').isDisabled()).toBe(true);
      await card.getByTestId('api-key-create').click();
      await card.getByTestId('api-key-new').waitFor();
      await rowOf(app, `narrow ${name}`).waitFor();
      expect(await rowOf(app, `narrow ${name}`).getByTestId('api-key-scopes').innerText()).toBe('full');
      // Nothing in the card runs past its edge, at any width.
      expect(
        await card.evaluate(
          (element) =>
            [...element.querySelectorAll('*')].filter(
              (child) => !child.closest('.api-keys-table-wrap') && child.scrollWidth > child.clientWidth + 1,
            ).length,
        ),
      ).toBe(0);
      const wrap = card.locator('.api-keys-table-wrap');
      expect(await wrap.evaluate((element) => element.scrollWidth <= element.clientWidth + 1)).toBe(true);
      await screenshot(app, name, { show: card.getByTestId('api-key-new') });
      await app.context().close();
    }
  });

  it('explains a key without the full scope, and a platform that cannot be reached', async () => {
    const narrow = await platformApi<{ key: string }>(ui.stack, '/keys', {
      method: 'POST',
      body: JSON.stringify({ scopes: ['deploy'], name: 'deploy only' }),
    });
    expect(narrow.status).toBe(201);
    const app = await openSettings();
    await app.getByTestId('api-keys-table').waitFor();
    await app.getByTestId('platform-remote').check();
    await app.getByTestId('platform-url').fill(platformOrigin());
    await app.getByTestId('api-key').fill(narrow.body.key);
    await app.getByTestId('save-settings').click();
    await app.getByTestId('settings-saved').waitFor();
    try {
      const unavailable = app.getByTestId('api-keys-unavailable');
      await expect.poll(() => unavailable.innerText()).toMatch(/This app’s key cannot manage API keys/);
      expect(await unavailable.getAttribute('data-code')).toBe('forbidden');
      expect(await unavailable.innerText()).toMatch(/key with the full scope under Platform above/);
      expect(await app.getByTestId('api-keys-table').count()).toBe(0);
      expect(await app.getByTestId('api-key-form').count()).toBe(0);
      await screenshot(app, 'settings-api-keys-forbidden', { show: unavailable });
    } finally {
      await app.getByTestId('platform-local').check();
      await app.getByTestId('save-settings').click();
      await app.getByTestId('settings-saved').waitFor();
    }
    await app.getByTestId('api-keys-table').waitFor();

    await ui.stack.stopPlatform();
    try {
      await app.getByTestId('api-keys-refresh').click();
      const unavailable = app.getByTestId('api-keys-unavailable');
      await expect
        .poll(() => unavailable.innerText(), { timeout: 15_000 })
        .toMatch(/The platform cannot be reached/);
      expect(await unavailable.getAttribute('data-code')).toBe('offline');
      expect(await app.getByTestId('api-keys-table').count()).toBe(0);
      expect(await app.getByTestId('api-keys-empty').count()).toBe(0);
      await screenshot(app, 'settings-api-keys-offline', { show: unavailable });
    } finally {
      await ui.stack.startPlatform();
    }
    // Back online (the Engine notices by itself): the keys come back without a click.
    await app.getByTestId('api-keys-table').waitFor({ timeout: 20_000 });
    expect(await app.getByTestId('api-keys-unavailable').count()).toBe(0);
  });

  it('lists the remote platform’s keys, marking the saved key as this app’s', async () => {
    const full = await platformApi<{ id: string; key: string }>(ui.stack, '/keys', {
      method: 'POST',
      body: JSON.stringify({ scopes: ['full'], name: 'remote app' }),
    });
    expect(full.status).toBe(201);
    const app = await openSettings();
    await app.getByTestId('api-keys-table').waitFor();
    await app.getByTestId('platform-remote').check();
    await app.getByTestId('platform-url').fill(platformOrigin());
    await app.getByTestId('api-key').fill(full.body.key);
    await app.getByTestId('save-settings').click();
    await app.getByTestId('settings-saved').waitFor();
    try {
      const own = app.locator('[data-testid="api-key-row"][data-current="true"]');
      await expect.poll(() => own.getAttribute('data-key-id'), { timeout: 5_000 }).toBe(full.body.id);
      expect(await own.getByTestId('api-key-revoke').count()).toBe(0);
      // The local key is just another key of the account here.
      expect(await rowOf(app, 'local').getByTestId('api-key-revoke').count()).toBe(1);
    } finally {
      await app.getByTestId('platform-local').check();
      await app.getByTestId('save-settings').click();
      await app.getByTestId('settings-saved').waitFor();
    }
    const own = app.locator('[data-testid="api-key-row"][data-current="true"]');
    await expect.poll(() => own.getByTestId('api-key-name').innerText(), { timeout: 5_000 }).toBe('local');
  });
});

describe('settings on a platform that runs apps as plain processes', () => {
  const processUi = useAppStack({ platformArgs: () => ['--runtime', 'process'] });

  it('warns that apps run as the platform’s own user, and what to install', async () => {
    const app = await openSettings({}, processUi);
    expect(await runtimeLabel(app)).toBe('Processes');
    const warning = app.getByTestId('runtime-warning');
    const text = await warning.innerText();
    expect(text).toMatch(/Apps run as the platform’s own user/);
    expect(text).toMatch(/one account only/);
    expect(text).toMatch(/Docker or Podman/);
    expect(text).toMatch(/bubblewrap/);
    expect(await app.getByTestId('runtime-note').allInnerTexts()).toContain(
      'apps run as this platform’s own user: for one person’s machine only',
    );
    await screenshot(app, 'settings-runtime-process', { show: app.getByTestId('runtime') });
    await app.context().close();

    const dark = await openSettings(
      { colorScheme: 'dark', viewport: { width: 800, height: 600 } },
      processUi,
    );
    await dark.getByTestId('runtime-warning').waitFor();
    await screenshot(dark, 'settings-runtime-process-dark-800', {
      show: dark.getByTestId('runtime-warning'),
    });
  });
});
