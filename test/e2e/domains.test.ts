// Custom domains in the desktop UI (browser mode), clicked through as a user would, against a platform
// whose DNS look-ups go to a fake DNS server on loopback: adding a domain linked to a project, the two
// records to create (CNAME and TXT) and their copy buttons, a verification that finds the CNAME but not
// the TXT proof, then both, one that finds the wrong records, relinking to another project, refused
// input at the field, removal behind a confirmation, and the platform going away.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Domain } from '../../src/shared/api/domains.js';
import type { Project } from '../../src/shared/api/projects.js';
import { startDns, type FakeDns } from '../helpers/dns.js';
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
    [TARGET]: { A: ['198.51.100.10'] },
  });
});

afterAll(async () => {
  await dns?.close();
});

let project: Project;
let blog: Project;

const ui = useAppStack({
  platformArgs: () => ['--dns-server', dns!.server],
  setup: async (stack) => {
    const { status, body } = await platformApi<Project>(stack, '/projects', {
      method: 'POST',
      body: JSON.stringify({ name: 'Shop', subdomain: 'shop', image: 'nginx:1.27' }),
    });
    expect(status).toBe(201);
    project = body;
    const second = await platformApi<Project>(stack, '/projects', {
      method: 'POST',
      body: JSON.stringify({ name: 'Blog', subdomain: 'blog', image: 'nginx:1.27' }),
    });
    expect(second.status).toBe(201);
    blog = second.body;
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
  // Leaving the project out reads as a choice for now, not as if there were no projects.
  expect(await page.getByTestId('domain-project').locator('option').first().innerText()).toBe(
    'None for now (link one later)',
  );
  if (projectName)
    await page.getByLabel('Project', { exact: true }).selectOption({ label: `${projectName} (shop)` });
  await page.getByRole('button', { name: 'Add domain' }).click();
}

describe('the Domains screen', () => {
  it('explains custom domains when there are none', async () => {
    const page = await ui.open();
    await openDomains(page);
    const empty = page.getByTestId('domains-empty');
    await empty.waitFor();
    expect(await empty.innerText()).toMatch(/a CNAME that points it at Wharf, a TXT record that proves/);
    expect(await page.title()).toBe('Domains · Wharf');
  });

  it('adds a domain linked to a project, shows the CNAME and TXT records to create, and verifies it only with both', async () => {
    const page = await ui.open({ permissions: ['clipboard-read', 'clipboard-write'] });
    await openDomains(page);
    await addDomain(page, 'Shop.Example.test', 'Shop');

    const instructions = page.getByTestId('domain-instructions');
    await instructions.waitFor();
    expect(await instructions.getByTestId('dns-record-cname-type').innerText()).toBe('CNAME');
    expect(await instructions.getByTestId('dns-record-cname-name').innerText()).toBe('shop.example.test');
    expect(await instructions.getByTestId('dns-record-cname-value').innerText()).toBe(TARGET);
    // A target under .localhost is explained: no DNS provider can reach this machine's own names.
    expect(await instructions.getByTestId('local-cname-note').innerText()).toContain(
      `${TARGET} is this machine's own name`,
    );
    expect(await instructions.getByTestId('dns-record-txt-type').innerText()).toBe('TXT');
    expect(await instructions.getByTestId('dns-record-txt-name').innerText()).toBe(
      '_wharf-challenge.shop.example.test',
    );
    const token = await instructions.getByTestId('dns-record-txt-value').innerText();
    expect(token).toMatch(/^wharf-verify=[0-9A-Za-z]{32}$/);
    // The form is ready for the next domain.
    expect(await page.getByLabel('Domain', { exact: true }).inputValue()).toBe('');

    await instructions.getByRole('button', { name: `Copy CNAME value ${TARGET}` }).click();
    await expect
      .poll(() => page.evaluate(() => navigator.clipboard.readText()), { timeout: 5_000 })
      .toBe(TARGET);
    await instructions.getByRole('button', { name: `Copy TXT value ${token}` }).click();
    await expect
      .poll(() => page.evaluate(() => navigator.clipboard.readText()), { timeout: 5_000 })
      .toBe(token);

    const row = page.getByTestId('domain-row-shop.example.test');
    expect(await row.getByTestId('domain-status').innerText()).toBe('Pending');
    expect(await row.getByTestId('domain-project-name').innerText()).toBe('Routes to Shop');
    await screenshot(page, 'domains-added');

    // The CNAME alone (it is in the DNS already) proves nothing.
    await instructions.getByRole('button', { name: 'Verify shop.example.test' }).click();
    const result = instructions.getByTestId('verify-result');
    await result.waitFor();
    expect(await result.getAttribute('data-verified')).toBe('false');
    // Each record's answer sits next to it; the records are not spelled out a second time below.
    expect(await instructions.getByTestId('dns-record-cname-check').innerText()).toBe('Found');
    expect(await instructions.getByTestId('dns-record-cname-check').getAttribute('data-ok')).toBe('true');
    expect(await instructions.getByTestId('dns-record-txt-check').innerText()).toBe('Not found');
    expect(await instructions.getByTestId('dns-record-txt-check').getAttribute('data-ok')).toBe('false');
    expect(await result.innerText()).not.toContain('wharf-verify=');
    expect(await instructions.getByTestId('verify-detail').count()).toBe(0);
    expect(await row.getByTestId('domain-status').innerText()).toBe('Pending');

    // The TXT record pasted from the clipboard, as the user would at their DNS provider.
    dns!.set('_wharf-challenge.shop.example.test', {
      TXT: [await page.evaluate(() => navigator.clipboard.readText())],
    });
    await instructions.getByRole('button', { name: 'Verify shop.example.test' }).click();
    // Verified: the instructions close and the row says so.
    await instructions.waitFor({ state: 'detached' });
    await expect.poll(() => row.getAttribute('data-verified')).toBe('true');
    expect(await row.getByTestId('domain-status').innerText()).toBe('Verified');
    expect(await row.innerText()).toMatch(/Verified just now/);
    expect(await row.getByTestId('verify-found').innerText()).toContain(`TXT ${token}`);

    const [stored] = (await apiDomains()).filter((d) => d.domain === 'shop.example.test');
    expect(stored).toMatchObject({ verified: true, project_id: project.id, cname_target: TARGET });
  });

  it('relinks a verified domain to another project, which stays verified', async () => {
    const page = await ui.open();
    await openDomains(page);
    const row = page.getByTestId('domain-row-shop.example.test');
    await row.waitFor();
    const picker = row.getByLabel('Project for shop.example.test');
    expect(await picker.inputValue()).toBe(project.id);
    await picker.selectOption({ label: 'Blog' });
    await expect.poll(() => row.getByTestId('domain-project-name').innerText()).toBe('Routes to Blog');
    expect(await row.getByTestId('domain-status').innerText()).toBe('Verified');
    const [stored] = (await apiDomains()).filter((d) => d.domain === 'shop.example.test');
    expect(stored).toMatchObject({ verified: true, project_id: blog.id });

    await picker.selectOption({ label: 'No project' });
    await expect.poll(() => row.getByTestId('domain-project-name').innerText()).toBe('No project linked');
    expect((await apiDomains()).find((d) => d.domain === 'shop.example.test')?.project_id).toBeNull();
    await picker.selectOption({ label: 'Shop' });
    await expect.poll(() => row.getByTestId('domain-project-name').innerText()).toBe('Routes to Shop');
  });

  it('shows what a verification found when the domain points elsewhere', async () => {
    const page = await ui.open();
    await openDomains(page);
    await addDomain(page, 'www.elsewhere.test');
    await page.getByTestId('domain-instructions').waitFor();
    await page.getByRole('button', { name: 'Close the DNS instructions' }).click();

    const row = page.getByTestId('domain-row-www.elsewhere.test');
    expect(await row.getByTestId('domain-project-name').innerText()).toBe('No project linked');
    // A pending domain keeps both records on show in the list.
    expect(await row.getByTestId('row-dns-record-cname-value').innerText()).toBe(TARGET);
    expect(await row.getByTestId('row-dns-record-txt-name').innerText()).toBe(
      '_wharf-challenge.www.elsewhere.test',
    );
    expect(await row.getByTestId('row-dns-record-txt-value').innerText()).toMatch(/^wharf-verify=/);
    await row.getByRole('button', { name: 'Verify www.elsewhere.test' }).click();
    const result = row.getByTestId('verify-result');
    await result.waitFor();
    expect(await result.getAttribute('data-verified')).toBe('false');
    expect(await result.innerText()).toContain('www.elsewhere.test is not verified yet');
    expect(await row.getByTestId('row-dns-record-cname-check').innerText()).toBe(
      "No CNAME; its addresses (203.0.113.7) are not cname.localhost's",
    );
    expect(await row.getByTestId('row-dns-record-txt-check').innerText()).toBe('Not found');
    expect(await result.innerText()).not.toContain('wharf-verify=');
    expect(await result.innerText()).toMatch(/check again in a few minutes/);
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
