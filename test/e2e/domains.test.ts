// Custom domains in the desktop UI (browser mode), clicked through as a user would, against a platform
// whose DNS look-ups go to a fake DNS server on loopback: adding a domain linked to a project, the CNAME
// instructions and their copy buttons, a verification that succeeds and one that finds the wrong
// records, refused input at the field, removal behind a confirmation, and the platform going away.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Domain } from '../../src/shared/api/domains.js';
import type { Project } from '../../src/shared/api/projects.js';
import { startDns, type FakeDns } from '../helpers/mail.js';
import { errorNextTo, platformApi, screenshot, useAppStack } from './stack.js';

// The browser global used inside page.evaluate (test files are type-checked without the DOM library).
declare const navigator: { clipboard: { readText(): Promise<string> } };

/** The platform's default CNAME target (`cname.<base domain>`, the base domain being localhost). */
const TARGET = 'cname.localhost';

let dns: FakeDns | undefined;

beforeAll(async () => {
  dns = await startDns({
    'shop.example.test': { CNAME: TARGET },
    'www.elsewhere.test': { A: ['203.0.113.7'] },
  });
});

afterAll(async () => {
  await dns?.close();
});

let project: Project;

const ui = useAppStack({
  platformArgs: () => ['--dns-server', dns!.server],
  setup: async (stack) => {
    const { status, body } = await platformApi<Project>(stack, '/projects', {
      method: 'POST',
      body: JSON.stringify({ name: 'Shop', subdomain: 'shop', image: 'nginx:1.27' }),
    });
    expect(status).toBe(201);
    project = body;
  },
});

async function apiDomains(): Promise<Domain[]> {
  const { status, body } = await platformApi<Domain[]>(ui.stack, '/domains');
  expect(status).toBe(200);
  return body;
}

async function openDomains(page: Page): Promise<void> {
  await page.getByTestId('nav-domains').click();
  await page.getByRole('heading', { level: 1, name: 'Domains' }).waitFor();
}

async function addDomain(page: Page, name: string, projectName?: string): Promise<void> {
  await page.getByLabel('Domain', { exact: true }).fill(name);
  if (projectName) await page.getByLabel('Project').selectOption({ label: `${projectName} (shop)` });
  await page.getByRole('button', { name: 'Add domain' }).click();
}

