// The Traffic screen (browser mode), clicked through as a user would: a local app on loopback, a tunnel
// to it started from the UI, requests sent through the platform's edge appearing live, filters and a
// full-text search over bodies, a request opened (pretty JSON, query, form, image, XML, hex, a body
// over the capture limit), Replay and Edit and replay with the new response beside the original, a HAR
// export and Copy as cURL, the keys, dark and 900 px wide; the history still there with the platform
// down (and cleared); older requests paged in from the Mirror as the list scrolls. Then 100,000 rows:
// only the visible ones in the DOM, and scrolling stays quick.
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { CapturedRequest } from '../../src/shared/api/tunnels.js';
import { screenshot, useAppStack } from './stack.js';
import { type EdgeResponse, viaEdge } from '../helpers/deploy.js';
import { type LocalApp, closedPort, startLocalApp } from '../helpers/local-app.js';

// The browser globals used inside page.evaluate (test files are type-checked without the DOM library).
declare const document: {
  activeElement: { getAttribute(name: string): string | null; blur(): void } | null;
  querySelector(selector: string): {
    scrollTop: number;
    scrollHeight: number;
    clientHeight: number;
    getBoundingClientRect(): { top: number; bottom: number; height: number };
  } | null;
};
declare const innerHeight: number;
declare const navigator: { clipboard: { readText(): Promise<string> } };
interface Box {
  getBoundingClientRect(): { top: number; bottom: number };
}
interface Scrollable extends Box {
  scrollTop: number;
  querySelector(selector: string): Box | null;
}
declare function requestAnimationFrame(callback: (time: number) => void): number;
declare const performance: { now(): number };

/** A 2×2 PNG (red, green, blue, white). */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP4z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==',
  'base64',
);

let served = 0;

/** The local app the tunnel exposes: JSON, XML, a form, an image, errors, a slow path, binary. */
function localApp(): Promise<LocalApp> {
  return startLocalApp((req, res) => {
    served += 1;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const url = new URL(req.url ?? '/', 'http://app.test');
      res.setHeader('X-Served-By', 'traffic-test');
      res.setHeader('X-Count', String(served));
      if (url.pathname === '/api/orders' && req.method === 'GET') {
        res.setHeader('Content-Type', 'application/json');
        // Written by hand: a number JavaScript cannot hold, which the pretty view must keep as sent.
        const page = Number(url.searchParams.get('page') ?? 1);
        res.end(
          `{"page":${page},"orders":[{"id":7,"item":"tea","note":"bergamot","total":12345678901234567890}]}`,
        );
      } else if (url.pathname === '/api/orders' && req.method === 'POST') {
        res.statusCode = 201;
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ created: true, received: JSON.parse(body.toString() || 'null') }));
      } else if (url.pathname === '/form') {
        res.setHeader('Content-Type', 'text/plain');
        res.end(`thanks, ${new URLSearchParams(body.toString()).get('name')}`);
      } else if (url.pathname === '/logo.png') {
        res.setHeader('Content-Type', 'image/png');
        res.end(PNG);
      } else if (url.pathname === '/feed.xml') {
        res.setHeader('Content-Type', 'application/xml');
        res.end('<?xml version="1.0"?><feed><entry id="1"><title>Hello</title></entry></feed>');
      } else if (url.pathname === '/boom') {
        res.statusCode = 500;
        res.end('it broke');
      } else if (url.pathname === '/slow') {
        setTimeout(() => res.end('finally'), 400);
      } else if (url.pathname === '/blob') {
        res.setHeader('Content-Type', 'application/octet-stream');
        res.end(Buffer.from([0, 1, 2, 3, 0xfe, 0xff, 0x41, 0x42]));
      } else {
        res.statusCode = 404;
        res.end('not here');
      }
    });
  });
}

let app: LocalApp | undefined;
let appPort = 0;

const ui = useAppStack({
  setup: async () => {
    app = await localApp();
    appPort = app.port;
  },
  teardown: async () => await app?.close(),
});

