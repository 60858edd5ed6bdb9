// The Domains screen of a platform that serves HTTPS (`wharf platform --https-port`), with Pebble
// standing in for Let's Encrypt and a fake DNS server on loopback: a verified domain shows its
// certificate and until when it is valid, HSTS is turned on and off from the row, and a domain whose
// certificate could not be ordered (the CA went away) says why, in the CA's words.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Domain } from '../../src/shared/api/domains.js';
import type { Project } from '../../src/shared/api/projects.js';
import { pebbleMissing, startPebble, type TestAcme } from '../helpers/acme.js';
import { until } from '../helpers/poll.js';
import { startDns, type FakeDns } from '../helpers/dns.js';
import { platformApi, screenshot, useAppStack } from './stack.js';
import { quietPort } from '../helpers/ports.js';

const missing = pebbleMissing();
if (missing && process.env.CI) throw new Error(`HTTPS screens: ${missing}`);

const TARGET = 'cname.apps.test';
let dns: FakeDns | undefined;
let pebble: TestAcme | undefined;
let edgePort = 0;
let project: Project;

beforeAll(async () => {
  if (missing) return;
  dns = await startDns({ [TARGET]: { A: ['127.0.0.1'] } });
  edgePort = await quietPort();
  pebble = await startPebble({ httpPort: edgePort, dnsServer: dns.server });
}, 30_000);

afterAll(async () => {
  await pebble?.close();
  await dns?.close();
});

const ui = useAppStack({
  platformArgs: () =>
    missing
      ? []
      : [
          '--edge-port',
          String(edgePort),
          '--https-port',
          '0',
          '--base-domain',
          'apps.test',
          '--dns-server',
          dns!.server,
          '--acme-directory',
          pebble!.directory,
          '--acme-ca-file',
          pebble!.caFile,
        ],
  setup: async (stack) => {
    if (missing) return;
    const created = await platformApi<Project>(stack, '/projects', {
      method: 'POST',
      body: JSON.stringify({ name: 'Site', subdomain: 'site', image: 'nginx:1.27' }),
    });
    expect(created.status).toBe(201);
    project = created.body;
  },
});

/** Adds a domain linked to the project and publishes both its records; verifies it through the API. */
async function verifiedDomain(name: string): Promise<Domain> {
  const added = await platformApi<{ domain: Domain; verification: { name: string; value: string } }>(
    ui.stack,
    '/domains',
    { method: 'POST', body: JSON.stringify({ domain: name, project_id: project.id }) },
  );
  expect(added.status).toBe(201);
  dns!.set(added.body.verification.name, { TXT: [added.body.verification.value] });
  dns!.set(name, { CNAME: TARGET });
  const verified = await platformApi<{ verified: boolean }>(
    ui.stack,
    `/domains/${added.body.domain.id}/verify`,
    {
      method: 'POST',
    },
  );
  expect(verified.body.verified).toBe(true);
  return added.body.domain;
}

async function certificateOf(id: string, status: string): Promise<void> {
  await until(
    async () =>
      (await platformApi<Domain[]>(ui.stack, '/domains')).body.find((d) => d.id === id)?.certificate
        ?.status === status,
    `the certificate of ${id} to be ${status}`,
    30_000,
    200,
  );
}

async function openDomains(page: Page): Promise<void> {
  await page.getByTestId('nav-domains').click();
  await page.getByRole('heading', { level: 1, name: 'Domains' }).waitFor();
}

describe.skipIf(missing !== null)('the Domains screen over HTTPS', () => {
  it('shows a verified domain’s certificate and until when it is valid, and turns HSTS on and off', async () => {
    const domain = await verifiedDomain('www.site.test');
    await certificateOf(domain.id, 'issued');
    const page = await ui.open();
    await openDomains(page);
    const row = page.getByTestId('domain-row-www.site.test');
    const badge = row.getByTestId('domain-certificate');
    await badge.waitFor();
    expect(await badge.innerText()).toMatch(/^HTTPS until [A-Z][a-z]{2} \d{1,2}, \d{4}$/);
    expect(await badge.getAttribute('title')).toMatch(/valid until .*renewed 30 days before/);

    const hsts = row.getByTestId('domain-hsts');
    expect(await hsts.isChecked()).toBe(false);
    // A controlled switch: it shows the platform's answer, not the click.
    await hsts.click();
    await until(
      async () =>
        (await platformApi<Domain[]>(ui.stack, '/domains')).body.find((d) => d.id === domain.id)?.hsts ===
        true,
      'HSTS to be on',
      10_000,
      100,
    );
    await until(() => hsts.isChecked(), 'the switch to show HSTS on', 10_000, 50);
    await screenshot(page, 'domains-https', { show: row });
    await hsts.click();
    await until(
      async () =>
        (await platformApi<Domain[]>(ui.stack, '/domains')).body.find((d) => d.id === domain.id)?.hsts ===
        false,
      'HSTS to be off',
      10_000,
      100,
    );
  }, 90_000);

  it('says why a certificate could not be ordered, in the CA’s words', async () => {
    // The CA goes away: the next order cannot reach it.
    await pebble!.close();
    pebble = undefined;
    const domain = await verifiedDomain('shop.site.test');
    await certificateOf(domain.id, 'failed');
    const page = await ui.open();
    await openDomains(page);
    const row = page.getByTestId('domain-row-shop.site.test');
    expect(await row.getByTestId('domain-certificate').innerText()).toBe('No certificate');
    const notice = row.getByTestId('certificate-error');
    await notice.waitFor();
    expect(await notice.innerText()).toMatch(
      /^The certificate could not be issued: .*(ECONNREFUSED|connect).*\. It is tried again with back-off\.$/,
    );
    await screenshot(page, 'domains-certificate-failed', { show: row });
  }, 90_000);
});
