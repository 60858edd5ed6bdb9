// Email verification in the desktop UI (browser mode), clicked through as a user would, against a
// platform whose DNS look-ups go to a fake DNS server and whose SMTP probes reach a fake MX host, both
// on loopback: single checks (a mailbox that exists, a refused one, a domain without mail, a typo with
// its suggestion), the balance and today's count, and a batch from pasted lines and from a CSV file,
// sent in chunks with a progress bar, filtered, and exported as CSV.
import { readFileSync } from 'node:fs';
import Papa from 'papaparse';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { Account } from '../../src/shared/api/account.js';
import { useMailWorld } from '../helpers/mail.js';
import { platformApi, screenshot, useAppStack } from './stack.js';

// The browser globals used inside page.evaluate (test files are type-checked without the DOM library).
declare const window: { progressSeen?: string[] };
declare const document: {
  body: unknown;
  querySelector(selector: string): { getAttribute(name: string): string | null } | null;
};
declare const MutationObserver: new (callback: () => void) => {
  observe(target: unknown, options: Record<string, boolean>): void;
};

/** The mailboxes the fake MX host of example.test accepts; it refuses every other recipient. */
const MAILBOXES = new Set(['ada@example.test', 'grace@example.test', 'info@example.test']);

const mail = useMailWorld({
  accepts: (address) => MAILBOXES.has(address.toLowerCase()),
  // One mail domain per role address of the batch, so each is checked (repeats are left out).
  zone: () =>
    Object.fromEntries(
      batchAddresses().flatMap((a) =>
        a.startsWith('info@') ? [[a.slice(5), { MX: [{ exchange: 'mx.example.test', priority: 10 }] }]] : [],
      ),
    ),
});

const ui = useAppStack({
  platformArgs: mail.platformArgs,
});

async function account(): Promise<Account> {
  const { status, body } = await platformApi<Account>(ui.stack, '/account');
  expect(status).toBe(200);
  return body;
}

async function openEmail(page: Page): Promise<void> {
  await page.getByTestId('nav-email').click();
  await page.getByRole('heading', { level: 1, name: 'Email verification' }).waitFor();
  await page.getByTestId('email-summary').waitFor();
}

async function checkOne(page: Page, address: string, smtpProbe: boolean): Promise<void> {
  await page.getByLabel('Email address').fill(address);
  const probe = page.getByTestId('single-check').getByRole('checkbox', { name: /SMTP probe/ });
  await probe.setChecked(smtpProbe);
  await page.getByRole('button', { name: 'Check', exact: true }).click();
  await expect
    .poll(
      () =>
        page
          .getByTestId('email-result')
          .getAttribute('data-status')
          .catch(() => null),
      {
        timeout: 20_000,
      },
    )
    .not.toBeNull();
  await expect
    .poll(() => page.getByTestId('email-result').locator('.email-result-address').innerText())
    .toBe(address);
}

const flag = (page: Page, key: string) => page.getByTestId(`email-flag-${key}`).locator('dd').innerText();