/** A request through the platform's edge to the tunnel at `<subdomain>.tunnel.localhost`. */
function viaTunnel(
  subdomain: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<EdgeResponse> {
  return viaEdge(ui.stack.edgePort, `${subdomain}.tunnel.localhost`, path, options);
}

const paths = (page: Page) =>
  page
    .getByTestId('traffic-row')
    .locator('.cell-path')
    .allInnerTexts()
    .then((texts) => texts.map((t) => t.replace(/^Replay:\s*/, '').trim()));
const clipboard = (page: Page) => page.evaluate(() => navigator.clipboard.readText());
const focused = (page: Page) => page.evaluate(() => document.activeElement?.getAttribute('data-testid'));
/** Screenshots for the docs show no focus ring from the keys just pressed, nor a hovered button. */
async function blur(page: Page): Promise<void> {
  await page.evaluate(() => document.activeElement?.blur());
  await page.mouse.move(1, 1);
}
const row = (page: Page, path: string) =>
  page
    .getByTestId('traffic-row')
    .filter({ has: page.locator('.cell-path', { hasText: path }) })
    .first();

/** Starts a tunnel from the bar ("New tunnel" opens the form unless it is open) and waits for it. */
async function startTunnel(page: Page, port: number, subdomain: string) {
  if ((await page.getByTestId('tunnel-form').count()) === 0) await page.getByTestId('tunnel-new').click();
  await page.getByTestId('tunnel-port').fill(String(port));
  await page.getByTestId('tunnel-subdomain').fill(subdomain);
  await page.getByTestId('tunnel-start').click();
  const chip = page.locator(`[data-testid="tunnel-row"][data-subdomain="${subdomain}"]`);
  await expect.poll(() => chip.getAttribute('data-state'), { timeout: 15_000 }).toBe('online');
  return chip;
}

/** Where the list and the pane are, against the window; and whether the screen itself scrolls. */
function layoutOf(page: Page) {
  return page.evaluate(() => {
    const height = (selector: string) =>
      document.querySelector(selector)?.getBoundingClientRect().height ?? 0;
    const content = document.querySelector('.content')!;
    return {
      list: height('[data-testid="traffic-list"]') / innerHeight,
      pane: height('[data-testid="request-pane"]') / innerHeight,
      scrolls: content.scrollHeight > content.clientHeight + 1,
      bottom:
        (document.querySelector('.traffic-workspace')?.getBoundingClientRect().bottom ?? 0) / innerHeight,
    };
  });
}

async function openTraffic(page: Page): Promise<void> {
  await page.getByTestId('nav-traffic').click();
  await page.getByTestId('traffic-view').waitFor();
  // The history has been read once the count says so.
  await expect.poll(() => page.getByTestId('traffic-count').innerText()).toMatch(/\d+ requests?/);
}

describe('the Traffic screen', () => {
  it('tunnels a local app, shows its traffic live, filters, searches, replays and exports it', async () => {
    const page = await ui.open({
      viewport: { width: 1440, height: 940 },
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    await openTraffic(page);
    expect(await page.getByTestId('traffic-empty').innerText()).toMatch(/No requests yet/);
    expect(await page.getByTestId('tunnels-none').innerText()).toBe('No tunnel is running.');

    // A port out of range is refused before anything is sent.
    await page.getByTestId('tunnel-port').fill('70000');
    await page.getByTestId('tunnel-start').click();
    expect(await page.getByTestId('tunnel-form').innerText()).toMatch(/A port from 1 to 65535/);

    // Start the tunnel from the UI.
    await page.getByTestId('tunnel-port').fill(String(appPort));
    await page.getByTestId('tunnel-subdomain').fill('shop');
    await page.getByTestId('tunnel-start').click();
    const tunnelRow = page.getByTestId('tunnel-row');
    await expect.poll(() => tunnelRow.getAttribute('data-state'), { timeout: 15_000 }).toBe('online');
    const url = `http://shop.tunnel.localhost:${ui.stack.edgePort}`;
    expect(await tunnelRow.getByTestId('tunnel-url').getAttribute('href')).toBe(url);
    expect(await tunnelRow.getByTestId('tunnel-state').innerText()).toBe('Online');
    expect(await page.getByRole('link', { name: 'Traffic, 1 tunnel running' }).count()).toBe(1);
    await tunnelRow.getByTestId('tunnel-copy').click();
    expect(await clipboard(page)).toBe(url);

    // Traffic through the edge shows up live, newest first.
    expect((await viaTunnel('shop', '/api/orders?page=2')).status).toBe(200);
    await expect.poll(() => paths(page), { timeout: 10_000 }).toEqual(['/api/orders?page=2']);
    const created = await viaTunnel('shop', '/api/orders', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ item: 'tea', note: 'earl grey' }),
    });
    expect(created.status).toBe(201);
    await viaTunnel('shop', '/form', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'name=Ada+Lovelace&lang=en&note=50%25+off',
    });
    await viaTunnel('shop', '/logo.png');
    await viaTunnel('shop', '/feed.xml');
    await viaTunnel('shop', '/missing');
    await viaTunnel('shop', '/boom');
    await viaTunnel('shop', '/slow');
    await viaTunnel('shop', '/blob');
    const all = [
      '/blob',
      '/slow',
      '/boom',
      '/missing',
      '/feed.xml',
      '/logo.png',
      '/form',
      '/api/orders',
      '/api/orders?page=2',
    ];
    await expect.poll(() => paths(page), { timeout: 10_000 }).toEqual(all);
    expect(await page.getByTestId('traffic-count').innerText()).toBe('9 requests');
    // Status by class, "error"-free here; the 500 in red, the 404 in amber.
    expect(await row(page, '/boom').locator('.cell-status').getAttribute('data-tone')).toBe('server-error');
    expect(await row(page, '/missing').locator('.cell-status').getAttribute('data-tone')).toBe(
      'client-error',
    );
    expect(await row(page, '/api/orders?page=2').locator('.cell-status').innerText()).toBe('200');
    await screenshot(page, 'traffic-list');

    // Filters go to the Mirror and apply to what arrives next too.
    await page.getByTestId('traffic-status-4xx').click();
    await page.getByTestId('traffic-status-5xx').click();
    await expect.poll(() => paths(page)).toEqual(['/boom', '/missing']);
    await viaTunnel('shop', '/nowhere');
    await viaTunnel('shop', '/api/orders?page=9');
    await expect.poll(() => paths(page)).toEqual(['/nowhere', '/boom', '/missing']);
    await page.getByTestId('traffic-clear-filters').click();
    await expect.poll(() => paths(page)).toHaveLength(11);

    await page.getByTestId('traffic-more-filters').click();
    await page.getByTestId('traffic-method-POST').click();
    await expect.poll(() => paths(page)).toEqual(['/form', '/api/orders']);
    await page.getByTestId('traffic-method-POST').click();
    await page.getByTestId('traffic-filter-path').fill('orders');
    await expect.poll(() => paths(page)).toEqual(['/api/orders?page=9', '/api/orders', '/api/orders?page=2']);
    await page.getByTestId('traffic-filter-path').fill('');
    await page.getByTestId('traffic-filter-header').fill('content-type: xml');
    await expect.poll(() => paths(page)).toEqual(['/feed.xml']);
    await page.getByTestId('traffic-filter-header').fill('');
    await page.getByTestId('traffic-filter-min').fill('300');
    await expect.poll(() => paths(page)).toEqual(['/slow']);
    await page.getByTestId('traffic-filter-min').fill('');
    await page.getByTestId('traffic-filter-codes').fill('40x');
    expect(await page.getByTestId('traffic-filters').innerText()).toMatch(/"40x" is not a status code/);
    await page.getByTestId('traffic-filter-codes').fill('404');
    await expect.poll(() => paths(page)).toEqual(['/nowhere', '/missing']);
    await page.getByTestId('traffic-clear-filters').click();
    await expect.poll(() => paths(page)).toHaveLength(11);

    // Full-text search reaches bodies (here, a word only the first response holds), and follows live.
    await page.keyboard.press('/');
    expect(await focused(page)).toBe('traffic-search');
    await page.keyboard.type('bergamot');
    await expect.poll(() => paths(page)).toEqual(['/api/orders?page=9', '/api/orders?page=2']);
    await viaTunnel('shop', '/api/orders?page=4');
    await viaTunnel('shop', '/missing-again');
    await expect
      .poll(() => paths(page))
      .toEqual(['/api/orders?page=4', '/api/orders?page=9', '/api/orders?page=2']);
    await page.getByTestId('traffic-search').fill('earl grey');
    await expect.poll(() => paths(page)).toEqual(['/api/orders']);
    await page.getByTestId('traffic-search').fill('');
    await expect.poll(() => paths(page)).toHaveLength(13);

    // Open a request: overview, query, pretty JSON (numbers kept as sent).
    await row(page, '/api/orders?page=2').click();
    const pane = page.getByTestId('request-pane');
    await pane.waitFor();
    expect(page.url()).toMatch(/#\/traffic\/req_/);
    expect(await pane.getByTestId('request-url').innerText()).toBe(`${url}/api/orders?page=2`);
    expect(await pane.getByTestId('request-query').innerText()).toMatch(/page\s+2/);
    // Where it came from, as SPEC.md §2.4 writes remote_addr: host and the public client's port.
    expect(await pane.getByTestId('request-remote-addr').innerText()).toMatch(/^127\.0\.0\.1:\d{1,5}$/);
    const pretty = pane.getByTestId('response-body-pretty');
    await pretty.waitFor();
    expect(await pretty.innerText()).toBe(
      [
        '{',
        '  "page": 2,',
        '  "orders": [',
        '    {',
        '      "id": 7,',
        '      "item": "tea",',
        '      "note": "bergamot",',
        '      "total": 12345678901234567890',
        '    }',
        '  ]',
        '}',
      ].join('\n'),
    );
    await pane.getByTestId('response-body-view-raw').click();
    expect(await pane.getByTestId('response-body-raw').innerText()).toMatch(/^\{"page":2,"orders":/);
    await pane.getByTestId('response-body-view-pretty').click();
    await page.setViewportSize({ width: 1440, height: 1180 });
    await page.getByTestId('traffic-more-filters').click();
    await pane.evaluate((element: { scrollTop: number }) => (element.scrollTop = 0));
    await blur(page);
    await screenshot(page, 'traffic-detail');
    // The pane scrolls by itself: the response just below its sticky header.
    await pane.evaluate((element: Scrollable) => {
      const section = element.querySelector('[data-testid="response-headers"]')!;
      const header = element.querySelector('.pane-header')!;
      element.scrollTop += section.getBoundingClientRect().top - header.getBoundingClientRect().bottom;
    });
    await blur(page);
    await screenshot(page, 'traffic-detail-body');

    // Other bodies: a form as a table, an image inline, XML pretty, binary as hex.
    await row(page, '/form').click();
    await expect
      .poll(() => page.getByTestId('request-body-form').innerText())
      .toMatch(/name\s+Ada Lovelace[\s\S]*note\s+50% off/);
    await row(page, '/logo.png').click();
    const image = page.getByTestId('response-body-image');
    await image.waitFor();
    expect(await image.getAttribute('src')).toBe(`data:image/png;base64,${PNG.toString('base64')}`);
    expect(await image.evaluate((img: { naturalWidth: number }) => img.naturalWidth)).toBe(2);
    await row(page, '/feed.xml').click();
    await expect
      .poll(() => page.getByTestId('response-body-pretty').innerText())
      .toBe(
        [
          '<?xml version="1.0"?>',
          '<feed>',
          '  <entry id="1">',
          '    <title>Hello</title>',
          '  </entry>',
          '</feed>',
        ].join('\n'),
      );
    await row(page, '/blob').click();
    await expect
      .poll(() => page.getByTestId('response-body-hex').innerText())
      .toBe('00000000  00 01 02 03 fe ff 41 42                           |......AB|');

    // A body over the capture limit: the start of it is kept, and the badge says how much.
    const upload = 'The quick brown fox. '.repeat(75_000);
    await viaTunnel('shop', '/upload', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: upload,
    });
    await row(page, '/upload').click();
    const badge = pane.getByTestId('request-body-truncated');
    await badge.waitFor();
    expect(await badge.innerText()).toBe('Truncated: kept 1.0 MB of 1.5 MB');
    expect(await pane.getByTestId('request-body-raw').innerText()).toMatch(
      /^The quick brown fox\. The quick/,
    );
    await page.keyboard.press('e');
    expect(await pane.getByTestId('replay-editor').innerText()).toMatch(
      /Only the first 1,048,576 of 1,575,000 bytes were captured/,
    );
    await page.keyboard.press('Escape');
    await pane.getByTestId('replay-editor').waitFor({ state: 'detached' });
    await row(page, '/blob').click();

    // j/k move the selection through the list; the pane follows.
    await page.getByTestId('traffic-list').focus();
    const selected = () => pane.getAttribute('data-id');
    const idOf = (path: string) => row(page, path).getAttribute('data-id');
    await page.keyboard.press('k');
    await expect.poll(selected).toBe(await idOf('/nowhere'));
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    await expect.poll(selected).toBe(await idOf('/slow'));
    await page.keyboard.press('Escape');
    await pane.waitFor({ state: 'detached' });
    expect(page.url()).toMatch(/#\/traffic$/);

    // Replay: the new response beside the original (X-Count differs, the rest is the same).
    await row(page, '/api/orders?page=2').click();
    await pane.getByTestId('response-body-pretty').waitFor();
    await page.keyboard.press('r');
    const compare = pane.getByTestId('replay-compare');
    await compare.getByTestId('compare-replay').waitFor();
    expect(await compare.getByTestId('compare-original-status').innerText()).toBe('200');
    expect(await compare.getByTestId('compare-replay-status').innerText()).toBe('200');
    expect(await compare.getByTestId('compare-replay-request').innerText()).toBe('GET /api/orders?page=2');
    expect(
      await compare.getByTestId('compare-headers').locator('tr[data-change="changed"]').allInnerTexts(),
    ).toEqual([expect.stringMatching(/^X-Count\s+\d+\s+\d+/i)]);
    await expect
      .poll(() => compare.getByTestId('compare-replay-body-pretty').innerText())
      .toMatch(/"note": "bergamot"/);
    // The replay is captured too, marked as one.
    await expect.poll(() => paths(page)).toHaveLength(15);
    expect(await page.getByTestId('traffic-row').first().locator('.replay-mark').count()).toBe(1);
    await blur(page);
    await screenshot(page, 'traffic-replay');

    // Edit and replay with another path.
    await page.keyboard.press('e');
    const editor = pane.getByTestId('replay-editor');
    await editor.waitFor();
    expect(await editor.getByTestId('replay-method').inputValue()).toBe('GET');
    await editor.getByTestId('replay-path').fill('/api/orders?page=3');
    await editor.getByTestId('replay-add-header').click();
    await editor
      .getByLabel(/^Header \d+ name$/)
      .last()
      .fill('X-Debug');
    await editor
      .getByLabel(/^Header \d+ value$/)
      .last()
      .fill('1');
    await editor.getByTestId('replay-send').click();
    await expect
      .poll(() => compare.getByTestId('compare-replay-request').innerText())
      .toBe('GET /api/orders?page=3');
    await expect
      .poll(() => compare.getByTestId('compare-replay-body-pretty').innerText())
      .toMatch(/"page": 3/);
    expect(await compare.innerText()).toMatch(/Edited replay/);
    await pane.evaluate((element: { scrollTop: number }) => (element.scrollTop = 0));
    await blur(page);
    await screenshot(page, 'traffic-replay-edited');

    // Copy as cURL.
    await pane.getByTestId('copy-curl').click();
    await expect.poll(() => pane.getByTestId('copy-curl').getAttribute('data-state')).toBe('copied');
    const curl = await clipboard(page);
    expect(curl).toMatch(/^curl /);
    expect(curl).toContain('/api/orders?page=2');

    // HAR of this request, and of the list as filtered.
    const [one] = await Promise.all([
      page.waitForEvent('download'),
      pane.getByTestId('export-har-one').click(),
    ]);
    const oneHar = JSON.parse(readFileSync((await one.path())!, 'utf8')) as { log: { entries: unknown[] } };
    expect(oneHar.log.entries).toHaveLength(1);
    expect(one.suggestedFilename()).toMatch(/^wharf-request-.*\.har$/);
    await page.getByTestId('traffic-status-2xx').click();
    await expect.poll(async () => (await paths(page)).length).toBeLessThan(16);
    const listed = (await paths(page)).length;
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByTestId('export-har').click(),
    ]);
    const har = JSON.parse(readFileSync((await download.path())!, 'utf8')) as {
      log: { version: string; entries: Array<{ request: { url: string }; response: { status: number } }> };
    };
    expect(har.log.version).toBe('1.2');
    expect(har.log.entries).toHaveLength(listed);
    expect(
      har.log.entries.every((entry) => entry.response.status >= 200 && entry.response.status < 300),
    ).toBe(true);
    await page.getByTestId('traffic-status-2xx').click();

    // Escape closes the comparison, then the pane.
    await page.getByTestId('traffic-list').focus();
    await page.keyboard.press('Escape');
    await compare.waitFor({ state: 'detached' });
    await page.keyboard.press('Escape');
    await pane.waitFor({ state: 'detached' });

    // Dark, and 900 px wide: the comparison takes the whole width, the list comes back once it closes.
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.setViewportSize({ width: 900, height: 900 });
    await row(page, '/api/orders?page=2').click();
    await pane.getByTestId('response-body-pretty').waitFor();
    await page.keyboard.press('r');
    await compare.getByTestId('compare-replay').waitFor();
    expect(await page.getByTestId('traffic-list').isVisible()).toBe(false);
    await screenshot(page, 'traffic-replay-dark-900');
    await page.keyboard.press('Escape');
    await compare.waitFor({ state: 'detached' });
    expect(await page.getByTestId('traffic-list').isVisible()).toBe(true);
    await pane.evaluate((element: { scrollTop: number }) => (element.scrollTop = 0));
    await screenshot(page, 'traffic-dark-900');
    await page.keyboard.press('Escape');
    await pane.waitFor({ state: 'detached' });
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1440, height: 940 });

    // Stop the tunnel: the edge no longer reaches the app.
    await tunnelRow.getByTestId('tunnel-stop').click();
    await expect.poll(() => page.getByTestId('tunnel-row').count()).toBe(0);
    expect([404, 502]).toContain((await viaTunnel('shop', '/after-stop')).status);
  });
});

