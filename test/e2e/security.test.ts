// The `wharf app` page server against a hostile web, seen from a real browser: no token, no data; a
// page of another local origin can neither call the Bridge nor open its event socket; a foreign Host
// header (DNS rebinding) is refused.
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { screenshot, useAppStack } from './stack.js';

/** Another local origin: a tiny page served by node:http on its own port. */
let foreign: Server | undefined;
let foreignOrigin: string;

const ui = useAppStack({
  setup: async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end('<!doctype html><title>Not Wharf</title><h1>A page of another origin</h1>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    foreign = server;
    foreignOrigin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  },
  teardown: () => new Promise<void>((resolve) => (foreign ? foreign.close(() => resolve()) : resolve())),
});

const appOrigin = () => new URL(ui.stack.pageUrl).origin;
const appToken = () => new URLSearchParams(new URL(ui.stack.pageUrl).hash.slice(1)).get('token')!;

const newPage = (): Promise<Page> => ui.blankPage();

/** What a page sees when it POSTs to the Bridge: the status, or that the fetch failed. */
function postFromPage(
  from: Page,
  url: string,
  token: string,
): Promise<{ status: number } | { failed: string }> {
  return from.evaluate(
    async ({ url, token }) => {
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'X-Wharf-Token': token, 'Content-Type': 'application/json' },
          body: 'null',
        });
        return { status: response.status };
      } catch (error) {
        return { failed: String(error) };
      }
    },
    { url, token },
  );
}

/** Whether a page can open a WebSocket to `url` (and the close code when it cannot). */
function socketFromPage(from: Page, url: string): Promise<{ opened: boolean; code: number }> {
  return from.evaluate(
    (url) =>
      new Promise<{ opened: boolean; code: number }>((resolve) => {
        const socket = new WebSocket(url);
        socket.onopen = () => {
          socket.close();
          resolve({ opened: true, code: 0 });
        };
        socket.onclose = (event) => resolve({ opened: false, code: event.code });
      }),
    url,
  );
}

/** A raw request with any Host header. */
function rawRequest(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  const { port } = new URL(ui.stack.pageUrl);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      { host: '127.0.0.1', port: Number(port), path, method: 'POST', headers },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    request.on('error', reject);
    request.end('null');
  });
}

describe('the app page server', () => {
  it('shows only how to open the app when the URL has no #token=', async () => {
    const bare = await newPage();
    await bare.goto(`${appOrigin()}/`);
    const locked = bare.getByTestId('auth-required');
    await locked.waitFor();
    expect(await locked.innerText()).toMatch(/Open Wharf from its link/);
    expect(await bare.getByTestId('nav-projects').count()).toBe(0);
    expect(await bare.getByTestId('project-list').count()).toBe(0);
    await screenshot(bare, 'auth-required');
  });

  it('locks the page when its token is refused', async () => {
    const guessed = await newPage();
    await guessed.goto(`${appOrigin()}/#token=guessed-token`);
    const locked = guessed.getByTestId('auth-required');
    await locked.waitFor();
    expect(await locked.innerText()).toMatch(/This link has expired/);
    expect(await guessed.getByTestId('project-list').count()).toBe(0);
    await screenshot(guessed, 'auth-refused');
  });

  it('answers its own page, with the token, from its own origin', async () => {
    const app = await ui.open();
    const result = await postFromPage(app, `${appOrigin()}/bridge/invoke/projects.list`, appToken());
    expect(result).toEqual({ status: 200 });
    expect(await socketFromPage(app, `${appOrigin().replace('http', 'ws')}/bridge/events`)).toMatchObject({
      opened: true,
    });
  });

  it('refuses a Bridge call from a page of another local origin', async () => {
    const hostile = await newPage();
    await hostile.goto(foreignOrigin);
    for (const token of ['guessed-token', appToken()]) {
      const result = await postFromPage(hostile, `${appOrigin()}/bridge/invoke/projects.list`, token);
      if ('status' in result) expect([401, 403]).toContain(result.status);
      else expect(result.failed).toMatch(/Failed to fetch|TypeError/);
    }
  });

  it('answers 403 to a “simple” cross-origin POST, which the browser sends without asking first', async () => {
    const hostile = await newPage();
    await hostile.goto(foreignOrigin);
    const url = `${appOrigin()}/bridge/invoke/projects.list`;
    const answer = hostile.waitForResponse((response) => response.url() === url);
    await hostile.evaluate(async (url) => {
      // no-cors with a text/plain body: no preflight, the request reaches the server as is.
      await fetch(url, {
        method: 'POST',
        mode: 'no-cors',
        headers: { 'Content-Type': 'text/plain' },
        body: 'null',
      });
    }, url);
    expect((await answer).status()).toBe(403);
  });

  it('refuses the event WebSocket to a page of another local origin', async () => {
    const hostile = await newPage();
    await hostile.goto(foreignOrigin);
    const result = await socketFromPage(hostile, `${appOrigin().replace('http', 'ws')}/bridge/events`);
    expect(result.opened).toBe(false);
  });

  it('refuses a request with a foreign Host header (DNS rebinding), even with the token', async () => {
    const rebound = await rawRequest('/bridge/invoke/projects.list', {
      host: 'evil.example',
      'x-wharf-token': appToken(),
      'content-type': 'application/json',
    });
    expect(rebound.status).toBe(403);
    expect(rebound.body).not.toContain('"ok":true');
    expect((await rawRequest('/', { host: `evil.example:${new URL(ui.stack.pageUrl).port}` })).status).toBe(
      403,
    );
  });
});
