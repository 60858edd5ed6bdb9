// The edge's own pages (404, 502, 503): small, self-contained HTML that says what happened and what
// to do, for a person who opened an app's URL. They are public: an app that is down or whose deploy
// failed gets the same plain page whatever the reason, since deploy errors and logs may name
// repositories, paths and other things meant for the owner only (who reads them in Wharf).
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { HeaderList } from '../../shared/api/tunnels.js';
export interface EdgePage {
  status: number;
  title: string;
  message: string;
  hint?: string;
  /** Seconds, for Retry-After and the page's own reload. */
  retryAfter?: number;
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** The page of an app that does not run (crashed, failed to deploy, not answering): nothing more. */
export function notRunningPage(status: 502 | 503, retryAfter?: number): EdgePage {
  return {
    status,
    title: 'Not running',
    message: 'This app is not running.',
    hint: 'If it is yours, open it in Wharf to see why.',
    ...(retryAfter ? { retryAfter } : {}),
  };
}

export function renderPage(page: EdgePage): string {
  const refresh = page.retryAfter ? `<meta http-equiv="refresh" content="${page.retryAfter}">` : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
${refresh}<title>${page.status} · ${escapeHtml(page.title)} · Wharf</title>
<style>
body{margin:0;min-height:100vh;display:grid;place-items:center;font:16px/1.5 system-ui,sans-serif;background:#0f172a;color:#e2e8f0}
main{max-width:34rem;padding:2rem}
.code{font:600 .85rem ui-monospace,monospace;color:#94a3b8;letter-spacing:.08em}
h1{margin:.25rem 0 1rem;font-size:1.6rem}
p{margin:.5rem 0;color:#cbd5e1}
.hint{color:#94a3b8;font-size:.9rem}
</style></head>
<body><main>
<div class="code">${page.status} · WHARF EDGE</div>
<h1>${escapeHtml(page.title)}</h1>
<p>${escapeHtml(page.message)}</p>
${page.hint ? `<p class="hint">${escapeHtml(page.hint)}</p>` : ''}
${page.retryAfter ? `<p class="hint">This page retries by itself every ${page.retryAfter} s.</p>` : ''}
</main></body></html>
`;
}

/** A page's response headers but its length: never cached, with Retry-After when it retries. */
function pageHeaders(page: EdgePage): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-wharf-edge': page.title,
    ...(page.retryAfter ? { 'retry-after': String(page.retryAfter) } : {}),
  };
}

/** Answers with the page. */
export function sendPage(res: ServerResponse, page: EdgePage): void {
  const body = renderPage(page);
  res.writeHead(page.status, { ...pageHeaders(page), 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** The page as a whole HTTP/1.1 response, for a connection the edge writes to itself. */
export function pageResponse(page: EdgePage, options: { close?: boolean } = {}): Buffer {
  const body = Buffer.from(renderPage(page));
  const headers = {
    ...pageHeaders(page),
    'content-length': body.length,
    ...(options.close ? { connection: 'close' } : {}),
  };
  const lines = [
    `HTTP/1.1 ${page.status} ${STATUS_CODES[page.status] ?? 'Error'}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

/** The page's headers (but its length) as a list, and its body: for the byte path's own 502. */
export function pageParts(page: EdgePage): { headers: HeaderList; body: Buffer } {
  const headers = Object.entries(pageHeaders(page)).map(([name, value]) => ({ name, value }));
  return { headers, body: Buffer.from(renderPage(page)) };
}