describe('checking one address', () => {
  it('confirms a mailbox over SMTP, explains each flag, and counts the check against the day', async () => {
    const before = await account();
    const page = await ui.open({ viewport: { width: 1280, height: 1120 } });
    await openEmail(page);
    expect(await page.getByTestId('email-today').innerText()).toContain(
      `${before.email_verifications_today} of ${before.email_daily_cap.toLocaleString('en-US')}`,
    );

    await checkOne(page, 'ada@example.test', true);
    const result = page.getByTestId('email-result');
    expect(await result.getAttribute('data-status')).toBe('valid');
    expect(await result.getByTestId('email-status').innerText()).toBe('Valid');
    expect(await result.getAttribute('data-reason')).toBe('mailbox_exists');
    // The numeric figure is the confidence; the score is the word above.
    expect(await result.getByTestId('email-score').getAttribute('aria-label')).toBe('Confidence 97 of 100');
    expect(await result.getByTestId('email-reason').innerText()).toMatch(/confirmed that the mailbox exists/);
    expect(await flag(page, 'syntax')).toMatch(/Well formed/);
    expect(await flag(page, 'mx')).toContain('mx.example.test');
    expect(await flag(page, 'disposable')).toBe('No');
    expect(await flag(page, 'role')).toMatch(/^No/);
    expect(await flag(page, 'mailbox')).toMatch(/^Yes/);
    expect(await flag(page, 'catch-all')).toMatch(/^No: the server refuses unknown addresses/);
    expect(await flag(page, 'smtp')).toMatch(/^250/);
    expect(await flag(page, 'cost')).toMatch(/^\$0\.00[1-9]/);
    expect(mail.smtp.stats.rcpts.map((r) => r.toLowerCase())).toContain('ada@example.test');

    // The count and the balance follow the check.
    await expect
      .poll(() => page.getByTestId('email-today').innerText())
      .toContain(`${before.email_verifications_today + 1} of`);
    const after = await account();
    expect(after.balance.available_usd).toBeLessThan(before.balance.available_usd);
    await screenshot(page, 'email-single');
  });

  it('reports a refused mailbox and a domain without mail as invalid, in plain words', async () => {
    const page = await ui.open();
    await openEmail(page);
    await checkOne(page, 'nobody@example.test', true);
    const result = page.getByTestId('email-result');
    expect(await result.getAttribute('data-status')).toBe('invalid');
    expect(await result.getAttribute('data-reason')).toBe('mailbox_not_found');
    expect(await result.getByTestId('email-reason').innerText()).toMatch(/said this mailbox does not exist/);
    expect(await flag(page, 'smtp')).toMatch(/^550.*No such user here/);

    await checkOne(page, 'someone@nomail.test', false);
    expect(await result.getAttribute('data-reason')).toBe('no_mail_server');
    expect(await flag(page, 'mx')).toMatch(/None: the domain cannot receive mail/);
    expect(await flag(page, 'mailbox')).toMatch(/turn on the SMTP probe/);
  });

  it('offers the likely address for a typo, and checks it on a click', async () => {
    const page = await ui.open();
    await openEmail(page);
    await checkOne(page, 'grace@example.con', false);
    const suggestion = page.getByRole('button', { name: 'Did you mean grace@example.com?' });
    await suggestion.click();
    await expect.poll(() => page.getByLabel('Email address').inputValue()).toBe('grace@example.com');
    await expect
      .poll(() => page.getByTestId('email-result').locator('.email-result-address').innerText())
      .toBe('grace@example.com');
  });

  it('asks for an address instead of sending an empty one', async () => {
    const page = await ui.open();
    await openEmail(page);
    await page.getByRole('button', { name: 'Check', exact: true }).click();
    const input = page.getByLabel('Email address');
    expect(await input.getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByText('Enter an email address to check').count()).toBe(1);
  });
});

/**
 * 230 addresses (three chunks), in a cycle of: a deliverable address (58), a role address (58), one
 * without an @ (57), one whose domain has no mail server (57).
 */
function batchAddresses(): string[] {
  return Array.from({ length: 230 }, (_, i) => {
    switch (i % 4) {
      case 0:
        return `user${i}@example.test`;
      case 1:
        return `info@team${i}.example.test`;
      case 2:
        return `broken${i}.example.test`;
      default:
        return `user${i}@nomail.test`;
    }
  });
}