describe('the Domains screen', () => {
  it('explains custom domains when there are none', async () => {
    const page = await ui.open();
    await openDomains(page);
    const empty = page.getByTestId('domains-empty');
    await empty.waitFor();
    expect(await empty.innerText()).toMatch(/CNAME record/);
    expect(await page.title()).toBe('Domains · Wharf');
  });

  it('adds a domain linked to a project, shows the CNAME to create, and verifies it', async () => {
    const page = await ui.open({ permissions: ['clipboard-read', 'clipboard-write'] });
    await openDomains(page);
    await addDomain(page, 'Shop.Example.test', 'Shop');

    const instructions = page.getByTestId('domain-instructions');
    await instructions.waitFor();
    expect(await instructions.getByTestId('dns-record-type').innerText()).toBe('CNAME');
    expect(await instructions.getByTestId('dns-record-name').innerText()).toBe('shop.example.test');
    expect(await instructions.getByTestId('dns-record-target').innerText()).toBe(TARGET);
    // The form is ready for the next domain.
    expect(await page.getByLabel('Domain', { exact: true }).inputValue()).toBe('');

    await instructions.getByRole('button', { name: `Copy target ${TARGET}` }).click();
    await expect
      .poll(() => page.evaluate(() => navigator.clipboard.readText()), { timeout: 5_000 })
      .toBe(TARGET);

    const row = page.getByTestId('domain-row-shop.example.test');
    expect(await row.getByTestId('domain-status').innerText()).toBe('Pending');
    expect(await row.getByTestId('domain-project-name').innerText()).toBe('Routes to Shop');
    await screenshot(page, 'domains-added');

    await instructions.getByRole('button', { name: 'Verify shop.example.test' }).click();
    // Verified: the instructions close and the row says so.
    await instructions.waitFor({ state: 'detached' });
    await expect.poll(() => row.getAttribute('data-verified')).toBe('true');
    expect(await row.getByTestId('domain-status').innerText()).toBe('Verified');
    expect(await row.innerText()).toMatch(/Verified just now/);

    const [stored] = (await apiDomains()).filter((d) => d.domain === 'shop.example.test');
    expect(stored).toMatchObject({ verified: true, project_id: project.id, cname_target: TARGET });
  });

  it('shows what a verification found when the domain points elsewhere', async () => {
    const page = await ui.open();
    await openDomains(page);
    await addDomain(page, 'www.elsewhere.test');
    await page.getByTestId('domain-instructions').waitFor();
    await page.getByRole('button', { name: 'Close the DNS instructions' }).click();

    const row = page.getByTestId('domain-row-www.elsewhere.test');
    expect(await row.getByTestId('domain-project-name').innerText()).toBe('No project linked');
    // A pending domain keeps its record on show in the list.
    expect(await row.innerText()).toContain(TARGET);
    await row.getByRole('button', { name: 'Verify www.elsewhere.test' }).click();
    const result = row.getByTestId('verify-result');
    await result.waitFor();
    expect(await result.getAttribute('data-verified')).toBe('false');
    const text = await result.innerText();
    expect(text).toContain(`does not point at ${TARGET} yet`);
    expect(text).toContain('203.0.113.7');
    expect((await row.getByTestId('verify-detail').innerText()).length).toBeGreaterThan(5);
    expect(await row.getByTestId('domain-status').innerText()).toBe('Pending');
    await screenshot(page, 'domains');
  });

  it('shows refused names and taken domains at the field', async () => {
    const page = await ui.open();
    await openDomains(page);
    const input = page.getByLabel('Domain', { exact: true });

    await page.getByRole('button', { name: 'Add domain' }).click();
    expect(await errorNextTo(input)).toMatch(/Enter a domain name/);

    await addDomain(page, 'not a domain');
    await expect.poll(() => errorNextTo(input)).toMatch(/domain name such as app\.example\.com/);
    expect(await input.getAttribute('aria-invalid')).toBe('true');

    await addDomain(page, 'shop.example.test');
    await expect.poll(() => errorNextTo(input)).toMatch(/shop\.example\.test/);
    expect(await page.getByTestId('domain-instructions').count()).toBe(0);
    await screenshot(page, 'domains-errors');
    expect((await apiDomains()).filter((d) => d.domain === 'shop.example.test')).toHaveLength(1);
  });

  it('removes a domain only once the removal is confirmed', async () => {
    const page = await ui.open();
    await openDomains(page);
    const row = page.getByTestId('domain-row-www.elsewhere.test');
    await row.getByRole('button', { name: 'Remove www.elsewhere.test' }).click();
    const dialog = page.getByRole('dialog', { name: 'Remove www.elsewhere.test?' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect(await row.count()).toBe(1);

    await row.getByRole('button', { name: 'Remove www.elsewhere.test' }).click();
    await dialog.getByRole('button', { name: 'Remove domain' }).click();
    await row.waitFor({ state: 'detached' });
    expect((await apiDomains()).map((d) => d.domain)).toEqual(['shop.example.test']);
  });

  it('says the platform cannot be reached while it is down', async () => {
    const page = await ui.open();
    await openDomains(page);
    await page.getByTestId('domain-row-shop.example.test').waitFor();
    await ui.stack.stopPlatform();
    try {
      await addDomain(page, 'later.example.test');
      const errors = page.getByTestId('add-domain-errors');
      await errors.waitFor();
      expect(await errors.innerText()).toMatch(/cannot reach the platform/i);
    } finally {
      await ui.stack.startPlatform();
    }
  });
});