describe("the Traffic screen's layout and tunnels", () => {
  it('gives the requests the window at every size, names tunnels, filters by one, and warns when nothing listens', async () => {
    const page = await ui.open({ viewport: { width: 1280, height: 800 } });
    await openTraffic(page);
    const bar = page.getByTestId('tunnels-panel');

    // No tunnel yet: the bar invites starting one and says in a line what a tunnel is.
    expect(await page.getByTestId('tunnels-none').innerText()).toBe('No tunnel is running.');
    expect(await bar.innerText()).toMatch(/A tunnel puts a port of this computer on a public URL/);
    await page.getByTestId('tunnel-form').waitFor();
    let layout = await layoutOf(page);
    expect(layout.scrolls).toBe(false);
    expect(layout.list).toBeGreaterThanOrEqual(0.5);
    await page.setViewportSize({ width: 800, height: 600 });
    await blur(page);
    await screenshot(page, 'traffic-first-run-800x600');
    layout = await layoutOf(page);
    expect(layout.scrolls).toBe(false);
    expect(layout.list).toBeGreaterThanOrEqual(0.4);
    await page.setViewportSize({ width: 1280, height: 800 });

    // A tunnel to a port nothing listens on: the bar says so before any request fails.
    const latePort = await closedPort();
    const later = await startTunnel(page, latePort, 'later');
    const warning = page.locator(`[data-testid="tunnel-no-listener"][data-port="${latePort}"]`);
    await warning.waitFor();
    expect(await warning.innerText()).toBe(
      `Nothing listens on localhost:${latePort} yet — start your app; requests to later get 502 until it does.`,
    );
    expect(await later.getAttribute('data-listening')).toBe('false');
    // The form closed once the tunnel started; one tunnel, and the list still has the window.
    await expect.poll(() => page.getByTestId('tunnel-form').count()).toBe(0);
    layout = await layoutOf(page);
    expect(layout.scrolls).toBe(false);
    expect(layout.list).toBeGreaterThanOrEqual(0.55);
    await page.setViewportSize({ width: 800, height: 600 });
    await blur(page);
    await screenshot(page, 'traffic-one-tunnel-800x600');
    layout = await layoutOf(page);
    expect(layout.scrolls).toBe(false);
    expect(layout.list).toBeGreaterThanOrEqual(0.45);
    // One tunnel has room for its whole route, even this narrow.
    expect(await later.getByTestId('tunnel-url').isVisible()).toBe(true);
    await page.setViewportSize({ width: 1280, height: 800 });
    // "New tunnel" opens the form again.
    const store = await startTunnel(page, appPort, 'storefront');
    await expect.poll(() => page.getByTestId('tunnel-form').count()).toBe(0);
    expect(await store.getAttribute('data-listening')).toBe('true');
    expect(await page.getByTestId('tunnel-no-listener').count()).toBe(1);
    // The form opens from the header, and Escape closes it again.
    await page.getByTestId('tunnel-new').click();
    expect(await page.getByTestId('tunnel-new').getAttribute('aria-expanded')).toBe('true');
    await page.getByTestId('tunnel-port').focus();
    await page.keyboard.press('Escape');
    await page.getByTestId('tunnel-form').waitFor({ state: 'detached' });
    await blur(page);
    await screenshot(page, 'traffic-no-listener');
    await page.setViewportSize({ width: 800, height: 600 });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForTimeout(300);
    await screenshot(page, 'traffic-no-listener-800x600-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 800 });

    // The app starts: the warning goes by itself (the port is checked again every few seconds).
    const lateApp = await startLocalApp((req, res) => res.end(`late ${req.url}`), latePort);
    try {
      await warning.waitFor({ state: 'detached', timeout: 10_000 });
      expect(await later.getAttribute('data-listening')).toBe('true');

      // The list names each request's tunnel as the user knows it, never by an id.
      await viaTunnel('storefront', '/cart');
      await viaTunnel('later', '/hello');
      await viaTunnel('storefront', '/checkout');
      await expect
        .poll(() => paths(page).then((p) => p.slice(0, 3)))
        .toEqual(['/checkout', '/hello', '/cart']);
      expect(await row(page, '/checkout').getByTestId('traffic-row-tunnel').innerText()).toBe(
        `storefront · :${appPort}`,
      );
      expect(await row(page, '/hello').getByTestId('traffic-row-tunnel').innerText()).toBe(
        `later · :${latePort}`,
      );
      expect(await page.getByTestId('traffic-view').innerText()).not.toMatch(/tun_|local_/);

      // The tunnel filter, by name: the Mirror's answer first, then live requests through it only.
      const filter = page.getByTestId('traffic-filter-tunnel');
      expect(await filter.locator('option').allInnerTexts()).toEqual(
        expect.arrayContaining(['All tunnels', `storefront · :${appPort}`, `later · :${latePort}`]),
      );
      await filter.selectOption('later');
      await expect.poll(() => paths(page)).toEqual(['/hello']);
      await viaTunnel('storefront', '/not-later');
      await viaTunnel('later', '/later-again');
      await expect.poll(() => paths(page)).toEqual(['/later-again', '/hello']);
      await filter.selectOption('');
      await expect.poll(() => paths(page).then((p) => p.slice(0, 2))).toEqual(['/later-again', '/not-later']);

      // The pane names the tunnel too.
      await row(page, '/hello').click();
      const pane = page.getByTestId('request-pane');
      await expect.poll(() => pane.getByTestId('request-tunnel').innerText()).toBe(`later · :${latePort}`);
      expect(await pane.innerText()).not.toMatch(/tun_|local_/);

      // Two tunnels, the filters open and a request open at 1280×800: the list and the pane get most
      // of the window, and the screen itself does not scroll.
      await page.getByTestId('traffic-more-filters').click();
      await page.getByTestId('traffic-filter-panel').waitFor();
      layout = await layoutOf(page);
      expect(layout.scrolls).toBe(false);
      expect(layout.list).toBeGreaterThanOrEqual(0.5);
      expect(layout.pane).toBeGreaterThanOrEqual(0.5);

      // Three tunnels, at each size, light and dark: the requests fill what the bar leaves.
      await startTunnel(page, appPort, 'third');
      const sizes = [
        [1280, 800, 0.5],
        [900, 700, 0.4],
        [800, 600, 0.3],
      ] as const;
      for (const [width, height, share] of sizes) {
        await page.setViewportSize({ width, height });
        for (const scheme of ['light', 'dark'] as const) {
          await page.emulateMedia({ colorScheme: scheme });
          // The colours change with a short transition: the capture waits for its end.
          await page.waitForTimeout(300);
          await blur(page);
          await screenshot(page, `traffic-${width}x${height}-${scheme}`);
          layout = await layoutOf(page);
          expect(layout, `${width}×${height}`).toMatchObject({ scrolls: false });
          expect(layout.list, `${width}×${height}`).toBeGreaterThanOrEqual(share);
          expect(layout.pane, `${width}×${height}`).toBeGreaterThanOrEqual(share);
          expect(layout.bottom, `${width}×${height}`).toBeGreaterThan(0.95);
        }
      }
      await page.emulateMedia({ colorScheme: 'light' });

      // The keys still move through the list with the bar above it.
      await page.getByTestId('traffic-list').focus();
      const selected = await pane.getAttribute('data-id');
      await page.keyboard.press('j');
      await expect.poll(() => pane.getAttribute('data-id')).not.toBe(selected);
    } finally {
      // Stopped one by one (the chips go as they stop), so the next tests start with none.
      while ((await page.getByTestId('tunnel-stop').count()) > 0) {
        const count = await page.getByTestId('tunnel-row').count();
        await page.getByTestId('tunnel-stop').first().click();
        await expect.poll(() => page.getByTestId('tunnel-row').count()).toBe(count - 1);
      }
      await expect.poll(() => page.getByTestId('tunnel-row').count()).toBe(0);
      await lateApp.close();
    }
  });
});

/** A captured request as the Engine would send it, for the volume test. */
function synthetic(i: number): CapturedRequest {
  return {
    id: `req_zzzz${String(i).padStart(8, '0')}`,
    tunnel_id: 'tun_synthetic',
    method: i % 5 === 0 ? 'POST' : 'GET',
    path: `/bulk/${i}`,
    url: `http://bulk.tunnel.localhost/bulk/${i}`,
    http_version: 'HTTP/1.1',
    status_code: i % 17 === 0 ? 500 : 200,
    duration_ms: i % 100,
    request_headers: {},
    response_headers: {},
    request_header_list: [],
    response_header_list: [],
    request_size: 0,
    response_size: 100,
    remote_addr: `127.0.0.1:${40_000 + (i % 20_000)}`,
    timestamp: new Date(1_700_000_000_000 + i).toISOString(),
    error: null,
    replay_of: null,
  };
}

describe('the Traffic screen offline', () => {
  it('shows the history from this computer, opens its requests, and says why a tunnel cannot start', async () => {
    const page = await ui.open({ viewport: { width: 1280, height: 900 } });
    await openTraffic(page);
    // Some history of its own: a tunnel, two requests, then the tunnel stopped.
    await page.getByTestId('tunnel-port').fill(String(appPort));
    await page.getByTestId('tunnel-subdomain').fill('cafe');
    await page.getByTestId('tunnel-start').click();
    const cafe = page.locator('[data-testid="tunnel-row"][data-subdomain="cafe"]');
    await expect.poll(() => cafe.getAttribute('data-state'), { timeout: 15_000 }).toBe('online');
    await viaTunnel('cafe', '/api/orders?page=5');
    await viaTunnel('cafe', '/closed-on-sundays');
    await expect
      .poll(() => paths(page).then((p) => p.slice(0, 2)))
      .toEqual(['/closed-on-sundays', '/api/orders?page=5']);
    await cafe.getByTestId('tunnel-stop').click();
    await expect.poll(() => cafe.count()).toBe(0);
    expect(await page.getByTestId('tunnels-none').innerText()).toBe('No tunnel is running.');

    await ui.stack.stopPlatform();
    try {
      // A reload asks the Engine again: the history comes from its Mirror.
      await page.reload();
      await openTraffic(page);
      await page.getByTestId('tunnels-offline').waitFor({ timeout: 15_000 });
      expect(await page.getByTestId('tunnels-offline').innerText()).toMatch(
        /The platform cannot be reached[\s\S]*The history below comes from this computer/,
      );
      // The banner speaks of this screen, not of cached projects.
      await expect
        .poll(() => page.getByTestId('offline-banner').innerText())
        .toMatch(/Offline — tunnels cannot start; the traffic history below is kept on this computer/);
      await expect
        .poll(() => paths(page).then((p) => p.slice(0, 2)))
        .toEqual(['/closed-on-sundays', '/api/orders?page=5']);
      await row(page, '/api/orders?page=5').click();
      await expect.poll(() => page.getByTestId('response-body-pretty').innerText()).toMatch(/"page": 5/);
      await page.getByTestId('traffic-search').fill('sundays');
      await expect.poll(() => paths(page)).toEqual(['/closed-on-sundays']);

      await page.getByTestId('tunnel-port').fill(String(appPort));
      await page.getByTestId('tunnel-start').click();
      const refused = page.getByTestId('tunnel-start-error');
      await refused.waitFor({ timeout: 15_000 });
      expect(await refused.innerText()).toMatch(/The tunnel could not start: \S/);
      // The platform's address is named once, not once per layer of the error.
      expect((await refused.innerText()).match(/http:\/\/127\.0\.0\.1:\d+/g)).toHaveLength(1);
      await screenshot(page, 'traffic-offline');

      // Clearing the history works offline too (it is this computer's), after a confirmation.
      await page.getByTestId('traffic-search').fill('');
      await expect.poll(async () => (await paths(page)).length).toBeGreaterThan(1);
      await page.getByTestId('clear-history').click();
      const dialog = page.getByTestId('clear-dialog');
      expect(await dialog.innerText()).toMatch(/captured requests are deleted from this computer/);
      await dialog.getByTestId('clear-confirm').click();
      await dialog.waitFor({ state: 'detached' });
      await page.getByTestId('traffic-empty').waitFor();
      expect(await page.getByTestId('traffic-count').innerText()).toBe('0 requests');
      expect(page.url()).toMatch(/#\/traffic$/);
    } finally {
      await ui.stack.startPlatform();
    }
  });
});

describe('the traffic history in pages', () => {
  it('loads older requests from the Mirror, page by page, as the list scrolls down', async () => {
    const page = await ui.open({ viewport: { width: 1280, height: 900 } });
    await openTraffic(page);
    await page.getByTestId('tunnel-port').fill(String(appPort));
    await page.getByTestId('tunnel-subdomain').fill('pages');
    await page.getByTestId('tunnel-start').click();
    const tunnel = page.locator('[data-testid="tunnel-row"][data-subdomain="pages"]');
    await expect.poll(() => tunnel.getAttribute('data-state'), { timeout: 15_000 }).toBe('online');
    const before = Number(await page.getByTestId('traffic-list').getAttribute('data-total'));
    // 750 requests: the first alone (so that it is the oldest for sure), then 10 at a time.
    const COUNT = 750;
    await viaTunnel('pages', '/p/0');
    for (let from = 1; from < COUNT; from += 10) {
      const group = Array.from({ length: Math.min(10, COUNT - from) }, (_, k) => `/p/${from + k}`);
      await Promise.all(group.map((path) => viaTunnel('pages', path)));
    }
    await tunnel.getByTestId('tunnel-stop').click();

    // A fresh page reads the first page only; the scroll height already counts them all.
    await page.reload();
    await openTraffic(page);
    const list = page.getByTestId('traffic-list');
    await expect.poll(() => list.getAttribute('data-total')).toBe(String(before + COUNT));
    const scrollHeight = () =>
      page.evaluate(() => document.querySelector('[data-testid="traffic-list"]')!.scrollHeight);
    expect(await scrollHeight()).toBeGreaterThan((before + COUNT) * 30);

    // Scrolling to the end pages backwards (`before`) until the oldest request shows.
    for (let i = 0; i < 10; i++) {
      await list.evaluate((element: { scrollTop: number; scrollHeight: number }) => {
        element.scrollTop = element.scrollHeight;
      });
      await page.waitForTimeout(150);
    }
    await expect
      .poll(async () => {
        await list.evaluate((element: { scrollTop: number; scrollHeight: number }) => {
          element.scrollTop = element.scrollHeight;
        });
        return (await paths(page)).at(-1 - before);
      })
      .toBe('/p/0');
    expect(await page.getByTestId('traffic-row').count()).toBeLessThan(60);
    expect(await list.getAttribute('data-total')).toBe(String(before + COUNT));
    expect(await page.locator('.traffic-row.is-placeholder').count()).toBe(0);
  });
});

describe('the traffic list at volume', () => {
  it('keeps only the visible rows in the DOM at 100,000 rows and scrolls smoothly', async () => {
    const page = await ui.blankPage();
    await page.setViewportSize({ width: 1280, height: 900 });
    // The page's event socket goes through here, so the test can add `traffic` events of its own.
    let inject: ((message: string) => void) | null = null;
    await page.routeWebSocket(/\/bridge\/events$/, (socket) => {
      socket.connectToServer();
      inject = (message) => socket.send(message);
    });
    await page.goto(ui.stack.pageUrl);
    await openTraffic(page);
    expect(inject).not.toBeNull();
    const before = Number(await page.getByTestId('traffic-list').getAttribute('data-total'));

    const BATCH = 5_000;
    const TOTAL = 100_000;
    const started = Date.now();
    for (let from = 0; from < TOTAL; from += BATCH) {
      const requests = Array.from({ length: BATCH }, (_, k) => synthetic(from + k));
      inject!(JSON.stringify({ type: 'event', event: 'traffic', payload: { requests } }));
    }
    await expect
      .poll(() => page.getByTestId('traffic-list').getAttribute('data-total'), { timeout: 30_000 })
      .toBe(String(before + TOTAL));
    const ingestMs = Date.now() - started;
    expect(await page.getByTestId('traffic-count').innerText()).toBe(
      `${(before + TOTAL).toLocaleString('en-US')} requests`,
    );

    // Only the rows in view (and a few around them) exist.
    const list = page.getByTestId('traffic-list');
    const inDom = await page.getByTestId('traffic-row').count();
    expect(inDom).toBeGreaterThan(10);
    expect(inDom).toBeLessThan(60);
    expect((await paths(page))[0]).toBe(`/bulk/${TOTAL - 1}`);

    // Scroll through the middle, one step per frame, and time the frames.
    const frames = await list.evaluate(
      (element: { scrollTop: number }) =>
        new Promise<number[]>((resolve) => {
          const times: number[] = [];
          let last = performance.now();
          let step = 0;
          const tick = () => {
            const now = performance.now();
            times.push(now - last);
            last = now;
            element.scrollTop = 1_000_000 + step * 9_000;
            step += 1;
            if (step < 120) requestAnimationFrame(tick);
            else resolve(times.slice(1));
          };
          requestAnimationFrame(tick);
        }),
    );
    const sorted = [...frames].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    const p95 = sorted[Math.floor(sorted.length * 0.95)]!;
    console.log(
      `100,000 rows: merged in ${ingestMs} ms; ${inDom} rows in the DOM; scrolling frames median ${median.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms`,
    );
    expect(median).toBeLessThan(50);
    await screenshot(page, 'traffic-100k');
    expect(await page.getByTestId('traffic-row').count()).toBeLessThan(60);
    const shown = await paths(page);
    const first = Number(shown[0]!.split('/').pop());
    // ~1,000,000 + 119 × 9,000 px down, at 30 px a row: the rows around index 69,000 (newest first).
    expect(first).toBeGreaterThan(TOTAL - 72_000);
    expect(first).toBeLessThan(TOTAL - 66_000);

    // Far from the top, new rows wait behind the pill; it brings them in and goes to the top.
    inject!(
      JSON.stringify({
        type: 'event',
        event: 'traffic',
        payload: { requests: [synthetic(TOTAL), synthetic(TOTAL + 1)] },
      }),
    );
    const pill = page.getByTestId('traffic-new-pill');
    await expect.poll(() => pill.innerText()).toMatch(/2 new/);
    await pill.click();
    await expect
      .poll(() => paths(page).then((p) => p.slice(0, 2)))
      .toEqual([`/bulk/${TOTAL + 1}`, `/bulk/${TOTAL}`]);
    expect(await list.evaluate((element: { scrollTop: number }) => element.scrollTop)).toBe(0);

    // j from the top walks the rows; the selection stays in view.
    await list.focus();
    for (let i = 0; i < 40; i++) await page.keyboard.press('j');
    await expect
      .poll(() => page.getByTestId('request-pane').getAttribute('data-id'))
      .toBe(synthetic(TOTAL + 1 - 39).id);
    expect(await page.locator('.traffic-row.is-selected').count()).toBe(1);
  });
});