describe('checking a list', () => {
  it('checks pasted lines in chunks with progress, then filters and exports the results', async () => {
    const page = await ui.open({ acceptDownloads: true });
    await openEmail(page);
    const emails = batchAddresses();
    await page.getByLabel('Addresses').fill([...emails, emails[0]!, ''].join('\n'));
    expect(await page.getByTestId('batch-check').innerText()).toMatch(
      /230 addresses to check \(1 repeat left out\)/,
    );

    // Every value the progress bar takes on its way, as the page sees it.
    await page.evaluate(() => {
      const seen: string[] = [];
      window.progressSeen = seen;
      new MutationObserver(() => {
        const value = document.querySelector('[data-testid="batch-progress"] [role="progressbar"]');
        const now = value?.getAttribute('aria-valuenow');
        if (now && seen.at(-1) !== now) seen.push(now);
      }).observe(document.body, { subtree: true, childList: true, attributes: true });
    });
    await page.getByRole('button', { name: 'Check 230 addresses' }).click();
    const progress = page.getByTestId('batch-progress');
    await expect.poll(() => progress.getAttribute('data-phase'), { timeout: 30_000 }).toBe('done');
    expect(await progress.innerText()).toContain('Checked all 230 addresses.');
    const seen = await page.evaluate(() => window.progressSeen ?? []);
    expect(seen).toEqual(['0', '43', '87', '100']);

    const rows = page.getByTestId('result-row');
    expect(await rows.count()).toBe(230);
    expect(await rows.nth(0).locator('.cell-address').innerText()).toBe(emails[0]);
    expect(await rows.nth(2).locator('.cell-address').innerText()).toBe(emails[2]);
    expect(await rows.nth(229).locator('.cell-address').innerText()).toBe(emails[229]);
    expect(await page.getByTestId('count-invalid').innerText()).toMatch(/^114 Invalid/);
    expect(await page.getByTestId('count-risky').innerText()).toMatch(/^58 Risky/);
    expect(await page.getByTestId('count-valid').innerText()).toMatch(/^58 Valid/);

    await page.getByLabel('Score', { exact: true }).selectOption('invalid');
    await expect.poll(() => rows.count()).toBe(114);
    await page.getByLabel('Reason', { exact: true }).selectOption({ label: 'No mail server' });
    await expect.poll(() => rows.count()).toBe(57);
    for (const score of await rows.evaluateAll((els) => els.map((el) => el.getAttribute('data-status'))))
      expect(score).toBe('invalid');
    await screenshot(page, 'email-batch', { show: page.getByTestId('batch-results') });

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export 57 rows as CSV' }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(
      /^email-results-invalid-no_mail_server-\d{4}-\d{2}-\d{2}\.csv$/,
    );
    const csv = readFileSync((await download.path())!, 'utf8');
    const parsed = Papa.parse<Record<string, string>>(csv, { header: true, skipEmptyLines: true });
    expect(parsed.data).toHaveLength(57);
    expect(parsed.meta.fields?.slice(0, 5)).toEqual(['email', 'normalized', 'domain', 'score', 'reason']);
    expect(parsed.data[0]).toMatchObject({
      email: emails[3],
      domain: 'nomail.test',
      score: 'invalid',
      reason: 'no_mail_server',
      has_mx: 'false',
      mailbox_checked: 'false',
      catch_all: 'false',
      suggestion: '',
    });
    expect(parsed.data.every((row) => row.email!.endsWith('@nomail.test'))).toBe(true);
  });

  it('takes the address column of a CSV file', async () => {
    const page = await ui.open();
    await openEmail(page);
    const csv =
      'name,email,plan\nAda,ada@example.test,pro\nGrace,grace@example.test,free\nNobody,nobody@nomail.test,free\n';
    await page
      .getByTestId('batch-file-input')
      .setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    const file = page.getByTestId('batch-file');
    await file.waitFor();
    expect(await file.innerText()).toMatch(/3 addresses from the column “email” of 3/);
    await page.getByRole('button', { name: 'Check 3 addresses' }).click();
    await expect.poll(() => page.getByTestId('batch-progress').getAttribute('data-phase')).toBe('done');
    const addresses = await page.getByTestId('result-row').locator('.cell-address').allInnerTexts();
    expect(addresses).toEqual(['ada@example.test', 'grace@example.test', 'nobody@nomail.test']);
  });

  it('refuses a file without addresses and an empty list with a message', async () => {
    const page = await ui.open();
    await openEmail(page);
    await page.getByRole('button', { name: 'Check addresses' }).click();
    expect(await page.getByText('Paste at least one address, or choose a CSV file').count()).toBe(1);
    await page
      .getByTestId('batch-file-input')
      .setInputFiles({ name: 'empty.csv', mimeType: 'text/csv', buffer: Buffer.from('\n\n') });
    await expect
      .poll(() => page.getByRole('alert').allInnerTexts())
      .toContain('"empty.csv" holds no addresses');
  });
});

describe('the account in Settings', () => {
  it('lists the charges of the checks under recent usage, as the ledger holds them', async () => {
    const { body: ledger } = await platformApi<Array<{ description: string }>>(ui.stack, '/account/usage');
    expect(ledger.length).toBeGreaterThan(0);
    const page = await ui.open();
    await page.getByTestId('nav-settings').click();
    const usage = page.getByTestId('account-usage');
    await usage.getByTestId('usage-row').first().waitFor();
    const rows = await usage.getByTestId('usage-row').allInnerTexts();
    expect(rows.length).toBe(Math.min(8, ledger.length));
    expect(rows[0]).toContain(ledger[0]!.description);
    await screenshot(page, 'email-settings-usage', { show: usage });
  });
});
